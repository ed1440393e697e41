"""`fleet render` reads its output (the store, its files' identities, the listing of every
top directory) while it validates, in a forked child when the output is large
(fleet.render.prefetch), and the writer uses that listing instead of walking again. Here the
child is forced at the small inventory's size: what the render writes must be what a full
render writes, a stray file must still go, a hand edit must still be seen, and another
render must still be refused while this one holds the output."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from fleet import cli
from fleet.render import incremental, prefetch, scan
from support.forking import Started, spy_children

from .test_incremental import edit, full, output, render


@pytest.fixture
def forked(monkeypatch: pytest.MonkeyPatch) -> Started:
    """The reader forked at any size, whatever the CPUs here; the children's pids."""
    monkeypatch.setattr(prefetch, "FORK_MIN_BYTES", 0)
    return spy_children(monkeypatch)


def test_a_forked_read_gives_what_the_tree_holds(rendered_once: tuple[Path, Path],
                                                 forked: Started) -> None:
    out, _inv = rendered_once
    got = prefetch.Prefetch(out).result()
    assert forked and got.store is not None
    for top in scan.OWNED:
        assert sorted(got.listing[top]) == sorted(scan.existing(out, top))
    assert set(got.ids) == {"", *got.store["nodes"]}


def test_an_edit_with_a_forked_read_writes_what_a_full_render_writes(
        rendered_once: tuple[Path, Path], forked: Started, tmp_path: Path) -> None:
    out, inv_file = rendered_once
    stray = out / "pxe" / "stray.conf"  # not rendered: a full render removes it
    stray.write_text("left by hand\n")
    inv_file.write_text(edit(inv_file.read_text(encoding="utf-8"), "serial", "gpu-02", 3),
                        encoding="utf-8")
    render(inv_file, out)
    assert forked, "the output was not read by a forked child"
    assert not stray.exists()
    assert output(out) == full(inv_file, tmp_path / "full")


def test_a_hand_edit_seen_by_a_forked_read_gives_a_full_render(
        rendered_once: tuple[Path, Path], forked: Started, tmp_path: Path) -> None:
    out, inv_file = rendered_once
    (out / "pillar" / "nodes" / "gpu-03.sls").write_text("edited by hand\n")
    render(inv_file, out)
    assert forked
    assert output(out) == full(inv_file, tmp_path / "full")


def test_the_output_is_locked_from_the_first_read(rendered_once: tuple[Path, Path],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Another render holding the output (its lock on an open file of its own): this one
    stops before it reads anything, the inventory included (an invalid one is not even
    judged: exit 4, not 1), and writes nothing."""
    out, inv_file = rendered_once
    before = output(out)
    good = inv_file.read_text(encoding="utf-8")
    inv_file.write_text(good + "nodes: [\n", encoding="utf-8")  # a YAML syntax error
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert cli.main(["render", "-q", "-i", str(inv_file), "-o", str(out)]) == 4
        assert "another render is writing" in capsys.readouterr().err
        assert output(out) == before
    finally:
        os.close(fd)
    assert cli.main(["render", "-q", "-i", str(inv_file), "-o", str(out)]) == 1  # its own
    inv_file.write_text(edit(good, "mac", "gpu-01", 5), encoding="utf-8")
    render(inv_file, out)  # once the other has ended
    assert output(out) != before


@pytest.mark.parametrize("case", ["another node's file", "a node's file as the site's",
                                  "another identity", "a file left out", "not json"])
def test_a_hostile_store_read_by_the_child_gives_a_full_render(
        rendered_once: tuple[Path, Path], forked: Started, case: str, tmp_path: Path) -> None:
    from .test_incremental import hostile_stores

    out, inv_file = rendered_once
    (out / "pillar" / "nodes" / "gpu-01.sls").unlink()  # only a full render puts it back
    (out / incremental.STORE).write_text(hostile_stores(out)[case])
    render(inv_file, out)
    assert forked
    assert output(out) == full(inv_file, tmp_path / "full")
