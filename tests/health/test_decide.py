"""--drain / --resume decisions (fleet.health.decide): never a node someone else drained."""

from __future__ import annotations

import pytest

from fleet.health.checks import Finding, NodeReport
from fleet.health.decide import PREFIX, decide, drain_reason


def report(healthy: bool, state: str, reason: str = "") -> NodeReport:
    r = NodeReport("tbox-001", [Finding("slurmd", "ok" if healthy else "problem",
                                        "slurmd: inactive (dead)" if not healthy else "ok")])
    r.slurm = {"NodeName": "tbox-001", "State": state}
    if reason:
        r.slurm["Reason"] = reason
    return r


def test_unhealthy_idle_node_is_drained_with_the_problems() -> None:
    a = decide(report(False, "IDLE"), True, drain=True, resume=False)
    assert a is not None and a.action == "drain"
    assert a.reason == f"{PREFIX} slurmd: inactive (dead)"


def test_unhealthy_node_drained_by_an_operator_is_left_alone() -> None:
    a = decide(report(False, "IDLE+DRAIN", "bad fan [ops@2026-12-01T09:00:00]"), True,
               drain=True, resume=True)
    assert a is not None and a.action == "leave"
    assert "someone else" in a.why and "bad fan" in a.why


def test_healthy_node_drained_by_fleet_health_is_resumed() -> None:
    a = decide(report(True, "IDLE+DRAIN", f"{PREFIX} slurmd: inactive [root@2026-12-01T09:00]"),
               True, drain=False, resume=True)
    assert a is not None and a.action == "resume"


@pytest.mark.parametrize("reason", ["maintenance", "fleet reinstall: health check failed: x",
                                    "fleet rollout (r1): wave 1"])
def test_healthy_node_drained_otherwise_is_never_resumed(reason: str) -> None:
    a = decide(report(True, "IDLE+DRAIN", reason), True, drain=True, resume=True)
    assert a is not None and a.action == "leave"


def test_draining_node_with_jobs_counts_as_drained() -> None:
    a = decide(report(True, "MIXED+DRAIN", f"{PREFIX} munge"), True, drain=False, resume=True)
    assert a is not None and a.action == "resume"


def test_no_flags_no_action_and_healthy_running_node_untouched() -> None:
    assert decide(report(False, "IDLE"), True, drain=False, resume=False) is None
    assert decide(report(True, "ALLOCATED"), True, drain=True, resume=True) is None
    assert decide(report(False, "IDLE"), False, drain=True, resume=True) is None  # not Slurm


def test_already_drained_by_us_with_the_same_problems_is_not_drained_again() -> None:
    r = report(False, "IDLE+DRAIN")
    assert r.slurm is not None
    r.slurm["Reason"] = drain_reason(r.problems) + " [root@2026-12-01T09:00:00]"
    a = decide(r, True, drain=True, resume=False)
    assert a is not None and a.action == "leave"
    r.findings.append(Finding("munge", "problem", "munge credential: Invalid"))
    a = decide(r, True, drain=True, resume=False)
    assert a is not None and a.action == "drain" and "munge" in a.reason


def test_drain_reason_is_cleaned_and_bounded() -> None:
    reason = drain_reason(["x\x1b[31m$(reboot)\nnext", "é" * 1000])
    assert reason.startswith(PREFIX)
    assert "\x1b" not in reason and "\n" not in reason
    assert all(" " <= c <= "~" for c in reason)
    assert len(reason) <= 400
