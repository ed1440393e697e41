"""The stage on the fleet page in real headless Chromium: a status document made by
fleet.status (the stage source over stores the real code wrote: tests/status/
test_stage.py's site) drawn by `fleet page`; the discovered, burn-in and failed nodes in
their own states, and a report's hostile text shown as text, never markup."""

from __future__ import annotations

import json
from pathlib import Path

from fleet.cli import main
from fleet.inventory.load import parse
from fleet.status import stage, view
from page.test_page_browser import _dom
from status.test_stage import DISCOVERED, HOSTILE_PRODUCT, site  # noqa: F401 (fixture)
from support.cli import run_fleet


def test_stages_drawn_and_reports_as_text(site: tuple[Path, Path, Path],  # noqa: F811
                                          tmp_path: Path) -> None:
    inv_path, res, reports = site
    assert main(["burnin", "finish", "tbox-004", "--results", str(res),
                 "-i", str(inv_path)]) == 0
    inv = parse(inv_path.read_text(), "inventory.yaml")
    names = list(inv.nodes)
    cols = {"stage": view.Column(values=stage.stages(inv, names, reports, res))}
    rows = view.rows([(h, inv.nodes[h].state, True) for h in names], cols)
    status = tmp_path / "status.json"
    status.write_text(json.dumps(view.document("", rows, cols, 0.1, [], {})))
    out = tmp_path / "www"
    r = run_fleet("page", "--out", str(out), "--status", str(status), "-i", str(inv_path))
    assert r.returncode == 0, r.stderr
    dom = _dom(out, tmp_path, f"#node={DISCOVERED}")
    by = {a["data-node"]: a for tag, a in dom.elements
          if "data-node" in a and "data-state" in a}
    assert by[DISCOVERED]["data-state"] == "discovered"
    assert by["tbox-004"]["data-state"] == "failed"
    assert by["tbox-005"]["data-state"] == "burn-in"
    assert "state-burn-in" in by["tbox-005"]["class"].split()
    text = "".join(dom.details_text)
    assert "<script>alert(1)</script>" in text  # the product, as text
    assert HOSTILE_PRODUCT not in text and "\\xf6" in text  # escaped
    assert sum(1 for tag, _ in dom.elements if tag == "script") == \
        (out / "index.html").read_text().count("<script")
    assert "discovered, unmatched: 0c:42:a1:aa:00:77" in dom.html
