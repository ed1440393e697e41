"""The forked children a test's code starts (fleet.forks.Child), counted, with the CPUs
made two whatever this host has: so a test can say the work was really forked."""

from __future__ import annotations

import pytest

from fleet import forks


def spy_children(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Two CPUs as far as fleet.forks can tell; the pid of each child started from now."""
    monkeypatch.setattr(forks, "cpus", lambda: 2)
    pids: list[int] = []
    real = forks.Child.__init__

    def spy(self: forks.Child[object], *args: object, **kwargs: object) -> None:
        real(self, *args, **kwargs)  # type: ignore[arg-type]
        pids.append(self.pid or 0)

    monkeypatch.setattr(forks.Child, "__init__", spy)
    return pids
