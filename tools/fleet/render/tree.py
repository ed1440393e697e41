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
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from fleet.render.errors import RenderBusyError

OWNED = ("pillar", "pxe")
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# Commit file by file when at most this fraction of an output directory's files change.
_FILEWISE_FRACTION = 0.25
# Below this many files, compare and stage in one thread (and in order).
_PARALLEL_MIN = 1000

_T = TypeVar("_T")
_R = TypeVar("_R")
Undo = list[Callable[[], None]]


@dataclass
class Changes:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0

    @property
    def any(self) -> bool:
        return bool(self.added or self.changed or self.removed)

    def merge(self, other: Changes) -> None:
        self.added += other.added
        self.changed += other.changed
        self.removed += other.removed
        self.unchanged += other.unchanged


# --- running work on a few threads ------------------------------------------------------


def _workers(items: int) -> int:
    if items < _PARALLEL_MIN:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 4))


def _parallel(chunks: Sequence[_T], work: Callable[[_T, threading.Event], _R]) -> list[_R]:
    """``[work(chunk, stop) for chunk in chunks]``, one thread per chunk after the first
    (which runs here). The first exception stops the others (they poll ``stop``) and is
    raised once all have ended, so no thread is still writing when the caller cleans up."""
    if len(chunks) == 1:
        return [work(chunks[0], threading.Event())]
    stop = threading.Event()
    results: dict[int, _R] = {}
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = work(chunks[i], stop)
        except BaseException as exc:  # re-raised by the caller's thread below
            errors.append(exc)
            stop.set()

    threads = [threading.Thread(target=run, args=(i,), daemon=True)
               for i in range(1, len(chunks))]
    for t in threads:
        t.start()
    try:
        run(0)
    finally:
        try:
            for t in threads:
                t.join()
        except BaseException:  # interrupted while waiting: stop the others, then go on
            stop.set()
            for t in threads:
                t.join()
            raise
    if errors:
        raise errors[0]
    return [results[i] for i in range(len(chunks))]


def _deal(items: list[_T], n: int) -> list[list[_T]]:
    """Split ``items`` into ``n`` contiguous chunks of about equal size."""
    size = -(-len(items) // n)
    return [items[i:i + size] for i in range(0, len(items), size)] or [[]]


# --- reading and comparing ---------------------------------------------------------------


def _existing(root: Path, top: str) -> dict[str, str]:
    """``{relative path: absolute path}`` of the files under ``root/top`` (strings: hot path)."""
    base = os.path.join(root, top)
    found: dict[str, str] = {}
    if not os.path.isdir(base):
        return found
    cut = len(os.fspath(root)) + 1
    for dirpath, _dirs, files in os.walk(base):
        for name in files:
            full = os.path.join(dirpath, name)
            found[full[cut:]] = full
    return found


def _same(path: str, data: bytes) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, len(data) + 1) == data  # one read: files are small
    finally:
        os.close(fd)


def _split(files: dict[str, str]) -> dict[str, dict[str, bytes]]:
    by_top: dict[str, dict[str, bytes]] = {top: {} for top in OWNED}
    for rel, text in files.items():
        top = rel.split("/", 1)[0]
        if top not in by_top:
            raise ValueError(f"renderer produced {rel!r} outside {', '.join(OWNED)}")
        by_top[top][rel] = text.encode("utf-8")
    return by_top


def _classify(old: dict[str, str], wanted: dict[str, bytes]) -> tuple[Changes, set[str]]:
    """Sort ``wanted`` against the files on disk; also return the unchanged paths."""
    items = sorted(wanted.items())

    def sort(chunk: list[tuple[str, bytes]], stop: threading.Event) -> tuple[
            list[str], list[str], list[str]]:
        added, changed, same = [], [], []
        get = old.get
        for rel, data in chunk:
            path = get(rel)
            if path is None:
                added.append(rel)
            elif not _same(path, data):
                changed.append(rel)
            else:
                same.append(rel)
        return added, changed, same

    changes = Changes()
    same: set[str] = set()
    for added, changed, unchanged in _parallel(_deal(items, _workers(len(items))), sort):
        changes.added += added
        changes.changed += changed
        same.update(unchanged)
    changes.unchanged = len(same)
    changes.removed = sorted(set(old) - set(wanted))
    return changes, same


def compare(root: Path, files: dict[str, str]) -> Changes:
    """What writing ``files`` under ``root`` would change."""
    result = Changes()
    for top, wanted in _split(files).items():
        result.merge(_classify(_existing(root, top), wanted)[0])
    return result


