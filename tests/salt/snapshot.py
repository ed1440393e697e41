"""Lowstate snapshots per role: what each role's states are, for reviewers to diff.

A snapshot holds, for the first node of the role (Ubuntu 24.04 grains), each state of the
role's SLS files in order: id, SLS, module.function, name, the arguments that decide
what it does (requisites, modes, packages, checks; never `context`, which is pillar data
already visible in pillar/), and the rendered text of its config template, if any.

Update after a deliberate change:  python tests/salt/update_snapshots.py
"""

from __future__ import annotations

import json
from typing import Any

from fleet import saltrender

ROLES = ("base", "network", "nvidia", "infiniband", "slurm.controller", "slurm.compute",
         "mkv.volume", "mkv.master", "provisioning", "monitoring.node", "monitoring.gpu",
         "monitoring.slurm", "monitoring.server", "lldp", "compute.valkey", "compute.worker",
         "codesync.server", "codesync.client", "provisioning.keysource",
         "provisioning.standby", "backup.target")
SKIP_ARGS = {"context", "defaults", "order", "fun", "state", "name", "__env__", "__id__",
             "__sls__", "__sls_included_from__", "__run_num__"}


def role_owns(role: str, sls: str) -> bool:
    """The SLS files a role applies: its own, and shared ones of its folder (slurm, slurm.munge)."""
    if sls == role or sls.startswith(role + "."):
        return True
    folder = role.split(".")[0]
    if sls.split(".")[0] != folder:
        return False
    return not any(sls == r or sls.startswith(r + ".") for r in ROLES)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def snapshot(role: str, result: saltrender.Rendered) -> dict[str, Any]:
    states = []
    for chunk in result.lowstate:
        if not role_owns(role, chunk["__sls__"]):
            continue
        entry: dict[str, Any] = {
            "id": chunk["__id__"],
            "sls": chunk["__sls__"],
            "function": f"{chunk['state']}.{chunk['fun']}",
            "name": chunk.get("name"),
        }
        args = {k: _plain(v) for k, v in sorted(chunk.items()) if k not in SKIP_ARGS}
        if args:
            entry["args"] = args
        if chunk["__id__"] in result.files:
            entry["rendered"] = result.files[chunk["__id__"]].splitlines()
        states.append(entry)
    return {"role": role, "node": result.node, "os": result.os, "states": states}


def dumps(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=False, ensure_ascii=False) + "\n"
