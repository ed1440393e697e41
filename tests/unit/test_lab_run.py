"""fleet.lab.run.stop_daemon: the lab master's and the lab NTP server's stop."""

from __future__ import annotations

import subprocess

from fleet.lab.run import stop_daemon


def test_stop_daemon_ends_a_real_process() -> None:
    proc = subprocess.Popen(["sleep", "100"])
    stop_daemon("a sleep", lambda: proc.pid if proc.poll() is None else None, timeout=10)
    assert proc.wait(timeout=5) != 0  # ended by the signal


def test_stop_daemon_without_a_pid_does_nothing() -> None:
    """No pid (the daemon is not running): the pid is read once, nothing is signalled and
    nothing waited for (a second read would be the wait loop's)."""
    reads: list[None] = []

    def pid() -> int | None:
        reads.append(None)
        assert len(reads) == 1, "stop_daemon waited although no daemon runs"
        return None

    stop_daemon("nothing", pid, timeout=30)
    assert len(reads) == 1
