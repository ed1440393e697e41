"""Work on a few threads: the tree writer's comparing and staging are system calls, which
run in parallel; below :data:`PARALLEL_MIN` items everything runs in order, in this thread."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from typing import TypeVar

# Below this many files, compare and stage in one thread (and in order).
PARALLEL_MIN = 1000

_T = TypeVar("_T")
_R = TypeVar("_R")


def workers(items: int) -> int:
    if items < PARALLEL_MIN:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 4))


def parallel(chunks: Sequence[_T], work: Callable[[_T, threading.Event], _R]) -> list[_R]:
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


def deal(items: list[_T], n: int) -> list[list[_T]]:
    """Split ``items`` into ``n`` contiguous chunks of about equal size."""
    if not items:  # e.g. a directory whose files an incremental render all kept
        return [[]]
    size = -(-len(items) // n)
    return [items[i:i + size] for i in range(0, len(items), size)]
