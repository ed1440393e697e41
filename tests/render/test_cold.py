"""The first render into an empty output by forked workers that write their own files
(fleet.render.cold): the same bytes and directories as the serial render and writer, a
store the next render trusts, and nothing written when a worker fails."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

import fleet.render
from fleet.inventory.model import Inventory, Node
from fleet.render import cold, incremental, render_all, tree
from fleet.render.scan import OWNED

from .helpers import read_tree


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Workers from the first node on, three of them whatever the CPUs here."""
    monkeypatch.setattr(fleet.render, "PARALLEL_MIN_NODES", 1)
    monkeypatch.setattr(fleet.render, "_cpus", lambda: 3)


def _serial(root: Path, inv: Inventory, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(fleet.render, "PARALLEL_MIN_NODES", 10**9)
        tree.write(root, render_all(inv))


def _in_a_later_worker(monkeypatch: pytest.MonkeyPatch, act: Callable[[], None]) -> None:
    """``act`` in each worker but the first batch's (which writes its files) instead of
    rendering its nodes; the parent renders as always."""
    here = os.getpid()
    real = fleet.render.node_files

    def node_files(inv: Inventory, nodes: list[Node]) -> dict[str, dict[str, str]]:
        if os.getpid() != here and nodes[0].hostname != next(iter(inv.nodes)):
            act()
        return real(inv, nodes)

    monkeypatch.setattr(fleet.render, "node_files", node_files)


def test_workers_write_the_same_tree_as_the_serial_render(
        tmp_path: Path, site_inv: Inventory, forked: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    serial, workers = tmp_path / "serial", tmp_path / "workers"
    _serial(serial, site_inv, monkeypatch)
    p = incremental.plan(workers, site_inv)
    changes = cold.write(workers, site_inv, p)
    assert changes is not None  # the workers' way was taken
    incremental.save(workers, p)
    want_files, want_dirs = read_tree(serial)
    got_files, got_dirs = read_tree(workers)
    assert list(got_files) == list(want_files)
    assert got_files == want_files
    assert got_dirs == want_dirs
    assert changes.added == sorted(want_files)
    for rel in want_files:  # same modes as the writer's
        assert (workers / rel).stat().st_mode == (serial / rel).stat().st_mode
    # no staging left, and the store's identities hold: the next render keeps every node
    assert sorted(p.name for p in workers.iterdir()) == sorted([*OWNED, ".render.inputs"])
    again = incremental.plan(workers, site_inv)
    assert again.nodes == [], again.why
    assert set(again.keep) == set(site_inv.nodes)


def test_an_output_already_there_is_left_to_the_writer(
        tmp_path: Path, site_inv: Inventory, forked: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pxe").mkdir()
    (tmp_path / "pxe" / "old").write_text("old\n")
    p = incremental.plan(tmp_path, site_inv)
    assert cold.write(tmp_path, site_inv, p) is None
    assert read_tree(tmp_path) == ({"pxe/old": b"old\n"}, {"pxe"})


def test_a_failing_worker_writes_nothing(tmp_path: Path, site_inv: Inventory, forked: None,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    def fails() -> None:
        raise ValueError("bad node in a worker")

    _in_a_later_worker(monkeypatch, fails)
    p = incremental.plan(tmp_path, site_inv)
    with pytest.raises(ValueError, match="bad node in a worker"):
        cold.write(tmp_path, site_inv, p)
    assert list(tmp_path.iterdir()) == []


def test_a_worker_that_dies_writes_nothing(tmp_path: Path, site_inv: Inventory, forked: None,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _in_a_later_worker(monkeypatch, lambda: os._exit(9))
    p = incremental.plan(tmp_path, site_inv)
    with pytest.raises(RuntimeError, match="a render worker died"):
        cold.write(tmp_path, site_inv, p)
    assert list(tmp_path.iterdir()) == []
