"""Which Salt master is active, and the refusal to drive nodes from the other one.

With a standby master (``site.salt.standby``; docs/salt.md, A standby master) two hosts
run a salt-master with one key. fleet's own state (journals, locks, boot modes, tokens)
is owned by the active master only, never replicated live, so a verb that changes nodes
runs there only: the inventory of the checkout names it (``site.salt.master``), and the
standby (``site.salt.standby.host``) refuses those verbs. Failing over is an edit of that
inventory (the two names swapped, committed and rendered: docs/operations.md), so the
active master is always the one the site's git history says, never a guess from which
host answers first.
"""

from __future__ import annotations

import socket
from typing import Any, NamedTuple

from fleet.inventory.model import Inventory

# The verbs (with fleet.audit.record.CHANGING's test of when a run of them changes
# something) that act on nodes: power, PXE, Salt, Slurm, mkv, their keys and lifecycle.
# Not here: render, discover accept and secrets init (they write this checkout), backup
# (reads) and restore (how a standby gets its keys and journals).
DRIVES_NODES = frozenset({"apply", "rollout", "reinstall", "power", "pxe", "keys", "mkv",
                          "burnin"})


class NotActiveError(Exception):
    """A verb that changes nodes was started on the standby master."""


class Masters(NamedTuple):
    active: str
    standby: str | None
    here: str  # this host's short name

    @property
    def role_here(self) -> str:
        if self.here == self.active:
            return "active"
        return "standby" if self.here == self.standby else "neither"


def this_host() -> str:
    """This host's short name, as the inventory names nodes."""
    return socket.gethostname().split(".", 1)[0].lower()


def masters(inv: Inventory, here: str | None = None) -> Masters:
    salt = inv.raw.site.salt
    return Masters(salt.master, None if salt.standby is None else salt.standby.host,
                   this_host() if here is None else here)


def require_active(inv: Inventory, verb: str, changing: bool, here: str | None = None
                   ) -> None:
    """Raise NotActiveError when this host is the standby and the run would change nodes:
    a verb of DRIVES_NODES in a ``changing`` run (fleet.audit.record.changes says which)."""
    m = masters(inv, here)
    if m.role_here != "standby" or verb not in DRIVES_NODES or not changing:
        return
    raise NotActiveError(
        f"{m.here} is the standby Salt master (site.salt.standby.host); {m.active} is the "
        f"active one (site.salt.master), and only it drives nodes: run `fleet {verb}` "
        f"there. If {m.active} is lost, promote this host first: swap site.salt.master and "
        "site.salt.standby.host in inventory.yaml, commit, `fleet render` "
        "(docs/operations.md, Fail over to the standby master)")


def status_line(m: Masters) -> str:
    """fleet status's line: which master is active, the standby, and this host's part."""
    standby = f", standby {m.standby}" if m.standby else ", no standby"
    here = {"active": "this host is the active master",
            "standby": "this host is the STANDBY: changing verbs refuse here",
            "neither": f"this host ({m.here}) is neither"}[m.role_here]
    return f"salt master: {m.active} active (site.salt.master){standby}; {here}"


def document(m: Masters) -> dict[str, Any]:
    """fleet status --json's ``master``."""
    return {"active": m.active, "standby": m.standby, "here": m.here, "role_here": m.role_here}
