"""``fleet console NODE``: the node's serial console over IPMI SOL (fleet.ops.console)."""

from __future__ import annotations

import argparse
from typing import Any

from fleet.cliparts import (
    BMC_SECRETS,
    Parents,
    add_bmc_address,
    add_bmc_protocol,
    add_command,
    add_secrets,
    add_state_dir,
)
from fleet.context import Context
from fleet.exitcodes import Exit

DESCRIPTION = """
Open NODE's serial console through its BMC (IPMI serial-over-LAN, ipmitool sol activate),
the BMC password from the secrets store in ipmitool's environment, never on its command
line. ipmitool takes over the terminal; leave with ~. at the start of a line (~? lists
the other escapes). One session per node: a second one is refused while the first is
attached. A Redfish-only BMC has no serial console here: if it also speaks IPMI over LAN,
--bmc-protocol ipmi. See docs/operations.md.
"""
EPILOG = """
exit codes: ipmitool's once attached (0 after ~.); before that 1 invalid inventory, 2 usage
(no such node, a BMC without IPMI), 4 no BMC secret or no ipmitool, 6 another session holds
the node's console
"""
def register(sub: Any, parents: Parents) -> None:
    from fleet.master import statedir

    p = add_command(sub, parents, "console", DESCRIPTION, EPILOG)
    p.add_argument("node", metavar="NODE", help="the node's hostname in the inventory")
    add_secrets(p, BMC_SECRETS)
    add_bmc_protocol(p, ("ipmi",), "use IPMI SOL on a BMC the profile drives by Redfish "
                     "(most BMCs speak both)")
    add_bmc_address(p)
    add_state_dir(p, statedir.REINSTALL,
                  "where the node's console.lock is kept, beside the reinstall's")




def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.ops.console import cmd_console

    return Exit(cmd_console(args, ctx.inventory()))
