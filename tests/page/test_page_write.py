"""fleet page without a browser: the view's tolerance of any status document (the
contract, fleet.page.contract), the layout derived from the rack placement, the files
written atomically and only when changed, and the verb's errors."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.inventory.racks import layout as rack_layout
from fleet.page import contract, layout, view, write
from support.cli import SMALL, run_fleet

NOW = dt.datetime(2026, 12, 2, 1, 0, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(SMALL)


def _states(inv: Inventory, doc: Any) -> dict[str, str]:
    return {h: v["state"] for h, v in view.build(inv, doc, "t")["nodes"].items()}


@pytest.mark.parametrize("doc", [None, [], "x", 3, {}, {"nodes": None}, {"nodes": "x"},
                                 {"nodes": [1, "a", None, {"status": "ok"}]}])
def test_any_document_leaves_every_node_unknown(inv: Inventory, doc: Any) -> None:
    states = _states(inv, doc)
    assert set(states) == set(inv.nodes)
    assert set(states.values()) <= {"unknown", "planned", "maintenance"}


def test_state_precedence_and_missing_fields(inv: Inventory) -> None:
    a, b, c, d, e, f = list(inv.nodes)[:6]
    doc = {"nodes": {
        a: {"status": "ok"},
        b: {"status": "ok", "minion": "silent"},
        c: {"status": "problem", "minion": {"answering": False}, "state": "maintenance"},
        d: {"status": "problem", "problems": [{"text": "disk <b>"}, "x" * 1000]},
        e: {"status": "bogus", "minion": "answers"},
        f: {"state": "planned", "status": "ok"},
    }}
    v = view.build(inv, doc, "t")["nodes"]
    assert [v[h]["state"] for h in (a, b, c, d, e, f)] == [
        "ok", "minion-down", "maintenance", "problem", "unknown", "planned"]
    assert v[d]["problems"][0] == "disk <b>"  # text: the page escapes, the view keeps it
    assert len(v[d]["problems"][1]) == view.CLIP
    assert ["minion", "silent"] in v[b]["fields"]
    assert v[a]["fields"] == []  # nothing made up for missing fields


def test_inventory_maintenance_wins_over_a_status_without_state(tmp_path: Path) -> None:
    text = SMALL.read_text()
    inv = load_inventory(SMALL)
    host = next(iter(inv.nodes))
    assert f"  {host}: {{" in text
    text = text.replace(f"  {host}: {{", f"  {host}: {{state: maintenance, reason: fan, ", 1)
    path = tmp_path / "inv.yaml"
    path.write_text(text)
    inv2 = load_inventory(path)
    assert inv2.nodes[host].state == "maintenance"
    assert _states(inv2, {"nodes": [{"node": host, "status": "ok"}]})[host] == "maintenance"


def test_unknown_nodes_listed_not_drawn(inv: Inventory) -> None:
    out = view.build(inv, {"nodes": [{"node": "ghost-1", "status": "ok"}]}, "t")
    assert out["unknown_nodes"] == ["ghost-1"]
    assert "ghost-1" not in out["nodes"]


def test_times_read_as_utc_and_age_and_empty_values_are_left_out() -> None:
    ts = 1764637200.0  # 2025-12-02 01:00:00 UTC
    last = {"verb": "apply", "ts": ts, "status": "ok", "ok": True, "summary": "",
            "ago": "3d ago"}
    shown = view.text(last)
    assert shown.startswith("verb: apply, ts: 2025-12-02 01:00:00 UTC (")
    assert shown.endswith(" ago), status: ok, ok: yes")
    assert "1764637200" not in shown and "summary" not in shown and "3d ago" not in shown
    assert view.text({"summary": "2 changed"}) == "summary: 2 changed"


def test_layout_is_the_rack_placement(inv: Inventory) -> None:
    data = layout.build(inv)
    drawn = {d["name"]: (r["name"], d["unit"], d["height"])
             for row in data["rows"] for r in row["racks"] for d in r["devices"]}
    want = {p.name: (p.rack, p.unit, p.height) for p in rack_layout(inv.raw, inv.nodes).placed}
    assert drawn == want
    nodes = [n for n, (_, _, _) in drawn.items() if n in inv.nodes] + data["unplaced"]
    assert sorted(nodes) == sorted(inv.nodes)
    assert set(data["nodes"]) == set(inv.nodes)
    assert data["states"] == [list(s) for s in contract.STATES]


def test_write_is_atomic_and_rewrites_nothing_unchanged(inv: Inventory, tmp_path: Path) -> None:
    out = tmp_path / "www"
    doc = {"nodes": []}
    first = write.write(out, inv, doc, NOW)
    assert first[-1] == "view.json"
    assert sorted(p.name for p in out.iterdir()) == sorted(first)  # no temporary file left
    inodes = {p.name: p.stat().st_ino for p in out.iterdir()}
    assert write.write(out, inv, doc, NOW) == []
    assert {p.name: p.stat().st_ino for p in out.iterdir()} == inodes
    assert write.write(out, inv, {"nodes": [{"node": "x"}]}, NOW) == ["status.json",
                                                                    "view.json"]
    assert oct(out.joinpath("view.json").stat().st_mode & 0o777) == "0o644"


def test_static_page_uses_no_markup_sinks() -> None:
    js = (write.STATIC / "page.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in js
    html = (write.STATIC / "index.html").read_text()
    assert "script-src 'self'" in html


def test_cli_status_file_errors(tmp_path: Path) -> None:
    missing = tmp_path / "none.json"
    r = run_fleet("page", "-i", str(SMALL), "--out", str(tmp_path / "w"), "--status",
                  str(missing))
    assert r.returncode == 4 and str(missing) in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    r = run_fleet("page", "-i", str(SMALL), "--out", str(tmp_path / "w"), "--status", str(bad))
    assert r.returncode == 4 and "not a JSON document" in r.stderr
    assert not (tmp_path / "w").exists()  # nothing written


def test_cli_writes_the_page(tmp_path: Path) -> None:
    st = tmp_path / "s.json"
    st.write_text(json.dumps({"nodes": [], "generated": "2026-12-02T00:00:00Z"}))
    r = run_fleet("page", "-i", str(SMALL), "--out", str(tmp_path / "w"), "--status", str(st),
                  "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["ok"] is True
    got = json.loads((tmp_path / "w" / "view.json").read_text())
    assert got["collected"] == "2026-12-02T00:00:00Z"
    assert got["collected_ts"] == 1796169600.0  # the page shows it in UTC with its age


def test_cli_without_status_runs_fleet_status(tmp_path: Path) -> None:
    """Without --status the verb runs `fleet status --json` on the same inventory, and its
    document is the page's."""
    r = run_fleet("page", "-i", str(SMALL), "--out", str(tmp_path / "w"), timeout=600)
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "w" / "status.json").read_text())
    assert sorted(n["node"] for n in doc["nodes"]) == sorted(load_inventory(SMALL).nodes)
    assert set(doc["sources"]) >= {"key", "minion", "boot"}  # fleet status's own document


