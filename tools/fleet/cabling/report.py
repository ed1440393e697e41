"""``fleet cabling``'s findings as a table (problems first) and as JSON, and each node's
verdict (shared with the fleet page). Everything a node or its neighbour sent is printed
through :func:`fleet.master.text.clean`: no escape sequence reaches a terminal."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any, Literal

from fleet.cabling.compare import Finding, Status, Where
from fleet.master.text import clean

Verdict = Literal["ok", "problems", "unknown"]
# what each status says, in the table's order (problems first)
LABEL: dict[Status, str] = {"wrong_port": "WRONG PORT", "wrong_switch": "WRONG SWITCH",
         "unreadable_port": "UNREADABLE PORT", "missing": "MISSING",
         "unexpected": "UNEXPECTED", "not_observed": "NOT OBSERVED", "ok": "ok"}
ORDER = {status: i for i, status in enumerate(LABEL)}


def _where(w: Where | None) -> str:
    return "-" if w is None else f"{w[0]} port {w[1]}"


def found(f: Finding) -> str:
    """What the NIC heard, as one printable line."""
    if f.status in ("missing", "not_observed"):
        return "-"
    switch = clean(f.seen_switch or "?", 64)
    port = f"port {f.seen_port}" if f.seen_port is not None else "port ?"
    named = f" ({clean(f.seen_port_id, 64)})" if f.seen_port_id else ""
    return f"{switch} {port}{named}"


def verdicts(findings: Sequence[Finding], nodes: Sequence[str]) -> dict[str, Verdict]:
    """Per node: ``ok`` (every NIC where the inventory says), ``problems``, or ``unknown``
    (the node did not report)."""
    out: dict[str, Verdict] = dict.fromkeys(nodes, "ok")
    for f in findings:
        if f.node not in out:
            continue
        if f.status == "not_observed":
            out[f.node] = "unknown" if out[f.node] == "ok" else out[f.node]
        elif f.status != "ok":
            out[f.node] = "problems"
    return out


def ordered(findings: Sequence[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (ORDER[f.status], f.node, f.interface))


def table(findings: Sequence[Finding], errors: dict[str, str], wall: float) -> str:
    rows = [("NODE", "NIC", "STATUS", "EXPECTED", "FOUND")]
    for f in ordered(findings):
        why = f" ({clean(errors[f.node], 120)})" if f.status == "not_observed" and \
            f.node in errors else ""
        rows.append((f.node, clean(f.interface, 32), LABEL[f.status], _where(f.expected),
                     found(f) + why))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4]
             for r in rows]
    counts = Counter(f.status for f in findings)
    said = ", ".join(f"{counts[s]} {LABEL[s].lower()}" for s in LABEL if counts[s])
    lines.append(f"{len(findings)} link(s): {said or 'none'} ({wall:.1f}s)")
    return "\n".join(line.rstrip() for line in lines)


def _finding(f: Finding) -> dict[str, Any]:
    return {"node": f.node, "interface": f.interface, "status": f.status,
            "expected": None if f.expected is None else
            {"switch": f.expected[0], "port": f.expected[1]},
            "found": None if f.status in ("missing", "not_observed") else
            {"switch": f.seen_switch, "port": f.seen_port, "port_id": f.seen_port_id}}


def _node(node: str, verdict: str, error: str | None,
          findings: Sequence[Finding]) -> dict[str, Any]:
    """A node in the output contract's shape (fleet.output): its verdict as its status,
    each NIC not where the inventory says (or the node's error) as a problem."""
    from fleet.output import node_entry

    problems = [f"{f.interface}: {f.status.replace('_', ' ')}" for f in ordered(findings)
                if f.node == node and f.status not in ("ok", "not_observed")]
    if error:
        problems.append(error)
    return node_entry(node, verdict, None, problems, {"verdict": verdict, "error": error})


def document(target: str, findings: Sequence[Finding], nodes: Sequence[str],
             errors: dict[str, str], wall: float,
             left_out: dict[str, list[str]]) -> dict[str, Any]:
    """``--json``: what the table says, every string as sent (JSON escapes it)."""
    verdict = verdicts(findings, nodes)
    return {
        "target": target,
        "ok": all(v == "ok" for v in verdict.values()),
        "nodes": [_node(n, verdict[n], errors.get(n), findings) for n in nodes],
        "findings": [_finding(f) for f in ordered(findings)],
        "counts": dict(sorted(Counter(f.status for f in findings).items())),
        "left_out": left_out,
        "seconds": round(wall, 3),
    }
