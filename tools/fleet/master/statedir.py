"""Where the day-two verbs keep their state, and which Salt master they talk to: each
default written once, with the environment variable that overrides it.

    $FLEET_REINSTALL_STATE  /var/lib/fleet/reinstall  journals, locks, tokens, keys (layout)
    $FLEET_ROLLOUT_STATE    /var/lib/fleet/rollout    the rollout's journal and lock
    $FLEET_HEALTH_STATE     /var/lib/fleet/health     the health gate's results
    $FLEET_APPLY_STATE      /var/lib/fleet/apply      fleet apply's results
    $FLEET_DISCOVER_STATE   /var/lib/fleet/discover   commissioning reports, one per MAC
    $FLEET_BURNIN_STATE     /var/lib/fleet/burnin     burn-in results, one file per node
    $FLEET_STATUS_STATE     /var/lib/fleet/status     the status collector's cache
    $FLEET_PAGE_DIR         /var/lib/fleet/page       the fleet page's files (nginx serves them)
    $FLEET_SALT_CONFIG      /etc/salt                 the master's config dir (salt -c)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple


class StateDir(NamedTuple):
    """One verb's state root: ``$env`` when set (and not empty), else ``default``."""

    env: str
    default: str
    what: str

    def path(self) -> Path:
        return Path(os.environ.get(self.env) or self.default)


REINSTALL = StateDir("FLEET_REINSTALL_STATE", "/var/lib/fleet/reinstall",
                     "journals, locks, tokens, keys")
ROLLOUT = StateDir("FLEET_ROLLOUT_STATE", "/var/lib/fleet/rollout", "journal and lock")
HEALTH = StateDir("FLEET_HEALTH_STATE", "/var/lib/fleet/health", "results")
APPLY = StateDir("FLEET_APPLY_STATE", "/var/lib/fleet/apply", "results")
DISCOVER = StateDir("FLEET_DISCOVER_STATE", "/var/lib/fleet/discover",
                    "commissioning reports")
BURNIN = StateDir("FLEET_BURNIN_STATE", "/var/lib/fleet/burnin", "burn-in results")
STATUS = StateDir("FLEET_STATUS_STATE", "/var/lib/fleet/status", "the collector's cache")
PAGE = StateDir("FLEET_PAGE_DIR", "/var/lib/fleet/page", "the fleet page's files")

SALT_CONFIG_ENV = "FLEET_SALT_CONFIG"
SALT_CONFIG_DEFAULT = "/etc/salt"


def salt_config() -> Path:
    """The Salt master's config dir (``salt -c``): ``$FLEET_SALT_CONFIG`` or /etc/salt."""
    return Path(os.environ.get(SALT_CONFIG_ENV) or SALT_CONFIG_DEFAULT)
