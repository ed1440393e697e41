"""Argument blocks that several ``fleet`` commands share, written once: the options every
verb has (:func:`common_options`), a verb's subparser (:func:`add_command`), the TARGET
positional and its resolution, the Salt master's config dir, the Salt/Slurm options of
the day-two commands, the BMC options and the boot-mode store (reinstall, rollout,
power), and mutually exclusive mode flags. Light on imports: ``fleet --help`` loads it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fleet.bmc.connect import BmcOptions
    from fleet.inventory.model import Inventory
    from fleet.master.statedir import StateDir
    from fleet.pxe.bootmode import CommandBootMode, PxeBootMode

Parents = Sequence[argparse.ArgumentParser]


def output_options() -> argparse.ArgumentParser:
    """The output options every verb has (a parent parser): --json, -q, -v, --debug."""
    out = argparse.ArgumentParser(add_help=False)
    out.add_argument("--json", action="store_true",
                     help="one JSON document on stdout, on success and on failure "
                          "(docs/output.md)")
    out.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    out.add_argument("-v", "--verbose", action="store_true",
                     help="show progress with timings even when not on a terminal")
    out.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    return out


def common_options() -> argparse.ArgumentParser:
    """The options every verb but lab has (a parent parser): -i, --overlay and the output
    options."""
    common = argparse.ArgumentParser(add_help=False, parents=[output_options()])
    common.add_argument("-i", "--inventory", type=Path,
                        default=Path(os.environ.get("FLEET_INVENTORY", "inventory.yaml")),
                        help="inventory file (default: $FLEET_INVENTORY or ./inventory.yaml)")
    common.add_argument("--overlay", type=Path, metavar="FILE", action="append",
                        help="apply a merge-patch overlay on the inventory (e.g. "
                             "lab/overlay.yaml); repeat to apply several, in order")
    return common


DEFAULT_TARGET = "*"  # what a run without TARGET reports as its target


def add_target(p: argparse.ArgumentParser, glob: str = "'stor-*'") -> None:
    """The optional TARGET of apply, health and rollout (default: every node in service,
    fleet.inventory.lifecycle.default_target)."""
    p.add_argument("target", nargs="?", default=None, metavar="TARGET",
                   help=f"inventory hostnames, ranges (tbox-[001-038]) or globs ({glob}), "
                        "comma-separated (default: every node but planned and retired "
                        "ones; for health and rollout also those in maintenance)")


def target_nodes(args: argparse.Namespace, inv: Inventory) -> list[str]:
    """The hostnames ``args.target`` names (fleet.inventory.target.TargetError, a usage
    error, when an item names none). Without TARGET: the verb's default target, the nodes
    it leaves out said on stderr."""
    from fleet.inventory.lifecycle import default_target, left_out_text
    from fleet.inventory.target import resolve

    if args.target is None:
        args.target = DEFAULT_TARGET
        names, left = default_target(inv, args.verb)
        if left and not getattr(args, "quiet", False):
            print(f"fleet {args.verb}: {left_out_text(left)}", file=sys.stderr)
        return names
    return resolve(args.target, inv.nodes, retired=inv.retired)


def add_salt_config(p: argparse.ArgumentParser) -> None:
    """``--salt-config``, the one declaration: every verb that talks to the master takes it,
    with the default of fleet.master.statedir ($FLEET_SALT_CONFIG, then /etc/salt)."""
    from fleet.master import statedir

    p.add_argument("--salt-config", type=Path, default=statedir.salt_config(), metavar="DIR",
                   help="the Salt master's config dir, as `salt -c` (default "
                        f"${statedir.SALT_CONFIG_ENV} or {statedir.SALT_CONFIG_DEFAULT})")


def add_salt_options(p: argparse.ArgumentParser) -> None:
    """Where Salt and Slurm are asked (``fleet health``, ``fleet rollout``)."""
    add_salt_config(p)
    add_slurm_command(p)
    add_salt_timeout(p, 60.0, "each salt call")


def add_salt_timeout(p: argparse.ArgumentParser, default: float, what: str) -> None:
    """``--salt-timeout S``, declared once: how long ``what`` waits for the minions."""
    p.add_argument("--salt-timeout", type=float, default=default, metavar="S",
                   help=f"seconds {what} waits for the minions (default {default:g})")


def add_slurm_command(p: argparse.ArgumentParser) -> None:
    p.add_argument("--slurm-command", metavar="CMD",
                   help="run scontrol, sinfo and squeue through CMD, e.g. 'ssh head-01' when "
                        "slurmctld's host has no Slurm client here")


def add_modes(p: argparse.ArgumentParser, *flags: tuple[str, str]) -> None:
    """``(flag, help)`` pairs as store_true options of which at most one may be given."""
    mode = p.add_mutually_exclusive_group()
    for flag, text in flags:
        mode.add_argument(flag, action="store_true", help=text)


# --force, defined once: what it overrides in each verb that has it (one meaning per verb;
# docs/operations.md's table of it is checked against this by tests/unit/test_docs.py)
FORCE = {
    "reinstall": "do not wait for running jobs: cancel them (scancel, named) at the drain; "
                 "the node is never powered off with jobs on it",
    "rollout": "do not wait for running jobs: cancel them (scancel, named) at the drain; "
               "the node is never changed with jobs on it",
    "power": "off, cycle, reset: do not wait for running jobs: cancel them (scancel, named) "
             "at the drain; the node is never powered off with jobs on it",
    "restore": "restore even over a running salt-master",
    "ubuntu_image": "build the lab's Ubuntu minion image again even when one of its tag "
                    "exists",
}


def add_force(p: argparse.ArgumentParser, verb: str) -> None:
    p.add_argument("--force", action="store_true", help=FORCE[verb])


def add_ignore_boot_mode(p: argparse.ArgumentParser, text: str) -> None:
    """``--ignore-boot-mode``: the one override of fleet.pxe.powerguard's rule (a node in
    PXE install mode, or whose mode cannot be read, is not powered); ``text``: when."""
    p.add_argument("--ignore-boot-mode", action="store_true",
                   help=f"{text}power-cycle even a node in PXE install mode (it is then "
                        "reinstalled: its disk wiped) or whose mode cannot be read")


def add_secrets(p: argparse.ArgumentParser, text: str, *, dest: str = "secrets",
                default: Path | None = Path("secrets")) -> None:
    """``--secrets DIR``, the secrets store (docs/secrets.md), declared once; ``text``: what
    the verb reads or writes there."""
    p.add_argument("--secrets", dest=dest, type=Path, default=default, metavar="DIR",
                   help=text)


BMC_SECRETS = "the secrets store with bmc/<password_secret> (default ./secrets)"


def add_bmc_address(p: argparse.ArgumentParser) -> None:
    p.add_argument("--bmc-address", metavar="HOST[:PORT]",
                   help="override the inventory's BMC address (e.g. an emulator in the "
                        "lab); with several nodes NODE=HOST[:PORT],...")


def add_bmc_protocol(p: argparse.ArgumentParser, protocols: tuple[str, ...], text: str
                     ) -> None:
    """``--bmc-protocol``: the protocols the verb can speak to a BMC (console: IPMI alone)."""
    p.add_argument("--bmc-protocol", choices=list(protocols), help=text)


def add_command(sub: Any, parents: Parents, name: str, description: str, epilog: str, *,
                target: str | None = None, **kw: Any) -> argparse.ArgumentParser:
    """The subparser of verb ``name`` (its short help: fleet.cli's from VERBS) with the
    options every verb has (``parents``); with ``target`` (a glob for its help) the optional
    TARGET of :func:`add_target`. argparse refills ``description`` and ``epilog`` (white
    space runs become one space), so they can be written as triple-quoted paragraphs."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name, parents=list(parents), description=description, epilog=epilog, **kw)
    if target is not None:
        add_target(parser, target)
    return parser


def add_actions(sub: Any, name: str, description: str, epilog: str | None = None
                ) -> tuple[argparse.ArgumentParser, Any]:
    """A verb made of actions (``fleet keys check``): its parser (no options of its own;
    each action takes the common ones) and the subparsers of its ACTION."""
    p = sub.add_parser(name, description=description, epilog=epilog)
    return p, p.add_subparsers(dest=f"{name}_verb", required=True, metavar="ACTION")


def add_action(actions: Any, parents: Parents, name: str, text: str, epilog: str
               ) -> argparse.ArgumentParser:
    """One ACTION of a verb made of actions, with the common options: ``text`` is its help
    and description, the verb's ``epilog`` its own."""
    sp: argparse.ArgumentParser = actions.add_parser(
        name, parents=list(parents), help=text, description=text, epilog=epilog)
    return sp


def add_store_dir(p: argparse.ArgumentParser, flag: str, where: StateDir, what: str) -> None:
    """``flag DIR``: a store at one of fleet.master.statedir's roots (its env var, read when
    the parser is built, or its default), ``what`` it keeps."""
    p.add_argument(flag, type=Path, default=where.path(), metavar="DIR",
                   help=f"{what} (${where.env}, default {where.default})")


def add_state_dir(p: argparse.ArgumentParser, where: StateDir, what: str) -> None:
    """``--state-dir``: one of fleet.master.statedir's roots (its env var, read when the
    parser is built, or its default)."""
    p.add_argument("--state-dir", type=Path, default=where.path(),
                   help=f"{what} (default ${where.env} or {where.default})")


_TIMEOUT_HELP = {"health": "retry the health checks this long before failing (default {:g})"}


def add_timeouts(p: argparse.ArgumentParser, **defaults: float) -> None:
    """``--NAME-timeout S`` for each ``NAME=default`` (in that order: --help's)."""
    for name, default in defaults.items():
        text = _TIMEOUT_HELP.get(name)
        p.add_argument(f"--{name}-timeout", type=float, default=default, metavar="S",
                       help=None if text is None else text.format(default))


def add_bmc_options(p: argparse.ArgumentParser) -> None:
    """The secrets store with the BMC passwords and how the BMCs are reached."""
    add_secrets(p, BMC_SECRETS)
    p.add_argument("--bmc-ca-file", metavar="FILE", help="CA that signed the BMCs' TLS certs")
    p.add_argument("--bmc-insecure", action="store_true",
                   help="do not verify the BMC's TLS certificate")
    add_bmc_protocol(p, ("redfish", "ipmi"),
                     "override the profile's BMC protocol (IPMI as the fallback)")
    add_bmc_address(p)
    p.add_argument("--bmc-scheme", choices=["https", "http"], default="https",
                   help=argparse.SUPPRESS)


def bmc_address(args: argparse.Namespace, name: str) -> str | None:
    """--bmc-address: one HOST[:PORT] for one node; with several, NODE=HOST[:PORT] items
    (comma-separated) name each node's."""
    given = args.bmc_address
    if not given or "=" not in given:
        return str(given) if given else None
    pairs = dict(item.split("=", 1) for item in given.split(",") if "=" in item)
    return pairs.get(name)


def bmc_options(args: argparse.Namespace, name: str, **extra: Any) -> BmcOptions:
    """The BmcOptions of node ``name`` from :func:`add_bmc_options`' flags."""
    from fleet.bmc.connect import BmcOptions

    return BmcOptions(secrets_dir=args.secrets, ca_file=args.bmc_ca_file,
                      insecure=args.bmc_insecure, protocol=args.bmc_protocol,
                      address=bmc_address(args, name), scheme=args.bmc_scheme, **extra)


def add_pxe_state(p: argparse.ArgumentParser, use: str, *, root: bool = True) -> None:
    """``--pxe-state`` (the boot-mode links; ``use``: what the command does with them) and,
    with ``root``, ``--pxe-root``: one name in every verb (``fleet pxe``'s former
    ``--state-dir`` is gone: everywhere --state-dir is a journal root)."""
    missing = "; a directory that is not here is no answer" if root else ""
    p.add_argument("--pxe-state", type=Path, metavar="DIR",
                   help=f"the boot-mode links it {use} (default: the inventory's "
                        f"site.pxe_state{missing})")
    if root:
        p.add_argument("--pxe-root", type=Path, metavar="DIR",
                       help="the deployed pxe/ tree (default: site.pxe_root)")


def add_pxe_options(p: argparse.ArgumentParser, use: str) -> None:
    """Where the nodes' PXE boot modes are (``use``: what the command does with them)."""
    add_pxe_state(p, use)
    p.add_argument("--pxe-command", metavar="CMD",
                   help="run `CMD pxe set|status ...` instead of using the links here, "
                        "e.g. 'ssh head-01 fleet' when the provisioning host is not the "
                        "master (a token goes over stdin)")


def add_node_flow(p: argparse.ArgumentParser, verb: str, where: StateDir, *, resume: str,
                  abort: str, pxe: str, **timeouts: float) -> None:
    """The options of a journaled flow over nodes that drains and powers them (fleet
    reinstall, fleet rollout): --resume or --abort of its unfinished run, --force (its
    meaning in FORCE), its --NAME-timeouts, its journal's --state-dir, the boot modes it
    reads or sets (``pxe``) and its way to the BMCs."""
    add_modes(p, ("--resume", resume), ("--abort", abort))
    add_force(p, verb)
    add_timeouts(p, **timeouts)
    add_state_dir(p, where, where.what)
    add_pxe_options(p, pxe)
    add_bmc_options(p)


def boot_mode_store(args: argparse.Namespace, inv: Inventory
                    ) -> PxeBootMode | CommandBootMode:
    """The boot modes of :func:`add_pxe_options`: through --pxe-command, else the links."""
    import shlex

    from fleet.pxe.bootmode import CommandBootMode, PxeBootMode

    if args.pxe_command:
        return CommandBootMode(shlex.split(args.pxe_command))
    return PxeBootMode(inv, args.pxe_state, args.pxe_root)


def add_bmc_pool(p: argparse.ArgumentParser, *, parallel: int, deadline: float,
                 bmc_timeout: float) -> None:
    """How many BMCs are asked at once and how long each may take (fleet.ops.power's
    pool: fleet power, fleet status)."""
    p.add_argument("--parallel", type=int, default=parallel, metavar="N",
                   help=f"at most N BMCs asked at once (default {parallel})")
    p.add_argument("--deadline", type=float, default=deadline, metavar="S",
                   help=f"give up on a node's BMC S seconds after its start (default "
                        f"{deadline:g})")
    p.add_argument("--bmc-timeout", type=float, default=bmc_timeout, metavar="S",
                   help=f"seconds each BMC request may wait for an answer (default "
                        f"{bmc_timeout:g})")
