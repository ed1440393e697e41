"""What fleet rollout's journal says of its latest run: read by the rollout (to resume or
abort it) and by ``fleet status`` (a node an unfinished rollout left drained), so status
does not stand on fleet.rollout. The journal's events: fleet.rollout.flow."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fleet.master.journal import Entry, latest_entries


@dataclass
class RolloutState:
    run_id: str | None = None
    options: dict[str, Any] | None = None  # as the run's start journaled them
    finished: str | None = None
    done: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    drained: set[str] = field(default_factory=set)  # drained by this rollout, not resumed

    @property
    def unfinished(self) -> bool:
        return self.run_id is not None and self.finished not in ("done", "aborted")


def latest(entries: list[Entry]) -> RolloutState:
    start, rest = latest_entries(entries)
    st = RolloutState() if start is None else RolloutState(
        run_id=start.get("run"), options=dict(start.get("options", {})))
    for e in rest:
        ev = e.get("event")
        if ev == "run":
            st.finished = None
            st.failed = []
        elif ev == "node":
            _node_ended(st, str(e.get("node")), e.get("outcome") == "done")
        elif ev == "step" and e.get("phase") == "end" and e.get("outcome") == "ok":
            if e.get("step") == "drain" and e.get("drained"):
                st.drained.add(str(e.get("node")))
            elif e.get("step") == "resume":
                st.drained.discard(str(e.get("node")))
        elif ev == "finish":
            st.finished = e.get("outcome")
    return st


def _node_ended(st: RolloutState, node: str, done: bool) -> None:
    if done:
        st.done.append(node)
        if node in st.failed:
            st.failed.remove(node)
    elif node not in st.failed:
        st.failed.append(node)
