"""The forked children a test's code starts (fleet.forks.Child), counted, with the CPUs
made two whatever this host has: so a test can say the work was really forked, and by
which kind of child (its ``what``)."""

from __future__ import annotations

import pytest

from fleet import forks

Started = list[tuple[int, str]]  # each child's pid and what it was started for


def spy_children(monkeypatch: pytest.MonkeyPatch) -> Started:
    """Two CPUs as far as fleet.forks can tell; the pid and the ``what`` of each child
    started from now."""
    monkeypatch.setattr(forks, "cpus", lambda: 2)
    pids: Started = []
    real = forks.Child.__init__

    def spy(self: forks.Child[object], *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)  # type: ignore[arg-type]
        pids.append((self.pid or 0, self.what))

    monkeypatch.setattr(forks.Child, "__init__", spy)
    return pids
