"""The inventory's lifecycle in the lab (docs/inventory.md, "A node's lifecycle"): a node
set to maintenance is drained by the controller's next apply with the inventory's reason
and `fleet health` (no TARGET) leaves it out; back to active, the next apply resumes it;
a planned node is in Slurm as FUTURE.

Each state is an extra merge-patch overlay on the lab's own (tests write it under
.lab/, never into lab/): the lab render (.lab/render, what the master serves) is
re-rendered with it and head-01, the Slurm controller, is applied. Every test restores
the lab's own render and applies head-01 again in `finally`, so the lab is left as the
first highstate made it. Waits poll with a timeout.

Run (on the lab host, as root, the lab up or not): `make test-lab` runs it with the rest,
or alone: `FLEET_LAB=1 .venv/bin/pytest -q tests/lab/test_lab_lifecycle.py` (PYTHONPATH=tools).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from labtools import ROOT, Lab, podman_exec, poll

from fleet.inventory.lifecycle import DRAIN_PREFIX
from fleet.inventory.load import load_inventory
from fleet.lab import highstate
from fleet.render import render_all, tree

HEAD = "head-01"  # the Slurm controller
MAINT = "tbox-039"  # the lab's one tbox2 node (test_health.py uses tbox-001 and tbox-002)
PLANNED = "tbox-003"  # in the inventory, not in the lab: only Slurm on head-01 learns it
REASON = "lab: PSU swapped, burn-in"


def _render(lab: Lab, extra: Path | None) -> None:
    """The lab's render (.lab/render) of inventory + lab overlays (+ ``extra``)."""
    overlays = [*lab.paths.overlays, *([extra] if extra else [])]
    tree.write(lab.paths.render, render_all(load_inventory(lab.paths.inventory, overlays)))


def _apply_head(lab: Lab) -> None:
    results, _ = highstate.apply(lab.paths, [HEAD], target=HEAD, timeout=900)
    failed = [r for r in results if r.status.bad]
    assert not failed, highstate.format_results(results, 0.0)


@pytest.fixture
def with_overlay(lab: Lab) -> Iterator[Any]:
    """Render and apply head-01 with an extra overlay; afterwards the lab's own again."""
    used: list[Path] = []

    def use(text: str) -> None:
        path = lab.paths.lab / "test-lifecycle-overlay.yaml"
        path.write_text(text)
        used.append(path)
        _render(lab, path)
        _apply_head(lab)

    try:
        yield use
    finally:
        if used:
            _render(lab, None)
            _apply_head(lab)
            for p in used:
                p.unlink(missing_ok=True)


def _node(lab: Lab, node: str) -> tuple[str, str]:
    """(State=, Reason= without its [user@time]) of ``scontrol --future show node``
    (without --future, scontrol says a node in State=FUTURE is "not found")."""
    r = podman_exec(lab, HEAD, "scontrol", "--future", "show", "node", node)
    assert r.returncode == 0, r.stdout + r.stderr
    state = reason = ""
    for line in r.stdout.splitlines():
        for word in line.split():
            if word.startswith("State="):
                state = word[len("State="):]
        if line.strip().startswith("Reason="):
            reason = line.strip()[len("Reason="):].rsplit(" [", 1)[0]
    return state, reason


def _health(lab: Lab, extra: Path, state: Path) -> subprocess.CompletedProcess[str]:
    """`fleet health` with no TARGET, the lab's overlays and ``extra`` (the real CLI)."""
    head = lab.plan.node(HEAD).container
    argv = [sys.executable, "-m", "fleet", "health", "--json",
            "-i", str(ROOT / "inventory.yaml"), *lab.paths.overlay_args(),
            "--overlay", str(extra), "--salt-config", str(lab.paths.salt_etc),
            "--state-dir", str(state),
            "--slurm-command", f"podman --runtime runc exec {head}"]
    return subprocess.run(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "tools")},
                          capture_output=True, text=True, timeout=600, check=False)


def test_maintenance_drains_with_the_reason_and_active_resumes(lab: Lab, with_overlay: Any,
                                                               tmp_path: Path) -> None:
    poll(f"{MAINT} not drained before the test",
         lambda: "DRAIN" not in _node(lab, MAINT)[0] or None, timeout=120, interval=2)
    with_overlay(f"nodes:\n  {MAINT}: {{state: maintenance, reason: {json.dumps(REASON)}}}\n")
    state, reason = _node(lab, MAINT)
    assert "DRAIN" in state.split("+"), state
    assert reason == DRAIN_PREFIX + REASON
    # a second apply changes nothing: already drained with that reason
    results, _ = highstate.apply(lab.paths, [HEAD], target=HEAD, timeout=900)
    assert not any(r.status.bad for r in results)
    assert _node(lab, MAINT) == (state, reason)

    r = _health(lab, lab.paths.lab / "test-lifecycle-overlay.yaml", tmp_path / "health")
    assert f"1 maintenance ({MAINT})" in r.stderr, r.stderr
    assert MAINT not in {n["node"] for n in json.loads(r.stdout)["nodes"]}, r.stdout

    # back to active (the lab's own render): the next apply resumes it
    _render(lab, None)
    _apply_head(lab)
    poll(f"{MAINT} resumed", lambda: "DRAIN" not in _node(lab, MAINT)[0] or None,
         timeout=120, interval=2)


def test_a_drain_by_hand_is_not_resumed(lab: Lab) -> None:
    """An active node drained by an operator stays drained: only the prefix resumes."""
    res = podman_exec(lab, HEAD, "scontrol", "update", f"NodeName={MAINT}", "State=DRAIN",
                      "Reason=by hand: cable")
    assert res.returncode == 0, res.stderr
    try:
        _apply_head(lab)
        state, reason = _node(lab, MAINT)
        assert "DRAIN" in state.split("+") and reason == "by hand: cable", (state, reason)
    finally:
        podman_exec(lab, HEAD, "scontrol", "update", f"NodeName={MAINT}", "State=RESUME")


def test_a_planned_node_is_future_in_slurm(lab: Lab, with_overlay: Any) -> None:
    nodes = [n.hostname for n in lab.plan.nodes]
    with_overlay(f"only_nodes: [{', '.join([*nodes, PLANNED])}]\n"
                 f"nodes:\n  {PLANNED}: {{state: planned}}\n")
    conf = podman_exec(lab, HEAD, "cat", "/etc/slurm/slurm.conf").stdout
    assert f"NodeName={PLANNED} " in conf and "State=FUTURE" in conf, conf
    out = podman_exec(lab, HEAD, "sinfo", "--future", "-h", "-N", "-n", PLANNED,
                      "-o", "%N %T").stdout
    assert out.split()[:2] == [PLANNED, "future"], out
    assert _node(lab, PLANNED)[0].startswith("FUTURE"), _node(lab, PLANNED)
