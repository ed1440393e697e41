"""``fleet restore [SNAPSHOT] [--root DIR] [--force]``: the master's state back from a
``fleet backup`` onto a freshly installed head node (fleet.backup.restore; argparse glue)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet.cliparts import Parents, add_command, add_force
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.signals import long_verb

if TYPE_CHECKING:
    from fleet.backup.run import Setup

DESCRIPTION = """
On a freshly installed head node (same name and address; salt-master installed, stopped):
read the backup's manifest and refuse one made by a newer fleet (naming both versions),
refuse over a running salt-master unless --force, verify every byte of the repository
(a damaged backup is refused before anything is written), then put every item back where
it was, whole, with its modes and owners (what a fresh install put there is renamed
aside to PATH.before-restore-TIME, never deleted): the master's key (the minions'
master_finger holds), the accepted minion keys (no key is accepted again), the head's
own minion key (restart salt-minion before salt-master starts), the secrets,
the reinstall and rollout journals and locks (an interrupted reinstall can be resumed or
aborted), the boot modes, Alertmanager's silences, the audit log. Then start salt-master
and check `fleet keys finger --check`. See docs/operations.md, Backup and restore.
"""
EPILOG = """
exit codes: 0 restored (the master's key fingerprint is the backup's), 1 invalid inventory,
2 usage (no site.backup, no key), 4 restic is missing or the backup cannot be opened (a
wrong key), 5 refused: damaged, made by a newer fleet, or the restored key differs; or an
item could not be put back (named, with the items restored before it), 6 a salt-master is
running here (--force)
"""

# what a SIGINT/SIGTERM leaves (fleet.signals.long_verb)
STOPPED = ('the restore was stopped part way: run `fleet restore` again before starting the '
           'master')


def register(sub: Any, parents: Parents) -> None:
    from fleet.backup import options

    p = add_command(sub, parents, "restore", DESCRIPTION, EPILOG)
    p.add_argument("snapshot", nargs="?", default="latest", metavar="SNAPSHOT",
                   help="the snapshot id (fleet backup list; default latest)")
    p.add_argument("--root", type=Path, default=Path("/"), metavar="DIR",
                   help="restore under DIR instead of / (to look before restoring)")
    add_force(p, "restore")
    options.add(p)


@long_verb(STOPPED)
def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.backup import options

    return options.run("restore", args, ctx, lambda setup: _restore(args, ctx, setup),
                       restic_failed="refused: ")


def _restore(args: argparse.Namespace, ctx: Context, setup: Setup) -> Exit:
    from fleet.backup import options
    from fleet.backup.restore import RestoreFailedError, RestoreRefusedError, restore

    try:
        pki = next(i.path for i in setup.items if i.name == "salt-pki")
        ctx.progress(f"restoring {args.snapshot} from {setup.restic.repository}")
        done = restore(setup.restic, args.snapshot, args.root, pki, args.salt_config,
                       force=args.force)
    except RestoreRefusedError as exc:
        running = "salt-master is running" in str(exc)
        return options.fail(ctx, "restore", f"refused: {exc}",
                            Exit.BUSY if running else Exit.FAILED)
    except RestoreFailedError as exc:
        return options.fail(ctx, "restore", str(exc), Exit.FAILED)
    m = done.manifest
    if ctx.out.json:
        ctx.out.emit({"snapshot": done.snapshot, "root": str(done.root), "fleet": m.fleet,
                      "time": m.time, "inventory_commit": m.inventory_commit,
                      "master_finger": m.master_finger, "finger_holds": done.finger_holds,
                      "items": done.items, "moved_aside": done.moved_aside})
    elif not ctx.out.quiet:
        print(f"restored {done.snapshot} (made {m.time} by fleet {m.fleet} on {m.host}) "
              f"under {done.root}; inventory commit {m.inventory_commit or 'none'}: check it "
              "out in site.checkout")
        for aside in done.moved_aside:
            print(f"what was there is kept aside: {aside}")
    if done.finger_holds is False:
        return options.fail(ctx, "restore",
                            "the restored master key's fingerprint is not the backup's",
                            Exit.FAILED)
    return Exit.OK

