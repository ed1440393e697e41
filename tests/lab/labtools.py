"""Helpers of the lab integration tests (tests/lab/conftest.py has the session fixture)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import testinfra
import yaml

from fleet.lab import highstate
from fleet.lab import podman as pm
from fleet.lab.paths import Paths
from fleet.lab.plan import LabNode, Plan
from fleet.lab.plan import load as load_plan
from fleet.master.highstate import NodeResult
from fleet.master.slurm import node_rows
from support.miniray import fill_pycache

ROOT = Path(__file__).resolve().parents[2]
ENABLED = os.environ.get("FLEET_LAB") == "1"
SKIP_REASON = "lab integration test: run `make test-lab` (FLEET_LAB=1) on a lab host"

T = TypeVar("T")


def poll(what: str, probe: Callable[[], T | None], timeout: float,
         interval: float = 1.0) -> T:
    """Call ``probe`` until it returns something truthy; fail the test after ``timeout``."""
    t0 = time.monotonic()
    last: T | None = None
    while time.monotonic() - t0 < timeout:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


@dataclass
class Lab:
    paths: Paths
    plan: Plan
    first: dict[str, NodeResult]
    second: dict[str, NodeResult]
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def nodes(self) -> list[LabNode]:
        return self.plan.nodes

    def with_role(self, role: str) -> list[LabNode]:
        return [n for n in self.plan.nodes if role in n.roles]

    def host(self, hostname: str) -> Any:
        return testinfra.get_host(f"podman://{self.plan.node(hostname).container}")

    def salt(self, *args: str, timeout: float = 120) -> Any:
        return highstate.salt(self.paths, *args, timeout=timeout)

    def pillar(self, name: str) -> Any:
        """A file of the lab render's pillar (what the master serves)."""
        text = (self.paths.render / "pillar" / f"{name}.sls").read_text()
        return yaml.safe_load(text)

    @property
    def lab_pillar(self) -> Any:
        """lab/pillar/lab.sls with the lab OS's pillar merged over it, as top.sls does."""
        merged = yaml.safe_load((self.paths.lab_pillar / "lab.sls").read_text())
        return deep_merge(merged, yaml.safe_load(self.paths.os_pillar.read_text()) or {})

    @property
    def mkv_kind(self) -> str:
        kind = self.paths.lab / "artifacts" / "KIND"
        return kind.read_text().strip() if kind.exists() else "stub"


def node_ids(role: str | None = None) -> list[str]:
    """Hostnames of the lab nodes (optionally with a role), for parametrize at collection
    time: from the inventory and the overlay only, no lab needed."""
    plan = load_plan(Paths(ROOT))
    return [n.hostname for n in plan.nodes if role is None or role in n.roles]


def sh(host: Any, cmd: str, *args: str, timeout: float = 60) -> Any:
    """Run a command on a testinfra host, bounded by ``timeout`` (coreutils timeout)."""
    return host.run(f"timeout {int(timeout)} " + cmd, *args)


def podman_exec(lab: Lab, hostname: str, *argv: str,
                timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return pm.exec_(lab.paths, lab.plan.node(hostname).container, *argv, check=False,
                    timeout=timeout)


def sinfo_row(stdout: str) -> str:
    """The one row of ``sinfo -h -N -n NODE -o FIELDS`` ("" when sinfo prints none): a
    worker node prints one per partition (its training one and the workers' preemptible
    one), each with the node's own state and reason (fleet.master.slurm.node_rows)."""
    rows = node_rows(stdout)
    assert len(rows) <= 1, f"sinfo rows of one node differ: {rows}"
    return rows[0] if rows else ""


def sinfo_node(lab: Lab, node: str, fields: str = "%T", *flags: str) -> str:
    """``sinfo FLAGS -h -N -n NODE -o FIELDS`` on the controller, as one row."""
    controller = node_ids("slurm.controller")[0]
    return sinfo_row(podman_exec(lab, controller, "sinfo", *flags, "-h", "-N", "-n", node,
                                 "-o", fields, timeout=120).stdout)


def fleet_json(lab: Lab, verb: str, state: Path, *args: str, timeout: float,
               empty_ok: bool = False) -> tuple[subprocess.CompletedProcess[str], Any]:
    """`fleet VERB ARGS --json` (the real CLI, this checkout's tools) against the lab's
    Salt master, with head-01's Slurm client and its state in ``state``: the process and
    its JSON report ({} for no output where ``empty_ok``; the test fails on anything else
    that is not JSON)."""
    head = lab.plan.node("head-01").container
    argv = [sys.executable, "-m", "fleet", verb, *args, "--json",
            "-i", str(ROOT / "inventory.yaml"), *lab.paths.overlay_args(),
            "--salt-config", str(lab.paths.salt_etc), "--state-dir", str(state),
            "--slurm-command", f"podman --runtime runc exec {head}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    try:
        report = json.loads(proc.stdout) if proc.stdout.strip() or not empty_ok else {}
    except ValueError:
        pytest.fail(f"fleet {verb} printed no JSON (exit {proc.returncode}): "
                    f"{proc.stdout[-2000:]} {proc.stderr[-3000:]}")
    return proc, report


def fill_site_cache(lab: Lab, *locks: Path, python: tuple[str, ...] = ()) -> str:
    """The site's Python package cache on head-01 filled from ``locks`` (uv.lock files):
    its URL, as workers have it (FLEET_PYCACHE_URL). The fill (`python -m fleet.pycache
    add`, ``--python X.Y`` for each of ``python``: only that CPython's wheels) runs on this
    host, which reaches PyPI (the lab's containers cannot), into .lab/pycache (kept: a
    file already there is checked, not fetched again); that tree is copied into head-01's
    cache directory, where a site runs the fill itself."""
    host_dir = lab.paths.lab / "pycache"
    fill_pycache(host_dir, *locks, python=python)
    cache = lab.pillar("provisioning")["provisioning"]["python_cache"]
    head = lab.plan.node("head-01").container
    pm.podman(lab.paths, "cp", f"{host_dir}/.", f"{head}:{cache['dir']}/", timeout=300)
    url: str = lab.pillar("compute")["compute"]["python_cache"]["url"]
    return url


def deep_merge(base: Any, over: Any) -> Any:
    """Salt's pillar merge (``recurse``): mappings merge, anything else replaces."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for key, value in over.items():
            out[key] = deep_merge(base.get(key), value)
        return out
    return over
