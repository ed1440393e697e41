"""Reading the output tree without ever going through a link: the files of ``pillar/`` and
``pxe/``, and the refusal of anything there but plain files and directories."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

OWNED = ("pillar", "pxe", "pictures")


class UnsafeOutputError(OSError):
    """Something in the output tree the writer will not go through (a symbolic link, a
    FIFO, a socket, a device), or a commit journal it did not write."""


def existing(root: Path, top: str) -> dict[str, str]:
    """``{relative path: absolute path}`` of the files under ``root/top`` (strings: hot path);
    refuses anything there but regular files and directories."""
    base = os.path.join(root, top)
    found: dict[str, str] = {}
    try:
        mode = os.lstat(base).st_mode
    except FileNotFoundError:
        return found
    if stat.S_ISLNK(mode):
        raise unsafe(base)
    if not stat.S_ISDIR(mode):
        return found  # a file where the directory goes: replaced whole
    cut = len(os.fspath(root)) + 1
    found.update({path[cut:]: path for path in walk(base)})
    return found


def walk(base: str) -> list[str]:
    """The files below the directory ``base``; a link or special file there is refused
    (the type comes from readdir: no extra system call per entry). A list, not a
    generator: 10-15 % less time at 80,000 files."""
    files: list[str] = []
    add = files.append
    stack = [base]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    add(entry.path)
                else:
                    raise unsafe(entry.path)
    return files


def unsafe(path: str) -> UnsafeOutputError:
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


def same(path: str, data: bytes) -> bool:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, len(data) + 1) == data  # one read: files are small
    finally:
        os.close(fd)
