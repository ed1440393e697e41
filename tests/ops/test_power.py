"""``fleet power``'s parts in-process: the per-node action, the bounded pool with its
per-node deadline, the refusal rules (head node, boot mode) and the drain before off, cycle
and reset (the one drain, against tests/support/fakeslurm.py's FAKE Slurm, as reinstall's
tests). The BMCs here are in-process fakes of the client interface
(fleet.bmc.base.BmcClient); tests/ops/test_power_cli.py drives real emulators."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from fleet.bmc.base import BmcClient, BmcUnreachableError
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.master.runner import Result
from fleet.ops import power, powerdrain, refusals
from fleet.pxe.bootmode import PxeBootMode
from ops.helpers import INVENTORY, arm_install, pxe_state
from support.fakeslurm import FakeSlurm


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(INVENTORY)


class FakeBmc:
    """A fake BMC client: a power state, the actions it was sent, optionally a hang."""

    def __init__(self, node: str, state: str = "on", hang: threading.Event | None = None,
                 fail: bool = False) -> None:
        self.node, self.state, self.hang, self.fail = node, state, hang, fail
        self.sent: list[str] = []

    @property
    def name(self) -> str:
        return f"fake {self.node}"

    def power_state(self) -> str:
        if self.hang is not None:
            self.hang.wait()
        if self.fail:
            raise BmcUnreachableError(f"{self.name}: connection refused")
        return self.state

    def _send(self, what: str, after: str) -> str:
        self.sent.append(what)
        self.state = after
        return what

    def power_on(self) -> str:
        return self._send("on", "on")

    def power_off(self) -> str:
        return self._send("off", "off")

    def reset(self) -> str:
        return self._send("reset", "on")

    def power_cycle(self) -> str:
        return self._send("cycle" if self.state == "on" else "on", "on")


def _clients(bmcs: dict[str, FakeBmc]) -> power.ClientFor:
    def client(name: str) -> BmcClient:
        return bmcs[name]  # type: ignore[return-value]
    return client


def _go(_name: str) -> list[str]:
    return []


@pytest.mark.parametrize(("action", "before", "status", "sent"), [
    ("on", "off", "done", ["on"]), ("on", "on", "already", []),
    ("off", "on", "done", ["off"]), ("off", "off", "already", []),
    ("reset", "on", "done", ["reset"]), ("reset", "off", "failed", []),
    ("cycle", "on", "done", ["cycle"]), ("cycle", "off", "done", ["on"]),
    ("status", "on", "done", []), ("status", "off", "done", []),
])
def test_each_action_from_each_state(action: power.Action, before: str, status: str,
                                     sent: list[str]) -> None:
    bmc = FakeBmc("n1", before)
    r = power.act("n1", action, _clients({"n1": bmc}), _go)
    assert (r.status.value, bmc.sent, r.power) == (status, sent, before)
    assert r.action == (sent[0] if sent else None)
    assert r.as_json().keys() == {"node", "status", "power", "action", "seconds", "problems",
                                  "bmc"}


def test_refused_actions_send_nothing_and_status_and_on_are_never_asked() -> None:
    asked: list[str] = []

    def refuse(name: str) -> list[str]:
        asked.append(name)
        return ["a reason"]

    disruptive: tuple[power.Action, ...] = ("off", "cycle", "reset")
    for action in disruptive:
        bmc = FakeBmc("n1", "on")
        r = power.act("n1", action, _clients({"n1": bmc}), refuse)
        assert (r.status, r.problems, bmc.sent) == (power.Status.REFUSED, ["a reason"], [])
    asked.clear()
    never: tuple[power.Action, ...] = ("on", "status")
    for action in never:
        r = power.act("n1", action, _clients({"n1": FakeBmc("n1", "off")}), refuse)
        assert r.status is power.Status.DONE
    assert asked == []


def test_the_pool_keeps_at_most_parallel_nodes_in_flight() -> None:
    live, most, lock = [0], [0], threading.Lock()

    class Counting(FakeBmc):
        def power_state(self) -> str:
            with lock:
                live[0] += 1
                most[0] = max(most[0], live[0])
            time.sleep(0.05)
            with lock:
                live[0] -= 1
            return self.state

    names = [f"n{i}" for i in range(12)]
    bmcs: dict[str, FakeBmc] = {n: Counting(n, "off") for n in names}
    results = power.run(names, "on", _clients(bmcs), _go, parallel=3, deadline=30)
    assert [r.node for r in results] == names
    assert all(r.status is power.Status.DONE for r in results)
    assert most[0] == 3


def test_a_spread_round_starts_each_node_at_its_slot_and_stays_bounded() -> None:
    """The status collector's BMC round (FAKE BMCs): the i-th of N nodes is not asked
    before i*spread/N seconds, and never more than ``parallel`` at once."""
    live, most, lock = [0], [0], threading.Lock()
    asked: dict[str, float] = {}

    class Counting(FakeBmc):
        def power_state(self) -> str:
            with lock:
                asked[self.node] = time.monotonic()
                live[0] += 1
                most[0] = max(most[0], live[0])
            time.sleep(0.2)  # longer than a slot: the pool's bound is what holds
            with lock:
                live[0] -= 1
            return self.state

    names = [f"n{i}" for i in range(10)]
    t0 = time.monotonic()
    results = power.run(names, "status", _clients({n: Counting(n) for n in names}), _go,
                        parallel=2, deadline=30, spread=0.3)
    assert all(r.status is power.Status.DONE and r.power == "on" for r in results)
    assert most[0] == 2
    for i, n in enumerate(names):  # never early (late is the pool's bound)
        assert asked[n] - t0 >= i * 0.3 / len(names), (n, asked[n] - t0)


def test_a_hung_bmc_costs_its_deadline_and_holds_no_other_node() -> None:
    hang = threading.Event()
    names = ["n0", "n1", "n2", "n3"]
    bmcs = {n: FakeBmc(n, "off") for n in names}
    bmcs["n0"].hang = hang  # first in line, and only one slot: the others must still go
    t0 = time.monotonic()
    try:
        results = power.run(names, "on", _clients(bmcs), _go, parallel=1, deadline=1.0)
    finally:
        hang.set()
    took = time.monotonic() - t0
    assert results[0].status is power.Status.FAILED
    assert "no answer within 1s" in results[0].problems[0]
    assert [r.status for r in results[1:]] == [power.Status.DONE] * 3
    assert took < 1.0 + 5  # the hung node's deadline, and slack for the three others


def test_a_failing_bmc_is_its_nodes_failure_only() -> None:
    bmcs = {"n0": FakeBmc("n0", fail=True), "n1": FakeBmc("n1", "off")}
    results = power.run(["n0", "n1"], "on", _clients(bmcs), _go, parallel=2)
    assert results[0].status is power.Status.FAILED
    assert "connection refused" in results[0].problems[0]
    assert results[1].status is power.Status.DONE


def test_head_node_is_refused(inv: Inventory) -> None:
    said = refusals.head_node_refusal(inv, inv.nodes["head-01"])
    assert len(said) == 1 and "salt master" in said[0] and "provisioning" in said[0]
    assert refusals.head_node_refusal(inv, inv.nodes["tbox-001"]) == []


def test_boot_mode_install_or_unknown_is_refused(inv: Inventory, tmp_path: Path) -> None:
    """fleet.pxe.powerguard's one rule, with --ignore-boot-mode named as the way past."""
    node = inv.nodes["tbox-001"]
    missing = refusals.boot_mode_refusal(PxeBootMode(inv, tmp_path / "nowhere"), node)
    assert len(missing) == 1 and "cannot be read" in missing[0]
    assert "--ignore-boot-mode" in missing[0]
    state = pxe_state(tmp_path)
    modes = PxeBootMode(inv, state)
    assert refusals.boot_mode_refusal(modes, node) == []  # no link: local
    arm_install(state, node.mac)
    armed = refusals.boot_mode_refusal(modes, node)
    assert len(armed) == 1 and "boot mode install" in armed[0] and "--ignore-boot-mode" in armed[0]
    (state / ("grub.cfg-" + inv.nodes["tbox-002"].mac)).write_text("not a link")
    odd = refusals.boot_mode_refusal(modes, inv.nodes["tbox-002"])
    assert len(odd) == 1 and "cannot be read" in odd[0] and "not a link" in odd[0]


