"""Write rendered output atomically, compare it with what is on disk, and diff it.

Nothing in the live ``pillar/`` or ``pxe/`` is touched until every new file has been
written aside, in ``.<dir>.render-<pid>``; then the staged output is committed with
atomic renames, each one undone if a later one fails, so a failed render leaves the
previous output as it was. Files whose content is unchanged are never rewritten (their
inodes and mtimes stay), and a directory with no change at all is not touched.

Two ways to commit, chosen per output directory:

- *whole tree*: when the directory is new or most of its files change, a complete new
  tree is built aside (unchanged files hard-linked to the old ones) and swapped in with
  one ``renameat2(RENAME_EXCHANGE)``;
- *file by file*: when few files change (the everyday edit), only those are staged, and
  each is exchanged with (or renamed onto, or renamed away from) its live path; a
  directory that appears or disappears is moved as one. This avoids rebuilding a tree of
  tens of thousands of links and directories for a one-node change. While those few
  renames run (microseconds each), a reader may see some of the files new and others
  still old, as it always could between ``pillar/`` and ``pxe/``.

Large trees are compared and staged by a few threads (the work is system calls, which
run in parallel); small ones in order, in this thread.

Writing stays inside the output directory: a symbolic link (or a FIFO, socket or device)
anywhere in ``pillar/``, ``pxe/`` or a staging directory is refused (:class:`UnsafeOutputError`)
before anything is read or written, so no rename, write or read goes through one.

A render killed while committing is finished by the next one, which then renders as usual
(the journal and the recovery: :mod:`fleet.render.journal`); ``render --check`` reports
such an unfinished commit (:func:`interrupted`).

The parts: :mod:`~fleet.render.scan` reads the tree (never through a link),
:mod:`~fleet.render.stage` stages the output aside, :mod:`~fleet.render.journal` commits it
and recovers, :mod:`~fleet.render.parallel` runs work on a few threads. A first render at
scale skips the comparing: :mod:`~fleet.render.cold`.
"""

from __future__ import annotations

import fcntl
import functools
import os
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from fleet.render import journal, stage
from fleet.render.errors import RenderBusyError
from fleet.render.journal import JOURNAL, interrupted
from fleet.render.parallel import deal, parallel, workers
from fleet.render.scan import OWNED, UnsafeOutputError, existing, same

__all__ = ["JOURNAL", "OWNED", "Changes", "UnsafeOutputError", "compare", "interrupted",
           "unified_diff", "write"]


class KeptFileMissingError(ValueError):
    """A file an incremental render meant to keep is not on disk."""


@dataclass
class Changes:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    interrupted: str | None = None  # what an interrupted render left (compare only)

    @property
    def any(self) -> bool:
        return bool(self.added or self.changed or self.removed or self.interrupted)

    def merge(self, other: Changes) -> None:
        self.added += other.added
        self.changed += other.changed
        self.removed += other.removed
        self.unchanged += other.unchanged


# --- comparing ----------------------------------------------------------------------------


def _split(files: dict[str, str]) -> dict[str, dict[str, bytes]]:
    by_top: dict[str, dict[str, bytes]] = {top: {} for top in OWNED}
    for rel, text in files.items():
        top = rel.split("/", 1)[0]
        if top not in by_top:
            raise ValueError(f"renderer produced {rel!r} outside {', '.join(OWNED)}")
        by_top[top][rel] = text.encode("utf-8")
    return by_top


def _split_keep(keep: Collection[str], files: dict[str, str]) -> dict[str, list[str]]:
    """The ``keep`` paths not in ``files``, by owned directory."""
    by_top: dict[str, list[str]] = {top: [] for top in OWNED}
    for rel in keep:
        if rel not in files:
            top = rel.partition("/")[0]
            if top not in by_top:
                raise ValueError(f"a kept file {rel!r} is outside {', '.join(OWNED)}")
            by_top[top].append(rel)
    return by_top


def _classify(old: dict[str, str], wanted: dict[str, bytes],
              keep: Collection[str] = ()) -> tuple[Changes, set[str]]:
    """Sort ``wanted`` against the files on disk; also return the unchanged paths. The
    ``keep`` paths (none of them in ``wanted``) are unchanged without being read."""
    items = sorted(wanted.items())

    def sort(chunk: list[tuple[str, bytes]], stop: threading.Event) -> tuple[
            list[str], list[str], list[str]]:
        added, changed, unchanged = [], [], []
        get = old.get
        for rel, data in chunk:
            path = get(rel)
            if path is None:
                added.append(rel)
            elif not same(path, data):
                changed.append(rel)
            else:
                unchanged.append(rel)
        return added, changed, unchanged

    changes = Changes()
    kept = set(keep)
    missing = kept.difference(old)  # set operations: 80,000 kept paths at 10,000 nodes
    if missing:
        raise KeptFileMissingError(f"{min(missing)} is gone from the output: render it whole")
    for added, changed, unchanged in parallel(deal(items, workers(len(items))), sort):
        changes.added += added
        changes.changed += changed
        kept.update(unchanged)
    changes.unchanged = len(kept)
    changes.removed = sorted(old.keys() - wanted.keys() - kept)
    return changes, kept


