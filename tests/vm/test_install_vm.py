"""`fleet reinstall stor-1` reinstalls a QEMU guest, end to end (`make test-vm`,
docs/pxe.md; times in docs/benchmarks.md).

The bed of tests/pxe/test_reinstall_vm.py (the rendered pxe/ tree served by dnsmasq and
nginx in a network namespace; sushy-tools' Redfish emulator as the FAKE BMC, whose fake
driver notifies the fake hardware agent; the real `fleet reinstall` CLI and salt-key),
plus what a whole reinstall needs (tests/vm/vmbed.py): a real salt-master, a Debian
mirror (a caching proxy of deb.debian.org through a veth pair), an NTP server (chronyd on
the provisioning network's gateway, named by the bed's DNS), and a guest with a qcow2
disk that reboots in place (tests/support/fake_bmc_hardware.py --disk).

What runs, nothing interrupted: preflight -> rotate key -> power off (off already: nothing
sent) -> arm install -> power on (Redfish: PXE once, UEFI, On) -> the guest PXE-boots the
Debian installer from the rendered config; it fetches its preseed and reads the mirror's
indexes. Where the mirror has the installer's components (.udeb), the installer goes on
and installs (not seen here). Here it has none (the deb.debian.org this host reaches
serves no .udeb): the installer stops, `test_the_debian_installer_installed_the_system` is
SKIPPED with that reason, and the INSTALLER STAND-IN (tests/vm/standin.py) does the part
of the installer that cannot run, inside the installer in the guest: it writes the test's
Debian image (built on the host by debootstrap while the guest boots: GPT, Debian's shim
and GRUB; only the parts that hold data) to the disk, mounts it on /target and runs the
preseed's late_command from the installer's debconf database, as finish-install does (the
guest fetches the token and its rotated key and calls back), then reboots the guest. From
there for real again: boot mode local at the callback; the guest PXE-boots, GRUB's local
script chainloads the disk's shim, the installed system boots and its first-boot unit
prints the key's fingerprint (compared with the key the master accepted); its minion
connects with the rotated key -> converge (highstate: the real base.time, with base.apt,
and the test's own state) -> health (the gate of `fleet health`: chrony synchronised, to
the bed's NTP server) -> done. The site package repository is the site's too
(site.apt.repo): filled by fleet's fill for stor-1's highstate (its held kernel) from the
mirror's cache while the guest boots, signed by the test's secrets store's key, served at
the rendered /repo/ (vmbed.fill_site_repo); the rendered late_command trusts and pins it,
and apt on the installed guest takes the held kernel from it.

Test-only changes, each said here: the overlay points the image and site.apt at the
mirror, site.ntp_servers at the bed's NTP server, and site.salt.repo at a path that 404s
(Salt's apt repository is unreachable here, Debian 12 has no salt-minion); the stand-in's
image carries Salt (pip, the lab's wheelhouse), and the preseed's late_command gets a
salt-minion unit and the first-boot unit, inserted before the callback; the master's
pillar turns base.apt's Salt source off (vmbed.salt_master); the preseed gets an
early_command that starts the stand-in's guest half (it waits, doing nothing, unless the
installer stops on a missing .udeb); stor-1 is not an mkv volume in the overlay (the bed
has no mkv master for the health gate to ask; tests/lab covers that check).
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support import beds, pxelab
from support.pxebed import DEBIAN_IMAGE, SMALL, overlay_text, reinstall_argv
from support.pxelab import Netns
from vm import standin, vmbed

HERE = Path(__file__).resolve().parent

from fleet.inventory.load import load_inventory  # noqa: E402
from fleet.inventory.model import Inventory  # noqa: E402
from fleet.reinstall import bootguard  # noqa: E402
from fleet.render import installkey  # noqa: E402
from fleet.render.preseed import CURL  # noqa: E402
from support.bmcfakes import wait_ready  # noqa: E402

NODE = "stor-1"
SITE_REPO = "/srv/fleet/repo"  # site.apt.repo on the provisioning host (the site's value)
HELD = "linux-image-amd64"  # base.apt holds it on Debian: the repository holds it
ROOT = pxelab.ROOT
BMC_PORT, HW_PORT = 8410, 8411  # on the namespace's loopback
# bounded well above what the tier takes (callback about 300-380 s, converge about 150 s
# after it, 2026-12-04): a guest that hangs fails make test in minutes, not hours
INSTALL_TIMEOUT = float(os.environ.get("FLEET_VM_TIMEOUT", "900"))
CONVERGE_TIMEOUT = float(os.environ.get("FLEET_VM_CONVERGE_TIMEOUT", "900"))


@dataclass
class Run:
    work: Path
    inv: Inventory
    accel: str
    http_log: Path
    dhcp_log: Path
    ntp_ip: str  # the bed's NTP server (vmbed.TimeSource)
    rc: int = -1
    stderr: str = ""
    report: dict[str, Any] = field(default_factory=dict)
    t: dict[str, float] = field(default_factory=dict)  # wall-clock time of each event
    modes_at_callback: dict[str, str] = field(default_factory=dict)
    local_grub_after_callback: bool = False
    fingerprint: str = ""
    converged_file: str = ""
    pending_keys: list[str] = field(default_factory=list)
    mirror_files: int = 0
    udeb_404: str = ""  # the first installer component the mirror did not have
    repo: Any = None  # fleet.repo.fill.Report of the site repository's fill
    guest: dict[str, Any] = field(default_factory=dict)  # read on the guest after converge
    standin_rc: int | None = None  # the late_command's exit status, if the stand-in ran
    standin_error: str = ""

    @property
    def node_dir(self) -> Path:
        return self.work / "reinstall" / NODE

    def journal(self) -> list[dict[str, Any]]:
        path = self.node_dir / "journal.jsonl"
        return [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() \
            else []

    def hardware(self) -> list[dict[str, Any]]:
        path = self.work / "hardware.jsonl"
        return [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() \
            else []

    def console(self) -> str:
        """The guest's serial console, every boot (it reboots in place), in order."""
        paths = [Path(e["serial"]) for e in self.hardware() if e["event"] == "power-on"]
        return "".join(p.read_text(errors="replace") for p in paths if p.exists())

    def standin_events(self) -> list[str]:
        """The guest half's progress lines (tests/vm/standin_guest.sh), in order."""
        return re.findall(r"FLEET-VM-STANDIN ([^\r\n]*)", self.console())

    def late_command_output(self) -> str:
        """What the late_command printed in the guest, then the installer's syslog lines
        of that time (in-target logs there)."""
        m = re.search(r"FLEET-VM-STANDIN late-command-begin[^\n]*\n(.*)"
                      r"FLEET-VM-STANDIN late-command-exit", self.console(), re.S)
        return m.group(1) if m else ""

    def mirror_requests(self, mirror: vmbed.Mirror) -> list[pxelab.HttpReq]:
        return [x for x in pxelab.http_log(mirror.access_log()) if x.client == self.ip()]

    def token(self) -> dict[str, Any]:
        path = self.node_dir / "token.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def ip(self) -> str:
        return str(self.inv.nodes[NODE].address)

    def preseed_time(self) -> float | None:
        for line in self.http_log.read_text(errors="replace").splitlines():
            m = re.match(r'(\S+) \S+ \S+ \[([^]]*)\] "GET /hosts/' + NODE +
                         r'/preseed.cfg \S+" 200', line)
            if m and m.group(1) == self.ip():
                return datetime.datetime.strptime(m.group(2),
                                                  "%d/%b/%Y:%H:%M:%S %z").timestamp()
        return None

    def local_grub_fetches(self) -> int:
        mac = self.inv.nodes[NODE].mac
        return len(re.findall(r"dnsmasq-tftp\[\d+\]: sent \S+/state/grub\.cfg-" +
                              re.escape(mac) + r" to " + re.escape(self.ip()),
                              self.dhcp_log.read_text(errors="replace")))

    def step_ends(self) -> dict[str, dict[str, Any]]:
        return {e["step"]: e for e in self.journal()
                if e["event"] == "step" and e.get("phase") == "end"}

    def seconds(self) -> dict[str, float]:
        """Each event's seconds after power-on, and the steps' own durations."""
        t0 = self.t.get("power_on")
        out = {f"{k}_after_power_on": v - t0 for k, v in self.t.items()
               if t0 is not None and k != "power_on"}
        out.update({f"step_{k}": e["seconds"] for k, e in self.step_ends().items()
                    if "seconds" in e})
        return out


