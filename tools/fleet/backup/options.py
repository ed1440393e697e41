"""The options fleet backup and fleet restore share (where the key is, and where the items
live when not where the master keeps them), and the Setup they make from them."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING

from fleet.backup import paths
from fleet.backup.restic import Restic
from fleet.backup.run import BackupRefusedError, Setup

if TYPE_CHECKING:
    from fleet.inventory.model import Inventory

KEY_ENV = "FLEET_BACKUP_KEY"
KEY_DEFAULT = "/etc/fleet/backup.key"


def add(p: argparse.ArgumentParser) -> None:
    from fleet.cliparts import add_salt_config

    p.add_argument("--password-file", type=Path,
                   default=Path(os.environ.get(KEY_ENV) or KEY_DEFAULT), metavar="FILE",
                   help=f"the operator's restic password, mode 0600, never beside the backup "
                        f"(default ${KEY_ENV} or {KEY_DEFAULT})")
    p.add_argument("--secrets", type=Path, metavar="DIR",
                   help="the secrets store (default: site.checkout's secrets/)")
    p.add_argument("--pxe-state", type=Path, metavar="DIR",
                   help="the boot-mode links (default: the inventory's site.pxe_state)")
    p.add_argument("--pki-dir", type=Path, metavar="DIR",
                   help="the master's pki_dir (default: as the master's config says)")
    add_salt_config(p)


def setup(args: argparse.Namespace, inv: Inventory) -> Setup:
    """The Setup of a run; BackupRefusedError where the inventory names no destination."""
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
    return Setup(
        restic=Restic(repository(dest), args.password_file),
        items=paths.items(pki, secrets, pxe_state, AUDIT.path().parent),
        inventory=args.inventory,
        local_destination=Path(dest.path) if dest.type == "path" and dest.path else None,
        keep=(site.backup.keep_daily, site.backup.keep_weekly))
