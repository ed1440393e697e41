"""restic, the backup tool: each call a subprocess with the operator's password file
(``RESTIC_PASSWORD_FILE``; never a password on a command line), no cache (the master's
data is small, and a cache is one more copy), and what it said kept for the error."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

TIMEOUT = 6 * 3600.0  # a check --read-data of a remote repository may take a while


class ResticError(RuntimeError):
    """A restic call that failed: what it said (its last lines)."""


class ResticMissingError(ResticError):
    """No restic binary here."""


@dataclass(frozen=True)
class Restic:
    repository: str
    password_file: Path
    binary: str = "restic"
    options: tuple[str, ...] = ()  # restic's extended options (-o sftp.command=...)

    def _run(self, *args: str, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[bytes]:
        exe = shutil.which(self.binary)
        if exe is None:
            raise ResticMissingError(f"{self.binary} not found: install restic "
                                "(tools/install-host-deps.sh; the master's state does)")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("RESTIC_PASSWORD") and k != "RESTIC_REPOSITORY"}
        env.update(RESTIC_REPOSITORY=self.repository,
                   RESTIC_PASSWORD_FILE=os.fspath(self.password_file))
        try:
            opts = [w for o in self.options for w in ("-o", o)]
            return subprocess.run([exe, "--no-cache", *opts, *args], env=env,
                                  capture_output=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise ResticError(f"restic {args[0]}: no answer within {timeout:g}s") from None

    def _ok(self, *args: str) -> bytes:
        r = self._run(*args)
        if r.returncode != 0:
            said = r.stderr.decode(errors="replace").strip().splitlines()[-6:]
            raise ResticError(f"restic {args[0]} (exit {r.returncode}): "
                              + (" / ".join(said) or "no message"))
        return r.stdout

    def exists(self) -> bool:
        """Whether the repository is there and opens with the key (``cat config``)."""
        return self._run("cat", "config", timeout=300).returncode == 0

    def init(self) -> None:
        self._ok("init")

    def backup(self, paths: list[Path], tags: list[str]) -> str:
        """Back up ``paths``; the new snapshot's id."""
        tag_args = [a for t in tags for a in ("--tag", t)]
        out = self._ok("backup", "--json", *tag_args, *map(os.fspath, paths))
        for line in out.decode(errors="replace").splitlines():
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict) and msg.get("message_type") == "summary":
                return str(msg["snapshot_id"])
        raise ResticError("restic backup: no summary (no snapshot id) in its output")

    def check(self) -> str:
        """Verify the repository and every byte of its data; what restic said."""
        return self._ok("check", "--read-data").decode(errors="replace")

    def dump(self, snapshot: str, path: Path) -> bytes:
        return self._ok("dump", snapshot, os.fspath(path))

    def restore(self, snapshot: str, target: Path, include: Path) -> None:
        """Restore ``include`` (a path as backed up) of ``snapshot`` under ``target``."""
        self._ok("restore", snapshot, "--target", os.fspath(target), "--include",
                 os.fspath(include), "--verify")

    def forget(self, keep_daily: int, keep_weekly: int) -> None:
        self._ok("forget", "--tag", "fleet", "--keep-daily", str(keep_daily),
                 "--keep-weekly", str(keep_weekly), "--prune")

    def snapshots(self) -> list[dict[str, object]]:
        data = json.loads(self._ok("snapshots", "--json", "--tag", "fleet") or b"[]")
        return data if isinstance(data, list) else []
