"""``fleet health`` on the small inventory against a fake master and controller
(tests/health/fakesite.py): one salt call per check across all nodes, each node's
verdict, --drain / --resume through scontrol, and the journal."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.health import checks, run
from fleet.health.decide import PREFIX
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.master.journal import Journal
from health.fakesite import ALL, GPU_NODES, HEAD, SMALL, FakeSite, lowstates
from support.compute_fixture import with_compute


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(SMALL)


def health(inv: Inventory, site: FakeSite, names: list[str] | None = None,
           **kw: object) -> run.Outcome:
    return run.gate(inv, names or ALL, site, lambda _m: None, drain=bool(kw.get("drain")),
                    resume=bool(kw.get("resume")), state_dir=Path(str(kw.get("state", "/x"))))


def by_node(out: run.Outcome) -> dict[str, checks.NodeReport]:
    return {r.node: r for r in out.reports}


def test_all_healthy_with_one_salt_call_per_check(inv: Inventory) -> None:
    site = FakeSite()
    out = health(inv, site)
    assert all(r.healthy for r in out.reports), [r.problems for r in out.reports]
    calls = site.salt_calls()
    # the states' units, hardware pillar, gpu, xid, ib, munge, time, mounts, units, one
    # mkv probe
    assert len(calls) == 10
    assert calls[0][3] == "state.show_lowstate" and calls[0][2].split(",") == ALL
    for c in calls:
        assert len(c[2].split(",")) >= 1
    time_call = next(c for c in calls if "chronyc" in " ".join(c))
    assert time_call[2].split(",") == ALL
    gpu_call = next(c for c in calls if "nvidia-smi" in " ".join(c))
    assert gpu_call[2].split(",") == GPU_NODES
    assert sum(1 for c in site.calls if c[:3] == ("scontrol", "show", "node")) == 1
    head = {f.check for f in by_node(out)[HEAD].findings}
    assert {"dnsmasq", "nginx", "slurmctld", "munge", "mkv-data", "mkv-data http",
            "salt-master", "time"} <= head
    # and what the derived roles run, from the states: lldp, monitoring
    assert {"lldpd", "prometheus-node-exporter", "prometheus", "chrony"} <= head
    stor = {f.check for f in by_node(out)["stor-1"].findings}
    assert {"mounts", "mkv volume", "mkv-volume", "time"} <= stor


def test_stopped_slurmd_and_an_unmounted_disk_are_found(inv: Inventory) -> None:
    site = FakeSite()
    site.nodes["gpu-02"].units["slurmd.service"] = "inactive"
    site.nodes["stor-1"].unmounted = ["/srv/mkv/sv03"]
    r = by_node(health(inv, site))
    assert not r["gpu-02"].healthy and r["gpu-02"].problems == ["slurmd.service: inactive (dead)"]
    assert not r["stor-1"].healthy
    assert r["stor-1"].problems == ["data disk(s) not mounted: /srv/mkv/sv03 (writes there "
                                    "land on the OS disk)"]
    assert [n for n, x in r.items() if not x.healthy] == ["gpu-02", "stor-1"]


def test_hardware_checks_skipped_and_said_so_where_fleet_hardware_is_false(
        inv: Inventory) -> None:
    site = FakeSite()
    for n in GPU_NODES:
        site.nodes[n].hardware = False
        site.nodes[n].gpus = 0  # no GPU in a container: would fail if it were checked
        site.nodes[n].ib_active = 0
    r = by_node(health(inv, site))
    for n in GPU_NODES:
        assert r[n].healthy
        skipped = {f.check: f.detail for f in r[n].findings if f.status == "skipped"}
        assert set(skipped) == {"gpu", "xid", "ib"}
        assert all("fleet:hardware false" in d for d in skipped.values())


def test_gpu_persistence_xid_ib_munge_time_problems(inv: Inventory) -> None:
    site = FakeSite()
    site.nodes["gpu-01"].gpus = 7
    site.nodes["gpu-02"].persistence = False
    site.nodes["gpu-03"].xid = [79]
    site.nodes["gpu-04"].xid = [13]  # an application's error: a warning only
    site.nodes["stor-2"].chrony = "506 Cannot talk to daemon"
    site.nodes[HEAD].munge = "unmunge: Error: Invalid credential\nSTATUS: Invalid credential (8)"
    r = by_node(health(inv, site))
    assert r["gpu-01"].problems == ["7 of 8 GPUs seen by nvidia-smi, persistence mode on"]
    assert "persistence mode off on GPU 0" in r["gpu-02"].problems[0]
    assert r["gpu-03"].problems[0].startswith("1 NVIDIA Xid error(s) since boot: Xid 79")
    assert r["gpu-04"].healthy
    assert any(f.status == "warning" and "Xid 13" in f.detail for f in r["gpu-04"].findings)
    assert r["stor-2"].problems[0].startswith("chrony: no tracking data")
    assert r[HEAD].problems == ["munge credential: Invalid credential (8)"]


def test_unsynchronised_clock_and_silent_minion(inv: Inventory) -> None:
    site = FakeSite()
    site.nodes["gpu-01"].chrony = (
        "Reference ID    : 00000000 ()\nStratum : 0\nSystem time : 0.0 seconds fast of NTP"
        " time\nLeap status     : Not synchronised\n")
    site.nodes["stor-2"].answers = False
    r = by_node(health(inv, site))
    assert r["gpu-01"].problems == ["chrony: not synchronised (reference 00000000 ())"]
    assert r["stor-2"].problems[0].startswith("salt: the minion did not answer")
    # the volume's HTTP answer comes from the master, not the node: still checked
    assert any(f.check == "mkv volume" and f.status == "ok" for f in r["stor-2"].findings)


def test_volume_not_answering_and_master_down(inv: Inventory) -> None:
    site = FakeSite()
    site.nodes["stor-1"].http = 0
    r = by_node(health(inv, site))
    assert r["stor-1"].problems == ["mkv volume http://stor-1:3001/ does not answer (from "
                                    "head-01)"]
    site.master_down = True
    with pytest.raises(checks.MasterError):
        health(inv, site)


def test_drain_then_resume_only_our_own(inv: Inventory, tmp_path: Path) -> None:
    site = FakeSite()
    site.nodes["gpu-02"].units["slurmd.service"] = "failed"
    site.nodes["gpu-03"].slurm_state, site.nodes["gpu-03"].slurm_reason = (
        "IDLE+DRAIN", "replace fan")
    site.nodes["gpu-04"].units["munge.service"] = "inactive"
    site.nodes["gpu-04"].slurm_state, site.nodes["gpu-04"].slurm_reason = (
        "IDLE+DRAIN", "operator: cable")
    out = health(inv, site, drain=True, state=tmp_path)
    acts = {a.node: a.action for a in out.actions}
    assert acts == {"gpu-02": "drain", "gpu-04": "leave"}
    assert site.nodes["gpu-02"].slurm_reason == f"{PREFIX} slurmd.service: failed (failed)"
    assert site.nodes["gpu-04"].slurm_reason == "operator: cable"
    assert [e["event"] for e in Journal(tmp_path / "gpu-02").entries()] == ["drain"]
    # fixed; --resume returns gpu-02 and leaves the operators' drains alone
    site.nodes["gpu-02"].units.clear()
    site.nodes["gpu-04"].units.clear()
    out = health(inv, site, resume=True, state=tmp_path)
    acts = {a.node: a.action for a in out.actions}
    assert acts == {"gpu-02": "resume", "gpu-03": "leave", "gpu-04": "leave"}
    assert site.nodes["gpu-02"].slurm_state == "IDLE"
    assert site.nodes["gpu-03"].slurm_state == "IDLE+DRAIN"
    assert site.nodes["gpu-04"].slurm_state == "IDLE+DRAIN"
    assert [e["event"] for e in Journal(tmp_path / "gpu-02").entries()] == ["drain", "resume"]
    updates = [c for c in site.calls if c[:2] == ("scontrol", "update")]
    assert len(updates) == 2  # one drain, one resume: nothing else was touched


def test_target_resolution() -> None:
    from fleet.inventory.target import TargetError, resolve

    names = ["head-01", "gpu-01", "gpu-02", "stor-1"]
    assert resolve("gpu-[01-02]", names) == ["gpu-01", "gpu-02"]
    assert resolve("stor-*,head-01", names) == ["head-01", "stor-1"]
    assert resolve("*", names) == names
    for bad in ("gpu-[01-03]", "nope", "x*", "gpu-01,"):
        with pytest.raises(TargetError):
            resolve(bad, names)


@pytest.fixture(scope="module")
def compute_text() -> str:
    return with_compute(SMALL.read_text())


# one service of each role the small inventory's compute section adds or derives, on a
# node that runs it (compute.worker has none: its worker is a Slurm job)
BROKEN = [("gpu-01", "lldpd.service", "lldp"),
          ("stor-2", "prometheus-node-exporter.service", "monitoring.node"),
          ("head-01", "prometheus.service", "monitoring.server"),
          ("gpu-02", "fleet-gpu-metrics.timer", "monitoring.gpu"),
          ("head-01", "compute-valkey.service", "compute.valkey"),
          ("stor-1", "codesync-rsyncd.service", "codesync.server"),
          ("stor-1", "nfs-server.service", "codesync.server"),
          ("gpu-01", "compute-tritonserver.service", "compute.triton"),
          ("gpu-02", "slurmd.service", "slurm.compute")]


@pytest.mark.parametrize("node, unit, role", BROKEN, ids=[f"{r}:{u}" for _, u, r in BROKEN])
def test_each_roles_service_down_fails_the_gate(compute_text: str, node: str, unit: str,
                                                role: str, tmp_path: Path) -> None:
    """The units come from the states over the node's full role set: each role's broken
    service fails `fleet health`, and a Slurm node is drained for it."""
    inv = load_inventory_text(compute_text, tmp_path)
    assert inv.nodes[node].runs(role)
    site = FakeSite()
    for name, states in lowstates(compute_text).items():
        site.nodes[name].lowstate = states
    site.nodes[node].units[unit] = "failed"
    out = health(inv, site, drain=True, state=tmp_path)
    r = by_node(out)
    assert [n for n, x in r.items() if not x.healthy] == [node]
    assert r[node].problems == [f"{unit}: failed (failed)"]
    acts = {a.node: a.action for a in out.actions}
    if inv.nodes[node].has("slurm.compute"):
        assert acts == {node: "drain"}
        assert site.nodes[node].slurm_reason.endswith(f"{unit}: failed (failed)")
    else:
        assert acts == {}


def test_states_that_do_not_render_or_name_no_unit_fail_the_node(inv: Inventory) -> None:
    site = FakeSite()
    site.nodes["gpu-01"].lowstate = ["Rendering SLS 'base:lldp' failed: boom"]
    site.nodes["gpu-02"].lowstate = [{"state": "service", "fun": "running",
                                      "name": "x; reboot"}]
    r = by_node(health(inv, site))
    assert r["gpu-01"].problems == ["services not checked: its states do not render: "
                                    "Rendering SLS 'base:lldp' failed: boom"]
    assert r["gpu-02"].problems == ["services not checked: states name a unit that is not "
                                    "one: 'x; reboot'"]
    assert all(r[n].healthy for n in ALL if n not in ("gpu-01", "gpu-02"))


def load_inventory_text(text: str, tmp_path: Path) -> Inventory:
    path = tmp_path / "inventory.yaml"
    path.write_text(text)
    return load_inventory(path)
