"""The steps the PXE and VM test beds (tests/pxe, tests/vm) and the lab (tests/lab) share,
so that each bed's fixture reads as a short list of them: a progress line, the rendered
``pxe/`` tree, the boot files and the accelerator, the fake BMC's login, the environment
of the processes a bed starts, dnsmasq and nginx in the namespace, and the collection
rule that reports a bed's tests as skipped, with why, unless it was asked for."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from fleet.inventory.model import Inventory, Node
from fleet.render import render_all
from support import pxelab
from support.bmcfakes import htpasswd, stop_process
from support.cli import ROOT

BMC_PASSWORD = "password"


def skip_unless(enabled: bool, reason: str, folder: Path, items: list[pytest.Item]) -> None:
    """``pytest_collection_modifyitems`` of a bed's conftest: unless ``enabled``, every test
    under ``folder`` is reported as skipped with ``reason``."""
    if enabled:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if folder in Path(str(item.path)).resolve().parents:
            item.add_marker(skip)


def progress(config: pytest.Config, label: str) -> Callable[[str], None]:
    """A ``say(text)`` that prints ``[label   12.3s] text`` on pytest's terminal."""
    tr = config.pluginmanager.get_plugin("terminalreporter")
    t0 = time.monotonic()

    def say(text: str) -> None:
        if tr is not None:
            tr.write_line(f"[{label} {time.monotonic() - t0:7.1f}s] {text}")
    return say


def render_pxe(inv: Inventory, work: Path) -> None:
    """The inventory's rendered ``pxe/`` tree, written under ``work``."""
    for rel, text in render_all(inv).items():
        if rel.startswith("pxe/"):
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)


def boot_files(work: Path, image: str) -> str:
    """The role's boot files under ``work/images`` (pxelab.deploy_boot_files); the
    accelerator the guests get: ``kvm`` where a real KVM boot of ``image``'s kernel works,
    else ``tcg``."""
    (work / "images").mkdir()
    pxelab.deploy_boot_files(work / "pxe", work / "images", work / "state")
    return "kvm" if pxelab.kvm_works(work, work / "images" / image / "linux") else "tcg"


def bmc_login(work: Path, node: Node) -> None:
    """The node's BMC password in the secrets store under ``work`` (0600) and the fake
    BMC's htpasswd (``work/htpasswd``) for the profile's user."""
    (work / "secrets" / "bmc").mkdir(parents=True, mode=0o700)
    pw = work / "secrets" / "bmc" / node.profile.bmc.password_secret
    pw.write_text(BMC_PASSWORD + "\n")
    pw.chmod(0o600)
    htpasswd(work / "htpasswd", node.profile.bmc.user, BMC_PASSWORD)


def child_env() -> dict[str, str]:
    """The environment of the scripts a bed starts: this checkout's tools and tests/."""
    return {**os.environ, "PYTHONPATH": f"{ROOT / 'tools'}:{ROOT / 'tests'}"}


def serve_boot(ns: pxelab.Netns, work: Path, prov: Node,
               start_dnsmasq: Callable[..., tuple[pxelab.Proc, Path]] = pxelab.start_dnsmasq,
               site_repo: Path | None = None) -> tuple[pxelab.Proc, Path, pxelab.Proc, Path]:
    """dnsmasq (the rendered config) and nginx (the role's site, on the provisioning
    host's address; ``site_repo``: the site package repository it serves, if any) in
    ``ns``: (dnsmasq, its log, nginx, its access log)."""
    dns, dns_log = start_dnsmasq(ns, work / "pxe/dnsmasq/dnsmasq.conf", work)
    web, web_log = pxelab.start_nginx(ns, work, root=work / "pxe/http", state=work / "state",
                                      images=work / "images", listen=str(prov.address),
                                      site_repo=site_repo)
    return dns, dns_log, web, web_log


def start_fake_bmc(ns: pxelab.Netns, work: Path, system: str, *, bmc_port: int, hw_port: int,
                   hardware: list[str | Path]) -> tuple[subprocess.Popen[str],
                                                         subprocess.Popen[str]]:
    """In ``ns``: the FAKE BMC's hardware agent (``hardware``: its script and options; it
    gets ``--port``) and sushy-tools' Redfish emulator (tests/bmc/fake_redfish_bmc.py,
    system ``system`` powered off, the login of :func:`bmc_login`) notifying it of every
    power and boot change. Both print ``ready`` when up (bmcfakes.wait_ready)."""
    env = child_env()
    hw = subprocess.Popen(ns.cmd(sys.executable, *hardware, "--port", str(hw_port)),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    bmc = subprocess.Popen(ns.cmd(
        sys.executable, ROOT / "tests/bmc/fake_redfish_bmc.py", "--port", str(bmc_port),
        "--state-dir", work / "sushy", "--system", system, "--power", "Off",
        "--auth-file", work / "htpasswd", "--notify", f"http://127.0.0.1:{hw_port}/"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    return hw, bmc


def stop_fake_bmc(hw: subprocess.Popen[str], bmc: subprocess.Popen[str], work: Path) -> None:
    """Stop the fake BMC and its hardware agent (which ends its guest), then kill any guest
    it started that is still there (``work/hardware.jsonl``'s power-on events)."""
    stop_process(bmc)
    stop_process(hw)
    log = work / "hardware.jsonl"
    for line in log.read_text().splitlines() if log.exists() else []:
        event = json.loads(line)
        if event.get("event") == "power-on":
            with contextlib.suppress(ProcessLookupError):
                os.killpg(event["pid"], signal.SIGKILL)
