"""``fleet status``'s judgement: the sources' answers joined into one row per node, each
problem named, problems first; the table and the JSON document. Pure functions over
what the sources returned (fleet.status.sources)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fleet.lastrun import Last
from fleet.master.text import age
from fleet.status.sources import BmcHardware, Power, Presence, Slurm, Work

OK, PROBLEM, UNKNOWN = "ok", "problem", "unknown"
SOURCES = ("stage", "power", "boot", "key", "minion", "hardware", "bmc_hardware", "slurm",
           "apply", "health", "work", "alerts")


@dataclass
class Column:
    """One source's answer: ``values`` by node, or ``error`` (why it was not asked or
    failed: every node's value is then unknown); ``skipped``: not asked, on purpose."""

    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    skipped: str | None = None
    seconds: float = 0.0
    age: float | None = None  # seconds since the collector's answer; None: asked now

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.error is None and self.skipped is None, "error": self.error,
                "skipped": self.skipped, "seconds": round(self.seconds, 2),
                "age_s": None if self.age is None else round(self.age, 1)}


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


def judge(node: str, state: str, slurm_node: bool, cols: dict[str, Column],
          now: float) -> Row:
    """One node's row: each source's value, and the problems they show."""
    j = _Judging(Row(node, state, slurm_node), cols, now)
    for check in (_stage, _power, _boot, _key, _minion, _hardware, _bmc_hardware, _slurm,
                  _last_runs, _work, _alerts):
        check(j)
    return j.row


@dataclass
class _Judging:
    """One node being judged: its row, the sources, and what its state excuses."""

    row: Row
    cols: dict[str, Column]
    now: float
    running: bool = False   # a reinstall or rollout at work on it
    expected: bool = False  # maintenance or work: off, drained, silent are expected

    def __post_init__(self) -> None:
        col = self.cols.get("work")
        w = col.values.get(self.row.node) if col is not None and col.error is None else None
        self.running = isinstance(w, Work) and w.running is not None
        self.expected = self.row.state == "maintenance" or self.running

    def value(self, source: str) -> Any:
        """The node's value from ``source``; None (and its field said) when the source was
        skipped or could not be asked; _MISSING when it has no value for the node."""
        f, col = self.row.fields, self.cols.get(source)
        if col is None or col.skipped is not None:
            f[source] = None
            return None
        if col.error is not None:
            f[source] = {"unknown": col.error}
            self.row.unknown.append(source)
            return None
        return col.values.get(self.row.node, _MISSING)


def _stage(j: _Judging) -> None:
    from fleet.status.stage import Stage

    s = j.value("stage")
    if isinstance(s, Stage):
        j.row.fields["stage"] = s.as_json()
        if s.problem is not None:
            j.row.problems.append(s.problem)


def _hardware(j: _Judging) -> None:
    """fleet.status.hardware: each fact the node's own grains contradict, both values."""
    h = j.value("hardware")
    if isinstance(h, list):
        j.row.fields["hardware"] = [d.as_json() for d in h]
        j.row.problems += [f"hardware drift: {d.text}" for d in h]
    elif h is _MISSING:  # the minion did not answer, or a planned node (not asked)
        j.row.fields["hardware"] = None


def _bmc_hardware(j: _Judging) -> None:
    """fleet.status.sources.bmc_hardware: each fact the BMC contradicts, both values; a BMC
    that could not be read is said (its power column names it as a problem)."""
    h = j.value("bmc_hardware")
    if isinstance(h, BmcHardware):
        j.row.fields["bmc_hardware"] = {"drifts": [d.as_json() for d in h.drifts],
                                        "observed": h.observed, "error": h.error}
        j.row.problems += [f"hardware drift (BMC): {d.text}" for d in h.drifts]
    elif h is _MISSING:  # a planned node, or an IPMI BMC (no such facts)
        j.row.fields["bmc_hardware"] = None


def _power(j: _Judging) -> None:
    p = j.value("power")
    if isinstance(p, Power):
        j.row.fields["power"] = {"state": p.state, "error": p.error}
        if p.error is not None:
            j.row.problems.append(f"BMC: {p.error}")
        elif p.state == "off" and not j.expected:
            j.row.problems.append("powered off")


def _boot(j: _Judging) -> None:
    b = j.value("boot")
    if isinstance(b, Exception):
        j.row.fields["boot"] = {"mode": None, "error": str(b)}
        j.row.problems.append(f"boot mode unreadable: {b}")
    elif isinstance(b, str):
        j.row.fields["boot"] = {"mode": b, "error": None}
        if b == "install" and not j.running:
            j.row.problems.append(f"boot mode install (its next PXE boot reinstalls it; "
                                  f"`fleet pxe set {j.row.node} local` if none is meant)")


def _key(j: _Judging) -> None:
    k = j.value("key")
    if isinstance(k, str):
        j.row.fields["key"] = k
        if k != "accepted" and j.row.state != "planned":
            j.row.problems.append(f"minion key {k}" + (
                " (not accepted on the master)" if k != "missing" else " on the master"))


def _minion(j: _Judging) -> None:
    m = j.value("minion")
    if isinstance(m, Presence):  # the master's view (the collector, --live): no job sent
        j.row.fields["minion"] = "connected" if m.connected else "not connected"
        if not m.connected and j.row.state != "planned" and not j.expected:
            j.row.problems.append("minion not connected to the master")
    elif isinstance(m, bool):
        j.row.fields["minion"] = "answers" if m else "silent"
        if not m and j.row.state != "planned" and not j.expected:
            j.row.problems.append("minion does not answer test.ping")


