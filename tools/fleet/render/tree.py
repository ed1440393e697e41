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

A render killed while committing is finished by the next one: before its first rename the
commit writes a journal (``.render.commit``: each rename, and the inode that is in place
once it is done) and removes it after its last; the next render finds the journal, does
the renames not yet done and removes what staging is left, then renders as usual.
``render --check`` reports such an unfinished commit (:func:`interrupted`).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import functools
import json
import os
import re
import shutil
import stat
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from fleet.render.errors import RenderBusyError

OWNED = ("pillar", "pxe", "pictures")
JOURNAL = ".render.commit"
# What a render puts next to pillar/ and pxe/ while it writes (or leaves when killed).
_LEFTOVER = re.compile(rf"^\.({'|'.join(OWNED)})\.(render|old|rollback)-\d+(\.old)?$"
                       r"|^\.render\.commit(\.tmp)?$")
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# Commit file by file when at most this fraction of an output directory's files change.
_FILEWISE_FRACTION = 0.25
# Below this many files, compare and stage in one thread (and in order).
_PARALLEL_MIN = 1000

_T = TypeVar("_T")
_R = TypeVar("_R")
Undo = list[Callable[[], None]]


class UnsafeOutputError(OSError):
    """Something in the output tree the writer will not go through (a symbolic link, a
    FIFO, a socket, a device), or a commit journal it did not write."""


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
    """``{relative path: absolute path}`` of the files under ``root/top`` (strings: hot path);
    refuses anything there but regular files and directories."""
    base = os.path.join(root, top)
    found: dict[str, str] = {}
    try:
        mode = os.lstat(base).st_mode
    except FileNotFoundError:
        return found
    if stat.S_ISLNK(mode):
        raise _unsafe(base)
    if not stat.S_ISDIR(mode):
        return found  # a file where the directory goes: replaced whole
    cut = len(os.fspath(root)) + 1
    for path in _walk(base):
        found[path[cut:]] = path
    return found


def _walk(base: str) -> Iterator[str]:
    """The files below the directory ``base``; a link or special file there is refused
    (the type comes from readdir: no extra system call per entry)."""
    stack = [base]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    yield entry.path
                else:
                    raise _unsafe(entry.path)


def _unsafe(path: str) -> UnsafeOutputError:
    try:
        st = os.lstat(path)
    except OSError:
        st = None
    if st is not None and stat.S_ISLNK(st.st_mode):
        what, code = f"a symbolic link (to {os.readlink(path)})", errno.ELOOP
    else:
        what, code = "neither a regular file nor a directory", errno.EINVAL
    return UnsafeOutputError(
        code, f"{what} in the output tree: fleet writes only plain files and directories "
              "there and never follows a link out of it; remove it (the next render puts "
              "the rendered files in its place)", path)


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


def _exchange(a: str | Path, b: str | Path) -> bool:
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
    stage.mkdir(mode=0o755)  # leftovers were removed by _recover
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


@dataclass(frozen=True)
class _Step:
    """One rename of a commit. ``move``: ``src`` to ``dest``, which does not exist;
    ``exchange``: swap the two. Either way it is done once ``dest`` is the inode ``ino``
    (``src``'s when the commit began): that is how a later render tells."""

    op: str
    src: str
    dest: str
    ino: int

    @staticmethod
    def of(op: str, src: str, dest: str) -> _Step:
        return _Step(op, src, dest, os.lstat(src).st_ino)

    def done(self) -> bool:
        try:
            return os.lstat(self.dest).st_ino == self.ino
        except FileNotFoundError:
            return False


def _run_step(step: _Step, undo: Undo) -> None:
    if step.op == "move":
        os.rename(step.src, step.dest)
        undo.append(lambda: os.rename(step.dest, step.src))
    elif not os.path.lexists(step.dest):  # only when finishing a commit killed midway
        os.rename(step.src, step.dest)
    elif _exchange(step.src, step.dest):
        undo.append(lambda: _swap_back(step.src, step.dest))
    elif os.path.isdir(step.dest):  # no renameat2: briefly without the directory
        _swap_dirs(step.src, step.dest)
        undo.append(lambda: _swap_dirs(step.src, step.dest))
    else:  # no renameat2, a file: never without it
        backup = step.src + ".old"
        os.link(step.dest, backup)
        os.replace(step.src, step.dest)
        undo.append(lambda: os.replace(backup, step.dest))


def _swap_back(a: str, b: str) -> None:
    if not _exchange(a, b):
        _swap_dirs(a, b) if os.path.isdir(b) else os.replace(a, b)


def _swap_dirs(a: str, b: str) -> None:
    aside = a + ".old"
    os.rename(b, aside)
    os.rename(a, b)
    os.rename(aside, a)


