"""salt-lint and yamllint on the Salt tree (CI check 1), and proof they bite."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        found = shutil.which(name)
        if not found:
            pytest.fail(f"{name} is not installed: run `make deps` (requirements.txt pins it)")
        return found
    return str(path)


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=300,
                          check=False)


def test_lint_script_passes() -> None:
    tool("salt-lint")
    tool("yamllint")
    proc = run("sh", "tests/salt/lint.sh", str(Path(tool("salt-lint")).parent))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_salt_lint_rejects_unquoted_mode(tmp_path: Path) -> None:
    sls = tmp_path / "bad.sls"
    sls.write_text("bad-file-managed:\n  file.managed:\n    - name: /tmp/x\n    - mode: 644\n")
    shutil.copy(ROOT / ".salt-lint", tmp_path / ".salt-lint")
    proc = run(tool("salt-lint"), "bad.sls", cwd=tmp_path)
    assert proc.returncode != 0 and "207" in proc.stdout + proc.stderr


def test_yamllint_rejects_duplicate_key(tmp_path: Path) -> None:
    bad = tmp_path / "defaults.yaml"
    bad.write_text("---\nvalues:\n  a: 1\n  a: 2\n")
    proc = run(tool("yamllint"), "-c", str(ROOT / ".yamllint"), "--strict", str(bad))
    assert proc.returncode != 0 and "duplication" in proc.stdout
