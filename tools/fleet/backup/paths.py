"""What only the master holds, each item where it lives on the master (every root has its
one definition elsewhere: the state roots in fleet.master.statedir, the boot modes in
site.pxe_state, the Salt keys in the master's pki_dir). The inventory and what is rendered
from it are in git: the backup records the commit, not the files."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from fleet.master.statedir import APPLY, HEALTH, REINSTALL, ROLLOUT, StateDir

# the backup's own state: the manifest it writes before each backup, the last good one
STATE = StateDir("FLEET_BACKUP_STATE", "/var/lib/fleet/backup", "manifest, last backup")
# Alertmanager's silences and notification log: salt/monitoring/defaults.yaml's
# alertmanager.storage (tests/backup/test_backup.py checks they agree)
ALERTMANAGER = StateDir("FLEET_ALERTMANAGER_STATE", "/var/lib/prometheus/alertmanager",
                        "silences")
# the head node's own salt-minion keys (Salt's default minion pki_dir): the master holds
# their public half as accepted, so a fresh install's new minion key would be refused
MINION_PKI = Path("/etc/salt/pki/minion")
MANIFEST = "manifest.json"
LAST = "last.json"


@dataclass(frozen=True)
class Item:
    name: str
    path: Path
    required: bool = False  # a master without it is no master: the backup refuses


def items(pki_dir: Path, secrets: Path, pxe_state: Path, audit_log: Path,
          minion_pki: Path = MINION_PKI) -> list[Item]:
    """Every item a backup holds, the manifest's directory first."""
    return [
        Item("manifest", STATE.path()),
        Item("salt-pki", pki_dir, required=True),  # master key, accepted minion keys
        Item("salt-minion-pki", minion_pki),  # the head's own minion key
        Item("secrets", secrets, required=True),  # munge, apt cache, BMC, repo-gnupg
        Item("reinstall", REINSTALL.path()),  # journals, locks, tokens, keys
        Item("rollout", ROLLOUT.path()),
        Item("health", HEALTH.path()),
        Item("apply", APPLY.path()),
        Item("pxe-state", pxe_state),  # boot modes
        Item("alertmanager", ALERTMANAGER.path()),  # silences
        Item("audit", audit_log),
    ]


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` is ``root`` or below it (both made absolute, links resolved)."""
    p, r = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    return p == r or r in p.parents
