"""`fleet secrets init`: creates the store with safe modes and never overwrites a secret."""

from __future__ import annotations

import base64
import stat
import subprocess
import sys
from pathlib import Path

import yaml

from fleet import secrets

SMALL = Path(__file__).resolve().parents[1] / "fixtures" / "small.yaml"


def run_fleet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fleet", *args], capture_output=True,
                          text=True, timeout=60, check=False)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_init_creates_a_private_store_with_a_real_munge_key(tmp_path: Path) -> None:
    root = tmp_path / "secrets"
    created = secrets.init(root)
    sls = root / secrets.MUNGE_SLS
    assert str(sls) in created
    for d in (root, root / "pillar", root / "pillar" / "secrets", root / "bmc"):
        assert mode(d) == 0o700, d
    assert mode(sls) == 0o600
    key = yaml.safe_load(sls.read_text())["secrets"]["munge_key"]
    assert len(base64.b64decode(key)) == secrets.MUNGE_KEY_BYTES


def test_init_never_overwrites_and_repairs_modes(tmp_path: Path) -> None:
    root = tmp_path / "secrets"
    secrets.init(root)
    sls = root / secrets.MUNGE_SLS
    before = sls.read_text()
    root.chmod(0o755)
    sls.chmod(0o644)
    assert secrets.init(root) == []
    assert sls.read_text() == before
    assert mode(root) == 0o700 and mode(sls) == 0o600


def test_cli_lists_missing_bmc_passwords(tmp_path: Path) -> None:
    root = tmp_path / "s"
    r = run_fleet("secrets", "init", "-i", str(SMALL), "--secrets", str(root), "--json")
    assert r.returncode == 0, r.stderr
    assert '"missing_bmc_secrets": [\n    "bmc-dell",\n    "bmc-gpu"\n  ]' in r.stdout
    (root / "bmc" / "bmc-dell").write_text("x")
    r = run_fleet("secrets", "init", "-i", str(SMALL), "--secrets", str(root))
    assert r.returncode == 0 and "bmc-gpu" in r.stdout and "bmc-dell" not in r.stdout
