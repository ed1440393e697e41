"""Each node's stage in ``fleet status`` and on the page, from stores the real code wrote:
reports kept by fleet.discover.store (one matching a planned node by its switch port, one
matching none), burn-in results recorded and a burn-in finished by the real `fleet burnin`
CLI on the site's inventory. Nothing here states a result the code did not compute from
them: the verdicts and reasons are read back from what `fleet burnin` judged."""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest

from burnin.test_cli import NODES, record_results, site_in_burnin
from discover.reports import GOOD
from discover.sites import as_report, planned
from fleet.cli import main
from fleet.discover import edit, store
from fleet.inventory.load import parse
from fleet.master.text import shown
from fleet.page import view as page
from fleet.status import stage, view

HOSTILE_PRODUCT = "TinyBox <script>alert(1)</script> Pr\u00f6"  # markup and non-ASCII
DISCOVERED = "tbox-006"  # planned; a report heard on its port (sw1 port 6)


def _report_on(port: str, mac: str, serial: str, product: str,
               lldp: bool = True) -> Any:
    nics = copy.deepcopy(GOOD["nics"])
    nics[0]["mac"] = mac
    if lldp:
        nics[0]["lldp"]["port_id"] = port
    else:
        nics[0]["lldp"] = None
    return as_report(boot_mac=mac, nics=nics, bmc_mac="a8:a1:59:aa:00:99",
                     dmi=dict(GOOD["dmi"], serial=serial, product=product))


