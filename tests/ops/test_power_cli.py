"""``fleet power`` as an operator runs it (the real command line, a separate process)
against real emulators, named as fakes: sushy-tools' Redfish emulator and pyghmi's IPMI
fakebmc driven by the real ipmitool (tests/support/bmcfakes.py), one per node of a range;
a fake hung BMC (accepts, never answers); a stand-in for squeue (tests/ops/helpers.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fleet.bmc.redfish import RedfishClient
from fleet.inventory.load import load_inventory
from ops.helpers import INVENTORY, SilentBmc, arm_install, pxe_state, secrets, slurm_standin
from support.bmcfakes import (
    PASSWORD,
    USER,
    FakeBmcProcess,
    start_fake_ipmi,
    start_fake_redfish,
    wait_until,
)
from support.cli import ROOT, run_fleet

NODES = ["tbox-001", "tbox-002", "tbox-003"]
RANGE = "tbox-[001-003]"


@pytest.fixture
def redfish(tmp_path: Path) -> Iterator[dict[str, FakeBmcProcess]]:
    fakes: dict[str, FakeBmcProcess] = {}
    try:
        for n in NODES:
            (tmp_path / n).mkdir()
            fakes[n] = start_fake_redfish(tmp_path / n, power="Off", system=n)
        yield fakes
    finally:
        for f in fakes.values():
            f.stop()


@pytest.fixture
def ipmi() -> Iterator[dict[str, FakeBmcProcess]]:
    fakes: dict[str, FakeBmcProcess] = {}
    try:
        for n in NODES:
            fakes[n] = start_fake_ipmi("off")
        yield fakes
    finally:
        for f in fakes.values():
            f.stop()


def _addresses(ports: dict[str, int]) -> str:
    return ",".join(f"{n}=127.0.0.1:{p}" for n, p in ports.items())


def power(tmp: Path, action: str, target: str, ports: dict[str, int], *extra: str,
          protocol: str = "redfish", jobs: dict[str, list[str]] | None = None
          ) -> tuple[int, dict[str, Any], str]:
    argv = ["power", action, target, "-i", str(INVENTORY), "--json",
            "--secrets", str(secrets(tmp)), "--pxe-state", str(pxe_state(tmp)),
            "--slurm-command", str(slurm_standin(tmp, jobs or {})),
            "--bmc-address", _addresses(ports), "--bmc-protocol", protocol, *extra]
    if protocol == "redfish":
        argv += ["--bmc-scheme", "http"]
    r = run_fleet(*argv, timeout=120)
    assert r.stdout, r.stderr
    return r.returncode, json.loads(r.stdout), r.stderr


def statuses(out: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {n["node"]: (n["status"], n["power"]) for n in out["nodes"]}


def test_redfish_range_on_status_off(tmp_path: Path,
                                     redfish: dict[str, FakeBmcProcess]) -> None:
    ports = {n: f.port for n, f in redfish.items()}
    rc, out, _ = power(tmp_path, "status", RANGE, ports)
    assert rc == 0 and statuses(out) == dict.fromkeys(NODES, ("done", "off"))
    rc, out, _ = power(tmp_path, "on", RANGE, ports)
    assert rc == 0 and statuses(out) == dict.fromkeys(NODES, ("done", "off"))
    assert {n["action"] for n in out["nodes"]} == {"On"}  # the Redfish ResetType sent
    assert out["counts"]["done"] == 3 and out["action"] == "on" and out["ok"] is True
    for f in redfish.values():  # each emulator's own view, asked directly (sushy-tools'
        # fake driver powers a system on some seconds after the request)
        assert wait_until(lambda f=f: RedfishClient(f.url, USER, PASSWORD).power_state()
                          == "on", 20)
    rc, out, _ = power(tmp_path, "on", "tbox-001", ports)
    assert rc == 0 and statuses(out) == {"tbox-001": ("already", "on")}
    rc, out, _ = power(tmp_path, "off", RANGE, ports)
    assert rc == 0 and statuses(out) == dict.fromkeys(NODES, ("done", "on")), json.dumps(out)
    for f in redfish.values():
        assert wait_until(lambda f=f: RedfishClient(f.url, USER, PASSWORD).power_state()
                          == "off", 20)
    rc, out, _ = power(tmp_path, "status", RANGE, ports)
    assert rc == 0 and statuses(out) == dict.fromkeys(NODES, ("done", "off"))


def test_ipmi_range_on_status_off_with_the_real_ipmitool(
        tmp_path: Path, ipmi: dict[str, FakeBmcProcess]) -> None:
    ports = {n: f.port for n, f in ipmi.items()}
    rc, out, _ = power(tmp_path, "on", RANGE, ports, protocol="ipmi")
    assert rc == 0 and statuses(out) == dict.fromkeys(NODES, ("done", "off"))
    assert all(n["bmc"] == f"ipmi 127.0.0.1:{ports[n['node']]}" for n in out["nodes"])
    rc, out, _ = power(tmp_path, "status", RANGE, ports, protocol="ipmi")
    assert rc == 0 and statuses(out) == dict.fromkeys(NODES, ("done", "on"))
    rc, out, _ = power(tmp_path, "off", "tbox-00[2-3]", ports, protocol="ipmi")
    assert rc == 0 and statuses(out) == dict.fromkeys(NODES[1:], ("done", "on"))
    rc, out, _ = power(tmp_path, "status", RANGE, ports, protocol="ipmi")
    assert statuses(out) == {"tbox-001": ("done", "on"), "tbox-002": ("done", "off"),
                             "tbox-003": ("done", "off")}


def test_a_hung_bmc_does_not_hold_the_others(tmp_path: Path,
                                             redfish: dict[str, FakeBmcProcess]) -> None:
    silent = SilentBmc()  # tbox-001's BMC: takes the connection, never says anything
    try:
        # the hung one first, one node at a time, BMC requests allowed 60 s: the two
        # sushy-tools BMCs still get theirs, once tbox-001's 3 s deadline has passed
        ports = {"tbox-001": silent.port, **{n: redfish[n].port for n in NODES[1:]}}
        t0 = time.monotonic()
        rc, out, _ = power(tmp_path, "on", RANGE, ports, "--parallel", "1", "--deadline",
                           "3", "--bmc-timeout", "60")
        took = time.monotonic() - t0
        assert silent.held  # it was reached, and held the connection
    finally:
        silent.close()
    assert rc == 5
    first = out["nodes"][0]
    assert first["status"] == "failed" and "no answer within 3s" in first["problems"][0]
    assert statuses(out)["tbox-002"] == statuses(out)["tbox-003"] == ("done", "off")
    assert took < 60  # ended on the node's deadline, not on the 60 s BMC timeout


def test_a_node_with_a_running_job_is_drained_first_and_force_cancels_it(
        tmp_path: Path, ipmi: dict[str, FakeBmcProcess]) -> None:
    """off drains each Slurm node through the one drain: a job that does not end in
    --drain-timeout fails its node (left drained, its BMC untouched); --force cancels the
    job by id, then powers off; every node drained for it stays drained."""
    ports = {n: f.port for n, f in ipmi.items()}
    jobs = {"tbox-002": ["4242"], "tbox-001": ["900@miniray"]}  # 900: a worker's job
    power(tmp_path, "on", RANGE, ports, protocol="ipmi")
    rc, out, _ = power(tmp_path, "off", RANGE, ports, "--drain-timeout", "1",
                       protocol="ipmi", jobs=jobs)
    assert rc == 5
    by = {n["node"]: n for n in out["nodes"]}
    assert by["tbox-002"]["status"] == "failed" and by["tbox-002"]["action"] is None
    assert "still draining after 1s (--drain-timeout)" in by["tbox-002"]["problems"][0]
    assert by["tbox-001"]["status"] == by["tbox-003"]["status"] == "done"
    assert out["drained"] == {"tbox-001": "requeued 900; drained (drained)",
                              "tbox-003": "drained (drained)"}
    calls = (tmp_path / "calls.log").read_text()
    assert "scontrol update NodeName=tbox-002 State=DRAIN Reason=fleet power off" in calls
    assert "scancel" not in calls and "State=RESUME" not in calls
    rc, out, _ = power(tmp_path, "status", "tbox-002", ports, protocol="ipmi", jobs=jobs)
    assert statuses(out) == {"tbox-002": ("done", "on")}  # untouched
    rc, out, err = power(tmp_path, "off", "tbox-002", ports, "--force", protocol="ipmi",
                         jobs={"tbox-002": ["4242"]})
    assert rc == 0 and statuses(out) == {"tbox-002": ("done", "on")}
    assert out["force"] is True
    assert out["drained"] == {"tbox-002": "--force cancelled 4242; drained (drained)"}
    assert "--force: cancelling job(s) 4242" in err
    calls = (tmp_path / "calls.log").read_text()
    assert "scancel 4242" in calls and "State=RESUME" not in calls


def test_sigterm_during_the_drain_ends_power_with_143_and_the_node_drained(
        tmp_path: Path, ipmi: dict[str, FakeBmcProcess]) -> None:
    """The one signal catcher (fleet.signals) in power's real wait: no traceback, the
    wait stopped, the node left drained and its BMC untouched."""
    ports = {n: f.port for n, f in ipmi.items()}
    power(tmp_path, "on", "tbox-002", ports, protocol="ipmi")
    argv = ["power", "off", "tbox-002", "-i", str(INVENTORY), "--secrets",
            str(secrets(tmp_path)), "--pxe-state", str(pxe_state(tmp_path)),
            "--slurm-command", str(slurm_standin(tmp_path, {"tbox-002": ["4242"]})),
            "--bmc-address", _addresses(ports), "--bmc-protocol", "ipmi"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    proc = subprocess.Popen([sys.executable, "-m", "fleet", *argv], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    log = tmp_path / "calls.log"
    assert wait_until(lambda: log.exists() and "sinfo" in log.read_text(), 60)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "fleet power: stopped by SIGTERM; " in err and "stays drained" in err
    assert "Traceback" not in err and out == ""
    assert "State=RESUME" not in log.read_text()
    _rc, got, _ = power(tmp_path, "status", "tbox-002", ports, protocol="ipmi")
    assert statuses(got) == {"tbox-002": ("done", "on")}


def test_install_boot_mode_and_the_head_are_refused(
        tmp_path: Path, ipmi: dict[str, FakeBmcProcess]) -> None:
    inv = load_inventory(INVENTORY)
    arm_install(pxe_state(tmp_path), inv.nodes["tbox-001"].mac)
    ports = {"tbox-001": ipmi["tbox-001"].port, "head-01": ipmi["tbox-002"].port}
    secrets(tmp_path, inv.nodes["head-01"].profile.bmc.password_secret)
    rc, out, _ = power(tmp_path, "reset", "tbox-001,head-01", ports, protocol="ipmi")
    assert rc == 5
    by = {n["node"]: n for n in out["nodes"]}
    assert by["tbox-001"]["status"] == "refused"
    assert "PXE boot mode install" in by["tbox-001"]["problems"][0]
    assert by["head-01"]["status"] == "refused"
    assert "salt master" in by["head-01"]["problems"][0]
    # --force has one meaning (the jobs at the drain): it passes neither rule
    rc, out, _ = power(tmp_path, "reset", "tbox-001,head-01", ports, "--force",
                       protocol="ipmi")
    assert rc == 5 and {n["status"] for n in out["nodes"]} == {"refused"}
    # on never needs --force (head-01's BMC user is root, which the fake has not: the
    # rule that on is never refused is tests/ops/test_power.py's)
    rc, out, _ = power(tmp_path, "on", "tbox-001", ports, protocol="ipmi")
    assert rc == 0 and statuses(out) == {"tbox-001": ("done", "off")}


def test_the_password_is_in_no_argument_and_no_output(
        tmp_path: Path, ipmi: dict[str, FakeBmcProcess]) -> None:
    ports = {n: f.port for n, f in ipmi.items()}
    # a wrong address for one node: its failure message is printed in full
    ports["tbox-003"] = 9
    rc, out, err = power(tmp_path, "status", RANGE, ports, protocol="ipmi")
    assert rc == 5 and statuses(out)["tbox-003"][0] == "failed"
    assert PASSWORD not in json.dumps(out) + err


def test_usage_errors(tmp_path: Path) -> None:
    r = run_fleet("power", "off", "nosuch-[1-2]", "-i", str(INVENTORY))
    assert r.returncode == 2 and "not in the inventory" in r.stderr
    r = run_fleet("power", "sideways", "tbox-001", "-i", str(INVENTORY))
    assert r.returncode == 2
    r = run_fleet("power", "on", "tbox-001", "--parallel", "0", "-i", str(INVENTORY))
    assert r.returncode == 2 and "--parallel" in r.stderr
    assert os.environ.get("IPMI_PASSWORD") is None
