"""An sftp destination (site.backup.destination type sftp): the master's backup login key,
made by ``fleet secrets init`` in the secrets store (its public half reaches the storage
server through the pillar, ``secrets.backupkey``, that node only; backup.target authorizes
it), the ``authorized_keys`` options that restrict it to sftp from the masters, and the
ssh command restic reaches the storage server with."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

KEY = Path("backup/ssh_ed25519")  # in the secrets store; its .pub beside it
PILLAR = Path("pillar/secrets/backupkey.sls")
KNOWN_HOSTS = "known_hosts"  # in the backup's state: the storage server's key, pinned
COMMENT = "fleet-backup"
PUBLIC = re.compile(r"ssh-ed25519 [A-Za-z0-9+/]{68} [A-Za-z0-9._@-]{1,64}")
TIMEOUT = 60


class SftpKeyError(RuntimeError):
    """The backup login key cannot be made or read."""


def key_path(secrets: Path) -> Path:
    return secrets / KEY


def public_key(secrets: Path) -> str:
    """The login key's public half, checked to be one ssh-ed25519 key line."""
    pub = key_path(secrets).with_suffix(".pub")
    try:
        text = pub.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SftpKeyError(f"{pub}: {getattr(exc, 'strerror', None) or exc} "
                           "(fleet secrets init makes it)") from None
    if not PUBLIC.fullmatch(text):
        raise SftpKeyError(f"{pub} is not one ssh-ed25519 public key line")
    return text


def ensure(secrets: Path) -> list[str]:
    """Make the login key if the store has none, and its pillar; the paths created."""
    import subprocess  # here: a render reads this module's login options only

    key = key_path(secrets)
    created = []
    if not key.exists():
        key.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        proc = subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", COMMENT,
                               "-f", os.fspath(key)], capture_output=True, text=True,
                              timeout=TIMEOUT, check=False)
        if proc.returncode != 0:
            raise SftpKeyError(f"ssh-keygen {key}: {proc.stderr.strip()[-400:]}")
        created += [os.fspath(key), os.fspath(key.with_suffix(".pub"))]
    pillar = secrets / PILLAR
    if created or not pillar.is_file():  # the key is never remade: its pillar stays true
        text = pillar_sls(public_key(secrets))
        pillar.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        pillar.unlink(missing_ok=True)
        pillar.touch(mode=0o600)
        pillar.write_text(text, encoding="utf-8")
        created.append(os.fspath(pillar))
    return created


def pillar_sls(public: str) -> str:
    """Pillar ``backup_login:key``: a public key, for the backup's storage server only."""
    return ("#!yaml\n# The master's backup login (sftp) public key, for the backup's storage "
            "server only: not secret; its private half never leaves the store.\n"
            f"backup_login:\n  key: {public}\n")


def login_options(masters: list[str]) -> list[str]:
    """The key's ``authorized_keys`` options: no forwarding, terminal or rc, from the
    masters' addresses only, and sftp only (sshd's in-process sftp server, whatever the
    client asks to run), which creates every file and directory for the login alone
    (``-u 0077``: restic's own files would otherwise keep sshd's umask)."""
    return ["restrict", f'from="{",".join(masters)}"', 'command="internal-sftp -u 0077"']


def authorized_line(public: str, masters: list[str]) -> str:
    return f"{','.join(login_options(masters))} {public}"


def ssh_command(user: str, host: str, key: Path, known_hosts: Path,
                config: Path | None = None) -> str:
    """restic's ``sftp.command``: the login key only, no password prompt, the storage
    server's host key pinned at the first connection (``known_hosts``); ``config``, an
    ssh_config that says how to reach ``host`` (a port, an address), if any."""
    words = ["ssh", *(["-F", os.fspath(config)] if config is not None else []),
             "-i", os.fspath(key), "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes",
             "-o", f"UserKnownHostsFile={known_hosts}",
             "-o", "StrictHostKeyChecking=accept-new", "-o", "ConnectTimeout=30",
             "-o", "ServerAliveInterval=30", f"{user}@{host}", "-s", "sftp"]
    odd = [w for w in words if shlex.quote(w) != w]
    if odd:  # restic splits the command itself, on blanks (with its own quoting rules)
        raise SftpKeyError(f"cannot hand restic an ssh command with {odd[0]!r}: keep the "
                           "key, known_hosts and config paths to plain characters")
    return " ".join(words)


def why_not(command: str, timeout: float = 40.0) -> str:
    """ssh's own last word on ``command`` (``ssh_command``'s), run once with nothing to
    say: restic kills its ssh when the sftp session fails, often before ssh has written why
    (a changed host key, a refused login), so the reason is asked again here."""
    import subprocess

    try:
        proc = subprocess.run(command.split(), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"no answer ({exc.__class__.__name__})"
    if proc.returncode == 0:
        return ""
    # the server's banner reaches stderr too: fleet.master.text cleans it
    from fleet.master.text import last_line

    return last_line(proc.stderr) or f"exit {proc.returncode}"
