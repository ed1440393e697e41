"""Renderers: pure functions from a validated inventory to ``{relative path: text}``."""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable
from typing import Any

from fleet.inventory.model import Inventory

# From this many nodes on, pxe/ is rendered by a forked worker while this process renders
# pillar/ (on a machine with more than one CPU): the two take about as long.
PARALLEL_MIN_NODES = 1000

Renderer = Callable[[Inventory], dict[str, str]]


def render_all(inv: Inventory) -> dict[str, str]:
    from fleet.render import pictures, pillar, pxe  # on use: `fleet validate` needs none

    if len(inv.nodes) >= PARALLEL_MIN_NODES and _cpus() > 1:
        files = _forked(pxe.render, inv, pillar.render)
    else:
        files = pillar.render(inv)
        files.update(pxe.render(inv))
    files.update(pictures.render(inv))
    return dict(sorted(files.items()))


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return 1


def _forked(child: Renderer, inv: Inventory, here: Renderer) -> dict[str, str]:
    """``here(inv)`` updated with ``child(inv)``, the latter computed by a forked process
    at the same time. The child's result (or its exception) comes back pickled through a
    pipe; the same pure functions run on the same data, so the output is the same."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: render, send, and leave without running any cleanup
        code = 0
        try:
            os.close(read_fd)
            try:
                payload = pickle.dumps((True, child(inv)), pickle.HIGHEST_PROTOCOL)
            except BaseException as exc:  # sent to the parent, which raises it
                code = 1
                payload = _pickled_error(exc)
            with os.fdopen(write_fd, "wb") as out:
                out.write(payload)
        finally:
            os._exit(code)
    os.close(write_fd)
    reader = os.fdopen(read_fd, "rb")
    try:
        files = here(inv)
        data = reader.read()
    finally:
        reader.close()  # first: a child still writing gets EPIPE rather than waiting forever
        os.waitpid(pid, 0)
    reply: tuple[bool, Any] = (pickle.loads(data) if data  # our own child's reply
                               else (False, RuntimeError("the render worker died")))
    ok, result = reply
    if not ok:
        raise result
    files.update(result)
    return files


def _pickled_error(exc: BaseException) -> bytes:
    try:
        return pickle.dumps((False, exc), pickle.HIGHEST_PROTOCOL)
    except Exception:  # an exception that cannot be pickled: its text
        return pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
