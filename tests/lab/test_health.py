"""`fleet health` in the lab: the real CLI against the lab's Salt master and
head-01's slurmctld. It finds a stopped slurmd and an unmounted mkv data disk (each data
disk of a lab volume is a tmpfs mount, tools/fleet/lab/nodes.py; the test unmounts one
from the host, in the container's mount namespace), `--drain` drains the Slurm node with
the problem as the reason, `--resume` returns it after the fix and leaves a node drained
by hand alone. Everything broken here is restored in `finally` blocks.

The hardware checks (GPU count, Xid, IB ports) are skipped in the lab, by name, because
pillar fleet:hardware is false (containers have no GPU or HCA): the test asserts they
say so. Without MKV_BINARY the mkv masters are a stub that serves nothing: head-01's
`mkv-<array> http` checks then fail, and the test asserts exactly those (docs/lab.md)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labtools import Lab, fleet_json, podman_exec, poll, sinfo_node

from fleet.lab import podman as pm

HEAD, GPU, HAND, STOR = "head-01", "tbox-001", "tbox-002", "stor-001"
DISK = "/srv/mkv/sv03"


def fleet_health(lab: Lab, state: Path, *args: str, timeout: float = 600
                 ) -> tuple[int, dict[str, Any]]:
    proc, report = fleet_json(lab, "health", state, *args, timeout=timeout)
    return proc.returncode, report


def nodes(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in report["nodes"]}


def problems(node: dict[str, Any]) -> list[str]:
    return [c["detail"] for c in node["checks"] if c["status"] == "problem"]


def scontrol(lab: Lab, *args: str) -> str:
    res = podman_exec(lab, HEAD, "scontrol", *args)
    assert res.returncode == 0, res.stderr
    return res.stdout


def slurm_state(lab: Lab, node: str) -> str:
    return sinfo_node(lab, node, "%T")


def reason(lab: Lab, node: str) -> str:
    return sinfo_node(lab, node, "%E")


def container_pid(lab: Lab, node: str) -> str:
    return str(pm.inspect(lab.paths, lab.plan.node(node).container)["State"]["Pid"])


def mounted(lab: Lab, node: str, path: str) -> bool:
    return podman_exec(lab, node, "findmnt", "-n", path).returncode == 0


def unmount(lab: Lab, node: str, path: str) -> None:
    """From the host, in the container's mount namespace (the container itself may not)."""
    subprocess.run(["nsenter", "-t", container_pid(lab, node), "-m", "umount", path],
                   check=True, timeout=30)


def remount(lab: Lab, node: str, path: str) -> None:
    """The fix: the disk mounted again, then the volume's state re-applied (owner, mode,
    .body_temp on the new filesystem), as an operator would after replacing it."""
    if not mounted(lab, node, path):
        subprocess.run(["nsenter", "-t", container_pid(lab, node), "-m", "mount", "-t",
                        "tmpfs", "-o", "rw,size=64m,mode=0755", "tmpfs", path],
                       check=True, timeout=30)
    out = lab.salt(node, "state.apply", "mkv.volume", timeout=600)
    assert all(v.get("result") for v in out[node].values()), out


