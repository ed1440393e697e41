"""`fleet secrets init`: creates the store with safe modes and never overwrites a secret."""

from __future__ import annotations

import base64
import re
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


def test_init_resets_the_mode_of_every_file_and_directory(tmp_path: Path) -> None:
    """Not only the munge key: BMC passwords and anything else in the store, at any depth;
    a symbolic link is not followed (its target keeps its mode)."""
    root = tmp_path / "secrets"
    secrets.init(root)
    bmc = root / "bmc" / "bmc-dell"
    bmc.write_text("pw\n")
    bmc.chmod(0o644)
    extra_dir = root / "pillar" / "secrets" / "more"
    extra_dir.mkdir(mode=0o755)
    extra = extra_dir / "other.sls"
    extra.write_text("x: 1\n")
    extra.chmod(0o640)
    (root / "bmc").chmod(0o755)
    outside = tmp_path / "outside"
    outside.write_text("not the store's\n")
    outside.chmod(0o644)
    (root / "bmc" / "linked").symlink_to(outside)
    assert secrets.init(root) == []
    for d in (root / "bmc", extra_dir):
        assert mode(d) == 0o700, d
    for f in (bmc, extra, root / secrets.MUNGE_SLS):
        assert mode(f) == 0o600, f
    assert mode(outside) == 0o644
    assert bmc.read_text() == "pw\n"


def test_validate_reports_a_password_secret_without_a_value(tmp_path: Path) -> None:
    """bmc-gpu is an empty file and bmc-dell is missing: each profile's password_secret is
    reported at its own line and column; with both filled in, the inventory is valid."""
    root = tmp_path / "s"
    secrets.init(root)
    (root / "bmc" / "bmc-gpu").write_text("\n")
    r = run_fleet("validate", "-i", str(SMALL), "--secrets", str(root))
    assert r.returncode == 1, r.stdout + r.stderr
    text = SMALL.read_text().splitlines()
    where = {}
    for profile, secret in (("gpu", "bmc-gpu"), ("storage", "bmc-dell"), ("head", "bmc-dell")):
        line = next(i for i, ln in enumerate(text, 1) if f"password_secret: {secret}" in ln
                    and i not in {w[0] for w in where.values()})
        where[profile] = (line, text[line - 1].index(secret) + 1)
    for profile, (line, col) in where.items():
        secret = "bmc-gpu" if profile == "gpu" else "bmc-dell"
        want = f"{SMALL}:{line}:{col}: profiles.{profile}.bmc.password_secret: {secret}: "
        assert any(ln.startswith(want) for ln in r.stderr.splitlines()), (want, r.stderr)
    assert "bmc-gpu is empty" in r.stderr and "bmc-dell does not exist" in r.stderr
    assert "3 errors" in r.stderr
    (root / "bmc" / "bmc-gpu").write_text("pw\n")
    (root / "bmc" / "bmc-dell").write_text("pw\n")
    r = run_fleet("validate", "-q", "-i", str(SMALL), "--secrets", str(root))
    assert (r.returncode, r.stderr) == (0, "")


def test_init_creates_the_apt_cache_login_once(tmp_path: Path) -> None:
    """The apt cache's maintenance pages get a login of their own (issue 22: they were
    open to every node); `init` makes it once and never rewrites it."""
    root = tmp_path / "secrets"
    secrets.init(root)
    sls = root / secrets.APTCACHE_SLS
    assert stat.S_IMODE(sls.stat().st_mode) == 0o600
    auth = yaml.safe_load(sls.read_text())["secrets"]["apt_cache_auth"]
    assert re.fullmatch(r"AdminAuth: fleet:[A-Za-z0-9_-]{32}", auth), "not one AdminAuth word"
    before = sls.read_text()
    secrets.init(root)
    assert sls.read_text() == before
    other = tmp_path / "other"
    secrets.init(other)
    assert (other / secrets.APTCACHE_SLS).read_text() != before  # random per store
