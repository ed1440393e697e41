"""fleet backup and fleet restore with the real restic, on a master laid out in a temp
dir: the real Salt master keys (salt-key --gen-keys), the real secrets store (fleet
secrets init), a reinstall journal, boot-mode links, Alertmanager's silences.

A backup put back onto a "fresh head" (every item deleted) restores every file with its
content, mode and owner, and the master's key fingerprint; a damaged backup is refused by
check and by restore, which writes nothing; a backup cannot be read without its key; a
backup made by a newer fleet is refused, naming both versions; a running salt-master
refuses the restore unless --force (the running master is a stand-in: a Python process
titled as salt-master titles itself, with this master's -c, as /proc shows it; another
master's -c is not this one)."""

from __future__ import annotations

import json
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import fleet
from fleet import secrets as store
from fleet.backup import paths
from fleet.exitcodes import Exit
from support.backupmaster import Master, run, snapshot_of
from support.cli import ROOT

if shutil.which("restic") is None:
    pytest.fail("restic is not installed: run tools/install-host-deps.sh (the backup "
                "tests run the real restic)", pytrace=False)


def test_a_backup_restored_onto_a_fresh_head_is_the_master_again(
        master: Master, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run(master.argv("backup"), capsys)
    assert code == Exit.OK, doc
    assert doc["verified"] is True and doc["initialised"] is True
    last = json.loads((master.tmp / "state" / "backup" / paths.LAST).read_text())
    assert last["verified"] is True and last["snapshot"] == doc["snapshot"]
    before = {str(p): snapshot_of(p) for p in master.items()}
    # the note of the last good backup is written after it: it is not in it
    del before[str(master.tmp / "state")][str(master.tmp / "state" / "backup" / paths.LAST)]
    # encrypted: no secret of the store is in the repository's bytes
    munge = (master.secrets / store.MUNGE_SLS).read_bytes().split(b"munge_key: ")[1][:40]
    blob = b"".join(p.read_bytes() for p in master.repo.rglob("*") if p.is_file())
    assert munge not in blob and b"Sup3r-S3cret-BMC" not in blob
    for p in master.items():  # the disk died; a fresh head has none of it
        shutil.rmtree(p)
    code, doc = run(master.argv("restore"), capsys)
    assert code == Exit.OK, doc
    assert doc["finger_holds"] is True
    assert {"manifest", "salt-pki", "salt-minion-pki"} <= set(doc["items"])
    after = {str(p): snapshot_of(p) for p in master.items()}
    for item in before:
        assert sorted(after[item]) == sorted(before[item]), item
        assert after[item] == before[item], item
    bmc = master.secrets / "bmc" / "bmc-gpu"
    assert (bmc.stat().st_uid, stat.S_IMODE(bmc.stat().st_mode)) == (1234, 0o600)


def test_the_second_backup_reuses_the_repository_and_check_passes(
        master: Master, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(master.argv("backup"), capsys)[0] == Exit.OK
    code, doc = run(master.argv("backup"), capsys)
    assert code == Exit.OK and doc["initialised"] is False
    code, doc = run(master.argv("backup", "check"), capsys)
    assert code == Exit.OK and doc["ok"] is True
    code, doc = run(master.argv("backup", "list"), capsys)
    assert code == Exit.OK and len(doc["snapshots"]) == 1  # keep_daily: one a day


def _corrupt(repo: Path) -> None:
    packs = sorted(p for p in (repo / "data").rglob("*") if p.is_file())
    victim = max(packs, key=lambda p: p.stat().st_size)
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.chmod(0o644)
    victim.write_bytes(bytes(data))


def test_a_damaged_backup_is_refused_by_check_and_by_restore(
        master: Master, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(master.argv("backup"), capsys)[0] == Exit.OK
    _corrupt(master.repo)
    code, doc = run(master.argv("backup", "check"), capsys)
    assert code == Exit.FAILED, doc
    fresh = master.tmp / "fresh"
    code, doc = run(master.argv("restore", "--root", str(fresh)), capsys)
    assert code == Exit.FAILED, doc
    assert "refused" in json.dumps(doc["errors"])
    assert not fresh.exists()


def test_without_its_key_a_backup_cannot_be_read(
        master: Master, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(master.argv("backup"), capsys)[0] == Exit.OK
    master.key.write_text("a guess\n")
    code, doc = run(master.argv("backup", "check"), capsys)
    assert code == Exit.IO, doc
    fresh = master.tmp / "fresh"
    code, doc = run(master.argv("restore", "--root", str(fresh)), capsys)
    assert code == Exit.IO and "wrong key" in json.dumps(doc["errors"])
    assert not fresh.exists()


def test_a_backup_made_by_a_newer_fleet_is_refused_naming_both(
        master: Master, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    ours = fleet.__version__
    monkeypatch.setattr(fleet, "__version__", "99.1.0")
    assert run(master.argv("backup"), capsys)[0] == Exit.OK
    monkeypatch.setattr(fleet, "__version__", ours)
    fresh = master.tmp / "fresh"
    code, doc = run(master.argv("restore", "--root", str(fresh)), capsys)
    assert code == Exit.FAILED
    said = json.dumps(doc["errors"])
    assert "fleet 99.1.0" in said and f"fleet {ours}" in said
    assert not fresh.exists()


def test_a_running_master_refuses_the_restore_unless_forced(
        master: Master, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(master.argv("backup"), capsys)[0] == Exit.OK
    fresh = master.tmp / "fresh"
    # titled as Salt titles its processes (setproctitle: one string in /proc)
    title = f"{sys.executable} /opt/salt/bin/salt-master -c {master.conf} -d MainProcess"
    stand_in = subprocess.Popen(
        [sys.executable, "-c", "import setproctitle, sys; setproctitle.setproctitle("
         f"{title!r}); sys.stdin.read()"], stdin=subprocess.PIPE)
    other = subprocess.Popen(["salt-master", "-", "-c", str(master.tmp / "other")],
                             executable=sys.executable, stdin=subprocess.PIPE)
    try:
        code, doc = run(master.argv("restore", "--root", str(fresh)), capsys)
        said = json.dumps(doc["errors"])
        assert code == Exit.BUSY and str(stand_in.pid) in said and str(other.pid) not in said
        assert not fresh.exists()
        code, doc = run(master.argv("restore", "--root", str(fresh), "--force"), capsys)
        assert code == Exit.OK, doc
    finally:
        for p in (stand_in, other):
            p.kill()
            p.wait()
    assert (fresh / str(master.pki).lstrip("/") / "master.pem").is_file()


@pytest.mark.parametrize("where", ["secrets", "repo"])
def test_a_key_kept_beside_the_backup_is_refused(
        master: Master, capsys: pytest.CaptureFixture[str], where: str) -> None:
    inside = (master.secrets if where == "secrets" else master.repo) / "backup.key"
    inside.parent.mkdir(exist_ok=True)
    shutil.copy(master.key, inside)
    master.key = inside
    code, doc = run(master.argv("backup"), capsys)
    assert code == Exit.USAGE and "beside the backup" in json.dumps(doc["errors"])


def test_a_key_others_can_read_is_refused(master: Master,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    master.key.chmod(0o644)
    code, doc = run(master.argv("backup"), capsys)
    assert code == Exit.USAGE and "readable by others" in json.dumps(doc["errors"])


def test_no_destination_in_the_inventory_is_a_usage_error(
        master: Master, capsys: pytest.CaptureFixture[str]) -> None:
    master.overlay.write_text("{}\n")
    code, doc = run(master.argv("backup"), capsys)
    assert code == Exit.USAGE and "site.backup" in json.dumps(doc["errors"])


def test_alertmanagers_state_is_where_the_monitoring_role_keeps_it() -> None:
    defaults = yaml.safe_load((ROOT / "salt" / "monitoring" / "defaults.yaml").read_text())
    assert paths.ALERTMANAGER.default == defaults["values"]["alertmanager"]["storage"]


def test_status_says_when_the_last_good_backup_was(
        master: Master, capsys: pytest.CaptureFixture[str]) -> None:
    from datetime import UTC, datetime, timedelta

    from fleet.backup.run import last, last_line

    assert "no good backup" in last_line(last())
    code, doc = run(master.argv("backup"), capsys)
    assert code == Exit.OK
    entry = last()
    assert entry is not None
    line = last_line(entry)
    assert str(doc["snapshot"])[:8] in line and "STALE" not in line
    later = datetime.fromisoformat(str(entry["time"])) + timedelta(days=2)
    assert "STALE" in last_line(entry, now=later.astimezone(UTC))


def test_a_fresh_install_is_replaced_whole_and_kept_aside(
        master: Master, capsys: pytest.CaptureFixture[str]) -> None:
    """A freshly installed master made its own key (Salt 3008: master.pem a link to
    <id>.pem): the backup's key replaces it, item by item, and the fresh one is renamed
    aside, not deleted."""
    assert run(master.argv("backup"), capsys)[0] == Exit.OK
    before = snapshot_of(master.pki)
    shutil.rmtree(master.pki)
    (master.pki / "minions").mkdir(parents=True)
    (master.pki / "fresh.pem").write_text("a fresh install's key\n")
    (master.pki / "master.pem").symlink_to(master.pki / "fresh.pem")
    code, doc = run(master.argv("restore"), capsys)
    assert code == Exit.OK and doc["finger_holds"] is True, doc
    assert snapshot_of(master.pki) == before
    # every item that was there went aside (the secrets store too: this head had one)
    (aside,) = [a for a in doc["moved_aside"] if Path(a).name.startswith("pki.before-")]
    assert Path(aside).parent == master.pki.parent
    assert str(master.secrets) + ".before-restore-" in " ".join(doc["moved_aside"])
    assert (Path(aside) / "fresh.pem").read_text() == "a fresh install's key\n"
