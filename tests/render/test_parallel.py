"""The render's forked workers (one batch of nodes each): the same files as one process,
and a worker's failure reported, never a partial render."""

from __future__ import annotations

import os

import pytest

import fleet.render
from fleet.inventory.model import Inventory, Node
from fleet.render import render_all


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers from the first node on, three of them whatever the CPUs here."""
    monkeypatch.setattr(fleet.render, "PARALLEL_MIN_NODES", 1)
    monkeypatch.setattr(fleet.render, "_cpus", lambda: 3)


def test_workers_render_the_same_files_as_one_process(
        site_inv: Inventory, site_files: dict[str, str], forked: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    batches: list[int] = []
    real = fleet.render.batches

    def spy(nodes: list[Node], n: int) -> list[list[Node]]:
        out = real(nodes, n)
        batches.extend(len(b) for b in out)
        return out

    monkeypatch.setattr(fleet.render, "batches", spy)
    files = render_all(site_inv)
    # really forked: the site's nodes in three batches of near one size
    assert len(batches) == 3 and sum(batches) == len(site_inv.nodes) == 145
    assert max(batches) - min(batches) <= 2, batches
    assert list(files) == list(site_files)
    assert files == site_files


def test_a_failing_worker_fails_the_render(site_inv: Inventory, forked: None,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    here = os.getpid()
    real = fleet.render.node_files

    def fails_in_a_worker(inv: Inventory, nodes: list[Node]) -> dict[str, dict[str, str]]:
        if os.getpid() != here and nodes[0].hostname == next(iter(inv.nodes)):
            raise ValueError("bad node in a worker")
        return real(inv, nodes)

    monkeypatch.setattr(fleet.render, "node_files", fails_in_a_worker)
    with pytest.raises(ValueError, match="bad node in a worker"):
        render_all(site_inv)


def test_a_worker_that_dies_fails_the_render(site_inv: Inventory, forked: None,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    here = os.getpid()

    def dies(inv: Inventory, nodes: list[Node]) -> dict[str, dict[str, str]]:
        if os.getpid() != here:
            os._exit(9)
        return {}

    monkeypatch.setattr(fleet.render, "node_files", dies)
    with pytest.raises(RuntimeError, match="a render worker died"):
        render_all(site_inv)
