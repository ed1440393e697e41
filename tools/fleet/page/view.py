"""``view.json``: each node's page state and its status fields as text, from a
``fleet status --json`` document (contract.py) and the inventory's lifecycle states.

Tolerant: a missing field is left out, a node without a record is ``unknown``, a value
of any JSON type becomes text (clipped). The page only draws this; it never interprets
the status document itself.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

from fleet.inventory.model import Inventory
from fleet.master.text import age, stamp
from fleet.page import cabling
from fleet.page import contract as c

CLIP = 400  # characters of one value or problem shown
MAX_PROBLEMS = 50


def text(value: Any) -> str:
    """A status value as one line of text."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        out = value
    elif isinstance(value, int | float):
        out = str(value)
    elif isinstance(value, dict):
        out = ", ".join(f"{k}: {_value(k, v)}" for k, v in value.items()
                        if v not in (None, "", [], {})
                        and not (k == c.AGE and c.TIMES & value.keys()))
    elif isinstance(value, list):
        out = "; ".join(text(v) for v in value) or "none"
    else:
        out = json.dumps(value, default=str)
    out = " ".join(out.split())
    return out if len(out) <= CLIP else out[:CLIP - 1] + "…"


def _value(key: str, value: Any) -> str:
    if key in c.TIMES and isinstance(value, int | float) and not isinstance(value, bool):
        return stamp(float(value))
    return text(value)


def records(doc: Any) -> dict[str, dict[str, Any]]:
    """The document's node records by hostname (a list of records or a mapping)."""
    raw = doc.get(c.NODES) if isinstance(doc, dict) else None
    out: dict[str, dict[str, Any]] = {}
    if isinstance(raw, dict):
        items = [({c.NODE: k, **v} if isinstance(v, dict) else {c.NODE: k})
                 for k, v in raw.items()]
    elif isinstance(raw, list):
        items = [r for r in raw if isinstance(r, dict)]
    else:
        items = []
    for r in items:
        name = r.get(c.NODE)
        if isinstance(name, str) and name not in out:
            out[name] = r
    return out


def minion_down(value: Any) -> bool:
    if value is False:
        return True
    if isinstance(value, str):
        return value.strip().lower() in c.MINION_DOWN
    if isinstance(value, dict):
        return value.get("answering") is False
    return False


def problems(value: Any) -> list[str]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    out = []
    for p in items[:MAX_PROBLEMS]:
        if isinstance(p, dict):
            p = next((p[k] for k in c.PROBLEM_TEXT if k in p), p)
        out.append(text(p))
    if len(items) > MAX_PROBLEMS:
        out.append(f"and {len(items) - MAX_PROBLEMS} more")
    return out


def _stage(record: dict[str, Any] | None) -> Any:
    s = record.get(c.STAGE) if record else None
    return s.get(c.STAGE) if isinstance(s, dict) else None


def state(record: dict[str, Any] | None, lifecycle: str, discovered: bool = False,
          failed: bool = False) -> str:
    """The page state (contract.STATES) of a node; ``discovered``: a report matching it
    waits; ``failed``: the inventory's maintenance reason is a burn-in's failed check."""
    life = record.get(c.LIFECYCLE) if record else None
    life = life if life in ("planned", "burn-in", "active", "maintenance") else lifecycle
    stage = _stage(record)
    if life == "planned":
        return "discovered" if discovered or stage == "discovered" else "planned"
    if life == "maintenance":
        return "failed" if failed or stage == "failed" else "maintenance"
    if record is None:
        return "burn-in" if life == "burn-in" else "unknown"
    if minion_down(record.get(c.MINION)):
        return "minion-down"
    status = record.get(c.STATUS)
    if life == "burn-in" and status != "problem":
        return "burn-in"
    return status if status in ("ok", "problem") else "unknown"


def waiting(doc: Any) -> set[str]:
    """The nodes a kept report matches (the document's discovered.matched)."""
    found = doc.get(c.DISCOVERED) if isinstance(doc, dict) else None
    matched = found.get("matched") if isinstance(found, dict) else None
    return {h for h in matched if isinstance(h, str)} if isinstance(matched, dict) else set()


def _report(r: Any) -> str:
    if not isinstance(r, dict):
        return text(r)
    said = "".join(f"; {text(p)}" for p in r.get("problems") or [] if p)
    return (f"{text(r.get('mac'))} on {text(r.get('port'))}, serial "
            f"{text(r.get('serial'))}, {text(r.get('product'))}{said}")