@dataclass
class _Commit:
    """Staged output for one owned directory and the renames that put it in place; a
    rollback also sets ``times`` (directory mtimes) back."""

    root: Path
    top: str
    stage: Path
    steps: list[_Step]
    times: dict[str, os.stat_result] = field(default_factory=dict)

    def cleanup(self) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)
        shutil.rmtree(f"{self.stage}.old", ignore_errors=True)


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
    target = os.fspath(root / top)
    op = "exchange" if os.path.lexists(target) else "move"
    return _Commit(root, top, stage, [_Step.of(op, base, target)])


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
        steps = []
        # Removals first (out of the way of additions), then changes, then additions.
        for i, unit in enumerate(sorted(removals)):
            steps.append(_Step.of("move", live(unit), os.path.join(base, f"r{i}")))
        for i, rel in enumerate(changes.changed):
            dest = os.path.join(base, f"c{i}")
            write(dest, wanted[rel])
            steps.append(_Step.of("exchange", dest, live(rel)))
        for i, (unit, rels) in enumerate(sorted(adds.items())):
            dest = os.path.join(base, f"a{i}")
            if unit in wanted:  # a file
                write(dest, wanted[unit])
            else:
                os.mkdir(dest, 0o755)
                _build(dest, [(rel, os.path.join(dest, os.path.relpath(rel, unit)),
                               wanted[rel]) for rel in sorted(rels)], {}, set())
            steps.append(_Step.of("move", dest, live(unit)))
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    # Moving entries in and out changes their directories' mtimes: a rollback sets them
    # back too, so a failure leaves no trace.
    lives = [s.src if s.dest.startswith(base + "/") else s.dest for s in steps]
    return _Commit(root, top, stage, steps, {d: os.stat(d) for d in map(os.path.dirname, lives)})


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
    """Write ``files`` (paths relative to ``root``) replacing the owned directories; first
    finish a commit that a killed render left (:func:`recover`)."""
    total = Changes()
    root.mkdir(parents=True, exist_ok=True)
    with _lock(root):
        _recover(root)
        commits: list[_Commit] = []
        try:
            for top, wanted in _split(files).items():
                old = _existing(root, top)
                changes, same = _classify(old, wanted)
                total.merge(changes)
                if changes.any:
                    commits.append(_prepare(root, top, wanted, old, changes, same))
            _commit_all(root, commits)
        finally:
            for commit in commits:
                commit.cleanup()
    return total


def _commit_all(root: Path, commits: list[_Commit]) -> None:
    if not commits:
        return
    _write_journal(root, [s for c in commits for s in c.steps])
    undo: Undo = []
    try:
        for commit in commits:
            undo.append(functools.partial(_set_times, commit.times))
            for step in commit.steps:
                _run_step(step, undo)
    except BaseException:
        for step_back in reversed(undo):  # put the old files and trees back
            step_back()
        raise
    finally:
        _remove_journal(root)


# --- the commit journal: what a killed render left ---------------------------------------


def _write_journal(root: Path, steps: list[_Step]) -> None:
    """Record the commit's renames (paths relative to ``root``), durably, before the first."""
    cut = len(os.fspath(root)) + 1
    data = json.dumps({"pid": os.getpid(), "steps": [
        {"op": s.op, "src": s.src[cut:], "dest": s.dest[cut:], "ino": s.ino} for s in steps]})
    tmp = root / f"{JOURNAL}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        try:
            view = memoryview(data.encode())
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, root / JOURNAL)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(root)


def _remove_journal(root: Path) -> None:
    with suppress(FileNotFoundError):
        os.unlink(root / JOURNAL)
    _fsync_dir(root)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_journal(root: Path) -> list[_Step] | None:
    """The renames of the commit a killed render left, or None if there is none; refuses a
    journal that names anything but the owned directories and the staging next to them."""
    path = root / JOURNAL
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link
            raise _unsafe(os.fspath(path)) from exc
        raise
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read()
    bad = UnsafeOutputError(errno.EINVAL, "not a commit journal fleet wrote (remove it and "
                            "render again)", os.fspath(path))
    try:
        entries = json.loads(raw)["steps"]
        steps = [_Step(e["op"], os.path.join(root, e["src"]), os.path.join(root, e["dest"]),
                       e["ino"]) for e in entries]
    except (ValueError, KeyError, TypeError) as exc:
        raise bad from exc
    for e, s in zip(entries, steps, strict=True):
        if s.op not in ("move", "exchange") or not isinstance(s.ino, int) or not all(
                _inside(root, rel) for rel in (e["src"], e["dest"])):
            raise bad
    return steps


def _inside(root: Path, rel: object) -> bool:
    if not isinstance(rel, str) or os.path.isabs(rel) or os.path.normpath(rel) != rel:
        return False
    first = rel.split("/", 1)[0]
    return first in OWNED or (bool(_LEFTOVER.match(first)) and first != JOURNAL)


def _leftovers(root: Path) -> list[str]:
    """Names of what renders put next to pillar/ and pxe/ (staging, journal), sorted."""
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if _LEFTOVER.match(n))


def interrupted(root: Path) -> str | None:
    """What an interrupted render left in ``root``, in words, or None (writes nothing);
    refuses a link in what it left. None while a render is writing there (what is next
    to pillar/ and pxe/ is then its own)."""
    try:
        fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return None
    finally:
        os.close(fd)
    return _left(root)


def _left(root: Path) -> str | None:
    for name in _leftovers(root):
        left = os.path.join(root, name)
        if os.path.islink(left):
            raise _unsafe(left)
        if os.path.isdir(left):
            for _ in _walk(left):
                pass
    steps = _read_journal(root)
    if steps is not None:
        done = sum(s.done() for s in steps)
        return (f"a render was killed while committing ({done} of {len(steps)} renames done, "
                f"{root / JOURNAL}): pillar/ and pxe/ are part old, part new; the next "
                "`fleet render` finishes that commit")
    staging = _leftovers(root)
    if staging:
        return (f"an interrupted render left {', '.join(staging)} in {root}; the next "
                "`fleet render` removes it")
    return None


def _recover(root: Path) -> str | None:
    """Finish the commit of a render killed in ``root`` and remove what it left (under the
    lock); returns what was found (as :func:`interrupted` says it), or None."""
    found = _left(root)
    if found is None:
        return None
    names = _leftovers(root)
    for step in _read_journal(root) or []:
        if not step.done() and os.path.lexists(step.src):
            _run_step(step, [])  # the renames not yet done, in their order
    _remove_journal(root)
    for name in names:
        path = root / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            with suppress(FileNotFoundError):
                path.unlink()
    return found
