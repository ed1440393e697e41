"""A render's commit: its renames (:class:`Step`), the journal that records them
(``.render.commit``), and the recovery that finishes the commit of a render killed midway.

Before its first rename the commit writes the journal (each rename, and the inode that is
in place once it is done) and removes it after its last; the next render finds the journal,
does the renames not yet done and removes what staging is left.

The journal is input like any other file in the output directory: a merge can bring one,
with a link beside it. So recovery never goes through a link: the output tree and the
staging are scanned for links before any rename; a journal may only name the renames fleet
writes (a live path in ``pillar/`` or ``pxe/`` and a staging path of the journal's own
render, in the direction and with the operation fleet uses for it); every component of
every path is checked to be a directory, not a link, just before its rename; and a journal
or staging directory that git tracks is refused (a render never commits one).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import os
import re
import shutil
import stat
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import NamedTuple

from fleet.render.scan import OWNED, UnsafeOutputError, existing, unsafe, walk

JOURNAL = ".render.commit"
_TOPS = "|".join(OWNED)
# What a render puts next to its output directories while it writes (or leaves when killed).
LEFTOVER = re.compile(rf"^\.({_TOPS})\.(render|old|rollback)-\d+(\.old)?$"
                      r"|^\.render\.commit(\.tmp)?$")
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# The staging side of each rename fleet journals: the whole new tree, or one entry of it
# (r: a removal moved out, c: a changed file exchanged in, a: an addition moved in).
_STAGE = re.compile(rf"\.(?P<top>{_TOPS})\.render-(?P<pid>\d{{1,10}})(?:/(?P<kind>[rca])\d+)?")
_OP_OF_KIND = {"r": "move", "c": "exchange", "a": "move"}

Undo = list[Callable[[], None]]


class Step(NamedTuple):
    """One rename of a commit. ``move``: ``src`` to ``dest``, which does not exist;
    ``exchange``: swap the two. Either way it is done once ``dest`` is the inode ``ino``
    (``src``'s when the commit began): that is how a later render tells."""

    op: str
    src: str
    dest: str
    ino: int

    @staticmethod
    def of(op: str, src: str, dest: str) -> Step:
        return Step(op, src, dest, os.lstat(src).st_ino)

    def done(self) -> bool:
        try:
            return os.lstat(self.dest).st_ino == self.ino
        except FileNotFoundError:
            return False


def exchange(a: str | Path, b: str | Path) -> bool:
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


def run_step(step: Step, undo: Undo) -> None:
    if step.op == "move":
        os.rename(step.src, step.dest)
        undo.append(lambda: os.rename(step.dest, step.src))
    elif not os.path.lexists(step.dest):  # only when finishing a commit killed midway
        os.rename(step.src, step.dest)
    elif exchange(step.src, step.dest):
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
    if not exchange(a, b):
        _swap_dirs(a, b) if os.path.isdir(b) else os.replace(a, b)


def _swap_dirs(a: str, b: str) -> None:
    aside = a + ".old"
    os.rename(b, aside)
    os.rename(a, b)
    os.rename(aside, a)


# --- the journal ---------------------------------------------------------------------------


def write_journal(root: Path, steps: list[Step]) -> None:
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


def remove_journal(root: Path) -> None:
    with suppress(FileNotFoundError):
        os.unlink(root / JOURNAL)
    _fsync_dir(root)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_journal(root: Path) -> list[Step] | None:
    """The renames of the commit a killed render left, or None if there is none; refuses a
    journal that names any rename fleet does not write (:func:`_shape_ok`)."""
    path = root / JOURNAL
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a link
            raise unsafe(os.fspath(path)) from exc
        raise
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read()
    bad = UnsafeOutputError(errno.EINVAL, "not a commit journal fleet wrote (remove it and "
                            "render again)", os.fspath(path))
    try:
        journal = json.loads(raw)
        pid, entries = journal["pid"], journal["steps"]
        steps = [Step(e["op"], os.path.join(root, e["src"]), os.path.join(root, e["dest"]),
                      e["ino"]) for e in entries]
    except (ValueError, KeyError, TypeError) as exc:
        raise bad from exc
    for e, s in zip(entries, steps, strict=True):
        if not (type(s.ino) is int and type(pid) is int
                and _shape_ok(s.op, e["src"], e["dest"], pid)):
            raise bad
    return steps


def _shape_ok(op: object, src: object, dest: object, pid: int) -> bool:
    """Whether ``op src dest`` is a rename fleet journals for the render ``pid``: the whole
    staged tree onto its directory, or one staged entry to or from a path inside it."""
    if not isinstance(src, str) or not isinstance(dest, str):
        return False
    staged, live = (dest, src) if op == "move" and _STAGE.fullmatch(dest) else (src, dest)
    m = _STAGE.fullmatch(staged)
    if m is None or int(m["pid"]) != pid:
        return False
    top, kind = m["top"], m["kind"]
    if kind is None:  # the whole tree, moved or exchanged onto its directory
        return op in ("move", "exchange") and staged == src and live == top
    if (kind == "r") != (staged == dest) or op != _OP_OF_KIND[kind]:
        return False
    return live.startswith(f"{top}/") and os.path.normpath(live) == live and all(
        part not in ("", ".", "..") for part in live.split("/"))


def _plain_path(root: Path, path: str) -> None:
    """Refuse ``path`` (below ``root``) unless every directory on the way is a directory and
    not a link, and the path itself, where it exists, is a plain file or directory."""
    rel = os.path.relpath(path, root)
    parts = rel.split("/")
    here = os.fspath(root)
    for i, part in enumerate(parts):
        here = os.path.join(here, part)
        try:
            mode = os.lstat(here).st_mode
        except FileNotFoundError:
            if i == len(parts) - 1:
                return
            raise UnsafeOutputError(errno.ENOENT, "the commit journal names a path whose "
                                    "directory is missing (remove the journal and render "
                                    "again)", here) from None
        last = i == len(parts) - 1
        if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or (last and stat.S_ISREG(mode))):
            raise unsafe(here)