def _drain(inv: Inventory, slurm: FakeSlurm, node: str, *, force: bool,
           timeout: float = 5) -> tuple[dict[str, str], dict[str, str]]:
    return powerdrain.drain_first(slurm, inv, [node], "off", force=force, timeout=timeout,
                                  poll=0.05)


def test_off_drains_a_node_with_jobs_and_force_cancels_them_by_id(inv: Inventory) -> None:
    slurm = FakeSlurm(["4242", "4243_7"])
    drained, failed = _drain(inv, slurm, "tbox-002", force=True)
    assert failed == {}
    assert drained == {"tbox-002": "--force cancelled 4242, 4243_7; drained (drained)"}
    assert slurm.calls[0] == ("scontrol", "update", "NodeName=tbox-002", "State=DRAIN",
                              "Reason=fleet power off")
    assert ("scancel", "4242", "4243_7") in slurm.calls
    assert not any("State=RESUME" in " ".join(c) for c in slurm.calls)  # stays drained


def test_without_force_the_jobs_are_waited_for_and_a_timeout_fails_the_node(
        inv: Inventory) -> None:
    slurm = FakeSlurm(["4242"])
    drained, failed = _drain(inv, slurm, "tbox-002", force=False, timeout=0.3)
    assert drained == {}
    assert "still draining after 0.3s (--drain-timeout)" in failed["tbox-002"]
    assert "--force" in failed["tbox-002"] and "left drained" in failed["tbox-002"]
    assert not any(c[0] == "scancel" for c in slurm.calls)
    slurm.jobs = []  # the job ended: the wait ends, the node drained
    assert _drain(inv, slurm, "tbox-002", force=False) == (
        {"tbox-002": "drained (drained)"}, {})


def test_a_workers_preemptible_job_is_requeued_never_cancelled(inv: Inventory) -> None:
    slurm = FakeSlurm([], preemptible=["900"])
    drained, _ = _drain(inv, slurm, "tbox-001", force=True)  # a miniray worker
    assert ("scontrol", "requeue", "900") in slurm.calls and slurm.pending == ["900"]
    assert drained["tbox-001"].startswith("requeued 900; ")


def test_slurm_that_cannot_be_asked_fails_the_node_named(inv: Inventory) -> None:
    class Down(FakeSlurm):
        def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
            return Result(tuple(argv), 1, "", "scontrol: error: slurmctld down")

    drained, failed = _drain(inv, Down([]), "tbox-002", force=False)
    assert drained == {} and failed["tbox-002"].startswith("cannot drain it: `scontrol ")
    assert "slurmctld down" in failed["tbox-002"]


def test_a_node_outside_slurm_is_not_drained(inv: Inventory, tmp_path: Path) -> None:
    slurm = FakeSlurm(["4242"])
    stor = next(n for n in inv.nodes.values() if not n.has("slurm.compute")
                and not refusals.head_node_refusal(inv, n))
    assert refusals.refusals(inv, stor, PxeBootMode(inv, pxe_state(tmp_path))) == []
    assert _drain(inv, slurm, stor.hostname, force=True) == ({}, {})
    assert slurm.calls == []
