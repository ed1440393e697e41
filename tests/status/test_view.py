"""``fleet status``'s joining and judging (fleet.status.view): each source's value in the
row, each problem named, problems first, unknown columns with their reason, the JSON
document. Pure: the sources' answers are given as they return them."""

from __future__ import annotations

from typing import Any

from fleet.lastrun import Last
from fleet.monitoring.alerts import Alert
from fleet.status.sources import Power, Slurm, Work
from fleet.status.view import Column, document, rows, table

NOW = 1_800_000_000.0
NODES = [("head-01", "active", False), ("gpu-01", "active", True),
         ("gpu-02", "maintenance", True), ("gpu-03", "active", True)]


def healthy(**over: Column) -> dict[str, Column]:
    names = [n for n, _, _ in NODES]
    cols = {
        "power": Column({n: Power("on") for n in names}),
        "boot": Column(dict.fromkeys(names, "local")),
        "key": Column(dict.fromkeys(names, "accepted")),
        "minion": Column(dict.fromkeys(names, True)),
        "slurm": Column({n: Slurm("IDLE", "") for n in names if n != "head-01"}),
        "apply": Column({n: Last("apply", NOW - 7200, "ok", True, "") for n in names}),
        "health": Column(dict.fromkeys(names)),
        "work": Column({n: Work() for n in names}),
        "alerts": Column({n: [] for n in names} | {"": []}),
    }
    return cols | over


def by_node(cols: dict[str, Column]) -> dict[str, Any]:
    return {r.node: r for r in rows(NODES, cols, now=NOW)}


def test_all_sources_fine_every_node_ok_in_inventory_order() -> None:
    rs = rows(NODES, healthy(), now=NOW)
    assert [(r.node, r.status, r.problems) for r in rs] == [
        (n, "ok", []) for n, _, _ in NODES]
    gpu = rs[1].as_json()
    assert gpu["power"] == {"state": "on", "error": None}
    assert gpu["boot"] == {"mode": "local", "error": None}
    assert (gpu["key"], gpu["minion"]) == ("accepted", "answers")
    assert gpu["slurm"] == {"state": "IDLE", "reason": ""}
    assert gpu["apply"]["status"] == "ok" and gpu["apply"]["ago"] == "2h ago"
    assert gpu["health"] is None and rs[0].as_json()["slurm"] is None


def test_each_problem_is_named_and_problem_nodes_come_first() -> None:
    base = healthy()
    base["power"].values["gpu-03"] = Power(None, "no answer within 15s (--deadline)")
    base["boot"].values["gpu-03"] = "install"
    base["key"].values["gpu-03"] = "pending"
    base["minion"].values["gpu-03"] = False
    base["slurm"].values["gpu-03"] = Slurm("DOWN*+DRAIN", "Not responding")
    base["apply"].values["gpu-01"] = Last("apply", NOW - 90, "failed", False,
                                          "base-x (file.managed): no such file")
    base["health"].values["gpu-01"] = Last("health", NOW - 30, "unhealthy", False,
                                           "gpu: 7 of 8 GPUs")
    base["work"].values["gpu-01"] = Work(unfinished="reinstall r1 unfinished at power")
    base["alerts"].values["gpu-01"] = [Alert("NodeDown", "firing", "gpu-01", "critical",
                                             "node_exporter down", "t")]
    rs = rows(NODES, base, now=NOW)
    assert [r.node for r in rs] == ["gpu-01", "gpu-03", "head-01", "gpu-02"]
    got = {r.node: r.problems for r in rs}
    assert got["gpu-03"] == [
        "BMC: no answer within 15s (--deadline)",
        "boot mode install (its next PXE boot reinstalls it; `fleet pxe set gpu-03 local` "
        "if none is meant)",
        "minion key pending (not accepted on the master)",
        "minion does not answer test.ping", "slurm DOWN*+DRAIN: Not responding"]
    assert got["gpu-01"] == [
        "last apply failed (1m ago): base-x (file.managed): no such file",
        "last health unhealthy (30s ago): gpu: 7 of 8 GPUs",
        "reinstall r1 unfinished at power", "alert NodeDown (critical): node_exporter down"]


