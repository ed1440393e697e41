"""Renderers: pure functions from a validated inventory to ``{relative path: text}``."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

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
    from fleet.forks import cpus

    return cpus()


def forked(jobs: Sequence[Callable[[], _R]], here: Callable[[], _T]) -> tuple[_T, list[_R]]:
    """``here()`` and ``[job() for job in jobs]``, each job computed by a forked process
    at the same time as ``here`` (:func:`fleet.forks.forked`)."""
    from fleet import forks

    return forks.forked(jobs, here, what="a render worker")
