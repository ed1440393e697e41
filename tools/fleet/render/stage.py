"""Staging a render's output aside, next to the live directory, and the renames that will
put it in place (:class:`Commit`): a whole new tree, or only the changed files."""

from __future__ import annotations

import ctypes
import os
import shutil
import threading
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from fleet.render.journal import Step
from fleet.render.parallel import deal, parallel, workers

# Commit file by file when at most this fraction of an output directory's files change.
FILEWISE_FRACTION = 0.25


# What the writer creates a staged file with (a test replaces it to make a write fail).
_open = os.open
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Writer:
    """Creates files for staging with the fewest system calls: ``open`` (a new file, never
    through a link), one ``write``, ``close``, and a ``fchmod`` only where the umask would
    leave a file less readable than 0644. No fsync here: the whole staging is synced once
    before the commit (:func:`sync`)."""

    def __init__(self) -> None:
        umask = os.umask(0o022)
        os.umask(umask)
        self.chmod = umask & 0o044 != 0

    def __call__(self, dest: str, data: bytes) -> None:
        self._create(dest, data, False)

    def stamped(self, dest: str, data: bytes) -> os.stat_result:
        """Create the file, and return its status (``fstat``: no second path lookup)."""
        st = self._create(dest, data, True)
        assert st is not None
        return st

    def _create(self, dest: str, data: bytes, status: bool) -> os.stat_result | None:
        fd = _open(dest, _CREATE, 0o644)
        try:
            done = os.write(fd, data) if data else 0
            if done < len(data):  # a short write (rare): the rest, without copies
                view = memoryview(data)[done:]
                while view:
                    view = view[os.write(fd, view):]
            if self.chmod:
                os.fchmod(fd, 0o644)
            return os.fstat(fd) if status else None
        finally:
            os.close(fd)


def sync(root: Path) -> None:
    """Make everything staged under ``root`` durable with one ``syncfs`` of its file system
    (one call instead of an fsync per file), before the journal and the first rename: a
    crash after the commit then never leaves an empty or torn file in the live tree."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        if _syncfs(fd) != 0:
            os.sync()  # no syncfs (not Linux, or an old libc): the whole system
    finally:
        os.close(fd)


def _syncfs(fd: int) -> int:
    try:
        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return -1
    return int(fn(fd))


def _link(src: str, dest: str) -> None:
    try:
        os.link(src, dest)  # unchanged: keep the inode, and so the mtime
    except OSError:
        shutil.copy2(src, dest)


def new_stage(root: Path, top: str) -> Path:
    stage = root / f".{top}.render-{os.getpid()}"
    stage.mkdir(mode=0o755)  # leftovers were removed by journal.recover
    return stage


def remove(path: str | Path) -> None:
    """Remove ``path`` whatever it is now (a directory, or what an exchange put there)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with suppress(FileNotFoundError):
            os.unlink(path)


def _build(base: str, entries: list[tuple[str, str, bytes]], old: dict[str, str],
           same: set[str]) -> None:
    """Create ``entries`` (``(rel, path under base, data)``) under ``base``: files (hard
    links for the ``same`` ones) and the directories holding them, by several threads if
    there are many (each creates the directories its own files need)."""
    write = Writer()

    def make(chunk: list[tuple[str, str, bytes]], stop: threading.Event) -> None:
        made = {base}
        for n, (rel, dest, data) in enumerate(chunk):
            if n % 256 == 0 and stop.is_set():
                return
            parent = os.path.dirname(dest)
            if parent not in made:
                makedirs(parent, made)
            if rel in same:
                _link(old[rel], dest)
            else:
                write(dest, data)

    # Chunks are contiguous in path order, so one directory is mostly filled by one thread.
    parallel(deal(entries, workers(len(entries))), make)


def makedirs(path: str, made: set[str]) -> None:
    """``os.makedirs`` below a directory in ``made``, remembering what exists; another
    thread (or a forked worker) may have created some of them already."""
    missing = []
    while path not in made:
        missing.append(path)
        path = os.path.dirname(path)
    for d in reversed(missing):
        with suppress(FileExistsError):
            os.mkdir(d, 0o755)
        made.add(d)


@dataclass
class Commit:
    """Staged output for one owned directory and the renames that put it in place; a
    rollback also sets ``times`` (directory mtimes) back."""

    root: Path
    top: str
    stage: Path
    steps: list[Step]
    times: dict[str, os.stat_result] = field(default_factory=dict)

    def cleanup(self) -> None:
        # After an exchange the staging path holds what was live: a plain file where the
        # directory goes, too.
        remove(self.stage)
        remove(f"{self.stage}.old")


