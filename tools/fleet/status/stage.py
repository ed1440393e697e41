"""Each node's stage from the loading dock to service, for ``fleet status`` and the page:

- ``planned``: in the inventory, nothing heard from it yet;
- ``discovered``: planned, and a commissioning report the endpoint kept matches it
  (fleet.discover.match): waiting for ``fleet discover accept``;
- ``burn-in``: with its progress, the checks of its profile that ran and those that
  remain (fleet.burnin.results), and the verdict against the baseline so far;
- ``failed``: left in maintenance by ``fleet burnin finish``, the failing check its
  reason (fleet.burnin.verdict.REASON_PREFIX);
- ``maintenance`` (any other reason) and ``active``.

Reports that match no node (or two machines on one port) are the site's, not a node's:
:class:`Discovered`. Everything a node sent is shown escaped (fleet.master.text.shown):
it is hostile input.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleet.burnin import results
from fleet.burnin.verdict import Verdict, failed_check, for_inventory
from fleet.discover import match, plan, store
from fleet.inventory.model import Inventory
from fleet.master.text import shown
from fleet.status.sources import SourceError

STAGES = ("planned", "discovered", "burn-in", "failed", "maintenance", "active")
SITE = ""  # the key of the site's discoveries among the nodes' stages


@dataclass(frozen=True)
class Stage:
    stage: str  # one of STAGES
    summary: str  # the table's cell: "burn-in 2/5", "failed: smart"
    text: str  # one line: where it is, and what comes next
    problem: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        return {"stage": self.stage, "summary": self.summary, "text": self.text,
                **self.detail}


@dataclass(frozen=True)
class Discovered:
    """The reports kept: matched to a planned node, matching none, or unreadable."""

    matched: dict[str, match.Match] = field(default_factory=dict)
    unmatched: list[match.Match] = field(default_factory=list)
    unreadable: dict[str, str] = field(default_factory=dict)

    def lines(self, rows: Collection[str] = ()) -> list[str]:
        """One line each, escaped: the matched whose node is not among ``rows`` (a planned
        node is out of the default target; its row, when shown, says it), the unmatched,
        and the unreadable."""
        out = [f"discovered: {node} by {m.by}, report {_report(m)}: `fleet discover accept "
               f"{node}`" for node, m in self.matched.items() if node not in rows]
        out += [f"discovered, unmatched: {_report(m)}"
               + "".join(f"; {shown(p)}" for p in m.problems) for m in self.unmatched]
        out += [f"discovered, unreadable report {mac}: {shown(why)}"
                for mac, why in self.unreadable.items()]
        return out

    def as_json(self) -> dict[str, Any]:
        return {"matched": {n: _report_json(m) for n, m in self.matched.items()},
                "unmatched": [_report_json(m) for m in self.unmatched],
                "unreadable": {mac: shown(why) for mac, why in self.unreadable.items()}}


def _port(m: match.Match) -> str | None:
    return f"{m.port[0]} port {m.port[1]}" if m.port else None


def _report(m: match.Match) -> str:
    r = m.report
    heard = f" on {_port(m)}" if m.port else " (no LLDP neighbour on its boot NIC)"
    return (f"{m.mac}{heard}, serial {shown(r.dmi.serial, 64)}, "
            f"{shown(r.dmi.product, 64)}")


def _report_json(m: match.Match) -> dict[str, Any]:
    r = m.report
    return {"mac": m.mac, "serial": shown(r.dmi.serial, 64),
            "product": shown(r.dmi.product, 64), "port": _port(m), "by": m.by,
            "problems": [shown(p) for p in m.problems]}


def _readable(root: Path, what: str) -> bool:
    """False when there is nothing yet; SourceError when it cannot be read."""
    if not root.exists():
        return False
    if not root.is_dir():
        raise SourceError(f"{root}: not a directory ({what} are kept in one)")
    if not os.access(root, os.R_OK | os.X_OK):
        raise SourceError(f"{root}: {what} not readable by this user (run as root, or "
                          "point the option at a readable copy)")
    return True


def discovered(inv: Inventory, root: Path) -> Discovered:
    """The kept reports matched to the inventory's planned nodes."""
    if not _readable(root, "the commissioning reports"):
        return Discovered()
    got = store.load_all(root)
    reports = {mac: r.report for mac, r in got.items() if isinstance(r, store.Received)}
    unreadable = {mac: r for mac, r in got.items() if isinstance(r, str)}
    planned = plan.of(inv)
    found = match.match_all(reports, planned, list(inv.raw.switches))
    mine = {}
    unmatched = []
    for m in found:
        if m.node is None:
            unmatched.append(m)
        elif planned[m.node].state == "planned":
            mine[m.node] = m  # a node past planned was accepted already: not waiting
    return Discovered(mine, unmatched, unreadable)


