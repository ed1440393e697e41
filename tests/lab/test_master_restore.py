"""The lab's Salt master lost and brought back by `fleet restore` (docs/operations.md,
Backup and restore), with the real restic and the real minions of the lab.

The lab's master runs on this host (fleet.lab.master): its keys under .lab/master/pki,
its secrets store .lab/secrets. Its "disk dies": the master is stopped and its keys, its
secrets and fleet's state (a reinstall journal left interrupted) are deleted; the
"freshly installed" master starts once and makes a new key of its own, as a new install
does. Then:

- `fleet restore` refuses while that master runs (exit 6), and restores once it is
  stopped (exit 0, the restored key's fingerprint is the backup's);
- the master started again: every minion answers test.ping, with no key accepted again
  (the accepted keys are the same files, none pending);
- `fleet keys finger --check` holds (the minions' pinned master_finger);
- the secrets store and the journal are identical, modes and owners included."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from labtools import ROOT, Lab

from fleet.lab import highstate
from fleet.lab import master as lab_master


def _tree(root: Path) -> dict[str, tuple[int, int, int, bytes]]:
    out = {}
    for p in sorted([root, *root.rglob("*")]):
        st = p.lstat()
        body = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
        out[str(p)] = (st.st_mode, st.st_uid, st.st_gid, body)
    return out


def _keys(lab: Lab) -> dict[str, Any]:
    out = subprocess.run([str(lab.paths.bin / "salt-key"), "-L", "--out=json"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    keys: dict[str, Any] = json.loads(out)
    return keys


class Backup:
    def __init__(self, lab: Lab, tmp: Path) -> None:
        self.lab, self.tmp = lab, tmp
        self.key = tmp / "operator" / "backup.key"
        self.key.parent.mkdir()
        self.key.write_text("the lab operator's passphrase\n")
        self.key.chmod(0o600)
        self.overlay = tmp / "backup-overlay.yaml"
        self.overlay.write_text(yaml.safe_dump({"site": {"backup": {"destination": {
            "type": "path", "path": str(tmp / "repo")}}}}))
        (tmp / "pxe-state").mkdir()
        self.env = {**os.environ, "PYTHONPATH": str(ROOT / "tools"),
                    **{env: str(tmp / sub) for env, sub in (
                        ("FLEET_REINSTALL_STATE", "state/reinstall"),
                        ("FLEET_ROLLOUT_STATE", "state/rollout"),
                        ("FLEET_HEALTH_STATE", "state/health"),
                        ("FLEET_APPLY_STATE", "state/apply"),
                        ("FLEET_BACKUP_STATE", "state/backup"),
                        ("FLEET_ALERTMANAGER_STATE", "am"),
                        ("FLEET_AUDIT_LOG", "log/audit.jsonl"))}}

    def fleet(self, verb: str, *args: str) -> tuple[int, dict[str, Any]]:
        argv = [sys.executable, "-m", "fleet", verb, *args, "--json",
                "-i", str(ROOT / "inventory.yaml"), *self.lab.paths.overlay_args()]
        if verb in ("backup", "restore"):
            argv += ["--overlay", str(self.overlay), "--password-file", str(self.key),
                     "--secrets", str(self.lab.paths.secrets),
                     "--pxe-state", str(self.tmp / "pxe-state"),
                     "--pki-dir", str(self.lab.paths.master_root / "pki")]
        argv += ["--salt-config", str(self.lab.paths.salt_etc)]
        proc = subprocess.run(argv, cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=900, check=False)
        assert proc.stdout.strip().startswith("{"), (proc.returncode, proc.stderr[-3000:])
        return proc.returncode, json.loads(proc.stdout)


def test_the_master_comes_back_from_its_backup(lab: Lab, tmp_path: Path) -> None:
    paths = lab.paths
    pki = paths.master_root / "pki"
    minions = [n.hostname for n in lab.nodes]
    b = Backup(lab, tmp_path)
    journal = tmp_path / "state" / "reinstall" / "tbox-001" / "journal.jsonl"
    journal.parent.mkdir(parents=True)
    journal.write_text('{"step": "power-off", "at": "2026-12-05T02:00:00+00:00"}\n')
    keys_before = _keys(lab)
    assert sorted(keys_before["minions"]) == sorted(minions)
    before = {"pki": _tree(pki), "secrets": _tree(paths.secrets),
              "state": _tree(tmp_path / "state" / "reinstall")}

    code, doc = b.fleet("backup")
    assert code == 0, doc
    # the disk dies; the head node is installed again and its master starts once
    lab_master.stop(paths)
    for gone in (pki, paths.secrets, tmp_path / "state"):
        shutil.rmtree(gone)
    (pki / "minions").mkdir(parents=True)
    try:
        lab_master.start(paths, lab.plan)
        assert (pki / "master.pub").read_bytes() != before["pki"][str(pki / "master.pub")][3]
        code, doc = b.fleet("restore")
        assert code == 6, doc  # a running master of this config: refused
    finally:
        lab_master.stop(paths)
    code, doc = b.fleet("restore")
    assert code == 0 and doc["finger_holds"] is True, doc
    lab_master.start(paths, lab.plan)

    after = {"pki": _tree(pki), "secrets": _tree(paths.secrets),
             "state": _tree(tmp_path / "state" / "reinstall")}
    assert after == before
    # the fresh master's own key is kept aside, not deleted
    assert [p.name.split("-", 2)[:2] for p in pki.parent.glob("pki.before-restore-*")] == \
        [["pki.before", "restore"]]
    highstate.ping(paths, minions, timeout=300)
    keys_after = _keys(lab)
    assert keys_after == keys_before  # every key accepted as before, none pending
    code, doc = b.fleet("keys", "finger", "--check")
    assert code == 0 and doc["finger"] == doc["recorded"], doc
