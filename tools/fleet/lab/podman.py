"""podman, always with runc (crun cannot run on hybrid cgroups) and the lab's own
containers.conf (no default ulimits: runc cannot raise them above the host's hard
limit), passed through CONTAINERS_CONF so that /etc/containers is never touched."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from fleet.lab.paths import Paths
from fleet.lab.run import run

CONTAINERS_CONF = """\
# Written by fleet lab. Used through CONTAINERS_CONF, for the lab's podman calls only.
[containers]
default_ulimits = []
"""


def ensure_conf(paths: Paths) -> Path:
    conf = paths.containers_conf
    conf.parent.mkdir(parents=True, exist_ok=True)
    if not conf.exists() or conf.read_text() != CONTAINERS_CONF:
        conf.write_text(CONTAINERS_CONF)
    return conf


def podman(paths: Paths, *args: str, check: bool = True, input: str | None = None,
           timeout: float | None = 600) -> subprocess.CompletedProcess[str]:
    conf = ensure_conf(paths)
    return run(["podman", "--runtime", "runc", *args], check=check, input=input,
               env={"CONTAINERS_CONF": str(conf)}, timeout=timeout)


def exists(paths: Paths, kind: str, name: str) -> bool:
    """kind: container, network or image."""
    return podman(paths, kind, "exists", name, check=False).returncode == 0


def inspect(paths: Paths, name: str) -> dict[str, Any]:
    out = podman(paths, "inspect", name).stdout
    data: list[dict[str, Any]] = json.loads(out)
    return data[0]


def exec_(paths: Paths, container: str, *argv: str, check: bool = True,
          timeout: float | None = 600) -> subprocess.CompletedProcess[str]:
    return podman(paths, "exec", container, *argv, check=check, timeout=timeout)
