"""The cross-object rules at scale: from FORK_MIN_NODES nodes on (with a second CPU) the
costliest rules run in a forked child beside the others. The problems must be the same, in
the same order, as when every rule runs in this process; a rule that fails in the child
fails the validation here."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from fleet.inventory import checks
from fleet.inventory.load import parse
from fleet.problems import InventoryError, Problem
from support.forking import Started, spy_children
from support.inventory_edits import FILE, edit


def _problems(text: str) -> list[str]:
    with pytest.raises(InventoryError) as exc:
        parse(text, FILE)
    return [str(p) for p in exc.value.problems]


@pytest.fixture
def forking(monkeypatch: pytest.MonkeyPatch) -> Started:
    """Fork from the first node on, whatever the CPUs here; the children's pids."""
    monkeypatch.setattr(checks, "FORK_MIN_NODES", 1)
    return spy_children(monkeypatch)


def test_forked_rules_report_what_one_process_reports_in_its_order(
        small_text: str, monkeypatch: pytest.MonkeyPatch, forking: Started) -> None:
    # problems of forked rules (a MAC, an address) and of others (a switch port, and a rule
    # of this test's that runs first, in this process) at once; run_all's own order (the
    # error sorts them by position after)
    text, _ = edit(small_text, 'mac: "52:54:00:00:00:66"', 'mac: "52:54:00:00:00:65"')
    text, _ = edit(text, "prov: {network: prov, ip_base: 10.1.0.150",
                   "prov: {network: prov, ip_base: 10.1.0.100")
    text, _ = edit(text, "switch: sw1, first_port: 10}", "switch: sw1, first_port: 3}")

    def first(c: checks.Ctx) -> Iterator[Problem]:
        yield c.problem(("site",), "the first rule's problem", code="first")

    monkeypatch.setattr(checks, "RULES", (first, *checks.RULES))
    ctxs: list[checks.Ctx] = []
    real = checks.run_all

    def keep(c: checks.Ctx) -> list[Problem]:
        ctxs.append(c)
        return real(c)

    monkeypatch.setattr(checks, "run_all", keep)
    with pytest.raises(InventoryError):
        parse(text, FILE)
    forked = real(ctxs[0])
    assert len(forking) == 2, "the rules did not fork"
    with monkeypatch.context() as m:
        m.setattr(checks, "FORK_MIN_NODES", 10**9)
        serial = real(ctxs[0])
    assert len(forking) == 2  # the serial run did not fork
    assert forked == serial
    assert forked[0].message == "the first rule's problem"
    said = " ".join(p.message for p in forked)
    assert "already used by" in said and "sw1 port 3" in said


def test_a_rule_failing_in_the_child_fails_the_validation(
        small_text: str, monkeypatch: pytest.MonkeyPatch, forking: Started) -> None:
    here = os.getpid()

    def broken(c: checks.Ctx) -> list[object]:
        if os.getpid() != here:
            raise RuntimeError("a rule broke in the child")
        return []

    monkeypatch.setattr(checks, "RULES", (*checks.RULES, broken))
    monkeypatch.setattr(checks, "_FORKED", frozenset({*checks._FORKED, broken}))
    with pytest.raises(RuntimeError, match="a rule broke in the child"):
        parse(small_text, FILE)
    assert forking
