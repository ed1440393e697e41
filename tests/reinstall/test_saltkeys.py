"""Key rotation with the real salt-key against a throw-away master pki dir."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from fleet.master.keys import MinionKeys
from fleet.master.runner import SubprocessRunner
from support.saltkeys import salt_key_bin, salt_master_config


def test_rotation_replaces_the_accepted_key(tmp_path: Path) -> None:
    conf, pki = salt_master_config(tmp_path)
    runner = SubprocessRunner({"salt-key": [salt_key_bin(), "-c", str(conf)]})
    keys = MinionKeys(runner, pki)
    old = b"-----BEGIN PUBLIC KEY-----\nold\n-----END PUBLIC KEY-----\n"
    (pki / "minions" / "stor-001").write_bytes(old)
    (pki / "minions_denied" / "stor-001").write_bytes(old)
    assert keys.status("stor-001") == ["accepted", "denied"]

    keys.delete("stor-001")
    assert keys.status("stor-001") == []
    node_dir = tmp_path / "state" / "stor-001"
    node_dir.mkdir(parents=True, mode=0o700)
    pem, public = keys.generate("stor-001", node_dir)
    keys.accept_in_advance("stor-001", public)

    assert keys.status("stor-001") == ["accepted"]
    assert (pki / "minions" / "stor-001").read_bytes() == public != old
    assert public.startswith(b"-----BEGIN PUBLIC KEY-----")
    assert pem.read_bytes().startswith(b"-----BEGIN RSA PRIVATE KEY-----")
    assert stat.S_IMODE(pem.stat().st_mode) == 0o600
    assert stat.S_IMODE(pem.parent.stat().st_mode) == 0o700
    assert sorted(p.name for p in node_dir.iterdir()) == ["keys"]  # no stray key files


def test_the_endpoints_revoker_finds_salt_key_beside_the_venv(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The installer endpoint's key revoker (an installer's error report) runs the real
    salt-key found beside this Python (the venv's, the Salt that fleet runs), as every
    other verb does, with nothing on PATH: a service's PATH seldom holds the venv."""
    from fleet.master.runner import runner_for
    from fleet.reinstall.server import salt_key_revoker

    beside = Path(sys.executable).parent / "salt-key"
    if not beside.exists():
        pytest.skip(f"no salt-key beside {sys.executable} (it comes with salt from "
                    "requirements.txt; run `make deps`)")
    conf, pki = salt_master_config(tmp_path)
    (pki / "minions" / "gpu-01").write_bytes(b"-----BEGIN PUBLIC KEY-----\nx\n")
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    salt_key_revoker(runner_for(conf))("gpu-01")
    assert not (pki / "minions" / "gpu-01").exists()
