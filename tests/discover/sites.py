"""The site's own inventory.yaml, varied for the discovery tests."""

from __future__ import annotations

import re
from pathlib import Path

from discover.reports import report
from fleet.discover import match, plan, store
from fleet.discover.report import Report, parse

ROOT = Path(__file__).resolve().parents[2]
SITE = (ROOT / "inventory.yaml").read_text(encoding="utf-8")


def entry_line(text: str, host: str) -> str:
    m = re.search(rf"^  {host}: .*\n", text, re.MULTILINE)
    assert m, host
    return m.group(0)


def with_burnin(block: str, text: str = SITE, profile: str = "tinybox-pro") -> str:
    """The site with ``profile``'s ``burnin:`` block replaced by ``block`` (its check
    lines, indented under it: ``"      smart: {seconds: 0}\n"``; empty: no burn-in)."""
    m = re.search(rf"^  {profile}:\n(?:    .*\n)*?(    burnin:\n(?:      .*\n)+)", text,
                  re.MULTILINE)
    assert m, profile
    new = "    burnin:\n" + block if block else ""
    return text[:m.start(1)] + new + text[m.end(1):]


def without(host: str, text: str = SITE) -> str:
    """The site with ``host``'s entry removed: a planned machine nobody entered yet."""
    return text.replace(entry_line(text, host), "")


def planned(host: str, text: str = SITE) -> str:
    """The site with ``host`` in state planned (its hand-typed facts kept)."""
    line = entry_line(text, host)
    return text.replace(line, line.replace(": {", ": {state: planned, ", 1))


def as_report(**changes: object) -> Report:
    return parse(__import__("json").dumps(report(**changes)).encode())


def found(text: str, *reports: Report) -> tuple[object, dict[str, plan.Planned],
                                                 list[match.Match]]:
    inv, planned_ = plan.load(text, "inventory.yaml")
    got = match.match_all({r.boot_mac: r for r in reports}, planned_, list(inv.raw.switches))
    return inv, planned_, got


__all__ = ["store"]