@pytest.fixture
def site(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The site with tbox-001..005 in burn-in (cpu-stress and smart), their results as
    tests/burnin/test_cli.py records them (tbox-004 an outlier and a failed smart, tbox-005
    with cpu-stress only), tbox-006 planned with a report kept on its port, and a report
    that matches no node."""
    inv = tmp_path / "inventory.yaml"
    inv.write_text(planned(DISCOVERED, site_in_burnin()))
    res = record_results(tmp_path, inv)
    reports = tmp_path / "reports"
    store.save(reports, _report_on("ethernet1/1/6", "0c:42:a1:aa:00:06", "TBPNEW0006",
                                   HOSTILE_PRODUCT), "10.1.3.201")
    store.save(reports, _report_on("", "0c:42:a1:aa:00:77", "NOBODY-1", "Unknown box",
                                   lldp=False), "10.1.3.202")
    return inv, res, reports


def _burnin_json(inv: Path, res: Path, capsys: pytest.CaptureFixture[str]
                 ) -> dict[str, Any]:
    capsys.readouterr()
    main(["burnin", "status", "tbox-00[1-5]", "--json", "--results", str(res),
          "-i", str(inv)])
    return {r["node"]: r for r in json.loads(capsys.readouterr().out)["nodes"]}


def test_each_stage_from_the_stores(site: tuple[Path, Path, Path],
                                    capsys: pytest.CaptureFixture[str]) -> None:
    inv_path, res, reports = site
    judged = _burnin_json(inv_path, res, capsys)
    inv = parse(inv_path.read_text(), "inventory.yaml")
    names = [*NODES, DISCOVERED, "tbox-007"]
    got = stage.stages(inv, names, reports, res)
    s = {h: got[h] for h in names}
    assert {h: x.stage for h, x in s.items()} == {
        **dict.fromkeys(NODES, "burn-in"), DISCOVERED: "discovered", "tbox-007": "active"}
    for h in NODES:  # the progress is what `fleet burnin status` judged
        j = judged[h]
        assert (s[h].detail["done"], s[h].detail["total"]) == (j["done"], j["total"])
        assert s[h].detail["verdict"] == j["burnin"]
        assert s[h].summary.startswith(f"burn-in {j['done']}/{j['total']}")
    five = s["tbox-005"].detail
    assert (five["ran"], five["remaining"]) == (["cpu-stress"], ["smart"])
    assert "remaining smart" in s["tbox-005"].text and s["tbox-005"].problem is None
    assert s["tbox-004"].problem is not None
    assert judged["tbox-004"]["failures"][0] in s["tbox-004"].problem
    assert s["tbox-001"].problem is None and "fleet burnin finish tbox-001" in s["tbox-001"].text
    # the discovered node: its report, escaped (hostile input), and what to run next
    d = s[DISCOVERED]
    assert d.detail["report"]["port"] == "sw1 port 6" and d.detail["report"]["by"] == "port"
    assert shown(HOSTILE_PRODUCT, 64) in d.text and HOSTILE_PRODUCT not in d.text
    assert "\\xf6" in d.text and f"fleet discover accept {DISCOVERED}" in d.text
    found = got[stage.SITE]
    assert [m.mac for m in found.unmatched] == ["0c:42:a1:aa:00:77"]
    assert list(found.matched) == [DISCOVERED]


def test_status_view_and_page_after_burnin_finish(site: tuple[Path, Path, Path],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`fleet burnin finish --all`: tbox-004 to maintenance with its failing check, which is
    its stage `failed` in the table, the JSON and the page."""
    inv_path, res, reports = site
    judged = _burnin_json(inv_path, res, capsys)
    assert main(["burnin", "finish", "--all", "--results", str(res),
                 "-i", str(inv_path)]) == 5  # tbox-005 still pending
    reason = edit.entry_of(inv_path.read_text(), "tbox-004")["reason"]
    inv = parse(inv_path.read_text(), "inventory.yaml")
    names = [*NODES, DISCOVERED]
    cols = {"stage": view.Column(values=stage.stages(inv, names, reports, res))}
    rows = view.rows([(h, inv.nodes[h].state, True) for h in names], cols)
    doc = view.document("", rows, cols, 0.1, [], {})
    by = {n["node"]: n for n in doc["nodes"]}
    four = by["tbox-004"]["stage"]
    assert four["stage"] == "failed" and by["tbox-004"]["state"] == "maintenance"
    check = judged["tbox-004"]["failures"][0].split(":")[0]
    assert four["check"] == check and four["summary"] == f"failed: {check}"
    assert four["reason"] == reason.removeprefix("burn-in ")
    assert by["tbox-001"]["stage"]["stage"] == "active"
    assert by["tbox-005"]["stage"]["remaining"] == ["smart"]
    assert doc["discovered"]["unmatched"][0]["mac"] == "0c:42:a1:aa:00:77"
    json.dumps(doc)  # the --json document is JSON
    table = view.table(rows, cols, 0.1, [])
    assert f"failed: {check}" in table and "burn-in 1/2" in table
    assert "discovered, unmatched: 0c:42:a1:aa:00:77" in table
    assert f"discovered: {DISCOVERED} by port" not in table  # its row says it
    without = view.rows([(h, inv.nodes[h].state, True) for h in NODES], cols)
    assert (f"discovered: {DISCOVERED} by port, report 0c:42:a1:aa:00:06 on sw1 port 6"
            in view.table(without, cols, 0.1, []))  # out of the default target: below
    assert HOSTILE_PRODUCT not in table
    # the page: the same states, the hostile product as text only in its details
    built = page.build(inv, json.loads(json.dumps(doc)), "now")
    states = {h: built["nodes"][h]["state"] for h in names}
    assert states == {"tbox-001": "ok", "tbox-002": "ok", "tbox-003": "ok",
                      "tbox-004": "failed", "tbox-005": "burn-in", DISCOVERED: "discovered"}
    assert any(n.startswith("discovered, unmatched: 0c:42:a1:aa:00:77")
               for n in built["notices"])
    fields = dict(map(tuple, built["nodes"][DISCOVERED]["fields"]))
    assert "\\xf6" in fields["stage (discovery to service)"]


def test_planned_without_a_report_and_the_page_without_a_record(
        site: tuple[Path, Path, Path]) -> None:
    """The default `fleet status` leaves planned nodes out: the page still draws a
    discovered one from the document's reports, and a failed one from the inventory."""
    inv_path, res, reports = site
    assert main(["burnin", "finish", "tbox-004", "--results", str(res),
                 "-i", str(inv_path)]) == 0
    inv = parse(inv_path.read_text(), "inventory.yaml")
    got = stage.stages(inv, ["tbox-008"], reports, res)
    assert got["tbox-008"].stage == "active"
    doc = {"nodes": [], "discovered": got[stage.SITE].as_json()}
    built = page.build(inv, doc, "now")
    assert built["nodes"][DISCOVERED]["state"] == "discovered"
    assert built["nodes"]["tbox-004"]["state"] == "failed"
    assert built["nodes"]["tbox-005"]["state"] == "burn-in"
    assert built["nodes"]["tbox-010"]["state"] == "unknown"


def test_a_store_that_cannot_be_read_is_the_source_failing(
        site: tuple[Path, Path, Path]) -> None:
    inv_path, res, reports = site
    inv = parse(inv_path.read_text(), "inventory.yaml")
    (res / "tbox-002.json").write_text('{"smart": {"check": "smart", "passed": "yes"}}')
    got = stage.stages(inv, ["tbox-002"], reports, res)
    assert got["tbox-002"].problem is not None
    assert got["tbox-002"].problem.startswith("burn-in results unreadable")
    reports.rename(reports.with_name("kept"))
    reports.write_text("not a directory")  # a misconfigured option (as root, too)
    with pytest.raises(stage.SourceError, match="not a directory"):
        stage.stages(inv, ["tbox-002"], reports, res)


def test_node_show_gives_the_burnin_results(site: tuple[Path, Path, Path],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    inv_path, res, _ = site
    judged = _burnin_json(inv_path, res, capsys)
    assert main(["node", "show", "tbox-004,tbox-005", "--json", "--burnin-results",
                 str(res), "-i", str(inv_path)]) == 0
    recs = {n["node"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    four = recs["tbox-004"]["burnin"]
    assert four["verdict"] == judged["tbox-004"]["burnin"]
    assert four["failures"] == judged["tbox-004"]["failures"]
    smart = {c["check"]: c for c in four["checks"]}["smart"]
    assert (smart["result"], smart["reason"]) == ("failed", "nvme0n1: media errors 12")
    five = {c["check"]: c for c in recs["tbox-005"]["burnin"]["checks"]}
    assert five["smart"]["result"] is None and five["cpu-stress"]["figures"] == {
        "bogo_ops_s": 1005.0}
    assert main(["node", "show", "tbox-005", "--burnin-results", str(res),
                 "-i", str(inv_path)]) == 0
    out = capsys.readouterr().out
    assert "burn-in    pending, 1/2 checks ran" in out
    assert "smart          not run yet" in out and "bogo_ops_s 1005" in out
    started = time.strftime("%Y-%m-%d", time.gmtime(1.0))
    assert started in out


def test_a_burnin_node_drained_by_the_inventory_is_expected() -> None:
    """Its drain (fleet.inventory.lifecycle.drains, as scontrol prints it) is no problem in
    burn-in; the same drain on an active node, or another drain in burn-in, is."""
    from fleet.inventory.lifecycle import DRAIN_PREFIX
    from fleet.status.sources import Slurm

    ours = Slurm("IDLE+DRAIN", f"{DRAIN_PREFIX}burn-in [root@2026-12-05T06:00:00]")
    other = Slurm("IDLE+DRAIN", "bad DIMM [root@2026-12-05T06:00:00]")
    cols = {"slurm": view.Column(values={"a": ours, "b": ours, "c": other})}
    rows = {r.node: r for r in view.rows(
        [("a", "burn-in", True), ("b", "active", True), ("c", "burn-in", True)], cols)}
    assert rows["a"].problems == []
    assert rows["b"].problems == [f"slurm IDLE+DRAIN: {ours.reason}"]
    assert rows["c"].problems == [f"slurm IDLE+DRAIN: {other.reason}"]


def test_a_profile_with_no_check_is_a_failed_burnin_that_finish_refuses(
        tmp_path: Path) -> None:
    """tinybox-pro's burn-in removed: its node in burn-in is failed in the stage column,
    and the problem says finish refuses it (not: to maintenance)."""
    inv_path = tmp_path / "inventory.yaml"
    inv_path.write_text(site_in_burnin(""))
    inv = parse(inv_path.read_text(), "inventory.yaml")
    s = stage.stages(inv, ["tbox-001"], tmp_path / "reports", tmp_path / "results")
    got = s["tbox-001"]
    assert (got.stage, got.summary) == ("burn-in", "burn-in 0/0 failed")
    assert got.problem == ("burn-in failed: profile tinybox-pro configures no burn-in checks "
                           "(`fleet burnin finish tbox-001`: refused until the profile's "
                           "burnin: lists checks)")
