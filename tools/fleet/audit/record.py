"""Which runs are recorded and what their record holds: when, who (the invoking user and
the sudo user), the verb with its arguments, the targets and the outcome."""

from __future__ import annotations

import argparse
import os
import pwd
import socket
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from fleet import __version__
from fleet.audit import redact
from fleet.exitcodes import MEANING, Exit

FORMAT = 1  # a record's "v": readers refuse a newer one

Changes = Callable[[argparse.Namespace], bool]


def _always(_args: argparse.Namespace) -> bool:
    return True


def _action_in(*names: str) -> Changes:
    return lambda args: action(args) in names


# The verbs that change something, each with when a run of it does (one place: fleet.cli
# records what this says; a verb added to fleet.commands.VERBS that changes something is
# added here too).
CHANGING: dict[str, Changes] = {
    "apply": _always,
    "rollout": _always,
    "reinstall": _always,
    "render": _always,
    "power": _action_in("on", "off", "cycle", "reset"),
    "pxe": _action_in("set"),
    "keys": lambda args: bool(getattr(args, "remove", False)),
    "mkv": _action_in("rebuild", "rebalance"),
    "discover": _action_in("accept"),
    "burnin": _action_in("record", "finish"),
    "secrets": _action_in("init"),
    "backup": _action_in("create"),
    "restore": _always,
}


def changes(args: argparse.Namespace) -> bool:
    """Whether this run is one to record."""
    test = CHANGING.get(args.verb)
    return test is not None and test(args)


def action(args: argparse.Namespace) -> str | None:
    """The run's action: ``fleet keys check``'s ``check``, ``fleet power off``'s ``off``."""
    value = getattr(args, f"{args.verb}_verb", None) or getattr(args, "action", None)
    return value if isinstance(value, str) else None


def who() -> dict[str, Any]:
    uid = os.getuid()
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = str(uid)
    return {"user": user, "uid": uid, "sudo_user": os.environ.get("SUDO_USER") or None}


def targets(args: argparse.Namespace) -> str | None:
    """What the run was pointed at, as given: TARGET, NODE(s) or ARRAY."""
    for name in ("target", "node", "nodes", "array"):
        value = getattr(args, name, None)
        if isinstance(value, list):
            value = ",".join(map(str, value)) or None
        if value is not None:
            return str(value)
    return None


def nodes(document: Mapping[str, Any] | None) -> list[str]:
    """The nodes the run reported on (its JSON document's ``nodes``; ``node``)."""
    if not document:
        return []
    listed = document.get("nodes")
    if isinstance(listed, list):
        return [str(n["node"]) for n in listed if isinstance(n, dict) and "node" in n]
    one = document.get("node")
    return [str(one)] if isinstance(one, str) else []


def make(args: argparse.Namespace, argv: list[str], code: int, seconds: float,
         document: Mapping[str, Any] | None) -> dict[str, Any]:
    """The record of one run, every secret in reach hidden."""
    try:
        meaning = MEANING[Exit(code)]
    except ValueError:
        meaning = f"exit {code}"
    record = {
        "v": FORMAT, "time": datetime.now(UTC).isoformat(timespec="seconds"),
        **who(), "host": socket.gethostname(), "fleet": __version__,
        "verb": args.verb, "action": action(args), "argv": redact.argv(argv),
        "target": targets(args), "nodes": nodes(document),
        "exit": code, "outcome": "ok" if code == 0 else meaning,
        "seconds": round(seconds, 2),
    }
    scrubbed: dict[str, Any] = redact.scrub(record, redact.values(redact.stores(args)))
    return scrubbed
