"""`fleet reinstall` against a QEMU guest (the part that fits in CI; docs/pxe.md).

The real CLI runs in the test's network namespace with the rendered pxe/ tree served by
dnsmasq and nginx (as tests/pxe/conftest.py), a real salt-key on a temp master config,
and a FAKE BMC: sushy-tools' Redfish emulator (tests/bmc/fake_redfish_bmc.py) whose fake
driver notifies tests/support/fake_bmc_hardware.py, the fake BMC's "hardware", which powers
a QEMU guest with the node's MAC on and off. The node is stor-1, a storage node: not in
Slurm, so the drain step is skipped (and says so).

What runs: preflight -> rotate key -> power off (the fake BMC's system is off already:
nothing sent, confirmed off) -> arm install (token published) -> power on (Redfish:
PXE once, UEFI, On) -> the guest PXE-boots the Debian installer, which fetches stor-1's
preseed from nginx. Then the test interrupts the run (SIGINT, as an operator's Ctrl-C)
and ends it with `--abort`: the node must be back in local boot, the token withdrawn.
`ip netns exec` execs the command (no fork), so the SIGINT goes to fleet's own pid; the
CLI handles it even when it inherited SIGINT ignored (a job that a non-interactive shell
starts in the background does: the cause of this test's one CI timeout, see
tests/reinstall/test_cli.py), and exits 130.
What does NOT run here: the install itself (no Debian mirror in the namespace; hours
under TCG), so neither the key fetch nor the callback from the guest (tests/render/
test_installkey.py runs those late-commands against the real endpoint instead).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.render import installkey
from support import beds, pxelab
from support.bmcfakes import wait_ready
from support.pxebed import DEBIAN_IMAGE, INSTALL_TIMEOUT, SMALL, overlay_text, reinstall_argv
from support.pxelab import Netns

NODE = "stor-1"
ROOT = pxelab.ROOT
BMC_PORT, HW_PORT = 8400, 8401  # on the namespace's loopback


@dataclass
class Run:
    work: Path
    inv: Inventory
    accel: str
    http_log: Path
    rc: int = -1
    stderr: str = ""
    report: dict[str, Any] = field(default_factory=dict)
    abort_out: str = ""
    abort_rc: int = -1
    token_while_armed: str | None = None
    other_address_status: str = ""
    times: dict[str, float] = field(default_factory=dict)

    def journal(self) -> list[dict[str, Any]]:
        path = self.work / "reinstall" / NODE / "journal.jsonl"
        return [json.loads(ln) for ln in path.read_text().splitlines()]

    def hardware(self) -> list[dict[str, Any]]:
        path = self.work / "hardware.jsonl"
        return [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() \
            else []

    def step_seconds(self) -> dict[str, float]:
        return {e["step"]: e["seconds"] for e in self.journal()
                if e["event"] == "step" and e.get("phase") == "end"}

    def preseed_time(self) -> float | None:
        """Wall-clock time (s resolution) of nginx's 200 for stor-1's preseed."""
        ip = str(self.inv.nodes[NODE].address)
        for line in self.http_log.read_text(errors="replace").splitlines():
            m = re.match(r'(\S+) \S+ \S+ \[([^]]*)\] "GET /hosts/' + NODE +
                         r'/preseed.cfg \S+" 200', line)
            if m and m.group(1) == ip:
                return datetime.datetime.strptime(m.group(2),
                                                  "%d/%b/%Y:%H:%M:%S %z").timestamp()
        return None

    def node_paths(self) -> list[tuple[str, int]]:
        ip = str(self.inv.nodes[NODE].address)
        return [(r.path, r.status) for r in pxelab.http_log(self.http_log) if r.client == ip]


def _fleet_argv(work: Path, conf: Path, *extra: str) -> list[str]:
    return reinstall_argv(NODE, work, conf, *extra)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[Run]:
    from support.saltkeys import salt_key_bin, salt_master_config

    say = beds.progress(pytestconfig, "reinstall-vm")
    salt_key_bin()
    work = tmp_path_factory.mktemp("reinstall-vm")
    overlay = json.loads(overlay_text(work))
    overlay["node_groups"]["storage"] = {"image": DEBIAN_IMAGE}
    (work / "overlay.yaml").write_text(json.dumps(overlay))
    inv = load_inventory(SMALL, work / "overlay.yaml")
    node = inv.nodes[NODE]
    beds.render_pxe(inv, work)
    accel = beds.boot_files(work, DEBIAN_IMAGE)
    conf, _pki = salt_master_config(work)
    beds.bmc_login(work, node)
    env = beds.child_env()

    prov = inv.nodes[inv.raw.site.provisioning_host]
    ns_name = f"fleet-rvm-{os.getpid()}"
    with Netns(ns_name, prov.boot_nic, f"{prov.address}/{prov.prov.cidr.prefixlen}") as ns:
        dns, _dns_log, web, web_log = beds.serve_boot(ns, work, prov)
        r = Run(work, inv, accel, web_log)
        hw, bmc = beds.start_fake_bmc(ns, work, NODE, bmc_port=BMC_PORT, hw_port=HW_PORT,
                                      hardware=[ROOT / "tests/support/fake_bmc_hardware.py",
                                                "--netns", ns_name, "--bridge", prov.boot_nic,
                                                "--work", work, "--mac", node.mac,
                                                "--accel", accel])
        cli: subprocess.Popen[str] | None = None
        try:
            wait_ready(hw, "the fake BMC's hardware agent")
            wait_ready(bmc, "the fake Redfish BMC")
            say(f"accelerator {accel}; fake BMC and its hardware agent up")
            argv = _fleet_argv(work, conf, "--json", "--timeout", str(INSTALL_TIMEOUT + 60),
                               "--bmc-address", f"127.0.0.1:{BMC_PORT}", "--bmc-scheme",
                               "http")
            t_cli = time.monotonic()
            with (work / "cli.err").open("w") as err:
                cli = subprocess.Popen(ns.cmd(*argv), stdout=subprocess.PIPE, stderr=err,
                                       text=True, env=env, cwd=ROOT,
                                       start_new_session=True)
            # published in the tokens directory (never the TFTP-served state directory)
            token = work / "state-tokens" / installkey.token_name(node)
            preseed = f"/hosts/{NODE}/preseed.cfg"

            def fetched() -> bool:
                assert cli is not None and cli.poll() is None, (work / "cli.err").read_text()
                return (preseed, 200) in r.node_paths()

            armed = pxelab.wait_for(token.exists, 120, step=0.5)
            if armed:
                r.times["armed"] = time.monotonic() - t_cli
                r.token_while_armed = token.read_text()
                # from an address that is not stor-1's: nginx must refuse it
                other = str(inv.nodes["stor-2"].address)
                ns.run("ip", "addr", "add", f"{other}/32", "dev", prov.boot_nic)
                r.other_address_status = ns.run(
                    "curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--interface",
                    other, f"http://{prov.address}/state/{token.name}").stdout
                ns.run("ip", "addr", "del", f"{other}/32", "dev", prov.boot_nic)
                say(f"armed after {r.times['armed']:.1f}s; token from another address: "
                    f"HTTP {r.other_address_status}")
            ok = armed and pxelab.wait_for(fetched, INSTALL_TIMEOUT, step=2)
            on = [e for e in r.hardware() if e["event"] == "power-on"]
            fetched_at = r.preseed_time() if ok else None
            if on and fetched_at is not None:  # both wall-clock: the agent's log, nginx's
                r.times["power_on_to_preseed"] = fetched_at - on[0]["t"]
            r.times["cli_to_preseed"] = time.monotonic() - t_cli if ok else -1
            say(f"installer fetched its preseed: {ok} ({r.times})")
            # the operator's Ctrl-C during wait_install, to fleet's own pid (ip netns exec
            # execs, it does not fork)
            t_int = time.monotonic()
            cli.send_signal(signal.SIGINT)
            try:
                out, _ = cli.communicate(timeout=60)
            finally:
                r.times["sigint_to_exit"] = time.monotonic() - t_int
            r.rc, r.stderr = cli.returncode, (work / "cli.err").read_text()
            r.report = json.loads(out) if out.strip() else {}
            ab = subprocess.run(ns.cmd(*_fleet_argv(work, conf, "--abort", "--callback",
                                                     "none")),
                                text=True, capture_output=True, env=env, cwd=ROOT, timeout=120)
            r.abort_rc, r.abort_out = ab.returncode, ab.stdout + ab.stderr
        finally:
            if cli is not None and cli.poll() is None:
                cli.kill()
                cli.wait(10)
            beds.stop_fake_bmc(hw, bmc, work)
            web.stop()
            dns.stop()
            with contextlib.suppress(FileNotFoundError, ValueError):
                r.times.update({f"step_{k}": v for k, v in r.step_seconds().items()})
            (work / "times.json").write_text(json.dumps(r.times, indent=2))
            say("times (s): " + json.dumps({k: round(v, 2) for k, v in r.times.items()}))
        if os.environ.get("FLEET_PXE_KEEP"):
            import shutil
            shutil.copytree(work, os.environ["FLEET_PXE_KEEP"] + "-reinstall", symlinks=True,
                            dirs_exist_ok=True)
        yield r


def _ends(r: Run) -> list[tuple[str, str]]:
    return [(e["step"], e["outcome"]) for e in r.journal()
            if e["event"] == "step" and e.get("phase") == "end"]


def test_steps_up_to_power_ran_and_the_wait_was_interrupted(run: Run) -> None:
    assert _ends(run) == [("preflight", "ok"), ("drain", "skipped"), ("rotate_key", "ok"),
                          ("power_off", "ok"), ("arm_install", "ok"), ("power_on", "ok"),
                          ("wait_install", "failed")], run.stderr
    wait = next(e for e in run.journal() if e.get("step") == "wait_install"
            and e.get("phase") == "end")
    assert wait["detail"] == "interrupted by the operator" and wait["signal"] == "SIGINT"
    assert run.rc == 130 and run.report["outcome"] == "failed", run.stderr
    assert run.report["signal"] == "SIGINT"
    assert run.times["sigint_to_exit"] < 15, run.times  # cleanup is milliseconds of work


def test_the_fake_bmc_powered_the_guest_on_for_a_pxe_boot(run: Run) -> None:
    on = [e for e in run.hardware() if e["event"] == "power-on"]
    assert len(on) == 1, run.hardware()
    assert on[0]["boot_device"] == "Pxe" and on[0]["firmware"] == "uefi"


def test_the_installer_fetched_its_own_preseed(run: Run) -> None:
    assert run.times.get("cli_to_preseed", -1) > 0, \
        f"stor-1's installer never fetched its preseed: {run.node_paths()}"
    paths = [p for p, s in run.node_paths() if s == 200]
    assert f"/hosts/{NODE}/preseed.cfg" in paths
    others = [p for p in paths if p.startswith("/hosts/") and not p.startswith(f"/hosts/{NODE}/")]
    assert others == []


def test_token_was_published_while_armed_and_only_to_the_node(run: Run) -> None:
    assert run.token_while_armed, "no token next to the boot-mode links while armed"
    assert run.other_address_status == "403"


def test_after_the_interrupt_and_abort_the_node_boots_locally(run: Run) -> None:
    notes = [e for e in run.journal() if e["event"] == "note"]
    # the guest never called back: disarmed, and the pre-accepted key removed
    assert [n["what"] for n in notes] == ["disarmed", "key-revoked"]
    assert notes[0]["boot_mode"] == "local"
    assert run.report["left"]["boot_mode"] == "local (set back after the failure)"
    node = run.inv.nodes[NODE]
    link = run.work / "state" / (node.mac.replace(":", "-") + ".ipxe")
    assert link.readlink().name == "local.ipxe"
    assert not (run.work / "state-tokens" / installkey.token_name(node)).exists()
    assert not any(p.name.endswith(".token") for p in (run.work / "state").iterdir())
    assert run.abort_rc == 0, run.abort_out
    # the interrupt already revoked the token and removed the key waiting on the master
    assert "boot_mode: local" in run.abort_out and "token: none outstanding" in run.abort_out
    assert "key: no key on the master" in run.abort_out
    finish = [e for e in run.journal() if e["event"] == "finish"]
    assert [f["outcome"] for f in finish] == ["failed", "aborted"]
