"""``fleet discover accept``: a matched report's facts written into its node's entry.

Refused, and named, before anything is written: a node no report matches, or two reports
that match one node (two machines on one port); a MAC, serial, BMC MAC or HCA GUID the
inventory gives another node; a node past ``planned`` whose entered facts differ (a swap
is an operator's edit); a report without the BMC MAC a new entry needs. What is left is
edited into the text (fleet.discover.edit) and the whole file validated by the inventory's
loader; an invalid result writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from fleet.discover import edit, plan
from fleet.discover.match import Match
from fleet.discover.plan import Planned
from fleet.discover.report import Report
from fleet.inventory.model import Inventory
from fleet.master.text import shown

# where an accepted machine goes next (fleet.inventory.lifecycle: planned -> burn-in ->
# active)
NEXT_STATE = "burn-in"

Verdict = Literal["accepted", "unchanged", "refused"]


@dataclass(slots=True)
class Outcome:
    node: str
    mac: str | None
    verdict: Verdict
    reasons: list[str] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)


def facts_of(report: Report, inv: Inventory, node: str) -> dict[str, Any]:
    """What the report says of the node, in the inventory's fields."""
    n = inv.nodes[node]
    facts: dict[str, Any] = {"serial": report.dmi.serial, "mac": report.boot_mac}
    if report.bmc_mac is not None:
        facts["bmc_mac"] = report.bmc_mac
    guids = report.hca_guids()
    if guids and any(i.kind == "infiniband" for i in n.interfaces.values()):
        facts["ib_guid"] = guids[0]
    hw: dict[str, int] = {"gpus": report.gpus(), "cpu_sockets": report.cpus.sockets,
                          "cores_per_socket": report.cpus.cores_per_socket}
    dimms = sum(d.size_mb for d in report.memory.dimms)
    if dimms:
        hw["memory_gb"] = round(dimms / 1024)
    facts["hardware"] = hw
    return facts


_OWNED = (("mac", "mac", "MAC"), ("serial", "serial", "serial"),
          ("bmc_mac", "bmc_mac", "BMC MAC"), ("ib_guid", "ib_guid", "HCA GUID"))


def _conflicts(node: str, facts: Mapping[str, Any], planned: Mapping[str, Planned]) -> list[str]:
    out = []
    for fact, attr, what in _OWNED:
        value = facts.get(fact)
        if value is None:
            continue
        for other in planned.values():
            theirs = getattr(other, attr)
            if other.hostname != node and theirs is not None and \
                    str(theirs).lower() == str(value).lower():
                out.append(f"{what} {shown(str(value))} is {other.hostname}'s")
    return out


def _refusals(node: str, facts: Mapping[str, Any], p: Planned,
              planned: Mapping[str, Planned]) -> list[str]:
    why = _conflicts(node, facts, planned)
    if not p.entered and "bmc_mac" not in facts:
        why.append("the report has no BMC MAC (no local IPMI interface answered): enter "
                   f"nodes.{node}.bmc_mac by hand first")
    if p.entered and p.state not in ("planned", NEXT_STATE):
        differ = [f for f in ("serial", "mac", "bmc_mac", "ib_guid")
                  if f in facts and getattr(p, f) is not None
                  and str(getattr(p, f)).lower() != str(facts[f]).lower()]
        if differ:
            why.append(f"{node} is {p.state} and its {', '.join(differ)} differ: a replaced "
                       "machine is an operator's edit of inventory.yaml")
    return why


def _chosen(matches: Iterable[Match], nodes: list[str] | None
            ) -> tuple[dict[str, Match], list[Outcome]]:
    by_node: dict[str, list[Match]] = {}
    for m in matches:
        if m.node is not None and not m.problems:
            by_node.setdefault(m.node, []).append(m)
    refused = []
    chosen: dict[str, Match] = {}
    for node in (nodes if nodes is not None else sorted(by_node)):
        found = by_node.get(node, [])
        if not found:
            refused.append(Outcome(node, None, "refused", ["no report matches it"]))
        elif len(found) > 1:
            macs = ", ".join(m.mac for m in found)
            refused.append(Outcome(node, None, "refused", [f"two machines match it: {macs}"]))
        else:
            chosen[node] = found[0]
    return chosen, refused


def accept(text: str, inv: Inventory, planned: Mapping[str, Planned],
           matches: Iterable[Match], nodes: list[str] | None) -> tuple[str, list[Outcome]]:
    """The edited text and one outcome per node (``nodes`` None: every matched one)."""
    chosen, outcomes = _chosen(matches, nodes)
    new = text
    for node, m in chosen.items():
        p = planned[node]
        facts = facts_of(m.report, inv, node)
        why = _refusals(node, facts, p, planned)
        if why:
            outcomes.append(Outcome(node, m.mac, "refused", why, facts))
            continue
        if p.state == "planned":
            facts["state"] = NEXT_STATE
        if p.entered and edit.entry_of(new, node) == {**(edit.entry_of(new, node) or {}),
                                                       **facts}:
            outcomes.append(Outcome(node, m.mac, "unchanged", [], facts))
            continue
        new = edit.set_node(new, node, facts)
        outcomes.append(Outcome(node, m.mac, "accepted", [], facts))
    return new, sorted(outcomes, key=lambda o: edit._natural(o.node))


def validate(text: str, file: str) -> None:
    """The edited file as the loader sees it: an InventoryError when it is not valid."""
    plan.load(text, file)