@pytest.fixture(scope="module")
def healthy_lab(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The lab healthy before the test (time sync may still be settling after a
    bring-up: poll), and the state dir of the runs."""
    state = tmp_path_factory.mktemp("health-state")

    def all_healthy() -> str | None:
        _rc, rep = fleet_health(lab, state, f"{GPU},{HAND},{STOR}")
        bad = {n: problems(v) for n, v in nodes(rep).items() if not v["healthy"]}
        return "healthy" if rep["ok"] else print(f"[health] not yet: {bad}")
    poll("the lab's GPU and storage nodes healthy", all_healthy, timeout=300, interval=3)
    yield state


def test_whole_lab_health_and_hardware_checks_skipped_by_name(lab: Lab,
                                                               healthy_lab: Path) -> None:
    rc, rep = fleet_health(lab, healthy_lab)
    by = nodes(rep)
    assert set(by) == {n.hostname for n in lab.nodes}
    for n in lab.with_role("nvidia"):
        checks = {c["check"]: c for c in by[n.hostname]["checks"]}
        for hw in ("gpu", "xid", "ib"):
            assert checks[hw]["status"] == "skipped", checks[hw]
            assert "fleet:hardware false" in checks[hw]["detail"]
        assert checks["slurm"]["status"] == "ok" and "gpu:" in checks["slurm"]["detail"]
        for c in ("slurmd", "munge", "time"):
            assert checks[c]["status"] == "ok", checks[c]
    for n in lab.with_role("mkv.volume"):
        checks = {c["check"]: c for c in by[n.hostname]["checks"]}
        assert checks["mounts"]["status"] == "ok"
        assert checks["mounts"]["detail"] == "8 data disks mounted"
        assert checks["mkv volume"]["status"] == "ok"
    head = {c["check"]: c for c in by[HEAD]["checks"]}
    for unit in ("dnsmasq", "nginx", "slurmctld", "munge", "mkv-training", "time"):
        assert head[unit]["status"] == "ok", head[unit]
    # the gate checks what the states keep running: head-01's provisioning.master keeps a
    # salt-master, even where the lab's minions are mastered from the host
    assert head["salt-master"]["status"] == "ok", head["salt-master"]
    stub = lab.mkv_kind == "stub"
    expected_bad = {HEAD} if stub else set()
    assert {n for n, v in by.items() if not v["healthy"]} == expected_bad
    if stub:  # the stub mkv serves nothing: exactly its HTTP checks fail, loudly
        assert all("mkv master" in p and "does not answer" in p for p in problems(by[HEAD]))
    assert rc == (5 if expected_bad else 0)


def test_finds_stopped_slurmd_and_unmounted_disk_drains_and_resumes(
        lab: Lab, healthy_lab: Path) -> None:
    target = f"{GPU},{HAND},{STOR}"
    state = healthy_lab
    try:
        scontrol(lab, "update", f"NodeName={HAND}", "State=DRAIN", "Reason=by hand: test")
        assert podman_exec(lab, GPU, "systemctl", "stop", "slurmd").returncode == 0
        unmount(lab, STOR, DISK)
        assert not mounted(lab, STOR, DISK)

        rc, rep = fleet_health(lab, state, target, "--drain")
        assert rc == 5
        by = nodes(rep)
        assert problems(by[GPU]) == ["slurmd.service: inactive (dead)"]
        assert problems(by[STOR]) == [f"data disk(s) not mounted: {DISK} (writes there land "
                                      "on the OS disk)"]
        assert by[HAND]["healthy"] and by[HAND]["action"] is None  # no --resume: untouched
        assert by[GPU]["action"]["action"] == "drain"
        assert by[STOR]["action"] is None  # not a Slurm node: reported, nothing to drain
        assert slurm_state(lab, GPU).rstrip("*") in ("drained", "draining")
        assert reason(lab, GPU) == "fleet health: slurmd.service: inactive (dead)"
        assert reason(lab, HAND) == "by hand: test"

        # still broken: --resume resumes nothing; the hand-drained node stays drained
        rc, rep = fleet_health(lab, state, target, "--resume")
        assert rc == 5
        acts = {n: v["action"] and v["action"]["action"] for n, v in nodes(rep).items()}
        assert acts == {GPU: None, HAND: "leave", STOR: None}

        # the fixes
        assert podman_exec(lab, GPU, "systemctl", "start", "slurmd").returncode == 0
        remount(lab, STOR, DISK)

        def healthy_again() -> dict[str, Any] | None:
            rc, rep = fleet_health(lab, state, target, "--resume")
            return rep if rc == 0 else None
        rep = poll("fleet health --resume to pass", healthy_again, timeout=240, interval=3)
        acts = {n: v["action"] and v["action"]["action"] for n, v in nodes(rep).items()}
        assert acts[GPU] == "resume" or slurm_state(lab, GPU) == "idle"
        assert acts[HAND] == "leave"
        poll(f"{GPU} idle", lambda: slurm_state(lab, GPU) == "idle", timeout=60)
        assert slurm_state(lab, HAND) == "drained"
        assert reason(lab, HAND) == "by hand: test"
        journal = (state / GPU / "journal.jsonl").read_text().splitlines()
        assert [json.loads(e)["event"] for e in journal][-2:] == ["drain", "resume"]
    finally:
        podman_exec(lab, GPU, "systemctl", "start", "slurmd")
        if not mounted(lab, STOR, DISK):
            remount(lab, STOR, DISK)
        for n in (GPU, HAND):
            if "drain" in slurm_state(lab, n):
                podman_exec(lab, HEAD, "scontrol", "update", f"NodeName={n}", "State=RESUME")
        poll("slurm nodes idle again", lambda: all(
            slurm_state(lab, n) == "idle" for n in (GPU, HAND)), timeout=120)


def _one_service_per_role(lab: Lab) -> list[tuple[str, str, str]]:
    """(role, node, unit): one service of each role the lab runs that has one, on the
    first lab node whose full role set (fleet.inventory.roles) includes the role. The
    units are the states' (pillar and salt/), which the gate reads through the master."""
    inv = lab.plan.inventory
    want = [("lldp", "lldpd.service"),
            ("monitoring.node", "prometheus-node-exporter.service"),
            ("monitoring.server", "prometheus.service"),
            ("compute.valkey", "compute-valkey.service"),
            ("codesync.server", "codesync-rsyncd.service"),
            ("compute.triton", "compute-tritonserver.service"),
            # not slurmctld: the gate reads every node's registration through it
            ("monitoring.slurm", "fleet-slurm-metrics.timer")]
    out = []
    used: set[str] = set()
    for role, unit in want:
        hosts = [n for n in inv.nodes.values() if n.runs(role)]
        if not hosts:
            continue  # e.g. the debian-12 lab: no compute section
        free = [n.hostname for n in hosts if n.hostname not in used] or [hosts[0].hostname]
        out.append((role, free[0], unit))
        used.add(free[0])
    return out


def test_each_roles_service_stopped_fails_the_gate_and_drains(lab: Lab,
                                                                 healthy_lab: Path) -> None:
    """One service of each role stopped at once (lldp, monitoring, compute, code sync,
    Triton, Slurm's metrics): each node reports exactly its unit, the gate exits 5, and a
    Slurm compute node among them is drained for it; restored in `finally`."""
    broken = _one_service_per_role(lab)
    assert {r for r, _, _ in broken} >= {"lldp", "monitoring.node", "monitoring.slurm"}
    by_node: dict[str, list[str]] = {}
    for _, node, unit in broken:
        by_node.setdefault(node, []).append(unit)
    target = ",".join(by_node)
    try:
        for node, units in by_node.items():
            r = podman_exec(lab, node, "systemctl", "stop", *units)
            assert r.returncode == 0, r.stderr
        rc, rep = fleet_health(lab, healthy_lab, target, "--drain")
        assert rc == 5
        got = nodes(rep)
        for node, units in by_node.items():
            bad = problems(got[node])
            for unit in units:
                assert any(p.startswith(f"{unit}: inactive") or p.startswith(f"{unit}: failed")
                           for p in bad), (node, unit, bad)
            if lab.plan.inventory.nodes[node].has("slurm.compute"):
                assert got[node]["action"]["action"] == "drain", got[node]
                assert reason(lab, node).startswith("fleet health: ")
    finally:
        for node, units in by_node.items():
            podman_exec(lab, node, "systemctl", "start", *units)

        def healthy_again() -> bool:
            rc, _rep = fleet_health(lab, healthy_lab, target, "--resume")
            return rc == 0 or (lab.mkv_kind == "stub" and all(
                "mkv master" in p for n in nodes(_rep).values() for p in problems(n)))
        poll("the stopped services back and the gate passing", healthy_again, timeout=300,
             interval=5)
