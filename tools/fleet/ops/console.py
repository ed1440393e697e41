"""``fleet console NODE``: the node's serial console over LAN (IPMI SOL), as
``ipmitool -I lanplus -H BMC -U USER -E sol activate``: the password in ipmitool's
environment (``-E``: IPMI_PASSWORD), never on its command line; fleet execs it, so the
operator's terminal is ipmitool's. One session per node at a time: the lock
``<reinstall state>/<node>/console.lock`` (fleet.master.layout), held by ipmitool
itself after the exec until it exits."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

from fleet.exitcodes import Exit
from fleet.inventory.model import Inventory, Node

ESCAPE = "~."

Exec = Callable[[str, list[str], Mapping[str, str]], Any]


class ConsoleRequest(Protocol):
    """What a console session needs (fleet console's options; no parser here)."""

    node: str
    secrets: Path
    bmc_protocol: str | None
    bmc_address: str | None
    state_dir: Path
    quiet: bool


class ConsoleError(Exception):
    def __init__(self, message: str, code: Exit) -> None:
        super().__init__(message)
        self.code = code


def sol_command(ipmitool: str, host: str, port: int, user: str, password: str,
                environ: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """ipmitool's argv (no password in it) and environment (the password as IPMI_PASSWORD)."""
    argv = [ipmitool, "-I", "lanplus", "-H", host, "-p", str(port), "-U", user, "-E",
            "sol", "activate"]
    env = {k: v for k, v in environ.items() if k != "IPMI_PASSWORD"}
    env["IPMI_PASSWORD"] = password
    return argv, env


def ipmi_endpoint(node: Node, protocol: str | None, address: str | None) -> tuple[str, int]:
    """The BMC's IPMI host and port; a ConsoleError for a BMC the inventory drives by
    Redfish only (Redfish has no serial console fleet can attach to)."""
    from fleet.bmc.base import BmcError
    from fleet.bmc.connect import bmc_address

    spec = node.profile.bmc
    if (protocol or spec.protocol) != "ipmi":
        raise ConsoleError(
            f"{node.hostname}: its BMC is Redfish (profiles.{node.profile_name}.bmc.protocol: "
            f"{spec.protocol}) and the inventory names no IPMI for it; fleet console needs "
            "IPMI serial over LAN (Redfish has no serial console to attach to): not "
            f"supported as inventoried. If this BMC also speaks IPMI over LAN, run `fleet "
            f"console {node.hostname} --bmc-protocol ipmi`", Exit.USAGE)
    try:
        given = address or bmc_address(node)
    except BmcError as exc:
        raise ConsoleError(str(exc), Exit.USAGE) from None
    host, _, port = given.partition(":")
    if port and not port.isdigit():
        raise ConsoleError(f"{given}: not HOST[:PORT]", Exit.USAGE)
    return host, int(port or 623)


def cmd_console(args: ConsoleRequest, inv: Inventory, exec_: Exec = os.execve) -> int:
    try:
        return attach(args, inv, exec_)
    except ConsoleError as exc:
        print(f"fleet: console: {exc}", file=sys.stderr)
        return exc.code


def attach(args: ConsoleRequest, inv: Inventory, exec_: Exec) -> int:
    from fleet.bmc.base import BmcError
    from fleet.bmc.connect import read_password
    from fleet.master import layout
    from fleet.master.lock import BusyError, NodeLock

    node = inv.nodes.get(args.node)
    if node is None:
        raise ConsoleError(f"{args.node}: no such node in {inv.file}", Exit.USAGE)
    host, port = ipmi_endpoint(node, args.bmc_protocol, args.bmc_address)
    try:
        password = read_password(args.secrets, node.profile.bmc.password_secret)
    except BmcError as exc:
        raise ConsoleError(str(exc), Exit.IO) from None
    ipmitool = shutil.which("ipmitool")
    if ipmitool is None:
        raise ConsoleError("ipmitool not found (apt-get install ipmitool)", Exit.IO)
    argv, env = sol_command(ipmitool, host, port, node.profile.bmc.user, password, os.environ)
    node_dir = layout.node_dir(args.state_dir, node.hostname)
    lock = NodeLock(node_dir, "fleet console", layout.console_lock(node_dir))
    try:
        lock.__enter__()
    except BusyError as exc:
        raise ConsoleError(f"{exc}; one session per node", Exit.BUSY) from None
    lock.keep_across_exec()
    if not args.quiet:
        print(f"fleet console {node.hostname}: serial over LAN through ipmi {host}:{port} "
              f"(user {node.profile.bmc.user}); leave with {ESCAPE} at the start of a line "
              "(~? lists ipmitool's escapes)", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    exec_(ipmitool, argv, env)  # os.execve does not return
    return Exit.OK
