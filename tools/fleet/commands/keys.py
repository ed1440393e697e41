"""``fleet keys check [--remove]`` and ``fleet keys finger [--check]``.

``check`` compares the master's accepted minion keys (``salt-key -L``) with the
inventory's nodes: an accepted key whose id is no node (a node removed or renamed) is
*stray*, an accepted key of a node the inventory retired is *retired* (the message names
the ``salt-key -d ID`` to run), a node without an accepted key is *missing* (pending,
rejected or denied keys are named; a planned node is expected to have none).
``--remove`` deletes the stray and retired keys (``salt-key -y -d ID``) and checks again.

``finger`` prints the fingerprint of the master's public key as minions compare it
(``master_finger``: Salt's ``pem_finger`` with ``hash_type`` sha256), read from the
master's ``pki_dir/master.pub``; ``--check`` compares it with the inventory's
``site.salt.master_finger``. That value is recorded from this output, never typed.

Exit codes: 0 keys match the inventory (finger: recorded and equal); 1 invalid
inventory; 2 usage; 3 differences remain (stray or missing keys; a finger not recorded
or different); 4 the master's keys could not be read or changed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet.cliparts import Parents, add_actions, add_salt_config
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.keys.compare import compare

if TYPE_CHECKING:
    from fleet.inventory.model import Inventory

def register(sub: Any, parents: Parents) -> None:
    _p, actions = add_actions(
        sub, "keys", "Compare the Salt master's minion keys with the inventory; print the "
                     "master's key fingerprint.",
        "exit codes: 0 match, 1 invalid inventory, 2 usage, 3 differences remain, 4 the "
        "keys could not be read/changed")
    sp = actions.add_parser("check", parents=list(parents),
                            help="accepted keys of no node (stray), nodes without a key",
                            description="Accepted minion keys whose id is no node in the "
                                        "inventory (removed or renamed: stray), and nodes "
                                        "without an accepted key (missing).")
    sp.add_argument("--remove", action="store_true",
                    help="delete the stray accepted keys (salt-key -y -d ID)")
    add_salt_config(sp)
    sp = actions.add_parser("finger", parents=list(parents),
                            help="the master's public key fingerprint (master_finger)",
                            description="Print the fingerprint minions pin (master_finger), "
                                        "read from the master's own public key.")
    sp.add_argument("--check", action="store_true",
                    help="compare with the inventory's site.salt.master_finger")
    add_salt_config(sp)


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    inv = ctx.inventory()
    return cmd_check(args, ctx, inv) if args.keys_verb == "check" else \
        cmd_finger(args, ctx, inv)


def cmd_check(args: argparse.Namespace, ctx: Context, inv: Inventory) -> Exit:
    from fleet.master import keys
    from fleet.master.runner import CommandError, pki_dir

    runner = ctx.runner()
    try:
        accepted_dir = pki_dir(args.salt_config) / "minions"
        if not accepted_dir.is_dir():  # salt-key would list nothing, as if no key existed
            raise FileNotFoundError(f"{accepted_dir}: no such directory (is "
                                    f"{args.salt_config} this master's config dir?)")
        report = compare(inv, keys.key_lists(runner))
        removed = []
        if args.remove and (report.stray or report.retired):
            for key in [*report.stray, *report.retired]:
                keys.delete_key(runner, key)
                removed.append(key)
            report = compare(inv, keys.key_lists(runner))
            report.removed = removed
    except (CommandError, OSError, ValueError) as exc:
        print(f"fleet keys: {exc}", file=sys.stderr)
        return Exit.IO
    if args.json:
        ctx.out.emit(report.as_json())
    elif not args.quiet:
        for key in report.removed:
            print(f"removed: {key} ({'retired' if key in inv.retired else 'no such node'} "
                  "in the inventory)")
        for key in report.retired:
            print(f"retired: {key}: its key is still accepted, but the inventory retired it "
                  f"(nodes.{key}.state): run `salt-key -d {key}` on the master (or "
                  "`fleet keys check --remove`)")
        for key in report.stray:
            print(f"stray: {key}: accepted, but no node {key} in the inventory (removed or "
                  "renamed: `fleet keys check --remove`)")
        for node, where in report.missing.items():
            print(f"missing: {node}: no accepted key ({where})")
        if report.planned:
            print(f"planned: {len(report.planned)} node(s) not installed yet, no key expected: "
                  + ", ".join(report.planned[:5]) + (" ..." if len(report.planned) > 5 else ""))
        if report.ok:
            print(f"{len(report.accepted)} accepted keys: one per node, none stray")
    return Exit.OK if report.ok else Exit.DIFFERS


def master_finger(config: Path) -> str:
    """``master_finger`` as a minion computes it, from the master's ``master.pub``."""
    from fleet.master import keys
    from fleet.master.runner import pki_dir

    pki = pki_dir(config)
    finger = keys.master_finger(pki)
    if finger is None:
        raise FileNotFoundError(f"{pki / 'master.pub'}: no master public key (has "
                                "salt-master started?)")
    return finger


def cmd_finger(args: argparse.Namespace, ctx: Context, inv: Inventory) -> Exit:
    try:
        finger = master_finger(args.salt_config)
    except OSError as exc:
        print(f"fleet keys: {exc}", file=sys.stderr)
        return Exit.IO
    recorded = inv.raw.site.salt.master_finger
    same = recorded == finger
    if args.json:
        ctx.out.emit({"finger": finger, "recorded": recorded})
    elif not args.quiet:
        print(finger)
        if args.check and not same:
            print(f"site.salt.master_finger is {recorded!r}: record {finger!r}",
                  file=sys.stderr)
    return Exit.DIFFERS if args.check and not same else Exit.OK
