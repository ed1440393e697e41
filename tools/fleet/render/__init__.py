"""Renderers: pure functions from a validated inventory to ``{relative path: text}``."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from fleet.inventory.model import Inventory, Node

# From this many nodes on (on a machine with more than one CPU), the nodes' own files are
# rendered by forked workers, one batch of nodes each, while this process renders the
# site's files: below it, forking and sending the files back cost more than they save
# (docs/benchmarks.md, "Render").
PARALLEL_MIN_NODES = 1000
MAX_WORKERS = 4

Renderer = Callable[[Inventory], dict[str, str]]
ByHost = dict[str, dict[str, str]]  # {hostname: {relative path: text}}
_T = TypeVar("_T")
_R = TypeVar("_R")


def render_all(inv: Inventory) -> dict[str, str]:
    site, by_host = render_parts(inv, list(inv.nodes.values()))
    return join(site, by_host)


def join(site: dict[str, str], by_host: ByHost) -> dict[str, str]:
    files = dict(site)
    for own in by_host.values():
        files.update(own)
    return dict(sorted(files.items()))


def render_parts(inv: Inventory, nodes: list[Node], *,
                 context: bool = True) -> tuple[dict[str, str], ByHost]:
    """The site's files, and the own files of each of ``nodes`` by hostname (the
    incremental render asks for the changed nodes only, and leaves out the site's
    :func:`context_files` while its context is unchanged: :mod:`fleet.render.incremental`)."""
    n = workers(len(nodes))
    site = functools.partial(site_files, inv, context=context)
    if n == 1:
        return site(), node_files(inv, nodes)
    # the model is shared with the workers by the fork: nothing of it is sent
    files, parts = forked([functools.partial(node_files, inv, batch)
                           for batch in batches(nodes, n)], site)
    by_host: ByHost = {}
    for part in parts:
        by_host.update(part)
    return files, by_host


def node_files(inv: Inventory, nodes: list[Node]) -> ByHost:
    """The files of ``nodes`` alone, by hostname (each may read the whole inventory,
    which a forked worker shares)."""
    from fleet.render import batch, pillar, pxe

    with batch.shared():
        by_host = pillar.node_files(inv, nodes)
        for host, files in pxe.node_files(inv, nodes).items():
            by_host[host].update(files)
    return by_host


def site_files(inv: Inventory, *, context: bool = True) -> dict[str, str]:
    """The files of the whole site (lists of every node, pictures): its
    :func:`fact_files`, and its :func:`context_files` unless ``context`` is false."""
    files = fact_files(inv)
    if context:
        files.update(context_files(inv))
    return files


def context_files(inv: Inventory) -> dict[str, str]:
    """The site's files that read no node's own facts (``incremental.LOCAL``: serial,
    MACs, IB GUID): the same while the rest of the inventory and the code are
    (tests/render/test_incremental.py changes every node's own facts to show it)."""
    from fleet.render import pictures, pillar, pxe

    files = pillar.site_files(inv)
    files.update(pxe.context_files(inv))
    files.update(pictures.render(inv))
    return files


def fact_files(inv: Inventory) -> dict[str, str]:
    """The site's files that read nodes' own facts: rendered every time."""
    from fleet.render import pxe

    return pxe.fact_files(inv)


def workers(nodes: int) -> int:
    """How many forked workers render ``nodes`` nodes (1: none, all in this process)."""
    if nodes < PARALLEL_MIN_NODES:
        return 1
    return max(1, min(_cpus(), MAX_WORKERS))


def batches(nodes: list[Node], n: int) -> list[list[Node]]:
    size = -(-len(nodes) // n)
    return [nodes[i:i + size] for i in range(0, len(nodes), size)]


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return 1


def forked(jobs: Sequence[Callable[[], _R]], here: Callable[[], _T]) -> tuple[_T, list[_R]]:
    """``here()`` and ``[job() for job in jobs]``, each job computed by a forked process
    at the same time as ``here``. A job's result (or its exception) comes back pickled
    through a pipe; the same pure functions run on the same data, so the output is the
    same. Every child has ended when this returns or raises."""
    import pickle  # here: only a render large enough to fork needs it

    children: list[tuple[int, int]] = []  # (pid, read end)
    results: list[_R] = []
    try:
        for job in jobs:
            children.append(_fork(job, [fd for _pid, fd in children]))
        mine = here()
        for _pid, fd in children:
            with os.fdopen(fd, "rb", closefd=False) as reader:
                data = reader.read()
            reply: tuple[bool, Any] = (pickle.loads(data) if data  # our own child's reply
                                       else (False, RuntimeError("a render worker died")))
            ok, result = reply
            if not ok:
                raise result
            results.append(result)
    finally:
        for _pid, fd in children:  # first: a child still writing gets EPIPE, not a wait
            os.close(fd)
        for pid, _fd in children:
            os.waitpid(pid, 0)
    return mine, results


def _fork(job: Callable[[], Any], others: list[int]) -> tuple[int, int]:
    """Start ``job`` in a child; its pid and the read end of its reply. ``others``: the
    read ends of the children before it, which it closes (else, holding one, it would keep
    a sibling blocked on a reply this process no longer reads)."""
    import pickle

    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: render, send, and leave without running any cleanup
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
    return pid, read_fd


def _pickled_error(exc: BaseException) -> bytes:
    import pickle

    try:
        return pickle.dumps((False, exc), pickle.HIGHEST_PROTOCOL)
    except Exception:  # an exception that cannot be pickled: its text
        return pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