def _stage_tree(root: Path, top: str, wanted: dict[str, bytes], old: dict[str, str],
                same: set[str]) -> Commit:
    """A complete new ``top`` built aside, to be swapped in whole."""
    stage = new_stage(root, top)
    base = os.fspath(stage)
    try:
        _build(base, [(rel, os.path.join(base, rel.split("/", 1)[1]), data)
                      for rel, data in wanted.items()], old, same)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    target = os.fspath(root / top)
    op = "exchange" if os.path.lexists(target) else "move"
    return Commit(root, top, stage, [Step.of(op, base, target)])


# complexity 17 on purpose: docs/architecture.md, "Long functions"
def _stage_files(root: Path, top: str, wanted: dict[str, bytes], old: dict[str, str],  # noqa: C901
                 changes: Changed) -> Commit | None:
    """Only the changed files, staged to be moved into the live tree one by one; None if
    the change does not fit that (a file where a directory was, or the reverse)."""
    rootstr = os.fspath(root)

    def live(rel: str) -> str:
        return os.path.join(rootstr, rel)

    # Directories that keep at least one file; anything else that goes, goes whole.
    kept_dirs: set[str] = set()
    for rel in wanted if changes.removed else ():  # rpartition: dirname's cost at 80,000
        d = rel.rpartition("/")[0]
        while d and d not in kept_dirs:
            kept_dirs.add(d)
            d = d.rpartition("/")[0]
    removals: set[str] = set()
    for rel in changes.removed:
        unit = rel
        d = os.path.dirname(rel)
        while d != top:
            if d not in kept_dirs:
                unit = d  # the highest directory that loses all its files
            d = os.path.dirname(d)
        removals.add(unit)
    removals = {u for u in removals if not any(p in removals for p in _parents(u, top))}

    def gone(path: str) -> bool:  # moved away before the additions come in
        return path in removals or any(p in removals for p in _parents(path, top))

    # Additions: a file into an existing directory, or the highest new directory whole.
    adds: dict[str, list[str]] = {}
    for rel in changes.added:
        unit = rel
        for d in _parents(rel, top):  # from the highest down
            if gone(d) or not os.path.isdir(live(d)):
                unit = d
                break
        if os.path.lexists(live(unit)) and not gone(unit):
            return None  # something else is in the way: let the whole tree be rebuilt
        adds.setdefault(unit, []).append(rel)

    stage = new_stage(root, top)
    base = os.fspath(stage)
    try:
        write = Writer()
        steps = []
        # Removals first (out of the way of additions), then changes, then additions.
        for i, unit in enumerate(sorted(removals)):
            steps.append(Step.of("move", live(unit), os.path.join(base, f"r{i}")))
        for i, rel in enumerate(changes.changed):
            dest = os.path.join(base, f"c{i}")
            write(dest, wanted[rel])
            steps.append(Step.of("exchange", dest, live(rel)))
        for i, (unit, rels) in enumerate(sorted(adds.items())):
            dest = os.path.join(base, f"a{i}")
            if unit in wanted:  # a file
                write(dest, wanted[unit])
            else:
                os.mkdir(dest, 0o755)
                _build(dest, [(rel, os.path.join(dest, os.path.relpath(rel, unit)),
                               wanted[rel]) for rel in sorted(rels)], {}, set())
            steps.append(Step.of("move", dest, live(unit)))
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    # Moving entries in and out changes their directories' mtimes: a rollback sets them
    # back too, so a failure leaves no trace.
    lives = [s.src if s.dest.startswith(base + "/") else s.dest for s in steps]
    return Commit(root, top, stage, steps, {d: os.stat(d) for d in map(os.path.dirname, lives)})


def set_times(times: dict[str, os.stat_result]) -> None:
    for d, st in times.items():
        os.utime(d, ns=(st.st_atime_ns, st.st_mtime_ns))


def _parents(rel: str, top: str) -> list[str]:
    """The directories holding ``rel`` below ``top``, highest first."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(2, len(parts) + 1)]


class Changed(Protocol):
    """What staging needs of :class:`fleet.render.tree.Changes`."""

    added: list[str]
    changed: list[str]
    removed: list[str]


def prepare(root: Path, top: str, wanted: dict[str, bytes], old: dict[str, str],
            changes: Changed, same: set[str]) -> Commit:
    touched = len(changes.added) + len(changes.changed) + len(changes.removed)
    if old and touched <= FILEWISE_FRACTION * max(len(old), len(wanted)):
        commit = _stage_files(root, top, wanted, old, changes)
        if commit is not None:
            return commit
    return _stage_tree(root, top, wanted, old, same)
