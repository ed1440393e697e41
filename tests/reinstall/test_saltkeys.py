"""Key rotation with the real salt-key against a throw-away master pki dir."""

from __future__ import annotations

import stat
from pathlib import Path

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