def compare(root: Path, files: dict[str, str]) -> Changes:
    """What writing ``files`` under ``root`` would change."""
    result = Changes()
    for top, wanted in _split(files).items():
        result.merge(_classify(existing(root, top), wanted)[0])
    result.interrupted = interrupted(root)
    return result


def unified_diff(root: Path, files: dict[str, str], changes: Changes) -> Iterator[str]:
    import difflib  # only `fleet diff` needs it
    for rel in sorted([*changes.added, *changes.changed, *changes.removed]):
        path = root / rel
        old = path.read_text("utf-8", errors="replace").splitlines(True) if path.exists() else []
        new = files[rel].splitlines(True) if rel in files else []
        yield from difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}")


# --- writing -------------------------------------------------------------------------------


_held: set[tuple[int, int]] = set()  # (device, inode) of the output directories locked here


@contextmanager
def lock(root: Path) -> Iterator[None]:
    """One render at a time per output directory (a lock on the directory itself). Taken
    again by this process while it holds it (``fleet render`` holds it from its first read
    of the output to its commit), it is already held: a no-op."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    key: tuple[int, int] | None = None
    try:
        st = os.fstat(fd)
        if (st.st_dev, st.st_ino) in _held:
            yield
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RenderBusyError(f"another render is writing into {root}") from None
        key = (st.st_dev, st.st_ino)
        _held.add(key)
        yield
    finally:
        if key is not None:
            _held.discard(key)
        os.close(fd)


def write(root: Path, files: dict[str, str], keep: Collection[str] = (),
          removable: Collection[str] | None = None,
          listing: dict[str, list[str]] | None = None,
          gate: Callable[[], None] | None = None) -> Changes:
    """Write ``files`` (paths relative to ``root``) replacing the owned directories; first
    finish a commit that a killed render left (:func:`fleet.render.journal.recover`).
    ``keep``: paths not in ``files`` that stay as they are on disk, unread (the files an
    incremental render did not render again); :class:`KeptFileMissingError` if one is gone,
    or if a file not in ``removable`` (None: any) would be removed. ``listing``: the files
    of each top directory as read under this lock, before (:mod:`fleet.render.prefetch`):
    no walk of those again. ``gate``: called once everything is compared and before
    anything is written; what it raises stops the write (the inventory's verdict, still
    being reached while ``fleet render`` rendered: :class:`fleet.context.Checked`)."""
    total = Changes()
    kept_by_top = _split_keep(keep, files)
    root.mkdir(parents=True, exist_ok=True)
    with lock(root):
        journal.recover(root)
        compared = []
        for top, rendered in _split(files).items():
            listed = listing.get(top) if listing is not None else None
            old = existing(root, top) if listed is None else _paths(root, listed)
            changes, kept = _classify(old, rendered, kept_by_top[top])
            if removable is not None and not set(changes.removed) <= set(removable):
                raise KeptFileMissingError(f"{top}/ has files no node owns: render it whole")
            total.merge(changes)
            if changes.any:
                compared.append((top, rendered, old, changes, kept))
        if gate is not None:
            gate()
        commits: list[stage.Commit] = []
        try:
            for top, rendered, old, changes, kept in compared:
                # staging sees every path of the new tree: a kept one's data is unread
                wanted = dict.fromkeys(kept_by_top[top], b"")
                wanted.update(rendered)
                commits.append(stage.prepare(root, top, wanted, old, changes, kept))
            commit_all(root, commits)
        finally:
            for commit in commits:
                commit.cleanup()
    return total


def _paths(root: Path, rels: list[str]) -> dict[str, str]:
    """``{relative path: absolute path}``, as :func:`existing` gives them."""
    base = os.fspath(root) + os.sep
    return {rel: base + rel for rel in rels}


def commit_all(root: Path, commits: list[stage.Commit]) -> None:
    if not commits:
        return
    stage.sync(root)
    journal.write_journal(root, [s for c in commits for s in c.steps])
    undo: journal.Undo = []
    try:
        for commit in commits:
            undo.append(functools.partial(stage.set_times, commit.times))
            for step in commit.steps:
                journal.run_step(step, undo)
    except BaseException:
        for step_back in reversed(undo):  # put the old files and trees back
            step_back()
        raise
    finally:
        journal.remove_journal(root)
