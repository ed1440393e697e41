"""``fleet backup [create|check|list]``: an encrypted, verified backup of what only the
master holds, with restic, to the inventory's site.backup.destination (fleet.backup;
argparse glue and the report)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from fleet.cliparts import Parents, add_command
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.signals import long_verb

if TYPE_CHECKING:
    from fleet.backup.run import Setup

DESCRIPTION = """
create (the default): write the manifest (fleet's version, the inventory's commit, the
master's key fingerprint), back up the master's keys and accepted minion keys, the secrets
store (the repository's signing key in it), the reinstall and rollout journals and locks,
the health and apply results, the boot modes, Alertmanager's silences and the audit log
with restic, encrypted with the operator's key; then verify every byte (restic check
--read-data) and keep site.backup.keep_daily/keep_weekly snapshots. The first backup
initialises an empty destination. check: verify the repository and every byte of its data.
list: the snapshots. A systemd timer on the master runs create daily; fleet status says
when the last good one was. An sftp destination is reached with the secrets store's
backup key (--ssh-key) only, its host key pinned at the first connection. See
docs/operations.md, Backup and restore.
"""
EPILOG = """
exit codes: 0 made and verified (check: whole), 1 invalid inventory, 2 usage (no
site.backup, the key or an sftp destination's ssh key missing, the key readable by
others or beside the backup, no master key here), 4 restic is missing or the
destination cannot be reached or opened (a wrong key), 5 the backup or its verification
failed (check: the repository is damaged)
"""

# what a SIGINT/SIGTERM leaves (fleet.signals.long_verb)
STOPPED = ("this run's snapshot was not finished (restic keeps no partial snapshot); run "
           '`fleet backup` again')
ACTIONS = ("create", "check", "list")


def register(sub: Any, parents: Parents) -> None:
    from fleet.backup import options

    p = add_command(sub, parents, "backup", DESCRIPTION, EPILOG)
    p.add_argument("action", nargs="?", default="create", choices=ACTIONS, metavar="ACTION",
                   help="create (default) | check | list")
    options.add(p)


@long_verb(STOPPED)
def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.backup import options

    action = {"check": _check, "list": _list}.get(args.action, _create)
    return options.run("backup", args, ctx, lambda setup: action(setup, ctx))


def _create(setup: Setup, ctx: Context) -> Exit:
    from fleet.backup.run import create

    ctx.progress(f"backing up to {setup.restic.repository}")
    made = create(setup)
    m = made.manifest
    if ctx.out.json:
        ctx.out.emit({"snapshot": made.snapshot, "repository": setup.restic.repository,
                      "initialised": made.initialised, "verified": True,
                      "manifest": {"fleet": m.fleet, "time": m.time,
                                   "inventory_commit": m.inventory_commit,
                                   "master_finger": m.master_finger}, "absent": made.absent})
    elif not ctx.out.quiet:
        print(f"snapshot {made.snapshot} in {setup.restic.repository}: verified "
              f"(inventory commit {m.inventory_commit or 'none'}"
              f"{', with changes not committed' if m.inventory_dirty else ''})")
        if made.absent:
            print(f"not on this master (nothing to keep): {', '.join(made.absent)}")
    return Exit.OK


def _said(ctx: Context, setup: Setup, doc: dict[str, Any], lines: list[str]) -> Exit:
    """``doc`` (with the repository) under --json, else ``lines``."""
    if ctx.out.json:
        ctx.out.emit({"repository": setup.restic.repository, **doc})
    elif not ctx.out.quiet:
        for line in lines:
            print(line)
    return Exit.OK


def _check(setup: Setup, ctx: Context) -> Exit:
    said = setup.restic.check().strip()
    return _said(ctx, setup, {"ok": True},
                 [said.splitlines()[-1] if said else "no errors were found"])


def _list(setup: Setup, ctx: Context) -> Exit:
    snaps = setup.restic.snapshots()
    return _said(ctx, setup, {"snapshots": snaps}, [_snapshot(s) for s in snaps])


def _snapshot(s: dict[str, object]) -> str:
    tags = s.get("tags")
    return (f"{s.get('short_id', '')!s}  {s.get('time', '')!s}  "
            f"{','.join(map(str, tags)) if isinstance(tags, list) else ''}")
