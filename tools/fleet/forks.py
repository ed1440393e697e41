"""Work done by a forked child of this process, beside this process's own: the child shares
this process's memory at the fork (nothing is sent to it), computes one pure function and
sends its result (or its exception) back pickled through a pipe. Only our own child writes
that pipe, so unpickling it is reading our own data.

Used where a large inventory makes a second CPU pay: the render's node batches
(:func:`fleet.render.forked`), its read of the output beside the validation
(:mod:`fleet.render.prefetch`), and the cross-object rules: half of them beside the other
half (:func:`fleet.inventory.checks.run_all`), or all of them while ``fleet render`` renders
(:func:`fleet.inventory.checks.checking`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

_T = TypeVar("_T")
_R = TypeVar("_R")


def cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return 1


class Child(Generic[_R]):
    """``job()`` computed by a forked child from now on; :meth:`result` waits for it.
    ``others``: the read ends of earlier children, which the new one closes (else, holding
    one, it would keep a sibling blocked on a reply this process no longer reads)."""

    def __init__(self, job: Callable[[], _R], others: Sequence[int] = (), *,
                 what: str = "a forked worker") -> None:
        import pickle

        self.what = what
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: compute, send, and leave without running any cleanup
            code = 0
            try:
                for fd in (read_fd, *others):
                    os.close(fd)
                try:
                    payload = pickle.dumps((True, job()), pickle.HIGHEST_PROTOCOL)
                except BaseException as exc:  # sent to the parent, which raises it
                    code = 1
                    payload = _pickled_error(exc)
                with os.fdopen(write_fd, "wb") as out:
                    out.write(payload)
            finally:
                os._exit(code)
        os.close(write_fd)
        self.pid: int | None = pid
        self.fd = read_fd

    def result(self) -> _R:
        """The child's result, or its exception raised here; RuntimeError if it died."""
        import pickle

        try:
            with os.fdopen(self.fd, "rb", closefd=False) as reader:
                data = reader.read()
        finally:
            self.close()
        reply: tuple[bool, Any] = (pickle.loads(data) if data  # our own child's reply
                                   else (False, RuntimeError(f"{self.what} died")))
        ok, value = reply
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    def close(self) -> None:
        """Stop reading (a child still writing gets EPIPE) and reap the child; idempotent."""
        if self.pid is None:
            return
        os.close(self.fd)
        os.waitpid(self.pid, 0)
        self.pid = None


class Later(Generic[_R]):
    """``job()``, computed by a forked child from now on where ``fork`` (a :class:`Child`),
    else here when :meth:`result` first asks for it; its exception is raised again at each
    later ask, never computed a second time."""

    def __init__(self, job: Callable[[], _R], *, fork: bool, what: str) -> None:
        self._job = job
        self._done: tuple[_R] | None = None
        self._failed: Exception | None = None
        self._child = Child(job, what=what) if fork else None

    @property
    def pending(self) -> bool:
        """Whether a child is computing it still (or has, unasked)."""
        return self._child is not None

    def result(self) -> _R:
        if self._failed is not None:
            raise self._failed
        if self._done is None:
            child, self._child = self._child, None
            try:
                self._done = (child.result() if child is not None else self._job(),)
            except Exception as exc:
                self._failed = exc
                raise
        return self._done[0]

    def close(self) -> None:
        """Stop a child not asked for (the caller failed first): it is reaped."""
        if self._child is not None:
            self._child.close()
            self._child = None


def forked(jobs: Sequence[Callable[[], _R]], here: Callable[[], _T], *,
           what: str = "a forked worker") -> tuple[_T, list[_R]]:
    """``here()`` and ``[job() for job in jobs]``, each job computed by a forked child at
    the same time as ``here``: the same pure functions on the same data, so the same
    results. Every child has ended when this returns or raises."""
    children: list[Child[_R]] = []
    try:
        for job in jobs:
            children.append(Child(job, [c.fd for c in children], what=what))
        mine = here()
        results = [child.result() for child in children]
    finally:
        for child in children:  # first every read end: a child still writing gets EPIPE
            if child.pid is not None:
                os.close(child.fd)
        for child in children:
            if child.pid is not None:
                os.waitpid(child.pid, 0)
                child.pid = None
    return mine, results


def _pickled_error(exc: BaseException) -> bytes:
    import pickle

    try:
        return pickle.dumps((False, exc), pickle.HIGHEST_PROTOCOL)
    except Exception:  # an exception that cannot be pickled: its text
        return pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