def discovered_notices(doc: Any) -> list[str]:
    """The reports that match no node, and those that could not be read."""
    found = doc.get(c.DISCOVERED) if isinstance(doc, dict) else None
    if not isinstance(found, dict):
        return []
    unmatched = found.get("unmatched")
    out = [f"discovered, unmatched: {_report(r)}"
           for r in (unmatched[:MAX_PROBLEMS] if isinstance(unmatched, list) else [])]
    bad = found.get("unreadable")
    out += [f"discovered, unreadable report {text(mac)}: {text(why)}"
            for mac, why in (list(bad.items())[:MAX_PROBLEMS] if isinstance(bad, dict)
                             else [])]
    return out


def fields(record: dict[str, Any]) -> list[list[str]]:
    """[label, text] of every field of the record but node, status and problems: the
    contract's sources first, in its order, then any other field by its own name."""
    known = dict(c.FIELDS)
    skip = {c.NODE, c.STATUS, c.PROBLEMS}
    out = [[label, text(record[k])] for k, label in c.FIELDS if k in record]
    out += [[text(k), text(v)] for k, v in record.items() if k not in known and k not in skip]
    return out


def generated(doc: Any) -> str | None:
    """When the status was collected, as its producer wrote it; a Unix time as people read
    one (UTC and its age), never the bare number."""
    if isinstance(doc, dict):
        for key in c.GENERATED:
            value = doc.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return stamp(float(value))
            if isinstance(value, str):
                return text(value)
    return None


def generated_ts(doc: Any) -> float | None:
    """When the status was collected, as a Unix time where its producer's value is one or a
    UTC ISO time (``2026-12-02T01:30:00Z``): the page shows it in UTC with its age counted
    when it is drawn; None where it is neither (the page shows :func:`generated`)."""
    if not isinstance(doc, dict):
        return None
    for key in c.GENERATED:
        value = doc.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value) if math.isfinite(value) else None
        if isinstance(value, str):
            try:
                when = dt.datetime.fromisoformat(value)
            except ValueError:
                return None
            return when.timestamp() if when.tzinfo is not None else None
    return None


def notices(doc: Any) -> list[str]:
    """The document's site-wide lines: alerts of no node, sources not asked, notes."""
    if not isinstance(doc, dict):
        return []
    out = []
    alerts = doc.get(c.SITE_ALERTS)
    for a in alerts[:MAX_PROBLEMS] if isinstance(alerts, list) else []:
        out.append("site alert " + (text(a.get("name")) + (f": {text(a['summary'])}" if
                                    a.get("summary") else "") if isinstance(a, dict)
                                    else text(a)))
    sources = doc.get(c.SOURCES)
    aged = []
    for name, col in sources.items() if isinstance(sources, dict) else ():
        if isinstance(col, dict) and col.get("error"):
            out.append(f"unknown {text(name)}: {text(col['error'])}")
        got = col.get(c.AGE_S) if isinstance(col, dict) else None
        if isinstance(got, int | float) and not isinstance(got, bool) and math.isfinite(got):
            aged.append(f"{text(name)} {age(float(got))}")
    if aged:
        out.append(f"from the collector: {', '.join(aged)}")
    notes = doc.get(c.NOTES)
    out += [f"note: {text(n)}" for n in (notes[:MAX_PROBLEMS] if isinstance(notes, list)
                                         else [])]
    return out + discovered_notices(doc)


def build(inv: Inventory, doc: Any, refreshed: str, wiring: Any = None) -> dict[str, Any]:
    """view.json: ``{"refreshed", "collected", "collected_ts", "notices", "nodes": {host:
    {...}},
    "unknown_nodes"}``; ``wiring``: a ``fleet cabling --json`` document, if any (a NIC
    not where the inventory says is a problem of its node)."""
    from fleet.burnin.verdict import failed_check

    recs = records(doc)
    cabled = cabling.per_node(wiring, text)
    reported = waiting(doc)
    nodes = {}
    for host, node in inv.nodes.items():
        r = recs.get(host)
        shown = state(r, node.state, host in reported,
                      failed_check(node.state, node.reason) is not None)
        said = problems(r.get(c.PROBLEMS)) if r else []
        facts = fields(r) if r else []
        if host in reported and not any(f[0] == "discovered" for f in facts):
            facts.append(["discovered", _report(doc[c.DISCOVERED]["matched"][host])])
        if host in cabled:
            said += cabled[host].problems
            facts.append([cabling.LABEL, text(cabled[host].text)])
            if cabled[host].problems and shown in ("ok", "unknown"):
                shown = "problem"
        nodes[host] = {
            "state": shown,
            "status": text(r.get(c.STATUS)) if r and c.STATUS in r else "no record",
            "problems": said,
            "fields": facts,
        }
    return {"refreshed": refreshed, "collected": generated(doc),
            "collected_ts": generated_ts(doc), "notices": notices(doc),
            "nodes": nodes,
            "unknown_nodes": [text(h) for h in recs if h not in inv.nodes]}
