"""The burn-in partition in slurm.conf (fleet.inventory.lifecycle.BURNIN_PARTITION), from
the small inventory with its compute section: a compute node in burn-in is in that
partition alone (hidden, root only), in no training partition and not in the workers'
preemptible one, still on its switch in topology.conf and not drained; the controller's
own check (salt/slurm/files/fleet-slurm-conf-check.py) accepts the rendered set."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fleet import saltrender
from support import harness
from support.compute_fixture import FRAGMENT, with_compute

CHECK = harness.ROOT / "salt" / "slurm" / "files" / "fleet-slurm-conf-check.py"
FILES = {"slurm.conf": "slurm", "gres.conf": "gres", "cgroup.conf": "cgroup",
         "topology.conf": "topology"}


def _head(tmp: Path, burnin: list[str]) -> tuple[saltrender.Rendered, dict[str, object]]:
    """head-01 rendered with ``burnin`` nodes in burn-in; also the inventory's pillar
    slurm:drains."""
    from fleet.inventory.lifecycle import drains
    from fleet.inventory.load import parse
    from fleet.render import render_all

    small = FRAGMENT.parent / "small.yaml"
    text = with_compute(small.read_text())
    for host in burnin:
        text = text.replace(f"  {host}: {{serial:", f"  {host}: {{state: burn-in, serial:", 1)
    inv = parse(text, str(small))
    for path, body in render_all(inv).items():
        if path.startswith("pillar/"):
            (tmp / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp / path).write_text(body)
    harness.write_secrets_root(tmp / "secrets")
    saltrender.quiet_salt_logging()
    res = saltrender.Renderer(harness.ROOT / "salt", tmp / "pillar", tmp / "secrets",
                              tmp / "cache").render("head-01")
    assert not res.errors, res.errors
    return res, drains(inv)


def _checked(res: saltrender.Rendered, tmp: Path) -> subprocess.CompletedProcess[str]:
    """The controller's check of the rendered set (as its state runs it)."""
    conf = tmp / "etc"
    conf.mkdir()
    for name, sid in FILES.items():
        (conf / name).write_text(res.files[f"slurm-controller-file-managed-{sid}"])
    return subprocess.run([sys.executable, str(CHECK), "--dir", str(conf)],
                          capture_output=True, text=True, check=False, timeout=60)


def test_a_node_in_burnin_is_in_the_burnin_partition_alone(tmp_path: Path) -> None:
    res, drained = _head(tmp_path, ["gpu-01"])
    conf = res.files["slurm-controller-file-managed-slurm"].splitlines()
    parts = {ln.split()[0]: ln for ln in conf if ln.startswith("PartitionName=")}
    assert parts["PartitionName=fleet-burnin"] == (
        "PartitionName=fleet-burnin Nodes=gpu-01 Default=NO MaxTime=INFINITE State=UP "
        "OverSubscribe=EXCLUSIVE Hidden=YES RootOnly=YES PriorityTier=10 PreemptMode=OFF")
    # gpu-01's training partition and the workers' preemptible one: gpu-02 only
    assert " Nodes=gpu-02 " in parts["PartitionName=tbox1"]
    assert " Nodes=gpu-02 " in parts["PartitionName=miniray"]
    # on its switch still (the two-node job's topology), and known to Slurm as a node
    topo = res.files["slurm-controller-file-managed-topology"]
    assert "gpu-[01-02]" in topo, topo
    assert any(ln.startswith("NodeName=gpu-[01-04] ") for ln in conf), conf
    # not drained: resumed if an earlier render drained it
    assert drained["drain"] == {} and "gpu-01" in drained["resume"]  # type: ignore[operator]
    checked = _checked(res, tmp_path)
    assert checked.returncode == 0, checked.stderr


def test_a_partition_of_nodes_all_in_burnin_has_none_for_now(tmp_path: Path) -> None:
    """tbox1's two nodes in burn-in: tbox1 stays (users' scripts name it), with no
    Nodes=; the workers' partition, of no node now, is no line; the check accepts it."""
    res, _ = _head(tmp_path, ["gpu-01", "gpu-02"])
    conf = res.files["slurm-controller-file-managed-slurm"].splitlines()
    parts = {ln.split()[0]: ln for ln in conf if ln.startswith("PartitionName=")}
    assert parts["PartitionName=tbox1"].startswith("PartitionName=tbox1 Default=YES ")
    assert "PartitionName=miniray" not in parts
    assert parts["PartitionName=fleet-burnin"].startswith(
        "PartitionName=fleet-burnin Nodes=gpu-[01-02] ")
    checked = _checked(res, tmp_path)
    assert checked.returncode == 0, checked.stderr


def test_no_node_in_burnin_no_burnin_partition(tmp_path: Path) -> None:
    res, _ = _head(tmp_path, [])
    assert "fleet-burnin" not in res.files["slurm-controller-file-managed-slurm"]


@pytest.mark.parametrize("word", ["gpu-01 Hidden=NO", "a#b"])
def test_a_hostile_burnin_pillar_fails_the_render(tmp_path: Path, word: str) -> None:
    """The template's one-word guard covers the burn-in partition's values too."""
    res, _ = _head(tmp_path, ["gpu-01"])
    del res
    slurm = tmp_path / "pillar" / "slurm.sls"
    text = slurm.read_text()
    assert "nodes: gpu-01" in text
    slurm.write_text(text.replace("nodes: gpu-01", f"nodes: '{word}'", 1))
    bad = saltrender.Renderer(harness.ROOT / "salt", tmp_path / "pillar",
                              tmp_path / "secrets", tmp_path / "cache2").render("head-01")
    assert any("cannot be one word of slurm.conf" in e for e in bad.errors), bad.errors
