"""The rendered Slurm version checks (slurm-<role>-cmd-run-version), run with sh.

The daemon is a stand-in script in PATH that prints what `slurmd -V` / `slurmctld -V`
print (Ubuntu 24.04: "slurm 23.11.4"; Debian 12: "slurm-wlm 22.05.8"): the real daemons
are not installed on the test machine. The lab runs the same states against the real
packages.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

CASES = [("slurm.controller", "slurm-controller-cmd-run-version", "slurmctld"),
         ("slurm.compute", "slurm-compute-cmd-run-version", "slurmd")]


def _command(rendered: dict[str, Any], role: str, state_id: str) -> tuple[str, dict[str, Any]]:
    node = rendered["roles"][role][0]
    result = rendered["results"][(node, "ubuntu-24.04")]
    (chunk,) = [c for c in result.lowstate if c["__id__"] == state_id]
    return chunk["name"], chunk


def _run(tmp: Path, command: str, daemon: str,
         prints: str | None) -> subprocess.CompletedProcess[str]:
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    if prints is not None:
        stub = bindir / daemon
        stub.write_text(f"#!/bin/sh\necho '{prints}'\n")
        stub.chmod(0o755)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "LC_ALL": "C"}
    return subprocess.run(["sh", "-c", command], capture_output=True, text=True, env=env,
                          timeout=30, check=False, cwd=os.fspath(tmp))


@pytest.mark.parametrize(("role", "state_id", "daemon"), CASES)
def test_pinned_version_passes(rendered: dict[str, Any], tmp_path: Path, role: str,
                               state_id: str, daemon: str) -> None:
    command, chunk = _command(rendered, role, state_id)
    assert chunk["stateful"] is True
    proc = _run(tmp_path, command, daemon, "slurm 23.11.4")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"changed=no comment='{daemon} 23.11.4 is slurm:version 23.11'"


@pytest.mark.parametrize(("role", "state_id", "daemon"), CASES)
def test_other_version_fails_naming_both(rendered: dict[str, Any], tmp_path: Path, role: str,
                                         state_id: str, daemon: str) -> None:
    command, _chunk = _command(rendered, role, state_id)
    proc = _run(tmp_path, command, daemon, "slurm-wlm 22.05.8")
    assert proc.returncode == 1
    assert f"{daemon} 22.05.8 is installed, but pillar slurm:version is 23.11" in proc.stderr
    # 23.110 is not 23.11
    assert _run(tmp_path, command, daemon, "slurm 23.110.1").returncode == 1


def test_missing_daemon_fails(rendered: dict[str, Any], tmp_path: Path) -> None:
    command, _chunk = _command(rendered, "slurm.compute", "slurm-compute-cmd-run-version")
    proc = _run(tmp_path, command, "slurmd", None)
    assert proc.returncode == 1
    assert "slurmd (none) is installed, but pillar slurm:version is 23.11" in proc.stderr


def test_service_requires_the_check(rendered: dict[str, Any]) -> None:
    for role, state_id, _daemon in CASES:
        node = rendered["roles"][role][0]
        result = rendered["results"][(node, "ubuntu-24.04")]
        service = f"slurm-{role.split('.')[1]}-service-running"
        (chunk,) = [c for c in result.lowstate if c["__id__"] == service]
        assert {"cmd": state_id} in chunk["require"]


@pytest.mark.parametrize(("os_name", "want"), [("ubuntu-24.04", "23.11"),
                                               ("ubuntu-22.04", "21.08"),
                                               ("debian-12", "22.05")])
def test_per_os_version_picks_this_os_entry(rendered: dict[str, Any], os_name: str,
                                            want: str) -> None:
    # inventory.yaml gives slurm.version per OS release: each OS pins and checks its own
    node = rendered["roles"]["slurm.compute"][0]
    result = rendered["results"][(node, os_name)]
    chunks = {c["__id__"]: c for c in result.lowstate}
    assert f"Pin: version {want}.*\n" in chunks["slurm-init-file-managed-pin"]["contents"]
    assert f"is slurm:version {want}'" in chunks["slurm-compute-cmd-run-version"]["name"]


def test_per_os_version_without_this_os_fails_the_render(tmp_path: Path) -> None:
    from support import harness

    renderer, _key = harness.make_renderer(tmp_path)
    node = harness.roles_of(renderer)["slurm.compute"][0]
    original = renderer.pillar

    def pillar(n: str) -> dict[str, Any]:
        data = original(n)
        data["slurm"]["version"] = {"ubuntu-24.04": "23.11"}
        return data

    renderer.pillar = pillar
    result = renderer.render(node, "debian-12")
    assert any("slurm: pillar slurm:version has no entry for debian-12 (it has ubuntu-24.04)"
               in e for e in result.errors), result.errors
