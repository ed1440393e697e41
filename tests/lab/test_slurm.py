"""Slurm across containers: partitions, a two-node job, the partition boundary, munge."""

from __future__ import annotations

import pytest
from labtools import Lab, node_ids, poll, sh

from fleet.inventory import compute

CONTROLLER = node_ids("slurm.controller")[0]
SLURM_NODES = node_ids("slurm.controller") + node_ids("slurm.compute")


def partitions(lab: Lab) -> dict[str, list[str]]:
    """partition -> its lab nodes, from the inventory (through the overlay): its own
    partitions, and the workers' preemptible one over the worker groups' nodes."""
    inv = lab.plan.inventory
    out = {p: [n.hostname for n in inv.in_partition(p)] for p in inv.raw.slurm.partitions}
    if inv.raw.compute is not None:
        out[inv.raw.compute.partition] = [n.hostname for n in inv.nodes.values()
                                          if compute.is_worker(inv.raw, n)]
    return out


def sinfo(lab: Lab) -> dict[str, dict[str, str]]:
    """node -> {partition: state}: sinfo -N prints a row per node and partition."""
    out = sh(lab.host(CONTROLLER), "sinfo -h -N -o '%N %P %t'").stdout
    rows: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        name, part, state = line.split()
        rows.setdefault(name, {})[part.rstrip("*")] = state
    return rows


def test_sinfo_gpu_nodes_idle_in_their_partitions(lab: Lab) -> None:
    want: dict[str, dict[str, str]] = {}
    for p, names in partitions(lab).items():
        for n in names:
            want.setdefault(n, {})[p] = "idle"
    assert set(want) == set(node_ids("slurm.compute"))
    poll("every lab GPU node idle in its partitions",
         lambda: sinfo(lab) == want or None, timeout=120, interval=2)


def test_two_node_job_in_one_partition(lab: Lab) -> None:
    tbox1 = partitions(lab)["tbox1"]
    assert len(tbox1) == 2
    poll("the tbox1 nodes idle", lambda: all(sinfo(lab).get(n, {}).get("tbox1") == "idle"
                                             for n in tbox1) or None, timeout=120, interval=2)
    r = sh(lab.host(CONTROLLER), "srun -N2 -p tbox1 hostname", timeout=120)
    assert r.rc == 0, r.stderr
    assert sorted(r.stdout.split()) == sorted(tbox1)


@pytest.mark.parametrize("args", ["-N3 -p tbox1,tbox2",
                                  "-p tbox1,tbox2 -w tbox-001,tbox-039"])
def test_job_cannot_span_partitions(lab: Lab, args: str) -> None:
    r = sh(lab.host(CONTROLLER), f"srun --immediate=20 {args} hostname", timeout=60)
    assert r.rc != 0, f"srun {args} ran: {r.stdout}"
    assert r.rc != 124, "srun hung instead of being rejected"
    assert "tbox-0" not in r.stdout


def _munge(lab: Lab, node: str) -> tuple[str, str, str, str]:
    f = lab.host(node).file("/etc/munge/munge.key")
    assert f.exists, f"no munge key on {node}"
    digest = lab.host(node).check_output("sha256sum /etc/munge/munge.key").split()[0]
    return digest, oct(f.mode), f.user, f.group


def test_munge_key_identical_0400_munge(lab: Lab) -> None:
    keys = {n: _munge(lab, n) for n in SLURM_NODES}
    assert len({k[0] for k in keys.values()}) == 1, keys
    for node, (_, mode, user, _group) in keys.items():
        assert mode == "0o400", f"{node}: {mode}"
        assert user == "munge", f"{node}: {user}"


@pytest.mark.parametrize("node", node_ids("slurm.compute"))
def test_munge_credential_crosses_nodes(lab: Lab, node: str) -> None:
    """A credential made on the controller decodes on every compute node (same key)."""
    assert lab.host(node).service("munge").is_running
    cred = lab.host(CONTROLLER).check_output("munge -n")
    r = sh(lab.host(node), f"sh -c 'echo {cred} | unmunge'")
    assert r.rc == 0, r.stdout + r.stderr
    assert "Success" in r.stdout


@pytest.mark.parametrize("node", node_ids("mkv.volume"))
def test_no_munge_key_on_storage(lab: Lab, node: str) -> None:
    assert not lab.host(node).file("/etc/munge/munge.key").exists
    assert not lab.host(node).package("munge").is_installed


def test_a_drained_node_set_down_comes_back_drained_when_its_slurmd_registers(
        lab: Lab) -> None:
    """A reinstall or a reset silences slurmd past SlurmdTimeout while fleet's drain (and
    its reason) holds the node; Slurm then marks it DOWN. Its next registration must clear
    DOWN and keep the drain, for fleet's health gate to pass and its resume to follow."""
    node = node_ids("slurm.compute")[-1]
    ctl = lab.host(CONTROLLER)

    def state() -> str:
        return str(sh(ctl, f"scontrol show node {node}").stdout)

    try:
        for st in ("drain", "down"):
            r = sh(ctl, f"scontrol update nodename={node} state={st} reason='fleet lab test'")
            assert r.rc == 0, r.stderr
        assert "State=DOWN+DRAIN" in state()
        assert sh(lab.host(node), "systemctl restart slurmd").rc == 0
        got = poll(f"{node} registered, still drained",
                   lambda: "State=IDLE+DRAIN" in state() or None, timeout=60, interval=1)
        assert got and "Reason=fleet lab test" in state()
    finally:
        sh(ctl, f"scontrol update nodename={node} state=resume")
        poll(f"{node} idle", lambda: "State=IDLE " in state() or None, timeout=60)
