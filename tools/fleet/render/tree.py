"""Write rendered output atomically, compare it with what is on disk, and diff it.

Each output directory (``pillar/``, ``pxe/``) is rebuilt aside in ``.<dir>.render-<pid>``
and swapped in with one ``renameat2(RENAME_EXCHANGE)``; files whose content is unchanged
are hard links to the old ones, so their mtimes stay as they were. A directory with no
change at all is not touched. A failure before the swap leaves the old tree as it was.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from fleet.render.errors import RenderBusyError

OWNED = ("pillar", "pxe")
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


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
    changes = Changes()
    same: set[str] = set()
    for rel, data in sorted(wanted.items()):
        path = old.get(rel)
        if path is None:
            changes.added.append(rel)
        elif not _same(path, data):
            changes.changed.append(rel)
        else:
            same.add(rel)
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


def _stage(root: Path, top: str, wanted: dict[str, bytes], old: dict[str, str],
           same: set[str]) -> Path:
    stage = root / f".{top}.render-{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(mode=0o755)
    base = os.fspath(stage)
    made: set[str] = set()
    umask = os.umask(0o022)
    os.umask(umask)
    restrictive_umask = umask & 0o044 != 0  # only then does a new file need a chmod
    try:
        for rel, data in wanted.items():
            dest = os.path.join(base, rel.split("/", 1)[1])
            parent = os.path.dirname(dest)
            if parent not in made:
                os.makedirs(parent, mode=0o755, exist_ok=True)
                made.add(parent)
            if rel in same:
                try:
                    os.link(old[rel], dest)  # unchanged: keep the inode, and so the mtime
                except OSError:
                    shutil.copy2(old[rel], dest)
                continue
            with open(dest, "wb") as fh:
                fh.write(data)
                if restrictive_umask:
                    os.fchmod(fh.fileno(), 0o644)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return stage


def write(root: Path, files: dict[str, str]) -> Changes:
    """Write ``files`` (paths relative to ``root``) replacing the owned directories."""
    total = Changes()
    root.mkdir(parents=True, exist_ok=True)
    with _lock(root):
        staged: list[tuple[str, Path]] = []
        try:
            for top, wanted in _split(files).items():
                old = _existing(root, top)
                changes, same = _classify(old, wanted)
                total.merge(changes)
                if changes.any:
                    staged.append((top, _stage(root, top, wanted, old, same)))
            _swap_all(root, staged)
        finally:
            for _top, stage in staged:
                shutil.rmtree(stage, ignore_errors=True)
    return total


def _swap_all(root: Path, staged: list[tuple[str, Path]]) -> None:
    done: list[tuple[Path, Path]] = []
    try:
        for top, stage in staged:
            target = root / top
            if not target.exists():
                stage.rename(target)
                stage.mkdir()  # keep the name so cleanup/rollback logic stays uniform
                done.append((target, stage))
            elif _exchange(stage, target):
                done.append((target, stage))
            else:  # no renameat2: two renames, briefly without the directory
                backup = root / f".{top}.old-{os.getpid()}"
                target.rename(backup)
                stage.rename(target)
                backup.rename(stage)
                done.append((target, stage))
    except BaseException:
        for target, stage in reversed(done):  # put the old trees back
            if not _exchange(stage, target):
                tmp = target.with_name(target.name + ".rollback")
                target.rename(tmp)
                stage.rename(target)
                tmp.rename(stage)
        raise