def unified_diff(root: Path, files: dict[str, str], changes: Changes) -> Iterator[str]:
    import difflib  # only `fleet diff` needs it
    for rel in sorted([*changes.added, *changes.changed, *changes.removed]):
        path = root / rel
        old = path.read_text("utf-8", errors="replace").splitlines(True) if path.exists() else []
        new = files[rel].splitlines(True) if rel in files else []
        yield from difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}")


# --- writing -------------------------------------------------------------------------------


@contextmanager
def _lock(root: Path) -> Iterator[None]:
    """One render at a time per output directory (a lock on the directory itself)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RenderBusyError(f"another render is writing into {root}") from None
        yield
    finally:
        os.close(fd)


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths; False if the kernel or libc cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), os.fspath(a))


class _Writer:
    """Creates files for staging: ``open`` (so tests can make it fail), one write, and a
    chmod only where the umask would leave a file less readable than 0644."""

    def __init__(self) -> None:
        umask = os.umask(0o022)
        os.umask(umask)
        self.chmod = umask & 0o044 != 0

    def __call__(self, dest: str, data: bytes) -> None:
        with open(dest, "wb", buffering=0) as fh:
            fh.write(data)
            if self.chmod:
                os.fchmod(fh.fileno(), 0o644)


def _link(src: str, dest: str) -> None:
    try:
        os.link(src, dest)  # unchanged: keep the inode, and so the mtime
    except OSError:
        shutil.copy2(src, dest)


def _new_stage(root: Path, top: str) -> Path:
    stage = root / f".{top}.render-{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(mode=0o755)
    return stage


def _build(base: str, entries: list[tuple[str, str, bytes]], old: dict[str, str],
           same: set[str]) -> None:
    """Create ``entries`` (``(rel, path under base, data)``) under ``base``: files (hard
    links for the ``same`` ones) and the directories holding them, by several threads if
    there are many (each creates the directories its own files need)."""
    write = _Writer()

    def make(chunk: list[tuple[str, str, bytes]], stop: threading.Event) -> None:
        made = {base}
        for n, (rel, dest, data) in enumerate(chunk):
            if n % 256 == 0 and stop.is_set():
                return
            parent = os.path.dirname(dest)
            if parent not in made:
                _makedirs(parent, base, made)
            if rel in same:
                _link(old[rel], dest)
            else:
                write(dest, data)

    # Chunks are contiguous in path order, so one directory is mostly filled by one thread.
    _parallel(_deal(entries, _workers(len(entries))), make)


def _makedirs(path: str, base: str, made: set[str]) -> None:
    """``os.makedirs`` below ``base``, remembering what exists; another thread may have
    created some of them already."""
    missing = []
    while path not in made:
        missing.append(path)
        path = os.path.dirname(path)
    for d in reversed(missing):
        with suppress(FileExistsError):
            os.mkdir(d, 0o755)
        made.add(d)


@dataclass
class _Commit:
    """Staged output for one owned directory and how to put it in place."""

    root: Path
    top: str
    stage: Path
    apply: Callable[[Undo], None]

    def cleanup(self) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)


def _stage_tree(root: Path, top: str, wanted: dict[str, bytes], old: dict[str, str],
                same: set[str]) -> _Commit:
    """A complete new ``top`` built aside, to be swapped in whole."""
    stage = _new_stage(root, top)
    base = os.fspath(stage)
    try:
        _build(base, [(rel, os.path.join(base, rel.split("/", 1)[1]), data)
                      for rel, data in wanted.items()], old, same)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise

    def apply(undo: Undo) -> None:
        target = root / top
        if not target.exists():
            stage.rename(target)
            stage.mkdir()  # keep the name so cleanup/rollback logic stays uniform
        elif not _exchange(stage, target):  # no renameat2: briefly without the directory
            backup = root / f".{top}.old-{os.getpid()}"
            target.rename(backup)
            stage.rename(target)
            backup.rename(stage)
        undo.append(lambda: _put_back(target, stage))

    return _Commit(root, top, stage, apply)


def _put_back(target: Path, stage: Path) -> None:
    if not _exchange(stage, target):
        tmp = target.with_name(target.name + ".rollback")
        target.rename(tmp)
        stage.rename(target)
        tmp.rename(stage)


def _replace(staged: str, live: str, undo: Undo) -> None:
    """Put the staged file at ``live``; the old file ends up at ``staged``."""
    if _exchange(Path(staged), Path(live)):
        undo.append(lambda: _swap_back(staged, live))
        return
    backup = staged + ".old"
    os.link(live, backup)
    os.replace(staged, live)
    undo.append(lambda: os.replace(backup, live))


def _swap_back(staged: str, live: str) -> None:
    if not _exchange(Path(staged), Path(live)):
        os.replace(staged, live)


def _move(src: str, dest: str, undo: Undo) -> None:
    """Rename ``src`` to ``dest``, which must not exist (checked while planning)."""
    os.rename(src, dest)
    undo.append(lambda: os.rename(dest, src))


def _stage_files(root: Path, top: str, wanted: dict[str, bytes], old: dict[str, str],
                 changes: Changes) -> _Commit | None:
    """Only the changed files, staged to be moved into the live tree one by one; None if
    the change does not fit that (a file where a directory was, or the reverse)."""
    rootstr = os.fspath(root)

    def live(rel: str) -> str:
        return os.path.join(rootstr, rel)

    # Directories that keep at least one file; anything else that goes, goes whole.
    kept_dirs: set[str] = set()
    for rel in wanted:
        d = os.path.dirname(rel)
        while d and d not in kept_dirs:
            kept_dirs.add(d)
            d = os.path.dirname(d)
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

    stage = _new_stage(root, top)
    base = os.fspath(stage)
    try:
        write = _Writer()
        staged_changes = []
        for i, rel in enumerate(changes.changed):
            dest = os.path.join(base, f"c{i}")
            write(dest, wanted[rel])
            staged_changes.append((dest, live(rel)))
        staged_adds = []
        for i, (unit, rels) in enumerate(sorted(adds.items())):
            dest = os.path.join(base, f"a{i}")
            if unit in wanted:  # a file
                write(dest, wanted[unit])
            else:
                os.mkdir(dest, 0o755)
                _build(dest, [(rel, os.path.join(dest, os.path.relpath(rel, unit)),
                               wanted[rel]) for rel in sorted(rels)], {}, set())
            staged_adds.append((dest, live(unit)))
        trash = [(live(unit), os.path.join(base, f"r{i}"))
                 for i, unit in enumerate(sorted(removals))]
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise

    def apply(undo: Undo) -> None:
        # Moving entries in and out changes their directories' mtimes: a rollback sets
        # them back too (this step is undone last), so a failure leaves no trace.
        parents = {os.path.dirname(p) for p in [*(src for src, _ in trash),
                                                 *(d for _, d in staged_changes),
                                                 *(d for _, d in staged_adds)]}
        times = {d: os.stat(d) for d in parents}
        undo.append(lambda: _set_times(times))
        for src, dest in trash:
            _move(src, dest, undo)
        for staged, dest in staged_changes:
            _replace(staged, dest, undo)
        for staged, dest in staged_adds:
            _move(staged, dest, undo)

    return _Commit(root, top, stage, apply)


def _set_times(times: dict[str, os.stat_result]) -> None:
    for d, st in times.items():
        os.utime(d, ns=(st.st_atime_ns, st.st_mtime_ns))


def _parents(rel: str, top: str) -> list[str]:
    """The directories holding ``rel`` below ``top``, highest first."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(2, len(parts) + 1)]


