"""A full render into an output that has none of its directories yet, at scale: forked
workers render batches of nodes and write their files straight into the staging trees.

Where none of ``pillar/``, ``pxe/``, ``pictures/`` exists (a first render, a fresh clone's
``make render``, an emptied output) and the nodes are many enough for forked workers
(:func:`fleet.render.workers`), there is nothing on disk to compare or keep. So each worker
renders its batch and creates the files in ``.<top>.render-<pid>`` itself, sending back
only their paths and the digest of their identities for ``.render.inputs`` (not 160 MB of
text pickled through a pipe at 10,000 nodes, to be encoded and written by this process);
this process renders the site's files meanwhile and writes them last. Then, as in
:func:`fleet.render.tree.write`: one ``syncfs``, the journal, and one move per directory.
The same bytes as the serial render (tests/render/test_cold.py); a failure anywhere
leaves the output as it was.
"""

from __future__ import annotations

import functools
import os
from array import array
from pathlib import Path

import fleet.render as render
from fleet.inventory.model import Inventory, Node
from fleet.render import incremental, journal, stage, tree, writeback
from fleet.render.journal import Step
from fleet.render.scan import OWNED

Made = dict[str, tuple[list[str], str]]  # hostname -> (its files, sorted; their digest)


def write(root: Path, inv: Inventory, p: incremental.Plan) -> tree.Changes | None:
    """Render every node and write the output (``p``: a full render's plan, completed
    for :func:`fleet.render.incremental.save`); None, having written nothing, where
    this way does not apply (few nodes, one CPU, an output directory already there)."""
    nodes = list(inv.nodes.values())
    workers = render.workers(len(nodes))
    if workers == 1 or _present(root):
        return None
    root.mkdir(parents=True, exist_ok=True)
    with tree.lock(root):
        journal.recover(root)
        if _present(root):  # what a killed render's commit left, finished just now
            return None
        commits: list[stage.Commit] = []
        try:
            for top in OWNED:
                where = stage.new_stage(root, top)
                commits.append(stage.Commit(root, top, where, [
                    Step.of("move", os.fspath(where), os.path.join(root, top))]))
            stages = {c.top: os.fspath(c.stage) for c in commits}
            jobs = [functools.partial(_batch, inv, batch, stages)
                    for batch in render.batches(nodes, workers)]
            # the model is shared with the workers by the fork: nothing of it is sent
            flusher = writeback.Flusher(root)
            try:
                site, parts = render.forked(jobs, functools.partial(_site_files, inv, flusher))
            finally:
                flusher.stop()
            made: Made = {}
            for part in parts:
                made.update(part)
            written = {rel for files, _digest in made.values() for rel in files}
            # a node's file wins over the site's of the same path, as in render.join
            site_only = {rel: text for rel, text in site.items() if rel not in written}
            _create(stages, site_only, stage.Writer(), set(stages.values()))
            written.update(site_only)
            tops = {rel.partition("/")[0] for rel in written}
            tree.commit_all(root, [c for c in commits if c.top in tops])
        finally:
            for commit in commits:
                commit.cleanup()
    p.nodes = None
    p.keep = {h: files for h, (files, _digest) in made.items()}
    p.stamps = {h: digest for h, (_files, digest) in made.items()}
    p.site = sorted(set(site).difference(render.fact_files(inv)))
    return tree.Changes(added=sorted(written))


def _present(root: Path) -> bool:
    return any(os.path.lexists(root / top) for top in OWNED)


def _site_files(inv: Inventory, flusher: writeback.Flusher) -> dict[str, str]:
    """In this process, once the workers are forked: start writing back what they create,
    and render the site's files."""
    flusher.start()
    return render.site_files(inv)


def _batch(inv: Inventory, nodes: list[Node], stages: dict[str, str]) -> Made:
    """In a worker: render ``nodes`` and create their files under ``stages`` (by owned
    directory); their paths and identities' digest by hostname."""
    made: Made = {}
    writer = stage.Writer()
    dirs = set(stages.values())
    for host, files in render.node_files(inv, nodes).items():
        rels = sorted(files)
        ids: array[int] = array("q")
        for st in _create(stages, {rel: files[rel] for rel in rels}, writer, dirs):
            ids.extend((st.st_ino, st.st_size, st.st_mtime_ns))
        made[host] = (rels, incremental.digest(ids))
    return made


def _create(stages: dict[str, str], files: dict[str, str],
            writer: stage.Writer, dirs: set[str]) -> list[os.stat_result]:
    """Create ``files`` (relative to the output) in their staging trees, in order
    (``dirs``: the directories known to exist there, updated)."""
    out = []
    for rel, text in files.items():
        top, _, sub = rel.partition("/")
        base = stages.get(top)
        if base is None or not sub:
            raise ValueError(f"renderer produced {rel!r} outside {', '.join(OWNED)}")
        dest = os.path.join(base, sub)
        parent = os.path.dirname(dest)
        if parent not in dirs:
            stage.makedirs(parent, dirs)
        out.append(writer.stamped(dest, text.encode("utf-8")))
    return out
