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

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fleet.render import incremental, scan, volumes

# A store this large (about 500 nodes) is read by a forked child; a smaller one here, when
# it is asked for: forking and sending the result back would cost more than the read.
FORK_MIN_BYTES = 256 * 1024


@dataclass
class Read:
    store: dict[str, Any] | None
    ids: dict[str, str | OSError] = field(default_factory=dict)  # owner -> identity
    listing: dict[str, list[str]] = field(default_factory=dict)  # top -> its files (rel)
    misfiled: str | None = None  # incremental.misfiled_file of the store
    volumes: dict[str, list[str]] | None = None  # volumes.previous_volumes


class Prefetch:
    """Start reading ``root``; :meth:`result` is what was read."""

    def __init__(self, root: Path) -> None:
        from fleet import forks

        self.root = root
        self._read: Read | None = None
        self._child: forks.Child[Read] | None = None
        try:
            size = (root / incremental.STORE).lstat().st_size
        except OSError:
            return
        if size >= FORK_MIN_BYTES and forks.cpus() > 1:
            self._child = forks.Child(lambda: read(root), what="the output's reader")

    def result(self) -> Read:
        if self._read is None:
            self._read = self._child.result() if self._child is not None else read(self.root)
            self._child = None
        return self._read

    def close(self) -> None:
        """Stop a read not asked for (an invalid inventory): the child is reaped."""
        if self._child is not None:
            self._child.close()
            self._child = None


def read(root: Path) -> Read:
    """The store, the identities of the files it lists, and the listing of each top
    directory that could be walked (one with a link or a special file in it is left out:
    the writer walks it itself, and refuses it)."""
    store = incremental.load(root)
    got = Read(store, misfiled=incremental.misfiled_file(store),
               volumes=volumes.previous_volumes(root))
    same: dict[str, str] = {}  # the store's own strings: pickled once, not twice
    if store is not None:
        owners = [(incremental.SITE, store["site"][1]),
                  *((h, entry[1]) for h, entry in store["nodes"].items())]
        got.ids = {owner: incremental.identity_or_error(root, files)
                   for owner, files in owners}
        same = {rel: rel for _owner, files in owners for rel in files}
    for top in scan.OWNED:
        try:
            got.listing[top] = [same.get(rel, rel) for rel in scan.existing(root, top)]
        except OSError:
            continue
    return got
