"""What a render reads of its output before it knows the inventory, read while it validates:
the store (``.render.inputs``), the identities of every file the store lists, the files
of ``pillar/``, ``pxe/`` and ``pictures/`` (80,000 ``lstat`` and a walk of 10,000
directories at 10,000 nodes), and the mkv arrays' volumes of the last render.

A large output is read by a forked child, on a second CPU and outside this process's
interpreter lock, so the reading costs the validation nothing (as a thread it slowed the
validation by a quarter). Only a head start: :func:`fleet.render.incremental.plan` judges
the identities read here exactly as those it reads itself, and the writer uses the listing
instead of walking the tree again. ``fleet render`` holds the output's lock from before this
read until its commit, so nothing another render does comes between."""

from __future__ import annotations

from pathlib import Path

from fleet.render import incremental

# A store this large (about 500 nodes) is read by a forked child; a smaller one here, when
# it is asked for: forking and sending the result back would cost more than the read.
FORK_MIN_BYTES = 256 * 1024


class Prefetch:
    """Start reading ``root``; :meth:`result` is what was read."""

    def __init__(self, root: Path) -> None:
        from fleet import forks

        self.root = root
        try:
            size = (root / incremental.STORE).lstat().st_size
        except OSError:
            size = 0
        self._read = forks.Later(lambda: incremental.read(root),
                                 fork=size >= FORK_MIN_BYTES and forks.cpus() > 1,
                                 what="the output's reader")

    def result(self) -> incremental.Read:
        return self._read.result()

    def close(self) -> None:
        """Stop a read not asked for (an invalid inventory): the child is reaped."""
        self._read.close()
