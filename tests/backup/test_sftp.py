"""fleet backup, fleet backup check and fleet restore to an sftp destination, with the real
restic going over the real ssh to a real sshd (Debian's openssh-server) on 127.0.0.1, a
high port, its own host key and config in the test's temp dir. The storage server's login
is as backup.target authorizes it: the master's backup key from the secrets store, with
fleet.backupsftp's options (sftp only, from the master's address only). The restore runs
on a "fresh head" whose secrets store is gone, with the operator's copy of the key. A key
the server does not authorize, a command other than sftp and a server with another host
key than the one pinned at the first backup are refused."""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from fleet import backupsftp as sftp
from fleet.exitcodes import Exit
from support.backupmaster import Master, run, snapshot_of

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
if shutil.which("restic") is None or not os.access(SSHD, os.X_OK):
    pytest.fail("restic or sshd is not installed: run tools/install-host-deps.sh (the sftp "
                "backup test runs the real restic against Debian's openssh-server on "
                "127.0.0.1)", pytrace=False)

HOST = "stor-1"  # a storage node of tests/fixtures/small.yaml, neither master nor standby


@dataclass
class Sshd:
    port: int
    config: Path  # the client's ssh_config: HOST is 127.0.0.1 at port
    authorized: Path
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[Sshd]:
    d = tmp_path / "sshd"
    d.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "host_key")],
                   check=True)
    if os.geteuid() == 0:  # sshd's privilege separation directory (its unit makes it)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    port = _free_port()
    (d / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d / 'host_key'}\n"
        f"PidFile {d / 'sshd.pid'}\nAuthorizedKeysFile {d / 'authorized_keys'}\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\nPermitRootLogin forced-commands-only\n"
        # as Ubuntu's and Debian's sshd_config have it; the key's forced command makes
        # any session sshd's in-process sftp server
        "Subsystem sftp /usr/lib/openssh/sftp-server\nLogLevel VERBOSE\n")
    (d / "authorized_keys").write_text("")
    log = d / "sshd.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            if proc.poll() is not None:
                pytest.fail(f"sshd exited {proc.returncode}: {log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        else:
            pytest.fail(f"sshd does not listen on 127.0.0.1:{port}: {log.read_text()}")
        (d / "ssh_config").write_text(f"Host {HOST}\n  HostName 127.0.0.1\n  Port {port}\n")
        yield Sshd(port, d / "ssh_config", d / "authorized_keys", log)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def to_sftp(master: Master, sshd: Sshd, repo: Path) -> None:
    """The master's backup goes to ``repo`` on HOST over sftp; the storage server
    authorizes the master's backup key as backup.target does (from 127.0.0.1 here)."""
    master.overlay.write_text(yaml.safe_dump({"site": {"backup": {"destination": {
        "type": "sftp", "host": HOST, "user": getpass.getuser(), "path": str(repo)}}}}))
    public = sftp.public_key(master.secrets)
    sshd.authorized.write_text(sftp.authorized_line(public, ["127.0.0.1"]) + "\n")


def test_a_backup_over_sftp_is_checked_and_restored(
        master: Master, sshd: Sshd, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = tmp_path / "storage" / "fleet"
    to_sftp(master, sshd, repo)
    ssh = ["--ssh-config", str(sshd.config)]
    code, doc = run(master.argv("backup", *ssh), capsys)
    assert code == Exit.OK, doc
    assert doc["verified"] is True and doc["initialised"] is True
    assert (repo / "config").is_file()  # the repository is on the storage server's side
    readable = [p for p in repo.rglob("*") if p.lstat().st_mode & 0o077]
    assert not readable, readable  # internal-sftp -u 0077: the login's alone
    known = (master.tmp / "state" / "backup" / sftp.KNOWN_HOSTS).read_text()
    host_key = (tmp_path / "sshd" / "host_key.pub").read_text().split()[1]
    assert host_key in known  # the storage server's key is pinned at the first backup
    code, doc = run(master.argv("backup", "check", *ssh), capsys)
    assert code == Exit.OK, doc
    log = sshd.log.read_text()
    assert "Accepted publickey" in log and "sftp" in log, log

    operator_copy = tmp_path / "operator" / "backup-ssh-key"
    shutil.copy(sftp.key_path(master.secrets), operator_copy)
    before = {str(p): snapshot_of(p) for p in master.items()}
    for p in master.items():  # the disk died, the secrets store (and its key) with it
        shutil.rmtree(p)
    code, doc = run(master.argv("restore", *ssh), capsys)  # the store's key died too
    assert code == Exit.USAGE and "--ssh-key" in str(doc), doc
    code, doc = run(master.argv("restore", *ssh, "--ssh-key", str(operator_copy)), capsys)
    assert code == Exit.OK, doc
    items = doc["items"]
    assert doc["finger_holds"] is True and isinstance(items, list) and "secrets" in items
    after = {str(p): snapshot_of(p) for p in master.items()}
    for item in (str(master.pki), str(master.secrets)):
        assert after[item] == before[item], item

    # the host key pinned at the first backup holds: a server that answers with another
    # key (a machine in the storage server's place) gets no backup
    other = tmp_path / "other_host_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)],
                   check=True)
    known_hosts = master.tmp / "state" / "backup" / sftp.KNOWN_HOSTS
    known_hosts.write_text(known_hosts.read_text().replace(
        host_key, other.with_suffix(".pub").read_text().split()[1]))
    snapshots = sorted((repo / "snapshots").iterdir())
    code, doc = run(master.argv("backup", *ssh), capsys)
    assert code == Exit.IO and "verification failed" in str(doc), doc
    assert sorted((repo / "snapshots").iterdir()) == snapshots


def test_the_login_is_sftp_only(master: Master, sshd: Sshd, tmp_path: Path) -> None:
    """The authorized key runs no command: what the client asks is refused, sftp only."""
    to_sftp(master, sshd, tmp_path / "repo")
    command = sftp.ssh_command(getpass.getuser(), HOST, sftp.key_path(master.secrets),
                               tmp_path / "known_hosts", sshd.config).split()
    shell = [w for w in command if w not in ("-s", "sftp")] + ["id"]
    proc = subprocess.run(shell, capture_output=True, text=True, timeout=30, check=False)
    assert proc.returncode != 0 and "uid=" not in proc.stdout, proc
    assert "sftp connections only" in proc.stderr + proc.stdout, proc


def test_a_key_the_server_does_not_authorize_cannot_back_up(
        master: Master, sshd: Sshd, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    to_sftp(master, sshd, tmp_path / "repo")
    sshd.authorized.write_text("")
    code, doc = run(master.argv("backup", "--ssh-config", str(sshd.config)), capsys)
    assert code == Exit.IO, doc
    assert "cannot be opened" in str(doc), doc
    assert not (tmp_path / "repo").exists()



def test_why_not_passes_on_only_printable_characters_of_what_ssh_said(tmp_path: Path) -> None:
    """ssh's stderr carries the server's banner: escape codes in it never reach the
    operator's terminal; a command that succeeds has nothing to say."""
    said = tmp_path / "said"
    said.write_text("#!/bin/sh\nprintf 'banner\\n\\033[2Jwiped\\a\\n' >&2\nexit 255\n")
    said.chmod(0o755)
    assert sftp.why_not(str(said)) == "[2Jwiped"
    assert sftp.why_not("true") == ""