def test_install_drained_and_silent_are_no_problem_while_a_reinstall_holds_the_node(
        ) -> None:
    base = healthy()
    base["boot"].values["gpu-01"] = "install"
    base["minion"].values["gpu-01"] = False
    base["slurm"].values["gpu-01"] = Slurm("DOWN+DRAIN", "fleet reinstall (r1)")
    base["work"].values["gpu-01"] = Work(running="fleet reinstall (pid 42)")
    row = by_node(base)["gpu-01"]
    assert row.status == "ok", row.problems
    assert row.as_json()["work"] == {"running": "fleet reinstall (pid 42)", "unfinished": None}


def test_maintenance_node_may_be_drained_off_and_silent() -> None:
    base = healthy()
    base["power"].values["gpu-02"] = Power("off")
    base["minion"].values["gpu-02"] = False
    base["slurm"].values["gpu-02"] = Slurm("IDLE+DRAIN", "fleet-inventory: PSU swap")
    base["power"].values["gpu-03"] = Power("off")
    got = by_node(base)
    assert got["gpu-02"].status == "ok"
    assert got["gpu-03"].problems == ["powered off"]


def test_a_failed_source_is_unknown_with_its_reason_and_the_others_still_show() -> None:
    cols = healthy(slurm=Column(error="`scontrol show node` exited 1: connection refused"))
    cols["key"].values["gpu-01"] = "missing"
    got = by_node(cols)
    assert got["gpu-03"].status == "unknown" and got["gpu-03"].unknown == ["slurm"]
    assert got["gpu-03"].as_json()["slurm"] == {
        "unknown": "`scontrol show node` exited 1: connection refused"}
    assert got["gpu-03"].as_json()["key"] == "accepted"
    assert got["gpu-01"].status == "problem"  # a problem wins over an unknown column
    assert got["head-01"].status == "ok"  # no Slurm compute node: not asked of it
    text = table(rows(NODES, cols, now=NOW), cols, 1.0, [])
    assert "unknown slurm: `scontrol show node` exited 1: connection refused" in text


def test_a_slurm_node_slurmctld_does_not_know_is_a_problem() -> None:
    cols = healthy()
    del cols["slurm"].values["gpu-03"]
    assert by_node(cols)["gpu-03"].problems == ["slurm does not know this node"]


def test_a_skipped_source_is_neither_unknown_nor_in_the_table() -> None:
    cols = healthy(power=Column(skipped="--no-power"))
    rs = rows(NODES, cols, now=NOW)
    assert all(r.status == "ok" and r.fields["power"] is None for r in rs)
    head = table(rs, cols, 1.0, []).splitlines()[0].split()
    assert "power" not in head and "boot" in head
    assert "not asked power: --no-power" in table(rs, cols, 1.0, [])


def test_the_json_document() -> None:
    cols = healthy()
    cols["minion"].values["gpu-01"] = False
    cols["alerts"].values[""] = [Alert("SlurmctldDown", "firing", "", "critical", "s", "t")]
    rs = rows(NODES, cols, now=NOW)
    doc = document("*", rs, cols, 2.345, ["a note"], {"planned": ["gpu-09"]})
    assert doc["ok"] is False and doc["target"] == "*" and doc["seconds"] == 2.35
    assert doc["counts"] == {"ok": 3, "problem": 1, "unknown": 0}
    assert set(doc["sources"]) == set(cols) and doc["sources"]["key"]["ok"] is True
    assert doc["left_out"] == {"planned": ["gpu-09"]} and doc["notes"] == ["a note"]
    assert doc["site_alerts"] == [{"name": "SlurmctldDown", "severity": "critical",
                                   "summary": "s"}]
    first = doc["nodes"][0]
    assert first["node"] == "gpu-01" and first["status"] == "problem"
    assert first["problems"] == ["minion does not answer test.ping"]
    assert set(first) >= {"node", "status", "problems", "state", "power", "boot", "key",
                          "minion", "slurm", "apply", "health", "work", "alerts"}


def test_the_table_lists_problems_under_their_node_first() -> None:
    cols = healthy()
    cols["boot"].values["gpu-03"] = "install"
    lines = table(rows(NODES, cols, now=NOW), cols, 1.5, []).splitlines()
    assert lines[0].split()[:3] == ["node", "state", "power"]
    assert lines[1].startswith("gpu-03 ") and lines[1].rstrip().endswith("problem")
    assert lines[2].strip().startswith("! boot mode install (its next PXE boot")
    assert lines[-1] == "4 node(s): 3 ok, 1 with problems, 0 unknown; 1.5s"
