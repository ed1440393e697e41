"""Argument blocks that several ``fleet`` commands share, written once: the TARGET
positional and its resolution, the Salt master's config dir, the Salt/Slurm options of
the day-two commands, and mutually exclusive mode flags."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fleet.apply.target import TargetError, resolve
from fleet.inventory.lifecycle import default_target, left_out_text
from fleet.inventory.model import Inventory

# what a command's set_defaults(func=...) is handed to load the inventory with
Loader = Callable[[argparse.Namespace, Any], Inventory]


DEFAULT_TARGET = "*"  # what a run without TARGET reports as its target


def add_target(p: argparse.ArgumentParser, glob: str = "'stor-*'") -> None:
    """The optional TARGET of apply, health and rollout (default: every node in service,
    fleet.inventory.lifecycle.default_target)."""
    p.add_argument("target", nargs="?", default=None, metavar="TARGET",
                   help=f"inventory hostnames, ranges (tbox-[001-038]) or globs ({glob}), "
                        "comma-separated (default: every node but planned and retired "
                        "ones; for health and rollout also those in maintenance)")


def target_nodes(args: argparse.Namespace, inv: Inventory) -> list[str] | None:
    """The hostnames ``args.target`` names; None, said on stderr, when an item names none.
    Without TARGET: the verb's default target, the nodes it leaves out said on stderr."""
    if args.target is None:
        args.target = DEFAULT_TARGET
        names, left = default_target(inv, args.verb)
        if left and not getattr(args, "quiet", False):
            print(f"fleet {args.verb}: {left_out_text(left)}", file=sys.stderr)
        return names
    try:
        return resolve(args.target, inv.nodes, retired=inv.retired)
    except TargetError as exc:
        print(f"fleet: target: {exc}", file=sys.stderr)
        return None


def add_salt_config(p: argparse.ArgumentParser) -> None:
    p.add_argument("--salt-config", type=Path,
                   default=Path(os.environ.get("FLEET_SALT_CONFIG", "/etc/salt")),
                   metavar="DIR", help="the Salt master's config dir, as `salt -c` "
                                       "(default $FLEET_SALT_CONFIG or /etc/salt)")


def add_salt_options(p: argparse.ArgumentParser) -> None:
    """Where Salt and Slurm are asked (``fleet health``, ``fleet rollout``)."""
    add_salt_config(p)
    add_slurm_command(p)
    p.add_argument("--salt-timeout", type=float, default=60.0, metavar="S",
                   help="seconds each salt call waits for the minions (default 60)")


def add_slurm_command(p: argparse.ArgumentParser) -> None:
    p.add_argument("--slurm-command", metavar="CMD",
                   help="run scontrol and sinfo through CMD, e.g. 'ssh head-01' when "
                        "slurmctld's host has no Slurm client here")


def add_modes(p: argparse.ArgumentParser, *flags: tuple[str, str]) -> None:
    """``(flag, help)`` pairs as store_true options of which at most one may be given."""
    mode = p.add_mutually_exclusive_group()
    for flag, text in flags:
        mode.add_argument(flag, action="store_true", help=text)


def add_force(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true",
                   help="drain without waiting for running jobs to finish")


def add_command(sub: Any, common: argparse.ArgumentParser, name: str, short: str,
                description: str, epilog: str, *,
                target: str | None = None) -> argparse.ArgumentParser:
    """The subcommand ``name`` with the options every command has (``common``); with
    ``target`` (a glob for its help) the optional TARGET of :func:`add_target`. argparse
    refills ``description`` and ``epilog`` (white space runs become one space), so they
    can be written as triple-quoted paragraphs."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name, parents=[common], help=short, description=description, epilog=epilog)
    if target is not None:
        add_target(parser, target)
    return parser


def add_state_dir(p: argparse.ArgumentParser, env: str, default: str, what: str) -> None:
    """``--state-dir``: ``$env`` (read when the parser is built) or ``default``."""
    p.add_argument("--state-dir", type=Path, default=Path(os.environ.get(env, default)),
                   help=f"{what} (default ${env} or {default})")


_TIMEOUT_HELP = {"health": "retry the health checks this long before failing (default {:g})"}


def add_timeouts(p: argparse.ArgumentParser, **defaults: float) -> None:
    """``--NAME-timeout S`` for each ``NAME=default`` (in that order: --help's)."""
    for name, default in defaults.items():
        text = _TIMEOUT_HELP.get(name)
        p.add_argument(f"--{name}-timeout", type=float, default=default, metavar="S",
                       help=None if text is None else text.format(default))
