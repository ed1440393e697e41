"""fleet.master's wiring: where the Salt tools are found (beside this Python first, then
PATH) and the state roots and Salt config dir with their environment variables."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fleet.master import statedir
from fleet.master.runner import runner_for, tool_path

BESIDE = Path(sys.executable).parent


def test_a_salt_tool_beside_this_python_wins_over_path(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    if not (BESIDE / "salt-key").exists():
        pytest.skip(f"no salt-key beside {sys.executable} (run `make deps`)")
    other = tmp_path / "bin"
    other.mkdir()
    for name in ("salt-key", "only-on-path"):
        (other / name).write_text("#!/bin/sh\nexit 0\n")
        (other / name).chmod(0o755)
    monkeypatch.setenv("PATH", str(other))
    assert tool_path("salt-key") == str(BESIDE / "salt-key")
    assert tool_path("only-on-path") == str(other / "only-on-path")
    assert tool_path("nowhere-at-all") == "nowhere-at-all"


def test_runner_for_prefixes_salt_with_the_config_and_slurm_with_the_command() -> None:
    runner = runner_for(Path("/srv/salt"), "ssh head-01")
    assert runner.prefix["salt-run"] == [tool_path("salt-run"), "-c", "/srv/salt"]
    assert runner.prefix["scontrol"] == ["ssh", "head-01", "scontrol"]
    assert "scontrol" not in runner_for(Path("/srv/salt")).prefix


def test_state_roots_and_the_salt_config_honour_their_variables(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("FLEET_SALT_CONFIG", "FLEET_REINSTALL_STATE", "FLEET_ROLLOUT_STATE"):
        monkeypatch.delenv(var, raising=False)
    assert statedir.salt_config() == Path("/etc/salt")
    assert statedir.REINSTALL.path() == Path("/var/lib/fleet/reinstall")
    monkeypatch.setenv("FLEET_SALT_CONFIG", "/srv/lab/salt")
    monkeypatch.setenv("FLEET_ROLLOUT_STATE", "/srv/rollout")
    monkeypatch.setenv("FLEET_REINSTALL_STATE", "")  # set but empty: the default
    assert statedir.salt_config() == Path("/srv/lab/salt")
    assert statedir.ROLLOUT.path() == Path("/srv/rollout")
    assert statedir.REINSTALL.path() == Path("/var/lib/fleet/reinstall")
    roots = [statedir.REINSTALL, statedir.ROLLOUT, statedir.HEALTH, statedir.APPLY]
    assert len({r.env for r in roots}) == len({r.default for r in roots}) == 4


def _fleet_imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of every ``fleet`` import in ``path``, function-level ones too."""
    import ast

    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fleet"):
            found.append((str(node.module), [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name.startswith("fleet")]
    return found


FLEET = Path(__file__).resolve().parents[2] / "tools" / "fleet"


def test_the_master_layer_imports_no_verb() -> None:
    bad = [(p.name, m) for p in sorted((FLEET / "master").glob("*.py"))
           for m, _ in _fleet_imports(p) if not m.startswith("fleet.master")]
    assert bad == []


def test_no_verb_imports_another_verbs_cli_or_private_names() -> None:
    """The top-level fleet/cli.py registers every verb; below it, a package may use
    another's library modules but never its command-line module or its private names."""
    bad = []
    for path in sorted(FLEET.glob("*/**/*.py")):
        own = path.relative_to(FLEET).parts[0]
        for module, names in _fleet_imports(path):
            parts = module.split(".")
            if len(parts) < 2 or parts[1] == own:
                continue
            if parts[-1] == "cli" or any(n.startswith("_") for n in names):
                bad.append(f"{path.relative_to(FLEET)}: {module} {names}")
    assert bad == []
