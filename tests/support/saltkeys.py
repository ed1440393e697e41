"""A throw-away Salt master config for the real ``salt-key`` (reinstall, keys, PXE and VM
tests)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

VENV_BIN = Path(sys.executable).parent


def salt_key_bin() -> str:
    found = shutil.which("salt-key") or (VENV_BIN / "salt-key")
    if not Path(found).exists():
        pytest.skip("salt-key is not installed (it comes with salt from requirements.txt; "
                    "run `make deps`)")
    return str(found)


def salt_master_config(tmp: Path) -> tuple[Path, Path]:
    """A master config dir whose pki_dir is under ``tmp``; returns (config dir, pki dir)."""
    root = tmp / "salt"
    conf, pki = root / "etc", root / "pki"
    for d in (conf, pki / "minions", pki / "minions_pre", pki / "minions_rejected",
              pki / "minions_denied", root / "cache", root / "sock"):
        d.mkdir(parents=True, exist_ok=True)
    (conf / "master").write_text(
        f"root_dir: {root}\npki_dir: {pki}\ncachedir: {root / 'cache'}\n"
        f"sock_dir: {root / 'sock'}\nlog_file: {root / 'master.log'}\n"
        "user: root\n", encoding="utf-8")
    return conf, pki
