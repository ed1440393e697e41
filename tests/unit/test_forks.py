"""fleet.forks.Later: a value computed by a forked child from its start, or here when first
asked for; its exception raised here; a child not asked for reaped by close()."""

from __future__ import annotations

import os

import pytest

from fleet import forks


def test_a_forked_value_is_computed_by_a_child_once() -> None:
    later = forks.Later(os.getpid, fork=True, what="a test child")
    child = later._child.pid if later._child is not None else None
    assert later.pending and child is not None
    assert later.result() == child != os.getpid()
    assert not later.pending
    assert later.result() == child  # kept: no second child
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)  # reaped


def test_a_value_not_forked_is_computed_here_when_first_asked() -> None:
    calls: list[int] = []

    def job() -> int:
        calls.append(os.getpid())
        return len(calls)

    later = forks.Later(job, fork=False, what="")
    assert not later.pending and calls == []
    assert later.result() == 1 and later.result() == 1
    assert calls == [os.getpid()]


def test_a_childs_exception_is_raised_here_at_every_ask() -> None:
    def job() -> int:
        raise ValueError(f"broken in {os.getpid()}")

    later = forks.Later(job, fork=True, what="a test child")
    with pytest.raises(ValueError, match="broken in") as exc:
        later.result()
    assert str(os.getpid()) not in str(exc.value)
    with pytest.raises(ValueError) as again:  # the child's, not the job run here
        later.result()
    assert again.value is exc.value


def test_close_reaps_a_child_not_asked_for() -> None:
    later = forks.Later(lambda: b"x" * (1 << 20), fork=True, what="a test child")  # > a pipe
    assert later._child is not None
    pid = later._child.pid
    assert pid is not None
    later.close()
    assert not later.pending
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
