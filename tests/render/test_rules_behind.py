"""`fleet render` into an output already there, with a large inventory: the cross-object
rules are checked by a forked child while this process plans and renders
(fleet.inventory.checks.checking, fleet.context.Checked), and nothing is printed or written
before their verdict. Here the child is forced at the small inventory's size: an inventory
that breaks a rule must still write nothing and say what `fleet validate` says, what such an
inventory breaks in the renderer must be reported as its problems, and a valid one must be
rendered exactly as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet import cli
from fleet.inventory import checks
from fleet.render import incremental, prefetch
from support.forking import Started, spy_children

from .test_incremental import full, output, render


@pytest.fixture
def behind(monkeypatch: pytest.MonkeyPatch) -> Started:
    """The rules (and the output's reader) forked at any size, whatever the CPUs here; each
    forked child's pid and what it was started for."""
    monkeypatch.setattr(checks, "FORK_MIN_NODES", 1)
    monkeypatch.setattr(prefetch, "FORK_MIN_BYTES", 0)
    return spy_children(monkeypatch)


def _started(behind: Started) -> list[str]:
    return [what for _pid, what in behind]


RULE_CHECKER = "the inventory's rule checker"
TWO_MACS = ('mac: "52:54:00:00:00:66"', 'mac: "52:54:00:00:00:65"')  # gpu-02 takes gpu-01's


def _problems(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = cli.main([*args, "--json"])
    doc = json.loads(capsys.readouterr().out)
    return code, [f"{p['file']}:{p['line']}: {p['message']}" for p in doc["errors"]]


def test_a_rule_broken_writes_nothing_and_says_what_validate_says(
        rendered_once: tuple[Path, Path], behind: Started,
        capsys: pytest.CaptureFixture[str]) -> None:
    out, inv_file = rendered_once
    before = output(out)
    store = (out / incremental.STORE).read_bytes()
    inv_file.write_text(inv_file.read_text(encoding="utf-8").replace(*TWO_MACS),
                        encoding="utf-8")
    behind.clear()
    code, said = _problems(["render", "-i", str(inv_file), "-o", str(out)], capsys)
    assert _started(behind).count(RULE_CHECKER) == 1, f"not checked behind: {behind}"
    assert code == 1
    assert output(out) == before and (out / incremental.STORE).read_bytes() == store
    v_code, v_said = _problems(["validate", "-i", str(inv_file)], capsys)
    assert (code, said) == (v_code, v_said)
    assert any("already used by gpu-01" in s for s in said)


def test_what_an_invalid_inventory_breaks_is_reported_as_its_problems(
        rendered_once: tuple[Path, Path], behind: Started,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    out, inv_file = rendered_once
    before = output(out)

    def broken(*_args: object, **_kwargs: object) -> None:
        raise KeyError("what the duplicate broke")

    monkeypatch.setattr(incremental, "render", broken)
    valid = inv_file.read_text(encoding="utf-8")
    inv_file.write_text(valid.replace(*TWO_MACS), encoding="utf-8")
    code, said = _problems(["render", "-i", str(inv_file), "-o", str(out)], capsys)
    assert RULE_CHECKER in _started(behind)
    assert code == 1 and any("already used by gpu-01" in s for s in said)
    assert output(out) == before
    # a valid inventory's failure is its own, not hidden
    inv_file.write_text(valid.replace("serial: GPU0002", "serial: GPU0902"), encoding="utf-8")
    capsys.readouterr()
    code = cli.main(["render", "-q", "-i", str(inv_file), "-o", str(out)])
    assert code not in (0, 1)
    assert "internal error: KeyError: 'what the duplicate broke'" in capsys.readouterr().err


def test_a_valid_edit_with_the_rules_behind_writes_what_a_full_render_writes(
        rendered_once: tuple[Path, Path], behind: Started, tmp_path: Path) -> None:
    out, inv_file = rendered_once
    text = inv_file.read_text(encoding="utf-8")
    inv_file.write_text(text.replace("serial: GPU0002", "serial: GPU0902"), encoding="utf-8")
    behind.clear()
    render(inv_file, out)
    assert RULE_CHECKER in _started(behind)
    assert output(out) == full(inv_file, tmp_path / "full")
