"""``fleet secrets init``: the git-ignored secrets store (docs/secrets.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from fleet.cliparts import Parents, add_actions, add_secrets
from fleet.context import Context
from fleet.exitcodes import Exit

DESCRIPTION = ("The secrets store holds the munge key (a pillar root of the Salt master) and "
               "BMC passwords; see docs/secrets.md.")


def register(sub: Any, parents: Parents) -> None:
    _p, actions = add_actions(sub, "secrets", DESCRIPTION,
                              "exit codes: 0 ok, 1 invalid inventory, 2 usage, 4 I/O")
    sp = actions.add_parser("init", parents=list(parents),
                            help="create what is missing (never overwrites), with modes "
                                 "0700/0600",
                            description="Create the secrets store: a new random munge key "
                                        "if there is none, and list the BMC passwords still "
                                        "missing.")
    add_secrets(sp, "the store (default: ./secrets)")


def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet import secrets
    from fleet.backupsftp import SftpKeyError
    from fleet.repo.signing import SigningError

    inv = ctx.inventory()
    root = Path(args.secrets)
    try:
        created = secrets.init(root)
    except SigningError as exc:
        print(f"fleet secrets init: the site repository's signing key: {exc}", file=sys.stderr)
        return Exit.IO
    except SftpKeyError as exc:
        print(f"fleet secrets init: the backup's ssh key: {exc}", file=sys.stderr)
        return Exit.IO
    wanted = {p.bmc.password_secret for p in inv.raw.profiles.values()}
    missing = secrets.missing_bmc_secrets(root, wanted)
    if ctx.out.json:
        ctx.out.emit({"created": created, "missing_bmc_secrets": missing})
    elif not args.quiet:
        for path in created:
            print(f"created {path}")
        if not created:
            print(f"{root}: nothing to create (existing secrets are never overwritten)")
        for name in missing:
            print(f"missing: {root / 'bmc' / name} (the BMC password named by "
                  f"password_secret: {name}; write it there, mode 0600)")
    return Exit.OK
