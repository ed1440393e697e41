"""Every state root the fleet verbs keep records in (each a ``StateDir`` of
fleet.master.statedir: ``$FLEET_..._STATE`` or its default under /var/lib/fleet, the
audit log under /var/log/fleet), found where they are defined, so that a test run can
point each one at its own temporary directory and never read or write the machine's."""

from __future__ import annotations

import ast
from pathlib import Path

from support.cli import ROOT

TOOLS = ROOT / "tools" / "fleet"


def env_vars(tools: Path = TOOLS) -> dict[str, str]:
    """``{env var: default}`` of every ``StateDir(ENV, DEFAULT, ...)`` under ``tools``; a
    definition whose two first arguments are not written out is an error (it could not
    be isolated)."""
    found: dict[str, str] = {}
    for f in sorted(tools.rglob("*.py")):
        text = f.read_text(encoding="utf-8")
        if "StateDir(" not in text:
            continue
        for node in ast.walk(ast.parse(text, str(f))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "StateDir"):
                continue
            env, default = [*node.args, None, None][:2]
            if not (isinstance(env, ast.Constant) and isinstance(env.value, str)
                    and isinstance(default, ast.Constant) and isinstance(default.value, str)):
                raise ValueError(f"{f}:{node.lineno}: a StateDir whose variable and "
                                 "default are not literal strings")
            found[env.value] = default.value
    return found


def isolated(tmp: Path) -> dict[str, str]:
    """The environment that puts every state root under ``tmp`` (one path each, named
    after its variable; nothing is made: as on a machine where no verb has run yet)."""
    return {env: str(tmp / env.lower() / Path(default).name)
            for env, default in env_vars().items()}