def _slurm(j: _Judging) -> None:
    row = j.row
    s = j.value("slurm") if row.slurm_node else None  # only Slurm compute nodes are in it
    if not row.slurm_node and "slurm" in j.cols:
        row.fields["slurm"] = None
    if s is None:
        return
    if isinstance(s, Slurm):
        row.fields["slurm"] = {"state": s.state, "reason": s.reason}
        if s.bad and not j.expected and not _burnin_drain(row.state, s):
            row.problems.append(f"slurm {s.state}" + (f": {s.reason}" if s.reason else ""))
    else:  # _MISSING: slurmctld does not know it
        row.fields["slurm"] = None
        if row.slurm_node and row.state != "planned":
            row.problems.append("slurm does not know this node")


def _burnin_drain(state: str, s: Slurm) -> bool:
    """A node in burn-in drained by the inventory: an earlier render drained burn-in
    nodes; fleet.inventory.lifecycle.drains now resumes them (the burn-in partition)."""
    from fleet.inventory.lifecycle import DRAIN_PREFIX

    return state == "burn-in" and s.reason.startswith(DRAIN_PREFIX)


def _last_runs(j: _Judging) -> None:
    for verb in ("apply", "health"):
        last = j.value(verb)
        if isinstance(last, Exception):
            j.row.fields[verb] = {"error": str(last)}
            j.row.problems.append(f"last {verb} unreadable: {last}")
        elif isinstance(last, Last):
            j.row.fields[verb] = last.as_json() | {"ago": _ago(last.ts, j.now)}
            if not last.ok:
                j.row.problems.append(f"last {verb} {last.status} ({_ago(last.ts, j.now)})"
                                      + (f": {last.summary}" if last.summary else ""))
        elif last is None and j.cols.get(verb) is not None and verb not in j.row.unknown:
            j.row.fields[verb] = None


def _work(j: _Judging) -> None:
    w = j.value("work")
    if isinstance(w, Work):
        j.row.fields["work"] = {"running": w.running, "unfinished": w.unfinished}
        if w.unfinished:
            j.row.problems.append(w.unfinished)


def _alerts(j: _Judging) -> None:
    a = j.value("alerts")
    if isinstance(a, list):
        j.row.fields["alerts"] = [{"name": x.name, "severity": x.severity,
                                   "summary": x.summary, "since": x.active_at} for x in a]
        j.row.problems += [f"alert {x.name}" + (f" ({x.severity})" if x.severity else "")
                           + (f": {x.summary}" if x.summary else "") for x in a]


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
    found = _discovered(cols)
    return {"ok": c[PROBLEM] == 0, "target": target, "seconds": round(seconds, 2),
            "counts": c, "sources": {k: v.as_json() for k, v in cols.items()},
            "left_out": left_out, "notes": notes,
            "site_alerts": [{"name": a.name, "severity": a.severity, "summary": a.summary}
                            for a in site_alerts],
            "discovered": None if found is None else found.as_json(),
            "nodes": [r.as_json() for r in rs]}


def _discovered(cols: dict[str, Column]) -> Any:
    """The stage source's site part (fleet.status.stage.Discovered), None without it."""
    from fleet.status.stage import SITE

    col = cols.get("stage")
    return None if col is None or col.error is not None else col.values.get(SITE)


def ages_line(cols: dict[str, Column]) -> str | None:
    """How old each collected column's answer is (None when every source was asked now)."""
    aged = [f"{name} {age(c.age)}" for name, c in cols.items() if c.age is not None]
    return f"from the collector (--live asks now): {', '.join(aged)}" if aged else None


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
    if source == "stage":
        return str(v["summary"])
    if source == "hardware":
        return f"{len(v)} drift" if v else "ok"
    if source == "bmc_hardware":
        return "err" if v["error"] else f"{len(v['drifts'])} drift" if v["drifts"] else "ok"
    return str(v)


COLUMNS = (("state", "state"), ("stage", "stage"), ("power", "power"), ("boot", "boot"),
           ("key", "key"), ("minion", "minion"), ("hardware", "hardware"),
           ("bmc_hardware", "bmc hw"), ("slurm", "slurm"), ("apply", "last apply"),
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
        stage = r.fields.get("stage") or {}
        if stage.get("stage") in ("discovered", "burn-in", "failed") and not any(
                p.startswith(stage["text"]) for p in r.problems):
            lines.append(f"{'':<{widths[0]}}  . {stage['text']}")
        running = (r.fields.get("work") or {}).get("running")
        if running:
            lines.append(f"{'':<{widths[0]}}  . {running} is working on it")
    lines.append("")
    ages = ages_line(cols)
    if ages:
        lines.append(ages)
    for name, col in cols.items():
        if col.error is not None:
            lines.append(f"unknown {name}: {col.error}")
        elif col.skipped is not None:
            lines.append(f"not asked {name}: {col.skipped}")
    site = cols.get("alerts")
    if site is not None and site.error is None:
        for a in site.values.get("", []):
            lines.append(f"site alert {a.name}" + (f": {a.summary}" if a.summary else ""))
    found = _discovered(cols)
    lines += found.lines({r.node for r in rs}) if found is not None else []
    lines += [f"note: {n}" for n in notes]
    tally = counts(rs)
    lines.append(f"{len(rs)} node(s): {tally[OK]} ok, {tally[PROBLEM]} with problems, "
                 f"{tally[UNKNOWN]} unknown; {seconds:.1f}s")
    return "\n".join(lines)