def test_help_names_the_exit_codes_and_the_readme_the_verb() -> None:
    r = run_fleet("page", "--help")
    assert r.returncode == 0 and "exit codes: 0 written" in r.stdout
    assert "| `page " in (SMALL.parents[2] / "README.md").read_text()


def test_site_wide_lines_are_notices(inv: Inventory) -> None:
    doc = {"nodes": [], "site_alerts": [{"name": "SlurmControllerDown", "summary": "x"}, 3],
           "sources": {"slurm": {"ok": False, "error": "sinfo: timeout"}, "key": {"ok": True},
                       "junk": "x"},
           "notes": ["2 planned left out"]}
    assert view.build(inv, doc, "t")["notices"] == [
        "site alert SlurmControllerDown: x", "site alert 3", "unknown slurm: sinfo: timeout",
        "note: 2 planned left out"]
    assert view.build(inv, {"sources": [], "notes": "x", "site_alerts": {}}, "t")[
        "notices"] == []


def test_the_collectors_ages_are_a_notice_and_not_connected_is_minion_down(
        inv: Inventory) -> None:
    doc = {"nodes": [{"node": "gpu-01", "status": "problem", "minion": "not connected"}],
           "sources": {"power": {"ok": True, "age_s": 42.0},
                       "key": {"ok": False, "error": "stale: last answer 2m ago",
                               "age_s": 130.0},
                       "apply": {"ok": True, "age_s": None},
                       "boot": {"ok": True, "age_s": float("inf")}, "slurm": {"age_s": True}}}
    assert view.build(inv, doc, "t")["notices"] == [
        "unknown key: stale: last answer 2m ago", "from the collector: power 42s ago, key 2m ago"]
    assert _states(inv, doc)["gpu-01"] == "minion-down"
