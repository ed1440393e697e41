"""`fleet render` that SIGKILLs itself at a chosen point of its commit (for test_tree.py).

Run: python killed_render.py POINT RENDER-ARGS...   where POINT is
  ``step:N``   just before the N-th rename of the commit (1-based; none if there are fewer)
  ``renamed``  after the last rename, before the commit journal is removed
  ``cleanup``  after the journal is removed, before the staging directories are

It prints ``steps N`` (the renames it was asked to do) before dying or exiting, so the
test knows how many kill points there are.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from fleet import cli
from fleet.render import journal, stage


def die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> int:
    point, argv = sys.argv[1], sys.argv[2:]
    real_write, real_run = journal.write_journal, journal.run_step
    real_remove, real_cleanup = journal.remove_journal, stage.Commit.cleanup
    count = 0

    def write_journal(root: Any, steps: list[Any]) -> None:
        print(f"steps {len(steps)}", flush=True)
        real_write(root, steps)

    def run_step(step: Any, undo: Any) -> None:
        nonlocal count
        count += 1
        if point == f"step:{count}":
            die()
        real_run(step, undo)

    def remove_journal(root: Any) -> None:
        if point == "renamed":
            die()
        real_remove(root)

    def cleanup(self: Any) -> None:
        if point == "cleanup":
            die()
        real_cleanup(self)

    journal.write_journal = write_journal  # type: ignore[assignment]
    journal.run_step = run_step  # type: ignore[assignment]
    journal.remove_journal = remove_journal  # type: ignore[assignment]
    stage.Commit.cleanup = cleanup  # type: ignore[method-assign]
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
