"""The runbook procedures that tests/lab/test_runbook.py, test_master_restore.py and
test_standby.py follow on the lab, checked without one: every step is one the lab runs,
and the node procedures' render steps (the edits, `fleet validate`, `fleet diff` with the
output the runbook shows, `fleet render`) hold on the lab's inventory rendered into a
temporary directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet.lab import plan as lab_plan
from fleet.lab.paths import Paths
from support import runbook
from support.cli import ROOT, run_fleet


def _deep_merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: _deep_merge(base.get(k), v) for k, v in over.items()}}
    return over


def _rendered(out: Path) -> dict[Path, bytes]:
    """The rendered files (not the incremental render's store beside them)."""
    return {p.relative_to(out): p.read_bytes() for p in out.rglob("*")
            if p.is_file() and p.name != ".render.inputs"}


@pytest.mark.parametrize("name", runbook.SECTIONS)
def test_every_step_is_one_the_lab_runs(name: str) -> None:
    steps = runbook.steps(name)
    assert [s for s in steps if s.edit is not None], f"{name}: no inventory edit"
    assert [s for s in steps if s.argv], f"{name}: no command"
    assert [runbook.unrunnable(s) for s in steps if runbook.unrunnable(s)] == []


@pytest.mark.parametrize("name", [*runbook.BACKUP_SECTIONS, runbook.FAILOVER_SECTION])
def test_every_master_step_is_one_the_lab_runs(name: str) -> None:
    steps = runbook.steps(name)
    assert [s for s in steps if s.argv], f"{name}: no command"
    assert [why for s in steps if (why := runbook.unrunnable(
        s, runbook.MASTER_PROGRAMS, runbook.MASTER_VERBS))] == []


def test_the_failover_is_in_its_parts_and_names_each_host() -> None:
    """tests/lab/test_standby.py stops and starts head-01 at the parts' headings, and
    runs each command on the host its comment names."""
    steps = runbook.steps(runbook.FAILOVER_SECTION)
    assert [p for i, p in enumerate(s.part for s in steps) if p not in
            [s.part for s in steps[:i]]] == ["Set up the standby once", "When head-01 is lost",
                                             "When head-01 comes back"]
    hosts = {s.note.split(":")[0] for s in steps if s.note.startswith("on ")}
    assert hosts == {"on head-01", "on head-02"}, hosts


def test_the_parser_keeps_sudo_the_comment_and_the_part() -> None:
    text = ("### A\n\n```console\n$ sudo fleet apply  # on head-02: it's refused\n```\n"
            "#### Later\n\n1. step\n\n   ```yaml\n   site:\n     salt: {master: b}\n   ```\n"
            "   ```console\n   $ salt '*' test.ping\n   n-1:\n   ```\n")
    got = [(s.line, s.edit, s.argv, s.shown, s.sudo, s.note, s.part)
           for s in runbook.steps("A", text)]
    assert got == [
        (4, None, ["fleet", "apply"], [], True, "on head-02: it's refused", ""),
        (11, {"site": {"salt": {"master": "b"}}}, [], [], False, "", "Later"),
        (15, None, ["salt", "*", "test.ping"], ["n-1:"], False, "", "Later")]
    assert runbook.steps("A", text)[0].text.endswith("sudo fleet apply")


def test_the_parser_reads_edits_commands_and_shown_output_in_order() -> None:
    text = ("### A\n\nprose\n\n```yaml\nnodes:\n  n-1: {state: planned}\n```\n\n"
            "```console\n$ fleet diff -o x   # a comment\n1 added\n$ sinfo -N\n```\n"
            "### B\n```console\n$ fleet render\n```\n")
    steps = runbook.steps("A", text)
    assert [(s.line, s.edit, s.argv, s.shown) for s in steps] == [
        (6, {"nodes": {"n-1": {"state": "planned"}}}, [], []),
        (11, None, ["fleet", "diff", "-o", "x"], ["1 added"]),
        (13, None, ["sinfo", "-N"], [])]
    assert runbook.unrunnable(runbook.Step(1, argv=["rm", "-rf", "/"])) is not None
    assert runbook.unrunnable(runbook.Step(1, argv=["fleet", "mkv", "rebuild"])) is not None
    with pytest.raises(LookupError):
        runbook.steps("C", text)


def test_the_render_steps_hold_on_the_lab_inventory(tmp_path: Path) -> None:
    """Each edit, then validate, diff (the output shown) and render, on a copy of the lab's
    render; the added node is in the lab's plan (fleet.lab.plan.load's ``extra``) until it
    is retired, and the retired render is the lab's own again."""
    paths = Paths(ROOT)
    lab_nodes = [n.hostname for n in lab_plan.load(paths).nodes]
    out, overlay = tmp_path / "render", tmp_path / "edit.yaml"
    base = ["-i", str(paths.inventory), *paths.overlay_args(), "-o", str(out)]
    assert run_fleet("render", "-q", *base).returncode == 0
    own = _rendered(out)
    patch: dict[str, Any] = {}
    for step in [s for name in runbook.SECTIONS for s in runbook.steps(name)]:
        if step.edit is not None:
            patch = _deep_merge(patch, step.edit)
            (node,) = [n for n in patch["nodes"] if n not in lab_nodes]
            overlay.write_text(yaml.safe_dump({**patch, "only_nodes": [*lab_nodes, node]}))
            state = patch["nodes"][node].get("state", "active")
            in_plan = node in {n.hostname for n in lab_plan.load(paths, [overlay]).nodes}
            assert in_plan == (state != "retired"), (step.text, state)
        elif step.argv[:2] in (["fleet", "validate"], ["fleet", "diff"], ["fleet", "render"]):
            args = [*step.argv[1:], *base, "--overlay", str(overlay)]
            if step.argv[1] == "validate":
                args.remove("-o")
                args.remove(str(out))
            r = run_fleet(*args)
            assert r.returncode == (3 if step.argv[1] == "diff" else 0), (step.text, r.stderr)
            for line in step.shown:
                assert line in r.stdout + r.stderr, (step.text, line, r.stderr)
    assert _rendered(out) == own
