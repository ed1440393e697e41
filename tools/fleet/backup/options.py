"""The options fleet backup and fleet restore share (where the key is, and where the items
live when not where the master keeps them), the Setup they make from them, and the
failures they share, said and mapped to exit codes once."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fleet.backup import paths
from fleet.backup.restic import Restic, ResticError, ResticMissingError
from fleet.backup.run import BackupRefusedError, Setup
from fleet.exitcodes import Exit

if TYPE_CHECKING:
    from fleet.context import Context
    from fleet.inventory.model import Inventory

KEY_ENV = "FLEET_BACKUP_KEY"
KEY_DEFAULT = "/etc/fleet/backup.key"


def add(p: argparse.ArgumentParser) -> None:
    from fleet.cliparts import add_pxe_state, add_salt_config, add_secrets

    p.add_argument("--password-file", type=Path,
                   default=Path(os.environ.get(KEY_ENV) or KEY_DEFAULT), metavar="FILE",
                   help=f"the operator's restic password, mode 0600, never beside the backup "
                        f"(default ${KEY_ENV} or {KEY_DEFAULT})")
    add_secrets(p, "the secrets store it backs up (default: site.checkout's secrets/)",
                default=None)
    add_pxe_state(p, "backs up", root=False)
    p.add_argument("--ssh-key", type=Path, metavar="FILE",
                   help="an sftp destination: the backup login's private key (default: the "
                        "secrets store's backup/ssh_ed25519; on a fresh head, the operator's "
                        "copy)")
    p.add_argument("--ssh-config", type=Path, metavar="FILE",
                   help="an sftp destination: an ssh_config saying how to reach its host "
                        "(default: ssh's own)")
    p.add_argument("--pki-dir", type=Path, metavar="DIR",
                   help="the master's pki_dir (default: as the master's config says)")
    p.add_argument("--minion-pki-dir", type=Path, default=paths.MINION_PKI, metavar="DIR",
                   help="the head node's own salt-minion pki_dir: its key, which the "
                        f"master accepted (default {paths.MINION_PKI})")
    add_salt_config(p)


def setup_of(args: argparse.Namespace, inv: Inventory) -> Setup:
    """The Setup of a run; BackupRefusedError where the inventory names no destination."""
    from fleet import backupsftp as sftp
    from fleet.audit.log import WHERE as AUDIT
    from fleet.inventory.schema.backup import repository
    from fleet.master.runner import pki_dir

    site = inv.raw.site
    if site.backup is None:
        raise BackupRefusedError("the inventory has no site.backup: name the destination "
                            "(site.backup.destination: path, sftp or rest; docs/operations.md)")
    dest = site.backup.destination
    pki = args.pki_dir or pki_dir(args.salt_config)
    secrets = args.secrets or Path(site.checkout) / "secrets"
    pxe_state = args.pxe_state or Path(site.pxe_state)
    ssh: tuple[str, ...] = ()
    command = ""
    if dest.type == "sftp" and dest.user and dest.host:
        key = args.ssh_key or sftp.key_path(secrets)
        if not key.is_file():
            raise BackupRefusedError(f"the backup's ssh key {key} is not there: fleet secrets "
                                     "init makes it; on a fresh head name the operator's "
                                     "copy with --ssh-key")
        try:
            command = sftp.ssh_command(dest.user, dest.host, key,
                                       paths.STATE.path() / sftp.KNOWN_HOSTS, args.ssh_config)
            ssh = (f"sftp.command={command}",)
        except sftp.SftpKeyError as exc:
            raise BackupRefusedError(str(exc)) from None
    return Setup(
        restic=Restic(repository(dest), args.password_file, options=ssh),
        items=paths.items(pki, secrets, pxe_state, AUDIT.path().parent,
                          args.minion_pki_dir),
        inventory=args.inventory,
        local_destination=Path(dest.path) if dest.type == "path" and dest.path else None,
        keep=(site.backup.keep_daily, site.backup.keep_weekly),
        ssh_command=command)


def run(verb: str, args: argparse.Namespace, ctx: Context,
        body: Callable[[Setup], Exit], *, restic_failed: str = "") -> Exit:
    """``body`` with the run's Setup, the failures both verbs share said (``fleet VERB:``,
    and in --json) and mapped: no site.backup or a refused key 2, restic missing 4, a
    repository that cannot be opened 4, restic failing on one that can 5 (its message after
    ``restic_failed``: restore refuses the backup). ``body`` maps its own errors."""
    setup: Setup | None = None
    try:
        setup = setup_of(args, ctx.inventory())
        return body(setup)
    except BackupRefusedError as exc:
        return fail(ctx, verb, f"refused: {exc}", Exit.USAGE)
    except ResticMissingError as exc:
        return fail(ctx, verb, str(exc), Exit.IO)
    except ResticError as exc:
        opens = setup is not None and setup.restic.exists()
        hint = "" if opens else (" (the repository cannot be opened: an unreachable "
                                 "destination, or a wrong key)")
        if not opens and setup is not None and setup.ssh_command:
            from fleet import backupsftp as sftp

            said = sftp.why_not(setup.ssh_command)
            hint += f"; ssh says: {said}" if said else ""

        return fail(ctx, verb, f"{restic_failed}{exc}{hint}",
                    Exit.FAILED if opens else Exit.IO)


def fail(ctx: Context, verb: str, message: str, code: Exit) -> Exit:
    print(f"fleet {verb}: {message}", file=sys.stderr)
    ctx.out.error(message)
    return code