def _overlay(work: Path, mirror: str) -> dict[str, Any]:
    o: dict[str, Any] = json.loads(overlay_text(work))
    o["site"]["images"][DEBIAN_IMAGE]["mirror"] = f"{mirror}/debian"
    o["site"]["salt"] = {"repo": f"{mirror}/no-salt-repo-here"}  # unreachable: see vmbed
    # what the site gives a node, in the bed: base.apt's sources and the NTP server
    o["site"]["apt"] = {"mirror": f"{mirror}/debian",
                        "security_mirror": f"{mirror}/debian-security", "repo": SITE_REPO}
    o["site"]["ntp_servers"] = [vmbed.NTP_NAME]
    o["node_groups"]["storage"] = {"image": DEBIAN_IMAGE, "roles": [], "mkv_array": None}
    o["node_groups"]["head"] = {"roles": ["provisioning", "slurm.controller"]}
    o["mkv"] = None
    return o


def _fleet_argv(work: Path, conf: Path, *extra: str) -> list[str]:
    return reinstall_argv(NODE, work, conf, *extra)


def _der_sha256(pem: bytes) -> str:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_public_key(pem)
    der = key.public_bytes(serialization.Encoding.DER,
                           serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[Run]:
    from fleet.lab.image import salt_pin, wheelhouse
    from fleet.lab.paths import Paths
    from support.saltkeys import salt_key_bin, salt_master_config

    old = vmbed.raise_on_signals()  # the cleanup below runs on SIGINT/SIGTERM

    say = beds.progress(pytestconfig, "install-vm")
    salt_key_bin()
    work = tmp_path_factory.mktemp("install-vm")
    paths = Paths(ROOT)
    salt_version = salt_pin(paths)
    wheels = wheelhouse(paths, salt_version)
    say(f"Salt {salt_version} wheelhouse: {wheels}")
    (work / "overlay.yaml").write_text(json.dumps(_overlay(work, f"http://{vmbed.MIRROR_IP}")))
    inv = load_inventory(SMALL, work / "overlay.yaml")
    node = inv.nodes[NODE]
    beds.render_pxe(inv, work)
    vmbed.render_pillar(inv, work)
    repo_facts = vmbed.repo_facts(work, NODE)
    secrets = work / "secrets"
    secrets.mkdir(mode=0o700)
    preseed = work / "pxe" / "http" / "hosts" / NODE / "preseed.cfg"
    preseed.write_text(vmbed.insert_before_callback(
        preseed.read_text(), installkey.callback(inv, node, CURL),
        vmbed.salt_late_commands())
        + "d-i preseed/early_command string "
        + standin.early_command(f"http://{vmbed.MIRROR_IP}/standin") + "\n")
    accel = beds.boot_files(work, DEBIAN_IMAGE)
    conf, pki = salt_master_config(work)
    beds.bmc_login(work, node)
    disk = work / "disk.qcow2"
    pxelab.sh("qemu-img", "create", "-q", "-f", "qcow2", disk, f"{standin.DISK_GB}G")
    standin_dir = work / "standin"
    standin_dir.mkdir()
    env = beds.child_env()

    prov = inv.nodes[inv.raw.site.provisioning_host]
    net = prov.prov
    assert net.gateway is not None, "the NTP server goes on the provisioning network's gateway"
    ntp_ip = str(net.gateway)
    ns_name = f"fleet-vm-{os.getpid()}"
    with Netns(ns_name, prov.boot_nic, f"{prov.address}/{net.cidr.prefixlen}") as ns, \
            vmbed.Mirror(ns, work, standin_dir) as mirror, \
            vmbed.TimeSource(ns, work, ntp_ip, str(net.cidr)), \
            ThreadPoolExecutor(2) as pool:
        release = pxelab.sh(*ns.cmd("curl", "-sS", "-m", "60", "-o", "/dev/null", "-w",
                                    "%{http_code}",
                                    f"{mirror.url}/debian/dists/bookworm/InRelease"),
                            check=False).stdout
        if release != "200":
            pytest.fail(f"the mirror proxy does not reach {vmbed.UPSTREAM} (HTTP {release}): "
                        "the full install needs it; nothing else was run")
        # the guest half first (the installer's early_command fetches it); the rest is
        # needed only once the installer has stopped: built while the guest boots
        shutil.copyfile(HERE / "standin_guest.sh", standin_dir / "standin_guest.sh")
        say("installer stand-in: building the Debian image (debootstrap and Salt cached) and "
            "the installer kernel's disk drivers while the guest boots")
        image = pool.submit(_prepare_stand_in, work, inv, standin_dir, wheels, salt_version, say)
        repo = pool.submit(vmbed.fill_site_repo, work, NODE, repo_facts, secrets,
                           work / "siterepo")
        dns, dns_log, web, web_log = beds.serve_boot(
            ns, work, prov, functools.partial(vmbed.start_dnsmasq, ntp_ip=ntp_ip),
            site_repo=work / "siterepo")
        master = vmbed.salt_master(ns, conf, work, secrets)
        r = Run(work, inv, accel, web_log, dns_log, ntp_ip)
        hw, bmc = beds.start_fake_bmc(ns, work, NODE, bmc_port=BMC_PORT, hw_port=HW_PORT,
                                      hardware=[ROOT / "tests/support/fake_bmc_hardware.py",
                                                "--netns", ns_name, "--bridge", prov.boot_nic,
                                                "--work", work, "--mac", node.mac,
                                                "--disk", disk, "--accel", accel,
                                                "--memory", "2048"])
        cli: subprocess.Popen[str] | None = None
        try:
            wait_ready(hw, "the fake BMC's hardware agent")
            wait_ready(bmc, "the fake Redfish BMC")
            say(f"accelerator {accel}; mirror, salt-master, fake BMC and hardware agent up; "
                f"load average {os.getloadavg()}")
            argv = _fleet_argv(work, conf, "--json", "--timeout", str(INSTALL_TIMEOUT),
                               "--converge-timeout", str(CONVERGE_TIMEOUT),
                               "--health-timeout", "120",
                               "--bmc-address", f"127.0.0.1:{BMC_PORT}", "--bmc-scheme",
                               "http")
            r.t["cli_start"] = time.time()
            with (work / "cli.err").open("w") as err:
                cli = subprocess.Popen(ns.cmd(*argv), stdout=subprocess.PIPE, stderr=err,
                                       text=True, env=env, cwd=ROOT, start_new_session=True)
            _watch(r, cli, mirror, [image, repo], say, INSTALL_TIMEOUT + CONVERGE_TIMEOUT + 900)
            if r.repo is None:  # the installer ran on its own: no stand-in waited for it
                r.repo = repo.result()
            out = cli.stdout.read() if cli.stdout is not None else ""
            r.rc, r.stderr = cli.returncode, (work / "cli.err").read_text()
            r.report = json.loads(out) if out.strip() else {}
            salt = [str(Path(sys.executable).parent / "salt"), "-c", str(conf)]
            if r.step_ends().get("converge", {}).get("outcome") == "ok":
                got = subprocess.run(ns.cmd(*salt, NODE, "file.read", vmbed.CONVERGED_FILE,
                                            "--out=json", "--static", "-t", "120"),
                                     capture_output=True, text=True, timeout=300)
                with contextlib.suppress(ValueError):
                    r.converged_file = str(json.loads(got.stdout or "{}").get(NODE, ""))
                r.guest = _read_guest(ns, salt)
            r.pending_keys = sorted(p.name for p in (pki / "minions_pre").iterdir())
        finally:
            if cli is not None and cli.poll() is None:
                cli.send_signal(signal.SIGINT)
                try:
                    cli.wait(60)
                except subprocess.TimeoutExpired:
                    cli.kill()
                    cli.wait(10)
            beds.stop_fake_bmc(hw, bmc, work)
            master.stop()
            web.stop()
            dns.stop()
            r.mirror_files = sum(1 for x in r.mirror_requests(mirror) if x.status == 200)
            secs = r.seconds()
            (work / "times.json").write_text(json.dumps(
                {"wall_clock": r.t, "seconds": secs, "accel": accel,
                 "load_average_end": os.getloadavg(), "mirror_files": r.mirror_files},
                indent=2))
            say("seconds: " + json.dumps({k: round(v, 1) for k, v in secs.items()}))
            say(f"load average at the end: {os.getloadavg()}; files from the mirror: "
                f"{r.mirror_files}")
        keep = os.environ.get("FLEET_VM_KEEP")
        if keep:
            shutil.copytree(work, keep, symlinks=True, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("disk.qcow2", "disk-*", "target",
                                                          "*.ipc"))
    vmbed.restore_signals(old)
    yield r


def _read_guest(ns: Netns, salt: list[str]) -> dict[str, str]:
    """What apt on the installed guest says of the site repository: one call through its
    minion (each costs seconds under TCG), one section per name."""
    from fleet.render import bootstrap

    files = {"sources": bootstrap.SITE_REPO_SOURCES, "pin": bootstrap.SITE_REPO_PIN,
             "key": bootstrap.SITE_REPO_KEYRING}
    script = "".join(f"echo '=== {k}'; cat {path}; " for k, path in files.items()) + (
        f"echo '=== policy'; apt-cache policy {HELD}; "
        f"echo '=== kernel'; dpkg-query -W -f '${{Version}}' {HELD}")
    got = subprocess.run(ns.cmd(*salt, NODE, "cmd.run", script, "--out=json", "--static",
                                "-t", "120"), capture_output=True, text=True, timeout=300)
    try:
        out = str(json.loads(got.stdout or "{}").get(NODE, ""))
    except ValueError:
        return {"error": got.stdout + got.stderr}
    parts = re.split(r"^=== (\w+)\n", out, flags=re.M)
    return {"output": out, **dict(zip(parts[1::2], parts[2::2], strict=True))}


def _late_command(preseed: Path) -> str:
    prefix = "d-i preseed/late_command string "
    return next(ln[len(prefix):] for ln in preseed.read_text().splitlines()
                if ln.startswith(prefix))


def _prepare_stand_in(work: Path, inv: Inventory, out: Path, wheels: Path, salt: str,
                      say: Any) -> None:
    """The files the installer stand-in's guest half fetches once the installer has stopped
    (tests/vm/standin.py): the disk's segments and the disk drivers."""
    proxy = f"http://{vmbed.VETH_NET[0]}:3142"  # the host side of vmbed.Mirror
    tar = standin.base_tarball(vmbed.STANDIN_CACHE, f"{proxy}/debian", work / "debootstrap.log",
                               wheels, salt)
    root_uuid = standin.new_uuid()
    target = work / "target"
    standin.prepare_target(tar, target, hostname=NODE, domain=inv.raw.site.domain,
                           mirror=f"http://{vmbed.MIRROR_IP}/debian", root_uuid=root_uuid,
                           nameserver=str(inv.raw.site.dns_servers[0]))
    mib = standin.make_image(target, work, out, root_uuid)
    shutil.rmtree(target)
    standin.kernel_modules(work / "images" / DEBIAN_IMAGE / "initrd.gz", vmbed.STANDIN_CACHE,
                           proxy, out / "modules.tar")
    say(f"installer stand-in ready: {mib} MiB of the {standin.DISK_GB} GiB disk in "
        f"{len(list(out.glob('disk-[0-9]*')))} segments; {sorted(p.name for p in out.iterdir())}")


# complexity 21: one watcher of every event of an install run
def _watch(r: Run, cli: subprocess.Popen[str], mirror: vmbed.Mirror,  # noqa: C901
           ready: list[Future[Any]], say: Any, limit: float) -> None:
    """Follow the run until the CLI exits, recording when each event is first seen; let
    the installer stand-in go on when the mirror has no installer components (see
    standin.py), and stop the run if it fails."""
    node = r.inv.nodes[NODE]
    links = {"ipxe": r.work / "state" / (node.mac.replace(":", "-") + ".ipxe"),
             "grub": r.work / "state" / f"grub.cfg-{node.mac}"}
    grub_before_callback = 0
    last_progress = time.monotonic()
    end = time.monotonic() + limit
    while cli.poll() is None and time.monotonic() < end:
        now = time.time()
        if "power_on" not in r.t:
            on = [e for e in r.hardware() if e["event"] == "power-on"]
            if on:
                r.t["power_on"] = on[0]["t"]
                say("fake BMC powered the guest on (PXE, UEFI)")
        if "preseed" not in r.t:
            at = r.preseed_time()
            if at is not None:
                r.t["preseed"] = at
                say("the installer fetched stor-1's preseed")
        if "mirror_first" not in r.t and "preseed" in r.t and any(
                x.client == r.ip() for x in pxelab.http_log(mirror.access_log())):
            r.t["mirror_first"] = now
        if not r.udeb_404 and "preseed" in r.t:
            missing = [x.path for x in r.mirror_requests(mirror)
                       if x.path.endswith(".udeb") and x.status == 404]
            if missing:
                r.udeb_404 = missing[0]
                r.t["installer_stopped"] = now
                say(f"THE INSTALLER CANNOT INSTALL HERE: the mirror has no {missing[0]} "
                    "(HTTP 404: the reachable deb.debian.org serves no .udeb); the installer "
                    "stand-in in the guest takes over (tests/vm/standin.py)")
                got = [f.result() for f in ready]  # raises what the build or fill raised
                r.repo = got[1]
                say(f"{r.repo.summary()}: "
                    + ", ".join(f"{e.name} {e.version}" for e in r.repo.entries))
                go = r.work / "standin" / "go"
                go.with_suffix(".new").write_text(missing[0] + "\n")
                go.with_suffix(".new").rename(go)
        if r.udeb_404 and r.standin_rc is None and not r.standin_error:
            _follow_stand_in(r, cli, now, say)
        tok = r.token()
        if "key_fetched" not in r.t and tok.get("key_fetched"):
            r.t["key_fetched"] = tok["key_fetched"]
            say("the installer fetched its key with the token")
        if "callback" not in r.t and tok.get("done"):
            r.t["callback"] = tok["done"]
            r.modes_at_callback = {k: (p.readlink().name if p.is_symlink() else "")
                                   for k, p in links.items()}
            grub_before_callback = r.local_grub_fetches()
            say(f"the installer called back; boot-mode links: {r.modes_at_callback}")
        if "callback" in r.t and "local_grub" not in r.t and \
                r.local_grub_fetches() > grub_before_callback:
            r.t["local_grub"] = now
            r.local_grub_after_callback = True
            say("the guest rebooted: GRUB fetched its /state/ config (local)")
        if "firstboot" not in r.t and _first_boot(r, now):
            say(f"the installed system booted from its disk: key sha256 {r.fingerprint}")
        ends = r.step_ends()
        for step in ("wait_install", "converge", "health"):
            if step in ends and f"{step}_end" not in r.t:
                r.t[f"{step}_end"] = ends[step]["ts"]
                say(f"step {step}: {ends[step]['outcome']} ({ends[step].get('detail', '')})")
        if time.monotonic() - last_progress > 300:
            last_progress = time.monotonic()
            n = sum(1 for x in pxelab.http_log(mirror.access_log()) if x.client == r.ip())
            say(f"still running: {n} requests to the mirror so far; load average "
                f"{os.getloadavg()}")
        time.sleep(5)
    if cli.poll() is None:
        say(f"the run did not end within {limit:.0f}s: interrupting it")
    else:
        r.t["cli_exit"] = time.time()
        with contextlib.suppress(FileNotFoundError):
            ends = r.step_ends()
            for step in ("wait_install", "converge", "health"):
                if step in ends and f"{step}_end" not in r.t:
                    r.t[f"{step}_end"] = ends[step]["ts"]
        if "firstboot" not in r.t:
            _first_boot(r, time.time())


def _first_boot(r: Run, now: float) -> bool:
    """Record the installed system's first-boot line (its key's fingerprint), if printed."""
    m = re.search(vmbed.FIRSTBOOT_MARK + r" host=\S+ minion-key-sha256=([0-9a-f]+)",
                  r.console())
    if m:
        r.t["firstboot"] = now
        r.fingerprint = m.group(1)
    return m is not None


def _follow_stand_in(r: Run, cli: subprocess.Popen[str], now: float, say: Any) -> None:
    events = r.standin_events()
    for event, key in (("taking-over", "standin_start"), ("disk-written", "standin_disk")):
        if event in events and key not in r.t:
            r.t[key] = now
            say(f"installer stand-in in the guest: {event}")
    for event in events:
        if event.startswith("late-command-exit "):
            r.standin_rc = int(event.split()[1])
            r.t["standin_late_command"] = now
            say(f"installer stand-in in the guest: late_command exit {r.standin_rc}")
        elif event.startswith("failed: "):
            r.standin_error = event
    if r.standin_error or r.standin_rc not in (None, 0):
        r.standin_error = r.standin_error or f"late_command exit {r.standin_rc}"
        say(f"installer stand-in FAILED: {r.standin_error}; stopping the run")
        cli.send_signal(signal.SIGINT)


def _outcomes(r: Run) -> list[tuple[str, str]]:
    return [(e["step"], e["outcome"]) for e in r.journal()
            if e["event"] == "step" and e.get("phase") == "end"]


def test_every_step_ran_and_the_reinstall_succeeded(run: Run) -> None:
    assert _outcomes(run) == [
        ("preflight", "ok"), ("drain", "skipped"), ("rotate_key", "ok"),
        ("power_off", "ok"), ("arm_install", "ok"), ("power_on", "ok"), ("wait_install", "ok"),
        ("converge", "ok"),
        ("health", "ok"), ("resume", "skipped")], run.stderr[-3000:]
    assert run.rc == 0 and run.report.get("outcome") == "done", run.stderr[-3000:]


def test_the_fake_bmc_powered_the_guest_once_for_a_pxe_boot(run: Run) -> None:
    """One power-on (the reboot after the install is the guest's own), unless converge's
    boot guard restarted a guest still silent after the callback (fleet.reinstall.bootguard:
    under TCG its firmware once hung after the installer's reboot): then the journal and
    the converge step's detail say so, and there is exactly that one restart more, after
    the callback. Any other power event fails."""
    hw = run.hardware()
    on = [e for e in hw if e["event"] == "power-on"]
    assert on and on[0]["boot_device"] == "Pxe" and on[0]["firmware"] == "uefi", hw
    offs = [e for e in hw if e["event"] == "power-off"
            and e["why"] != "hardware agent ended"]  # the test's own teardown
    cycles = [e for e in run.journal() if e["event"] == "note"
              and e.get("what") == bootguard.NOTE and e.get("outcome") == "cycled"]
    if not cycles:
        assert len(on) == 1, hw
        assert not offs, hw
        return
    assert len(cycles) == 1, cycles
    print(f"converge's boot guard: {cycles[0]['detail']}")
    assert str(cycles[0]["detail"]) in run.step_ends().get("converge", {}).get("detail", ""), \
        run.step_ends()
    assert len(offs) == 1 and offs[0]["why"] == "restart" and len(on) == 2, hw
    assert run.t.get("callback", float("inf")) < offs[0]["t"] <= on[1]["t"], (run.t, hw)


def test_the_installer_read_the_mirror(run: Run) -> None:
    log = run.work / "mirror-ns" / "access.log"
    got = {x.path for x in pxelab.http_log(log) if x.client == run.ip() and x.status == 200}
    assert "/debian/dists/bookworm/InRelease" in got or "/debian/dists/bookworm/Release" in got
    assert any(p.startswith("/debian/dists/bookworm/main/debian-installer/binary-amd64/Packages")
               for p in got), sorted(got)


def test_the_debian_installer_installed_the_system(run: Run) -> None:
    """The one part that cannot run on a host whose only Debian archive serves no .udeb."""
    if run.udeb_404:
        pytest.skip(f"NOT RUN: the Debian installer's own install (partitioning, base system, "
                    f"boot loader): the mirror has no installer components ({run.udeb_404}: "
                    "HTTP 404; the deb.debian.org reachable here serves no .udeb files); the "
                    "installer stand-in (tests/vm/standin.py) did that part and ran the "
                    "rendered late_command")
    assert run.standin_rc is None
    assert "callback" in run.t


def test_the_stand_in_ran_the_rendered_late_command(run: Run) -> None:
    if not run.udeb_404:
        pytest.skip("the installer itself ran the late_command: no stand-in needed")
    assert not run.standin_error, run.standin_error + run.console()[-3000:]
    log = run.late_command_output()
    # what the installer's debconf gave is the whole late_command, as served
    rendered = _late_command(run.work / "pxe" / "http" / "hosts" / NODE / "preseed.cfg")
    begin = [e for e in run.standin_events() if e.startswith("late-command-begin ")]
    assert begin == [f"late-command-begin sha256={hashlib.sha256(rendered.encode()).hexdigest()}"]
    assert run.standin_rc == 0, log[-3000:]
    assert "fleet: minion key installed" in log, log[-3000:]
    assert run.standin_events()[-2:] == ["late-command-exit 0", "rebooting"]


def test_the_installer_fetched_its_key_with_the_token_and_called_back(run: Run) -> None:
    wait = run.step_ends()["wait_install"]
    assert "installer called back" in wait["detail"], wait
    assert "never fetched its key" not in wait["detail"], wait
    assert run.t["power_on"] < run.t["preseed"] < run.t["key_fetched"] <= run.t["callback"]


def test_the_boot_mode_was_local_at_the_callback(run: Run) -> None:
    assert run.modes_at_callback == {"ipxe": "local.ipxe", "grub": "grub-local.cfg"}, \
        run.modes_at_callback
    assert not (run.work / "state-tokens" / installkey.token_name(run.inv.nodes[NODE])).exists()


def test_the_guest_rebooted_through_pxe_local_into_its_disk(run: Run) -> None:
    assert run.local_grub_after_callback, "no PXE boot in local mode after the callback"
    assert "firstboot" in run.t, "the installed system never printed its first-boot line: " \
        + run.console()[-2000:]
    assert run.t["callback"] < run.t["local_grub"] <= run.t["firstboot"]
    # the installer ran once: its kernel was fetched before the callback only
    preseeds = [p for p, s in ((x.path, x.status) for x in pxelab.http_log(run.http_log))
                if p == f"/hosts/{NODE}/preseed.cfg" and s == 200]
    assert len(preseeds) == 1


def test_the_key_on_the_disk_is_the_one_the_master_accepted(run: Run) -> None:
    accepted = run.work / "salt" / "pki" / "minions" / NODE
    assert run.fingerprint == _der_sha256(accepted.read_bytes())
    assert run.pending_keys == []  # the minion never offered another key


def test_the_minion_converged_with_the_rotated_key(run: Run) -> None:
    converge = run.step_ends()["converge"]
    assert converge["outcome"] == "ok" and "highstate ok" in converge["detail"], converge
    assert run.converged_file.strip() == "converged by fleet test-vm"


def test_the_health_gate_found_the_clock_synchronised_to_the_beds_ntp_server(run: Run) -> None:
    health = run.step_ends()["health"]
    assert health["outcome"] == "ok", health
    # chronyc -n tracking on the guest: the reference is the bed's chronyd, one stratum
    # below its `local stratum 8`
    assert f"chrony: synchronised to {_hex_ip(run.ntp_ip)} ({run.ntp_ip}), stratum 9" \
        in health["detail"], health


def _hex_ip(ip: str) -> str:
    return "".join(f"{int(x):02X}" for x in ip.split("."))


def test_fleets_fill_made_the_site_repository_of_the_nodes_held_kernel(run: Run) -> None:
    """fleet.repo.fill, for stor-1's highstate, from the mirror: the held kernel and its
    image (locked to it), signed; nothing a stand-in (the site has none)."""
    from fleet.repo import reprepro

    entries = {e.name: e for e in run.repo.entries}
    assert HELD in entries and "linux-headers-amd64" in entries, run.repo.entries
    image = [n for n in entries if re.fullmatch(r"linux-image-[0-9.]+-[0-9]+-amd64", n)]
    assert image and entries[image[0]].version == entries[HELD].version, run.repo.entries
    assert not run.repo.stand_ins
    repo = run.work / "siterepo"
    index = reprepro.packages_index(repo, vmbed.REPO_CODENAME).read_text()
    assert f"Package: {HELD}\n" in index
    assert (repo / "dists" / vmbed.REPO_CODENAME / "InRelease").read_text().startswith(
        "-----BEGIN PGP SIGNED MESSAGE-----")


def test_the_late_command_trusted_the_site_repository_before_its_apt_update(run: Run) -> None:
    """The rendered late_command fetched the repository's key and read its signed index
    from the boot nginx (/repo/), as a node does on the site."""
    from fleet.render import bootstrap

    got = [x.path for x in pxelab.http_log(run.http_log)
           if x.client == run.ip() and x.status == 200]
    key = f"{bootstrap.SITE_REPO_HTTP}/{bootstrap.SITE_REPO_KEY_FILE}"
    release = f"{bootstrap.SITE_REPO_HTTP}/dists/{vmbed.REPO_CODENAME}/InRelease"
    assert key in got and release in got, got
    # the key before the index; both before the install token's key fetch (the callback)
    assert got.index(key) < got.index(release), got
    assert not [x for x in pxelab.http_log(run.http_log)
                if x.path.startswith(f"{bootstrap.SITE_REPO_HTTP}/.")]


def test_apt_on_the_installed_guest_takes_the_held_kernel_from_the_site_repository(
        run: Run) -> None:
    from fleet.render import bootstrap

    g = run.guest
    assert g.get("sources") == bootstrap.site_repo_sources(run.inv, vmbed.REPO_CODENAME), g
    assert g.get("pin") == bootstrap.site_repo_pin(), g
    assert g.get("key", "").startswith("-----BEGIN PGP PUBLIC KEY BLOCK-----"), g
    held = {e.name: e.version for e in run.repo.entries}[HELD]
    # apt-cache policy: the repository's version is the candidate, at 1001, from the
    # repository. It is the installed one too where the installer stand-in's image (cached
    # per machine) was built from the archive the fill read (every run so far, docs/pxe.md);
    # an image older than the archive's kernel keeps its own (docs/repo.md: the installed
    # kernel is the mirror's), which base.apt's hold does not replace
    policy = g.get("policy", "")
    assert re.search(rf"^  Candidate: {re.escape(held)}$", policy, re.M), policy
    m = re.search(rf"^ (?:\*\*\*|   ) {re.escape(held)} (\d+)\n((?:        ?.*\n?)*)", policy,
                  re.M)
    assert m and m.group(1) == "1001", policy
    url = bootstrap.site_repo_url(run.inv)
    assert re.search(rf"^\s+1001 {re.escape(url)} {vmbed.REPO_CODENAME}/main amd64 Packages$",
                     m.group(2), re.M), policy
    if g.get("kernel") == held:  # the installed version's table is the one above
        assert f" *** {held} 1001\n" in policy, policy
