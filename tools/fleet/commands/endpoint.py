"""``fleet endpoint``: the installers' key/callback endpoint of ``fleet reinstall``
(fleet.reinstall.server) alone, serving every node's reinstall from one state dir: for a
master where the reinstalls run with ``--callback none`` (a separate, long-running
endpoint). It runs until SIGINT or SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from fleet.cliparts import (
    Parents,
    add_command,
    add_pxe_state,
    add_salt_config,
    add_state_dir,
)
from fleet.context import Context
from fleet.exitcodes import Exit, for_signal

DESCRIPTION = """
Serve the endpoint the installers call during `fleet reinstall` (their one-time install
key, their callback, their error report) for every node, from --state-dir, until SIGINT or
SIGTERM: what a `fleet reinstall --callback none` leaves to a separate process. It listens
on the master's provisioning address and site.salt.reinstall_port only, and answers only
an armed node's address. See docs/secrets.md (Install tokens).
"""
EPILOG = """
exit codes: 1 invalid inventory, 2 usage (--bind not HOST:PORT), 4 the port could not be
bound or the master's key read, 130 / 143 SIGINT / SIGTERM ended it (its normal end)
"""


def register(sub: Any, parents: Parents) -> None:
    from fleet.master import statedir

    p = add_command(sub, parents, "endpoint", DESCRIPTION, EPILOG)
    add_state_dir(p, statedir.REINSTALL,
                  "fleet reinstall's state dir: tokens, keys, journals")
    add_pxe_state(p, "sets to local once an install is done")
    add_salt_config(p)
    p.add_argument("--bind", metavar="HOST:PORT",
                   help="where to listen (default: site.salt.master_address and "
                        "site.salt.reinstall_port)")
    p.add_argument("--discover", action="store_true",
                   help="also take commissioning reports (POST /v1/discover/<mac>) from "
                        "the address dnsmasq leased to that MAC (fleet discover)")
    p.add_argument("--leases", type=Path, metavar="FILE",
                   help="dnsmasq's leases file (default: /var/lib/misc/dnsmasq.leases)")
    p.add_argument("--discover-state", type=Path, metavar="DIR",
                   default=statedir.DISCOVER.path(),
                   help=f"where reports are kept (${statedir.DISCOVER.env}, default "
                        f"{statedir.DISCOVER.default})")


def _inbox(args: argparse.Namespace) -> Any:
    from fleet.discover import leases
    from fleet.discover.inbox import Inbox

    if not args.discover:
        return None
    return Inbox(args.leases or leases.DEFAULT, args.discover_state)


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.master.keys import master_finger
    from fleet.master.runner import pki_dir
    from fleet.pxe.bootmode import PxeBootMode
    from fleet.reinstall.server import (
        CallbackServer,
        default_bind,
        node_addresses,
        salt_key_revoker,
    )
    from fleet.signals import SignalCatcher

    inv = ctx.inventory()
    host, port = default_bind(inv)
    if args.bind:
        host, _, given = args.bind.rpartition(":")
        if not host or not given.isdigit():
            print(f"fleet endpoint: --bind {args.bind}: not HOST:PORT", file=sys.stderr)
            return Exit.USAGE
        port = int(given)
    boot = PxeBootMode(inv, args.pxe_state, args.pxe_root)
    server = CallbackServer((host, port), args.state_dir, boot, node_addresses(inv),
                            revoke_key=salt_key_revoker(ctx.runner()),
                            master_finger=master_finger(pki_dir(args.salt_config)),
                            inbox=_inbox(args))

    def stop(_signum: int) -> None:
        raise KeyboardInterrupt  # ends serve_forever in this thread

    host, port = str(server.server_address[0]), int(server.server_address[1])
    signals = SignalCatcher(ctx.progress, stop, again="the endpoint is closing")
    signals.install()
    try:  # from the handlers on: a signal that comes at once still ends it here
        ctx.progress(f"serving on {host}:{port}")
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signals.restore()
        server.server_close()
    if ctx.out.json:
        ctx.out.emit({"bind": f"{host}:{port}"})
    return for_signal(signals.received or signal.SIGINT)