def _prepare(root: Path, top: str, wanted: dict[str, bytes], old: dict[str, str],
             changes: Changes, same: set[str]) -> _Commit:
    touched = len(changes.added) + len(changes.changed) + len(changes.removed)
    if old and touched <= _FILEWISE_FRACTION * max(len(old), len(wanted)):
        commit = _stage_files(root, top, wanted, old, changes)
        if commit is not None:
            return commit
    return _stage_tree(root, top, wanted, old, same)


def write(root: Path, files: dict[str, str]) -> Changes:
    """Write ``files`` (paths relative to ``root``) replacing the owned directories."""
    total = Changes()
    root.mkdir(parents=True, exist_ok=True)
    with _lock(root):
        commits: list[_Commit] = []
        try:
            for top, wanted in _split(files).items():
                old = _existing(root, top)
                changes, same = _classify(old, wanted)
                total.merge(changes)
                if changes.any:
                    commits.append(_prepare(root, top, wanted, old, changes, same))
            _commit_all(commits)
        finally:
            for commit in commits:
                commit.cleanup()
    return total


def _commit_all(commits: list[_Commit]) -> None:
    undo: Undo = []
    try:
        for commit in commits:
            commit.apply(undo)
    except BaseException:
        for step in reversed(undo):  # put the old files and trees back
            step()
        raise