def _loaded(inv: Inventory, root: Path
            ) -> tuple[dict[str, dict[str, results.Result]], dict[str, str]]:
    """Every node's burn-in results, and why a node's could not be read."""
    got: dict[str, dict[str, results.Result]] = {}
    bad: dict[str, str] = {}
    if not _readable(root, "the burn-in results"):
        return got, bad
    for h in inv.nodes:
        try:
            got[h] = results.load(root, h)
        except (OSError, ValueError) as exc:
            bad[h] = str(exc)
    return got, bad


def _burnin(node: str, v: Verdict, checks: Sequence[str], ran: Sequence[str]) -> Stage:
    remaining = [c for c in checks if c not in ran]
    detail = {"verdict": v.status, "done": v.done, "total": v.total, "ran": list(ran),
              "remaining": remaining, "failures": [shown(f) for f in v.failures],
              "notes": [shown(n) for n in v.notes]}
    summary = f"burn-in {v.done}/{v.total}"
    if v.status == "failed":
        first = shown(v.failures[0])
        then = ("to maintenance" if v.total else
                "refused until the profile's burnin: lists checks")
        return Stage("burn-in", summary + " failed", f"burn-in failed: {first}",
                     f"burn-in failed: {first} (`fleet burnin finish {node}`: {then})",
                     detail)
    if v.status == "passed":
        return Stage("burn-in", summary + " passed", f"burn-in passed every check: "
                     f"`fleet burnin finish {node}` makes it active", None, detail)
    left = ", ".join(remaining) or "-"
    return Stage("burn-in", summary, f"burn-in: ran {', '.join(ran) or 'nothing yet'}; "
                 f"remaining {left}", None, detail)


def stages(inv: Inventory, names: Sequence[str], discover_root: Path,
           burnin_root: Path) -> dict[str, Any]:
    """Each named node's :class:`Stage`, and the site's :class:`Discovered` under
    :data:`SITE` (a status source: SourceError when a store cannot be read)."""
    found = discovered(inv, discover_root)
    loaded, bad = _loaded(inv, burnin_root)
    verdicts = for_inventory(inv, loaded)
    out: dict[str, Any] = {SITE: found}
    for h in names:
        out[h] = one(inv, h, found, verdicts[h], loaded.get(h, {}), bad.get(h))
    return out


def one(inv: Inventory, host: str, found: Discovered, v: Verdict,
        ran: Mapping[str, results.Result], unreadable: str | None) -> Stage:
    node = inv.nodes[host]
    if node.state == "planned":
        m = found.matched.get(host)
        if m is None:
            return Stage("planned", "planned", "planned: no report from it yet")
        return Stage("discovered", "discovered",
                     f"discovered: report from {_report(m)}, matched by {m.by}: "
                     f"`fleet discover accept {host}`", None, {"report": _report_json(m)})
    if node.state == "burn-in":
        if unreadable is not None:
            why = shown(unreadable)
            return Stage("burn-in", "burn-in ?", f"burn-in results unreadable: {why}",
                         f"burn-in results unreadable: {why}")
        checks = list(inv.raw.profiles[node.profile_name].burnin)
        return _burnin(host, v, checks, [c for c in checks if c in ran])
    check = failed_check(node.state, node.reason)
    if check is not None:
        name = check.split(":", 1)[0]
        return Stage("failed", f"failed: {shown(name, 40)}",
                     f"failed burn-in: {shown(check)}",
                     None, {"check": shown(name, 40), "reason": shown(check),
                            "failures": [shown(f) for f in v.failures]})
    if node.state == "maintenance":
        return Stage("maintenance", "maintenance",
                     f"maintenance: {shown(node.reason or '')}")
    return Stage(node.state, node.state, node.state)
