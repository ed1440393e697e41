"""``fleet power``'s work: one action on many nodes' BMCs, a bounded number at once, each
node under its own deadline, one result per node.

A node's BMC that does not answer (a hung web server, a BMC that takes the connection and
says nothing) costs that node its deadline and nothing else: its thread is left behind
(a daemon thread, ended with the process) and its slot goes to the next node. What it
asked for may still reach the BMC later; its result says so."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, get_args

from fleet.bmc.base import BmcClient, BmcError

Action = Literal["on", "off", "cycle", "reset", "status"]
ACTIONS: tuple[Action, ...] = get_args(Action)
# the actions that take a running node away: refused on some nodes unless --force
DISRUPTIVE: frozenset[str] = frozenset({"off", "cycle", "reset"})


class Status(StrEnum):
    DONE = "done"          # the action was sent (status: the state was read)
    ALREADY = "already"    # the node was already in the state asked for; nothing sent
    REFUSED = "refused"    # a rule stopped it (running jobs, install boot mode, head node)
    FAILED = "failed"      # the BMC failed, refused or did not answer in time

    @property
    def bad(self) -> bool:
        return self in (Status.REFUSED, Status.FAILED)


@dataclass(slots=True)
class NodeResult:
    node: str
    status: Status
    power: str | None = None   # the power state read before acting (status: the state)
    action: str | None = None  # what was sent to the BMC, e.g. "off", "reset", "cycle"
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    bmc: str | None = None     # the BMC as messages name it (no credentials)

    def as_json(self) -> dict[str, Any]:
        return {"node": self.node, "status": self.status.value, "power": self.power,
                "action": self.action, "seconds": round(self.seconds, 2),
                "problems": self.problems, "bmc": self.bmc}


# node -> its BMC client (reads the secret); node -> the reasons not to act (empty: go)
ClientFor = Callable[[str], BmcClient]
RefusalsFor = Callable[[str], list[str]]


def act(node: str, action: Action, client_for: ClientFor, refusals: RefusalsFor) -> NodeResult:
    """One node, start to end, in the calling thread."""
    t0 = time.monotonic()
    res = NodeResult(node, Status.DONE)
    try:
        if action in DISRUPTIVE:
            reasons = refusals(node)
            if reasons:
                res.status, res.problems = Status.REFUSED, reasons
                return res
        bmc = client_for(node)
        res.bmc = bmc.name
        res.power = bmc.power_state()
        if action == "status":
            return res
        if action == "on":
            if res.power == "on":
                res.status = Status.ALREADY
            else:
                res.action = bmc.power_on()
        elif action == "off":
            if res.power == "off":
                res.status = Status.ALREADY
            else:
                res.action = bmc.power_off()
        elif action == "reset":
            if res.power == "off":
                res.status = Status.FAILED
                res.problems = ["it is off: a reset needs a node that is on "
                                "(`fleet power on` powers it on)"]
            else:
                res.action = bmc.reset()
        else:  # cycle: a node that is off is only powered on (BmcClient.power_cycle)
            res.action = bmc.power_cycle()
    except BmcError as exc:
        res.status, res.problems = Status.FAILED, [str(exc)]
    finally:
        res.seconds = time.monotonic() - t0
    return res


@dataclass
class _Slot:
    node: str
    started: float
    done: threading.Event
    out: list[NodeResult]


def run(nodes: Sequence[str], action: Action, client_for: ClientFor, refusals: RefusalsFor,
        *, parallel: int = 16, deadline: float = 60.0, spread: float = 0.0,
        progress: Callable[[str], None] = lambda _m: None) -> list[NodeResult]:
    """``action`` on every node, at most ``parallel`` at once, each given ``deadline``
    seconds from its start; the results in the order of ``nodes``. ``spread``: the i-th
    of N nodes starts no earlier than i*spread/N seconds in (the status collector's BMC
    round: not every BMC asked at once)."""
    if parallel < 1:
        raise ValueError("parallel must be at least 1")
    results: dict[str, NodeResult] = {}
    waiting = list(nodes)
    t0 = time.monotonic()
    slot_at = {n: t0 + i * spread / len(nodes) for i, n in enumerate(nodes)} if nodes else {}
    running: list[_Slot] = []
    wake = threading.Event()

    def start(node: str) -> _Slot:
        slot = _Slot(node, time.monotonic(), threading.Event(), [])

        def work() -> None:
            try:
                slot.out.append(act(node, action, client_for, refusals))
            except Exception as exc:  # a bug: still one result for the node
                slot.out.append(NodeResult(node, Status.FAILED,
                                           problems=[f"internal error: {type(exc).__name__}: "
                                                     f"{exc}"]))
            finally:
                slot.done.set()
                wake.set()

        threading.Thread(target=work, name=f"fleet-power-{node}", daemon=True).start()
        return slot

    while waiting or running:
        while waiting and len(running) < parallel and slot_at[waiting[0]] <= time.monotonic():
            running.append(start(waiting.pop(0)))
        wake.clear()
        now = time.monotonic()
        for slot in list(running):
            if slot.done.is_set():
                results[slot.node] = slot.out[0]
                running.remove(slot)
            elif now - slot.started >= deadline:
                results[slot.node] = NodeResult(
                    slot.node, Status.FAILED, seconds=now - slot.started,
                    problems=[f"no answer within {deadline:g}s (--deadline); what was asked "
                              "may still reach its BMC"])
                running.remove(slot)
            else:
                continue
            progress(f"{slot.node}: {results[slot.node].status.value}")
        if not any(s.done.is_set() for s in running):
            times = [s.started + deadline for s in running]
            if waiting and len(running) < parallel:
                times.append(slot_at[waiting[0]])
            if times:
                wake.wait(timeout=max(0.0, min(times) - time.monotonic()) + 0.01)
    return [results[n] for n in nodes]
