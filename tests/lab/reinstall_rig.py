"""What the lab reinstall tests share (tests/lab/test_reinstall.py, test_reinstall_parallel.py):
the real `fleet reinstall` CLI pointed at the lab (its master, head-01's PXE state and
Slurm), one FAKE Redfish BMC per lab node and the FAKE hardware behind them
(fake_lab_hardware.py)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from labtools import ROOT, Lab, podman_exec, poll, sinfo_row

from fleet.master.journal import Journal
from support.bmcfakes import free_port, htpasswd, stop_process, wait_ready

CONTROLLER = "head-01"
PXE_STATE = "/var/lib/fleet/pxe-state"
PASSWORD = "lab-bmc-password"
PODMAN = "podman --runtime runc exec"


@dataclass
class Rig:
    lab: Lab
    work: Path
    bmc_ports: dict[str, int]
    procs: list[subprocess.Popen[str]] = field(default_factory=list)

    @property
    def state(self) -> Path:
        return self.work / "state"

    def journal(self, node: str) -> list[dict[str, Any]]:
        return Journal(self.state / node).entries()

    def hardware(self, node: str) -> list[dict[str, Any]]:
        f = self.work / "hardware.jsonl"
        lines = f.read_text().splitlines() if f.exists() else []
        return [e for e in map(json.loads, lines) if e["node"] == node]

    def argv(self, node: str, *extra: str, bmc_port: int | None = None) -> list[str]:
        """``node``: one hostname, or several (comma-separated): each has its own BMC."""
        head = self.lab.plan.node(CONTROLLER).container
        if "," in node:
            bmc = ",".join(f"{n}=127.0.0.1:{self.bmc_ports[n]}" for n in node.split(","))
        else:
            port = bmc_port if bmc_port is not None else self.bmc_ports[node]
            bmc = f"127.0.0.1:{port}"
        return [sys.executable, "-m", "fleet", "reinstall", node, "--json",
                "-i", str(ROOT / "inventory.yaml"), *self.lab.paths.overlay_args(),
                "--state-dir", str(self.state), "--secrets", str(self.work / "secrets"),
                "--salt-config", str(self.lab.paths.salt_etc),
                "--callback", f"{self.lab.plan.gateway}:8470",
                "--pxe-command", f"{PODMAN} -i {head} fleet-lab",
                "--slurm-command", f"{PODMAN} {head}",
                "--bmc-address", bmc, "--bmc-scheme", "http",
                "--drain-timeout", "300", "--converge-timeout", "2400", *extra]

    def settle(self, node: str, timeout: float = 60) -> None:
        """Wait until the node's fake BMC holds back no power change. sushy's fake driver
        applies one 1 to 11 s after the request (hardware takes time), so a run that ends
        seconds after its power-on leaves the BMC reading "Off" with an "On" to come: the
        next run's power-off would find it off, its power-on on again, and stop (as it
        must on a real BMC). Each run starts from a settled BMC, as an operator's does."""
        url = f"http://127.0.0.1:{self.bmc_ports[node]}/_fake/pending"

        def settled() -> bool:
            with urllib.request.urlopen(url, timeout=10) as resp:
                return json.loads(resp.read())["pending_power"] is None

        poll(f"the fake BMC of {node} to apply its pending power change", settled,
             timeout, interval=0.5)

    def start(self, node: str, *extra: str, bmc_port: int | None = None
              ) -> subprocess.Popen[str]:
        if bmc_port is None:
            for n in node.split(","):
                self.settle(n)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
        err = (self.work / f"{node}.stderr").open("a")
        return subprocess.Popen(self.argv(node, *extra, bmc_port=bmc_port), cwd=ROOT,
                                env=env, stdout=subprocess.PIPE, stderr=err, text=True)

    def run(self, node: str, *extra: str, timeout: float = 3000,
            bmc_port: int | None = None) -> tuple[int, dict[str, Any]]:
        proc = self.start(node, *extra, bmc_port=bmc_port)
        return finish(proc, timeout)

    def mode(self, node: str, behaviour: str) -> None:
        (self.work / f"{node}.mode").write_text(behaviour + "\n")

    def stderr(self, node: str, tail: int | None = 4000) -> str:
        """The run's stderr: its last ``tail`` characters (for a failure's message), or
        all of it (``None``: for what the test asserts, which may be at its start)."""
        f = self.work / f"{node}.stderr"
        text = f.read_text() if f.exists() else ""
        return text if tail is None else text[-tail:]

    def head(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return podman_exec(self.lab, CONTROLLER, *argv, timeout=timeout)

    def boot_mode(self, node: str) -> str:
        res = self.head("fleet-lab", "pxe", "status", node, "--json")
        assert res.returncode == 0, res.stderr
        return str(json.loads(res.stdout)["nodes"][0]["mode"])

    def slurm_state(self, node: str) -> str:
        return sinfo_row(self.head("sinfo", "-h", "-N", "-n", node, "-o", "%T").stdout)

    def curl_from(self, node: str, *args: str) -> str:
        """HTTP status of a request made from ``node``'s own address."""
        res = podman_exec(self.lab, node, "curl", "-s", "-o", "/dev/null", "-w",
                          "%{http_code}", "--max-time", "20", *args)
        return res.stdout.strip()


def finish(proc: subprocess.Popen[str], timeout: float) -> tuple[int, dict[str, Any]]:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"fleet reinstall still running after {timeout:.0f}s")
    return proc.returncode, json.loads(out) if out.strip() else {}


@contextlib.contextmanager
def rig_up(lab: Lab, work: Path) -> Iterator[Rig]:
    """The fake hardware agent and one fake BMC per lab node (not head-01), for the
    fixtures of the lab reinstall tests; stopped at the end."""
    inv = lab.plan.inventory
    secrets = work / "secrets" / "bmc"
    secrets.mkdir(parents=True, mode=0o700)
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'tools'}:{ROOT / 'tests'}"}
    hw_port = free_port()
    rig = Rig(lab, work, {})
    hw = subprocess.Popen([sys.executable, str(ROOT / "tests/lab/fake_lab_hardware.py"),
                           "--port", str(hw_port), "--work", str(work)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rig.procs.append(hw)
    wait_ready(hw, "the fake hardware agent")
    for node in lab.nodes:
        if "provisioning" in node.roles:
            continue
        spec = inv.nodes[node.hostname].profile.bmc
        secret = secrets / spec.password_secret
        secret.write_text(PASSWORD + "\n")
        secret.chmod(0o600)
        auth = work / f"{node.hostname}.htpasswd"
        htpasswd(auth, spec.user, PASSWORD)
        port = free_port()
        bmc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests/bmc/fake_redfish_bmc.py"), "--port", str(port),
             "--state-dir", str(work / f"sushy-{node.hostname}"), "--system", node.hostname,
             "--power", "On", "--auth-file", str(auth),
             "--notify", f"http://127.0.0.1:{hw_port}/{node.hostname}"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        rig.procs.append(bmc)
        wait_ready(bmc, f"the fake BMC of {node.hostname}")
        rig.bmc_ports[node.hostname] = port
    try:
        yield rig
    finally:
        for proc in rig.procs:
            stop_process(proc)


def steps(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["step"]: s for s in report.get("steps", [])}
