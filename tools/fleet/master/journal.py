"""The per-node journal: JSON lines in ``<state>/<node>/journal.jsonl``, appended and fsynced.

Events: ``run`` (a run starts: mode new|resume|abort), ``step`` (phase start|end, with
outcome ok|skipped|failed, detail, seconds), ``note`` (anything else worth keeping, e.g.
the install callback), ``finish`` (outcome done|failed|aborted, and what the node was left
in).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleet.master import layout

Entry = dict[str, Any]


class Journal:
    def __init__(self, node_dir: Path) -> None:
        self.path = layout.journal(node_dir)

    def append(self, event: str, **fields: Any) -> Entry:
        entry: Entry = {"ts": time.time(), "event": event, **fields}
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(entry, sort_keys=True) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return entry

    def entries(self) -> list[Entry]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        out = []
        for line in text.splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut short by a crash mid-write
        return out


@dataclass
class RunState:
    """The latest run of a node as the journal tells it."""

    run_id: str | None = None
    finished: str | None = None  # done | failed | aborted, None while unfinished
    completed: list[str] = field(default_factory=list)  # steps ended ok or skipped, in order
    failed_step: str | None = None
    disarmed: bool = False  # boot mode put back to local after arm_install completed
    armed: bool = False  # an arm_install began and nothing set the boot mode back since
    minion_answered: bool = False  # converge heard the minion (the new key) since rotate_key
    key_withdrawn: bool = False  # the flow removed the new key since rotate_key
    started: float | None = None

    @property
    def unfinished(self) -> bool:
        return self.run_id is not None and self.finished not in ("done", "aborted")


def latest_entries(entries: list[Entry]) -> tuple[Entry | None, list[Entry]]:
    """The ``new`` start of the latest run (None before any) and the entries after it
    that belong to that run: runs are numbered by their ``new`` start; resumes and aborts
    continue that run (shared by fleet.rollout's journal)."""
    start: Entry | None = None
    rest: list[Entry] = []
    for e in entries:
        if e.get("event") == "run" and e.get("mode") == "new":
            start, rest = e, []
        elif e.get("run") == (start.get("run") if start is not None else None):
            rest.append(e)
    return start, rest


def latest_run(entries: list[Entry]) -> RunState:
    """The state of the latest run (:func:`latest_entries`)."""
    start, rest = latest_entries(entries)
    state = RunState() if start is None else RunState(run_id=start.get("run"),
                                                      started=start.get("ts"))
    for e in rest:
        ev = e.get("event")
        if ev == "run":
            state.finished = None
            state.failed_step = None
        elif ev == "step" and e.get("phase") == "start":
            step = str(e.get("step"))
            if step in state.completed:  # run again (a resume went back): it and the
                del state.completed[state.completed.index(step):]  # steps after it
            if step == "arm_install":
                state.armed = True
        elif ev == "step" and e.get("phase") == "end":
            _step_ended(state, str(e.get("step")), e.get("outcome") in ("ok", "skipped"))
        elif ev == "note" and e.get("what") == "disarmed":
            state.disarmed = True
            state.armed = False
        elif ev == "note" and e.get("what") == "minion-answered":
            state.minion_answered = True
        elif ev == "note" and e.get("what") == "key-revoked":
            state.key_withdrawn = True
        elif ev == "finish":
            state.finished = e.get("outcome")
    return state


def _step_ended(state: RunState, step: str, passed: bool) -> None:
    if not passed:
        state.failed_step = step
        return
    if step not in state.completed:
        state.completed.append(step)
    state.failed_step = None
    if step == "arm_install":
        state.disarmed = False
    elif step == "rotate_key":
        state.minion_answered = state.key_withdrawn = False
    elif step == "wait_install":
        state.armed = False  # the callback set the boot mode local