# --- what a killed render left ----------------------------------------------------------


def leftovers(root: Path) -> list[str]:
    """Names of what renders put next to pillar/ and pxe/ (staging, journal), sorted."""
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if LEFTOVER.match(n))


def _tracked(root: Path, names: list[str]) -> list[str]:
    """Which of ``names`` (in ``root``) git tracks; none where git is missing, ``root`` is in
    no work tree, or git refuses the repository (another owner's: git's safe.directory)."""
    import subprocess  # here: only recovering from an interrupted render asks git

    try:
        r = subprocess.run(["git", "-c", "core.fsmonitor=false", "-C", os.fspath(root),
                            "ls-files", "-z", "--", *names],
                           capture_output=True, timeout=60, check=False,
                           env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"})
    except (OSError, subprocess.TimeoutExpired):
        return []
    if r.returncode != 0:
        return []
    return sorted({p.split("/", 1)[0] for p in os.fsdecode(r.stdout).split("\0") if p})


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
    return left(root)


def left(root: Path) -> str | None:
    """What an interrupted render left in ``root``, in words, or None; first refuses a link
    in it or in the output tree, a journal fleet did not write, and anything git tracks."""
    names = leftovers(root)
    if not names:
        return None
    for name in names:
        here = os.path.join(root, name)
        if os.path.islink(here):
            raise unsafe(here)
        if os.path.isdir(here):
            for _ in walk(here):
                pass
    tracked = _tracked(root, names)
    if tracked:
        raise UnsafeOutputError(
            errno.EINVAL, "git tracks it, but a render never commits its journal or staging, "
            f"so a merge brought it: `git rm -r --cached {tracked[0]}`, remove it and render "
            "again", os.path.join(root, tracked[0]))
    for top in OWNED:  # before anything reads a path the journal names
        existing(root, top)
    steps = read_journal(root)
    if steps is not None:
        done = sum(s.done() for s in steps)
        return (f"a render was killed while committing ({done} of {len(steps)} renames done, "
                f"{root / JOURNAL}): pillar/ and pxe/ are part old, part new; the next "
                "`fleet render` finishes that commit")
    return (f"an interrupted render left {', '.join(names)} in {root}; the next "
            "`fleet render` removes it")


def recover(root: Path) -> str | None:
    """Finish the commit of a render killed in ``root`` and remove what it left (under the
    lock); returns what was found (as :func:`left` says it), or None."""
    found = left(root)
    if found is None:
        return None
    names = leftovers(root)
    for step in read_journal(root) or []:
        if not step.done() and os.path.lexists(step.src):
            _plain_path(root, step.src)
            _plain_path(root, step.dest)
            run_step(step, [])  # the renames not yet done, in their order
    remove_journal(root)
    for name in names:
        path = root / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            with suppress(FileNotFoundError):
                path.unlink()
    return found
