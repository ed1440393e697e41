"""The cabling facts on the fleet page (fleet/page/cabling.py): a `fleet cabling --json`
document, as fleet.cabling.report writes it, shown in each node's details, and a NIC not
where the inventory says colouring its node as a problem; any other shape tolerated."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fleet.cabling import report
from fleet.cabling.compare import Finding
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.page import cabling, view
from support.cli import SMALL, run_fleet

NODES = ["gpu-01", "gpu-02", "gpu-03", "stor-1"]


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(SMALL)


def wiring() -> dict[str, Any]:
    findings = [
        Finding("gpu-01", "prov", "wrong_port", ("sw1", 1), "sw1", 2, "ethernet1/1/2"),
        Finding("gpu-02", "prov", "ok", ("sw1", 2), "sw1", 2, "ethernet1/1/2"),
        Finding("gpu-03", "prov", "not_observed", ("sw1", 3)),
        Finding("stor-1", "prov", "wrong_switch", ("sw1", 10), "evil\x1b[2J<b>x</b>", 3, "p3"),
    ]
    return report.document("*", findings, NODES, {"gpu-03": "the minion did not answer"},
                           1.0, {})


def status(*ok: str, maintenance: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"nodes": [{"node": n, "status": "ok", "state": "active"} for n in ok]
            + [{"node": n, "status": "ok", "state": "maintenance"} for n in maintenance]}


def test_a_miscabled_node_is_a_problem_with_its_ports(inv: Inventory) -> None:
    got = view.build(inv, status("gpu-01", "gpu-02", "gpu-03", "stor-1"), "t", wiring())
    nodes = got["nodes"]
    assert nodes["gpu-01"]["state"] == "problem"
    assert nodes["gpu-01"]["problems"] == [
        "cabling: prov wrong port: expected sw1 port 1, found sw1 port 2"]
    assert [cabling.LABEL, "problems; prov wrong port: expected sw1 port 1, found sw1 port 2"] \
        in nodes["gpu-01"]["fields"]
    assert nodes["gpu-02"]["state"] == "ok" and nodes["gpu-02"]["problems"] == []
    assert [cabling.LABEL, "ok"] in nodes["gpu-02"]["fields"]
    # not reported: said in the details, not a problem of the node's own
    assert nodes["gpu-03"]["state"] == "ok"
    assert [cabling.LABEL, "unknown (the minion did not answer); prov not observed: "
            "expected sw1 port 3, found -"] in nodes["gpu-03"]["fields"]
    assert nodes["stor-1"]["state"] == "problem"
    assert "\x1b" not in json.dumps(nodes["stor-1"])  # view.text made it one clean line
    assert "gpu-04" in nodes and not any(f[0] == cabling.LABEL
                                         for f in nodes["gpu-04"]["fields"])


def test_maintenance_stays_maintenance(inv: Inventory) -> None:
    got = view.build(inv, status(maintenance=("gpu-01",)), "t", wiring())
    assert got["nodes"]["gpu-01"]["state"] == "maintenance"
    assert got["nodes"]["gpu-01"]["problems"]  # said all the same


@pytest.mark.parametrize("doc", [None, [], "x", 3, {}, {"nodes": []}, {"nodes": {"gpu-01": 3}},
                                 {"nodes": {"gpu-01": {}}, "findings": [None, 1, {"node": 2}]},
                                 {"nodes": {"gpu-01": {"verdict": "problems"}},
                                  "findings": [{"node": "gpu-01", "status": "missing",
                                                "expected": "x", "found": [1]}]}])
def test_any_document_is_tolerated(inv: Inventory, doc: Any) -> None:
    got = view.build(inv, status("gpu-01"), "t", doc)
    assert set(got["nodes"]) == set(inv.nodes)


def test_cli_shows_a_cabling_document_and_survives_a_bad_one(tmp_path: Path) -> None:
    st, cab = tmp_path / "s.json", tmp_path / "c.json"
    st.write_text(json.dumps(status("gpu-01", "gpu-02")))
    cab.write_text(json.dumps(wiring()))
    out = tmp_path / "w"
    r = run_fleet("page", "-i", str(SMALL), "--out", str(out), "--status", str(st),
                  "--cabling", str(cab))
    assert r.returncode == 0, r.stderr
    got = json.loads((out / "view.json").read_text())["nodes"]
    assert got["gpu-01"]["state"] == "problem"
    cab.write_text("not json")
    r = run_fleet("page", "-i", str(SMALL), "--out", str(out), "--status", str(st),
                  "--cabling", str(cab))
    assert r.returncode == 0 and "cabling not shown" in r.stderr, r.stderr
    got = json.loads((out / "view.json").read_text())["nodes"]
    assert got["gpu-01"]["state"] == "ok"
