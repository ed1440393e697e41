"""The fleet page in real headless Chromium (the OS package; tools/install-host-deps.sh):
`fleet page` writes it for the real inventory with a FIXTURE status document
(support.page_status), a real HTTP server serves it, and the DOM after the page's script
ran holds every node once, in its state; the screenshot is kept in artifacts/."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from support import chromium
from support.cli import ROOT, run_fleet
from support.page_status import BAD, DOWN, HOSTILE, MAINT, fixture_status

ARTIFACTS = ROOT / "artifacts"


class _Dom(HTMLParser):
    """Every element's tag and attributes, and the text inside the #details panel."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.details_text: list[str] = []
        self._depth = 0
        self.html = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        self.elements.append((tag, a))
        if self._depth or a.get("id") == "details":
            self._depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self._depth:
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.details_text.append(data)


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(ROOT / "inventory.yaml")


@pytest.fixture(scope="module")
def page(inv: Inventory, tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("page")
    status = tmp / "status.json"
    status.write_text(json.dumps(fixture_status(inv, MAINT, DOWN, BAD)))
    out = tmp / "www"
    r = run_fleet("page", "--out", str(out), "--status", str(status))
    assert r.returncode == 0, r.stderr
    return out


def _dom(page: Path, tmp: Path, fragment: str = "") -> _Dom:
    with chromium.serve(page) as url:
        html = chromium.dump_dom(url + "index.html" + fragment, tmp / "profile")
    dom = _Dom()
    dom.feed(html)
    dom.html = html
    return dom


def test_every_node_drawn_once_in_its_state(inv: Inventory, page: Path,
                                            tmp_path: Path) -> None:
    assert {MAINT, DOWN, BAD} <= set(inv.nodes)
    assert inv.nodes[MAINT].state == "active"  # maintenance comes from the status document
    dom = _dom(page, tmp_path)
    boxes = [a for tag, a in dom.elements if tag == "button" and "data-node" in a]
    seen = Counter(a["data-node"] for a in boxes)
    assert set(seen) == set(inv.nodes), set(inv.nodes) ^ set(seen)
    assert all(n == 1 for n in seen.values()), [h for h, n in seen.items() if n != 1]
    by = {a["data-node"]: a for a in boxes}
    assert by[MAINT]["data-state"] == "maintenance"
    assert "state-maintenance" in by[MAINT]["class"].split()
    assert by[DOWN]["data-state"] == "minion-down"
    assert "state-minion-down" in by[DOWN]["class"].split()
    assert by[BAD]["data-state"] == "problem"
    others = Counter(a["data-state"] for h, a in by.items() if h not in (MAINT, DOWN, BAD))
    want = Counter("planned" if n.state == "planned" else "maintenance"
                   if n.state == "maintenance" else "ok"
                   for h, n in inv.nodes.items() if h not in (MAINT, DOWN, BAD))
    assert others == want
    # each rack of the inventory, and a unit on every node placed in one
    racks = {a["data-rack"] for tag, a in dom.elements if "data-rack" in a}
    assert racks == set(inv.raw.racks)
    assert any(a.get("id") == "notices" for _, a in dom.elements)
    # times as people read them: UTC and the age, counted when the page drew them
    assert re.search(r"last refreshed: status collected 2026-12-02 01:30:00 UTC \(\d+[dhms] "
                     r"ago\), page written \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+[dhms] "
                     r"ago\); loaded \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC<", dom.html), dom.html[:400]
    assert "unknown alerts: prometheus: &lt;img" in dom.html  # a notice, as text


def test_details_of_a_node_are_text_never_markup(page: Path, tmp_path: Path) -> None:
    dom = _dom(page, tmp_path, f"#node={BAD}")
    details = [a for tag, a in dom.elements if a.get("id") == "details"]
    assert details and details[0].get("data-node") == BAD
    text = "".join(dom.details_text)
    assert HOSTILE in text  # shown, as text
    assert not any(tag == "img" for tag, _ in dom.elements)  # never parsed as markup
    assert "10.1." in text  # its inventory facts: the provisioning address


def test_screenshot_kept_as_artefact(page: Path, tmp_path: Path) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    with chromium.serve(page) as url:
        shot = chromium.screenshot(url + f"index.html#node={DOWN}",
                                   tmp_path / "fleet-page.png", tmp_path / "profile")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    shutil.copyfile(shot, ARTIFACTS / "fleet-page.png")
