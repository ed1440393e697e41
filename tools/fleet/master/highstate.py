"""What one node's highstate return means: ok, changed, failed (which states, why), lost,
or no return at all. The one verdict of fleet apply, fleet rollout, fleet reinstall's
converge and the lab; pure functions over Salt's return data (tested on recorded
returns)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from fleet.master.salt import Lost
from fleet.master.text import clean


class Status(StrEnum):
    OK = "ok"                    # every state True, no changes
    CHANGED = "changed"          # every state True (or None under test=True), some changes
    FAILED = "failed"            # a state False, a render error, or a non-zero retcode
    NO_RETURN = "no-return"      # published, nothing in the job cache by the deadline
    LOST = "lost"                # the minion said the job no longer ran, and never returned
    NO_KEY = "no-key"            # the master has no accepted key for it: not published

    @property
    def bad(self) -> bool:
        return self not in (Status.OK, Status.CHANGED)


@dataclass(frozen=True, slots=True)
class FailedState:
    state_id: str      # the SLS id (__id__), e.g. base-apt-file-managed-sources
    function: str      # e.g. file.managed
    name: str
    sls: str
    comment: str


@dataclass(slots=True)
class NodeResult:
    node: str
    status: Status
    states: int = 0
    changed: int = 0
    failed: list[FailedState] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # render errors, other non-state returns
    changes: list[str] = field(default_factory=list)  # the ids of the states that changed
    returned_s: float | None = None  # seconds from publish to the return
    run_s: float | None = None       # sum of the states' own durations
    jid: str | None = None
    why: str = ""                    # for no-return / lost / no-key

    def summary(self) -> str:
        if self.status is Status.FAILED:
            if self.failed:
                f = self.failed[0]
                more = f" (+{len(self.failed) - 1} more)" if len(self.failed) > 1 else ""
                return f"{f.state_id} ({f.function}): {_one_line(f.comment)}{more}"
            return _one_line("; ".join(self.errors))
        if self.status.bad:
            return self.why
        return ""

    def problems(self) -> list[str]:
        """Every reason the node is not ok, one line each (none when it is)."""
        out = [f"{f.state_id} ({f.function}): {_one_line(f.comment, 300)}"
               for f in self.failed]
        out += [_one_line(e, 300) for e in self.errors]
        return out + ([self.why] if self.why else [])

    def as_json(self) -> dict[str, Any]:
        return {
            "node": self.node, "status": self.status.value, "states": self.states,
            "changed": self.changed, "returned_s": _round(self.returned_s),
            "run_s": _round(self.run_s), "jid": self.jid, "why": self.why or None,
            "failed": [{"id": f.state_id, "function": f.function, "name": f.name,
                        "sls": f.sls, "comment": f.comment} for f in self.failed],
            "errors": self.errors,
        }


def _round(v: float | None) -> float | None:
    return None if v is None else round(v, 2)


def _one_line(text: str, width: int = 160) -> str:
    """A minion's text, on one line and cut at ``width``: it reaches a terminal."""
    return clean(text, width)


def _function(key: str) -> tuple[str, str, str]:
    """``file_|-id_|-name_|-managed`` -> (``file.managed``, ``id``, ``name``)."""
    parts = key.split("_|-")
    if len(parts) == 4:
        return f"{parts[0]}.{parts[3]}", parts[1], parts[2]
    return key, key, ""


def classify(node: str, ret: Any, retcode: int | None, *, test: bool) -> NodeResult:
    """A node's result from its ``state.apply`` return (``return`` and ``retcode`` of the
    job's ret event or of the job cache)."""
    res = NodeResult(node=node, status=Status.OK)
    if isinstance(ret, dict) and ret and all(isinstance(v, dict) for v in ret.values()):
        run_ms = 0.0
        for key, st in sorted(ret.items(), key=lambda kv: kv[1].get("__run_num__", 0)):
            res.states += 1
            dur = st.get("duration")
            if isinstance(dur, (int, float)):
                run_ms += float(dur)
            result = st.get("result")
            fn, sid, name = _function(key)
            if result is False:
                res.failed.append(FailedState(
                    state_id=str(st.get("__id__", sid)), function=fn,
                    name=str(st.get("name", name)), sls=str(st.get("__sls__", "")),
                    comment=str(st.get("comment", ""))))
            elif st.get("changes") or (test and result is None):
                res.changed += 1
                res.changes.append(str(st.get("__id__", sid)))
        res.run_s = run_ms / 1000
    elif isinstance(ret, list):
        res.errors = [str(e) for e in ret] or ["empty error list"]
    elif isinstance(ret, dict) and not ret:
        res.errors = ["the highstate returned no states (no top file entry for this node?)"]
    else:
        res.errors = [f"unexpected return: {str(ret)[:300]}"]
    if res.failed or res.errors:
        res.status = Status.FAILED
    elif retcode not in (None, 0):
        res.status = Status.FAILED
        res.errors = [f"retcode {retcode}"]
    elif res.changed:
        res.status = Status.CHANGED
    return res


def classify_plain(node: str, ret: Any, retcode: int | None) -> NodeResult:
    """A node's result from an execution module's return (``test.ping``,
    ``saltutil.refresh_pillar``): ok unless False, an error string Salt returns for a
    missing or crashed function, or a non-zero retcode."""
    res = NodeResult(node=node, status=Status.OK)
    if ret is False or retcode not in (None, 0) or (
            isinstance(ret, str) and ((ret.startswith("'") and "is not available" in ret)
                                      or "Traceback" in ret or ret.startswith("ERROR"))):
        res.status = Status.FAILED
        res.errors = [f"returned {str(ret)[:300]!r} (retcode {retcode})"]
    return res


def judge(node: str, ret: object, *, jid: str | None = None) -> NodeResult:
    """A node's highstate as fleet.master.salt collected it from the job cache: its
    return, a :class:`~fleet.master.salt.Lost` (the minion no longer ran the job), or
    None (no return by the deadline)."""
    if ret is None:
        res = NodeResult(node=node, status=Status.NO_RETURN,
                         why=f"no return of job {jid} by the deadline")
    elif isinstance(ret, Lost):
        res = NodeResult(node=node, status=Status.LOST, why=str(ret))
    else:
        res = classify(node, ret, None, test=False)
    res.jid = jid
    return res


def describe(res: NodeResult) -> str:
    """One line for a step's message or a journal: the counts, or what went wrong."""
    if not res.status.bad:
        return f"{res.states} states ok, {res.changed} changed"
    if res.failed:
        first = res.failed[0]
        return (f"{len(res.failed)} of {res.states} state(s) failed: "
                + ", ".join(_one_line(f.state_id, 80) for f in res.failed[:5])
                + f" ({_one_line(first.comment)})")
    if res.status is Status.FAILED:
        return "no state results: " + _one_line("; ".join(res.errors), 300)
    return res.why
