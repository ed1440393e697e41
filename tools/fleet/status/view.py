"""``fleet status``'s judgement: the sources' answers joined into one row per node, each
problem named, problems first; the table and the JSON document. Pure functions over
what the sources returned (fleet.status.sources)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fleet.lastrun import Last
from fleet.master.text import age
from fleet.status.sources import Power, Slurm, Work

OK, PROBLEM, UNKNOWN = "ok", "problem", "unknown"
SOURCES = ("power", "boot", "key", "minion", "slurm", "apply", "health", "work", "alerts")


@dataclass
class Column:
    """One source's answer: ``values`` by node, or ``error`` (why it was not asked or
    failed: every node's value is then unknown); ``skipped``: not asked, on purpose."""

    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    skipped: str | None = None
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.error is None and self.skipped is None, "error": self.error,
                "skipped": self.skipped, "seconds": round(self.seconds, 2)}


@dataclass
class Row:
    node: str
    state: str  # the inventory's lifecycle state
    slurm_node: bool
    fields: dict[str, Any] = field(default_factory=dict)  # source -> its JSON value
    problems: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # the sources with no answer for it

    @property
    def status(self) -> str:
        return PROBLEM if self.problems else UNKNOWN if self.unknown else OK

    def as_json(self) -> dict[str, Any]:
        return {"node": self.node, "status": self.status, "problems": self.problems,
                "unknown": self.unknown, "state": self.state, **self.fields}


def _ago(ts: float, now: float) -> str:
    return age(now - ts)


# complexity 27: debt, to split (pyproject.toml [tool.fleet.lint.exceptions])
def judge(node: str, state: str, slurm_node: bool, cols: dict[str, Column],  # noqa: C901
          now: float) -> Row:
    """One node's row: each source's value, and the problems they show."""
    row = Row(node, state, slurm_node)
    f, problems = row.fields, row.problems
    col = cols.get("work")
    running = col is not None and col.error is None and isinstance(
        col.values.get(node), Work) and col.values[node].running is not None
    # what maintenance, or a reinstall or rollout at work, means: off, drained, silent
    expected = state == "maintenance" or running

    def value(source: str) -> Any:
        col = cols.get(source)
        if col is None or col.skipped is not None:
            f[source] = None
            return None
        if col.error is not None:
            f[source] = {"unknown": col.error}
            row.unknown.append(source)
            return None
        return col.values.get(node, _MISSING)

    p = value("power")
    if isinstance(p, Power):
        f["power"] = {"state": p.state, "error": p.error}
        if p.error is not None:
            problems.append(f"BMC: {p.error}")
        elif p.state == "off" and not expected:
            problems.append("powered off")
    b = value("boot")
    if isinstance(b, Exception):
        f["boot"] = {"mode": None, "error": str(b)}
        problems.append(f"boot mode unreadable: {b}")
    elif isinstance(b, str):
        f["boot"] = {"mode": b, "error": None}
        if b == "install" and not running:
            problems.append(f"boot mode install (its next PXE boot reinstalls it; "
                            f"`fleet pxe set {node} local` if none is meant)")
    k = value("key")
    if isinstance(k, str):
        f["key"] = k
        if k != "accepted" and state != "planned":
            problems.append(f"minion key {k}" + (" (not accepted on the master)"
                                                 if k != "missing" else " on the master"))
    m = value("minion")
    if isinstance(m, bool):
        f["minion"] = "answers" if m else "silent"
        if not m and state != "planned" and not expected:
            problems.append("minion does not answer test.ping")
    s = value("slurm") if slurm_node else None  # only Slurm compute nodes are in it
    if not slurm_node and "slurm" in cols:
        f["slurm"] = None
    if s is not None:
        if isinstance(s, Slurm):
            f["slurm"] = {"state": s.state, "reason": s.reason}
            if s.bad and not expected:
                problems.append(f"slurm {s.state}" + (f": {s.reason}" if s.reason else ""))
        else:  # _MISSING: slurmctld does not know it
            f["slurm"] = None
            if slurm_node and state != "planned":
                problems.append("slurm does not know this node")
    for verb in ("apply", "health"):
        last = value(verb)
        if isinstance(last, Exception):
            f[verb] = {"error": str(last)}
            problems.append(f"last {verb} unreadable: {last}")
        elif isinstance(last, Last):
            f[verb] = last.as_json() | {"ago": _ago(last.ts, now)}
            if not last.ok:
                problems.append(f"last {verb} {last.status} ({_ago(last.ts, now)})"
                                + (f": {last.summary}" if last.summary else ""))
        elif last is None and cols.get(verb) is not None and verb not in row.unknown:
            f[verb] = None
    w = value("work")
    if isinstance(w, Work):
        f["work"] = {"running": w.running, "unfinished": w.unfinished}
        if w.unfinished:
            problems.append(w.unfinished)
    a = value("alerts")
    if isinstance(a, list):
        f["alerts"] = [{"name": x.name, "severity": x.severity, "summary": x.summary,
                        "since": x.active_at} for x in a]
        problems += [f"alert {x.name}" + (f" ({x.severity})" if x.severity else "")
                     + (f": {x.summary}" if x.summary else "") for x in a]
    return row


