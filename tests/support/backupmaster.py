"""A Salt master laid out in a temp dir for fleet backup and fleet restore with the real
restic (tests/backup): the real Salt master keys (salt-key --gen-keys), the real secrets
store (fleet secrets init), a reinstall journal, boot-mode links, Alertmanager's silences."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from fleet import secrets as store
from fleet.cli import main
from support.cli import SMALL
from support.saltkeys import salt_key_bin, salt_master_config


class Master:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.conf, self.pki = salt_master_config(tmp)
        self.minion_pki = tmp / "minion-pki"  # the head's own minion key
        self.secrets = tmp / "checkout" / "secrets"
        self.pxe = tmp / "pxe-state"
        self.repo = tmp / "backup-repo"
        self.key = tmp / "operator" / "backup.key"
        self.overlay = tmp / "overlay.yaml"

    def argv(self, verb: str, *extra: str) -> list[str]:
        return [verb, *extra, "-i", str(SMALL), "--overlay", str(self.overlay),
                "--password-file", str(self.key), "--secrets", str(self.secrets),
                "--pxe-state", str(self.pxe), "--salt-config", str(self.conf),
                "--minion-pki-dir", str(self.minion_pki)]

    def items(self) -> list[Path]:
        return [self.pki, self.minion_pki, self.secrets, self.pxe, self.tmp / "state",
                self.tmp / "am"]


def make_master(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Master:
    """A master laid out under ``tmp_path`` (its state roots set in the environment), its
    backup going to a path destination (overlay.yaml), the operator's key written."""
    m = Master(tmp_path)
    subprocess.run([salt_key_bin(), "-c", str(m.conf), "--gen-keys=master",
                    f"--gen-keys-dir={m.pki}"], check=True, capture_output=True)
    shutil.copy(m.pki / "master.pub", m.pki / "minions" / "gpu-01")  # an accepted key
    subprocess.run([salt_key_bin(), "-c", str(m.conf), "--gen-keys=minion",
                    f"--gen-keys-dir={m.minion_pki}"], check=True, capture_output=True)
    store.init(m.secrets)
    bmc = m.secrets / "bmc" / "bmc-gpu"
    bmc.write_text("Sup3r-S3cret-BMC\n")
    bmc.chmod(0o600)
    os.chown(bmc, 1234, 1234)  # an owner that is not root comes back as it was
    journal = tmp_path / "state" / "reinstall" / "gpu-01" / "journal.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_text('{"step": "power-off", "done": false}\n')
    m.pxe.mkdir()
    (m.pxe / "gpu-01.ipxe").symlink_to("../pxe/install/gpu-01.ipxe")
    (tmp_path / "am").mkdir()
    (tmp_path / "am" / "silences").write_bytes(b"\x00silence")
    for env, sub in (("FLEET_REINSTALL_STATE", "state/reinstall"),
                     ("FLEET_ROLLOUT_STATE", "state/rollout"),
                     ("FLEET_HEALTH_STATE", "state/health"),
                     ("FLEET_APPLY_STATE", "state/apply"),
                     ("FLEET_BACKUP_STATE", "state/backup"),
                     ("FLEET_ALERTMANAGER_STATE", "am"),
                     ("FLEET_AUDIT_LOG", "log/audit.jsonl")):
        monkeypatch.setenv(env, str(tmp_path / sub))
    m.overlay.write_text(yaml.safe_dump(
        {"site": {"backup": {"destination": {"type": "path", "path": str(m.repo)}}}}))
    m.key.parent.mkdir()
    m.key.write_text("the operator's own passphrase\n")
    m.key.chmod(0o600)
    return m


def snapshot_of(root: Path) -> dict[str, tuple[int, int, int, bytes]]:
    """Every file, directory and link under ``root``: mode, uid, gid, content (a link's
    target). Sockets are left out: a gpg-agent's (the secrets store's key ring, while an
    agent runs) is a process's door, not data, and no backup keeps one."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        if stat.S_ISSOCK(st.st_mode):
            continue
        body = str(p.readlink()).encode() if p.is_symlink() else \
            p.read_bytes() if p.is_file() else b""
        out[str(p)] = (st.st_mode, st.st_uid, st.st_gid, body)
    return out


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, object]]:
    capsys.readouterr()
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)

