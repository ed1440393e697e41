"""Warnings about a valid inventory: what it lets happen that an operator should know of,
but that is no error (``fleet validate`` and ``fleet render`` print them and exit 0)."""

from __future__ import annotations

from pathlib import Path

from fleet.inventory import schema
from fleet.problems import Problem
from fleet.secrets import bmc_secret_problem
from fleet.yamlsrc import Source


def warnings(raw: schema.Inventory, src: Source, store: Path | None) -> list[Problem]:
    """The warnings of ``raw``; with ``store`` (a secrets store found, not asked for), also
    each BMC password missing from it."""
    found = []
    if raw.site.salt.master_finger is None and raw.node_groups:
        found.append(Problem(
            src.pos(("site", "salt"), key=True), "site.salt.master_finger",
            "not recorded: every minion installed now trusts the first Salt master that "
            "answers it, not only yours", code="no_master_finger",
            hint="on the master, `fleet keys finger` prints the fingerprint of its key; "
                 "record it here, and `fleet keys finger --check` compares"))
    if store is not None:
        for p in password_problems(raw, src, store):
            found.append(Problem(p.pos, p.path, p.message, code=p.code,
                                 hint=f"{p.hint}; `fleet reinstall` needs it, and `--secrets "
                                      f"{store}` makes this an error"))
    return found


def password_problems(raw: schema.Inventory, src: Source, root: Path) -> list[Problem]:
    """A problem at each profile's ``bmc.password_secret`` that names a secret with no
    value in the store ``root`` (missing, not a file, empty)."""
    problems = []
    for name, profile in raw.profiles.items():
        secret = profile.bmc.password_secret
        why = bmc_secret_problem(root, secret)
        if why is not None:
            path = ("profiles", name, "bmc", "password_secret")
            problems.append(Problem(
                src.pos(path), ".".join(path), f"{secret}: {why}", code="missing_secret",
                hint=f"write the BMC password into {root / 'bmc' / secret} (mode 0600), or "
                     "name an existing secret"))
    return problems