class _Missing:
    def __repr__(self) -> str:
        return "<no value>"


_MISSING = _Missing()


def rows(nodes: list[tuple[str, str, bool]], cols: dict[str, Column],
         now: float | None = None) -> list[Row]:
    """``(node, state, is a Slurm node)`` of each node, in inventory order, judged; sorted
    problems first, then unknown, then ok (each group in inventory order)."""
    when = time.time() if now is None else now
    out = [judge(n, st, sl, cols, when) for n, st, sl in nodes]
    order = {PROBLEM: 0, UNKNOWN: 1, OK: 2}
    return sorted(out, key=lambda r: order[r.status])  # sorted() is stable


def counts(rs: list[Row]) -> dict[str, int]:
    return {s: sum(1 for r in rs if r.status == s) for s in (OK, PROBLEM, UNKNOWN)}


def document(target: str, rs: list[Row], cols: dict[str, Column], seconds: float,
             notes: list[str], left_out: dict[str, list[str]]) -> dict[str, Any]:
    c = counts(rs)
    site = cols.get("alerts")
    site_alerts = site.values.get("", []) if site is not None and site.error is None else []
    return {"ok": c[PROBLEM] == 0, "target": target, "seconds": round(seconds, 2),
            "counts": c, "sources": {k: v.as_json() for k, v in cols.items()},
            "left_out": left_out, "notes": notes,
            "site_alerts": [{"name": a.name, "severity": a.severity, "summary": a.summary}
                            for a in site_alerts],
            "nodes": [r.as_json() for r in rs]}


def _cell(row: Row, source: str) -> str:
    v = row.fields.get(source)
    if source in row.unknown:
        return "?"
    if v is None:
        return "-"
    if source == "power":
        return "err" if v["error"] else (v["state"] or "?")
    if source == "boot":
        return v["mode"] or "err"
    if source == "slurm":
        return str(v["state"]).lower()
    if source in ("apply", "health"):
        return "err" if "error" in v else f"{v['status']} {v['ago']}"
    if source == "work":
        return "running" if v["running"] else "unfinished" if v["unfinished"] else "-"
    if source == "alerts":
        return str(len(v)) if v else "-"
    return str(v)


COLUMNS = (("state", "state"), ("power", "power"), ("boot", "boot"), ("key", "key"),
           ("minion", "minion"), ("slurm", "slurm"), ("apply", "last apply"),
           ("health", "last health"), ("work", "work"), ("alerts", "alerts"))


def table(rs: list[Row], cols: dict[str, Column], seconds: float, notes: list[str]) -> str:
    """Problems first, each named under its row; then a line per source that could not be
    asked; then the counts."""
    shown = [(k, h) for k, h in COLUMNS
             if k == "state" or (k in cols and cols[k].skipped is None)]
    cells = [[r.node, *[(r.state if k == "state" else _cell(r, k)) for k, _ in shown],
              r.status] for r in rs]
    heads = ["node", *[h for _, h in shown], "status"]
    widths = [max([len(h)] + [len(c[i]) for c in cells]) for i, h in enumerate(heads)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True)).rstrip()]
    for r, c in zip(rs, cells, strict=True):
        lines.append("  ".join(v.ljust(w) for v, w in zip(c, widths, strict=True)).rstrip())
        for p in r.problems:
            lines.append(f"{'':<{widths[0]}}  ! {p}")
        running = (r.fields.get("work") or {}).get("running")
        if running:
            lines.append(f"{'':<{widths[0]}}  . {running} is working on it")
    lines.append("")
    for name, col in cols.items():
        if col.error is not None:
            lines.append(f"unknown {name}: {col.error}")
        elif col.skipped is not None:
            lines.append(f"not asked {name}: {col.skipped}")
    site = cols.get("alerts")
    if site is not None and site.error is None:
        for a in site.values.get("", []):
            lines.append(f"site alert {a.name}" + (f": {a.summary}" if a.summary else ""))
    lines += [f"note: {n}" for n in notes]
    tally = counts(rs)
    lines.append(f"{len(rs)} node(s): {tally[OK]} ok, {tally[PROBLEM]} with problems, "
                 f"{tally[UNKNOWN]} unknown; {seconds:.1f}s")
    return "\n".join(lines)
