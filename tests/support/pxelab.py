"""The PXE test bed: a network namespace with a bridge, dnsmasq and nginx configured from
a rendered ``pxe/`` tree, and QEMU guests on tap devices (docs/pxe.md).

Only real parts: the rendered dnsmasq.conf is used as is (the command line adds only the
log file, pid file and user); nginx serves the Salt role's own site template. Everything
runs inside the namespace, so no host address or route is touched; every process started
here is ended by its pid.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import jinja2
import yaml

from fleet.render import bootstrap

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "salt" / "provisioning"
OVMF_CODE = Path("/usr/share/OVMF/OVMF_CODE_4M.fd")
OVMF_VARS = Path("/usr/share/OVMF/OVMF_VARS_4M.fd")
LOCAL_DISK_MARK = "FLEET-LOCAL-DISK-BOOTED"


def sh(*cmd: str | Path, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in cmd], check=check, text=True, capture_output=True)


def role_values(osfinger: str = "Debian-12") -> dict[str, Any]:
    """The provisioning role's defaults.yaml for one OS (values, then its osfinger entry)."""
    doc = yaml.safe_load((ROLE / "defaults.yaml").read_text())
    values: dict[str, Any] = doc["values"]
    for key, val in (doc["osfinger"].get(osfinger) or {}).items():
        values[key] = {**values[key], **val} if isinstance(val, dict) else val
    return values


def deploy_boot_files(pxe_root: Path, images_dir: Path, state: Path) -> None:
    """What the role's pxe.sls does with the packages' files: boot loaders and images,
    and the links that give TFTP-only GRUBs the state and images directories."""
    values = role_values()
    (pxe_root / "tftp" / "state").symlink_to(state)
    (pxe_root / "tftp" / "images").symlink_to(images_dir)
    for rel, src in values["bootloaders"].items():
        shutil.copyfile(src, pxe_root / rel)
    for name, src in values["images"].items():
        (images_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (images_dir / name).symlink_to(src)


def boot_sector(message: str) -> bytes:
    """A 512-byte MBR that writes ``message`` to COM1 and halts: proof of a disk boot."""
    msg = message.encode() + b"\r\n\0"
    code = bytes([0xFC, 0x31, 0xC0, 0x8E, 0xD8,  # cld; xor ax,ax; mov ds,ax
                  0xBA, 0xF8, 0x03,  # mov dx,0x3f8
                  0xBE, 0x16, 0x7C,  # mov si,0x7c16 (msg)
                  0xAC, 0x84, 0xC0, 0x74, 0x03, 0xEE, 0xEB, 0xF8,  # lodsb; test; jz; out; jmp
                  0xF4, 0xEB, 0xFD])  # hlt; jmp hlt
    assert len(code) == 0x16
    body = code + msg
    return body + b"\0" * (510 - len(body)) + b"\x55\xaa"


@dataclass
class Netns:
    name: str
    bridge: str
    address: str  # with prefix length
    taps: list[str] = field(default_factory=list)

    def __enter__(self) -> Netns:
        sh("ip", "netns", "add", self.name)
        self.run("ip", "link", "set", "lo", "up")
        self.run("ip", "link", "add", self.bridge, "type", "bridge")
        self.run("ip", "addr", "add", self.address, "dev", self.bridge)
        self.run("ip", "link", "set", self.bridge, "up")
        return self

    def __exit__(self, *exc: object) -> None:
        sh("ip", "netns", "del", self.name, check=False)

    def cmd(self, *cmd: str | Path) -> list[str]:
        return ["ip", "netns", "exec", self.name, *(str(c) for c in cmd)]

    def run(self, *cmd: str | Path) -> subprocess.CompletedProcess[str]:
        return sh(*self.cmd(*cmd))

    def tap(self) -> str:
        name = f"ftap{len(self.taps)}"
        self.run("ip", "tuntap", "add", name, "mode", "tap")
        self.run("ip", "link", "set", name, "master", self.bridge)
        self.run("ip", "link", "set", name, "up")
        self.taps.append(name)
        return name


class Proc:
    """A process started here, ended by its own pid (and its process group)."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.argv, self.log = argv, log
        with log.open("ab") as out:
            self.p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                      start_new_session=True)

    def alive(self) -> bool:
        return self.p.poll() is None

    def stop(self) -> None:
        if self.p.poll() is None:
            os.killpg(self.p.pid, signal.SIGTERM)
            try:
                self.p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait(10)


def start_dnsmasq(ns: Netns, conf: Path, work: Path,
                  leases: Path | None = None) -> tuple[Proc, Path]:
    """The rendered config's dnsmasq in NS; LEASES: its leases file, where a test reads it
    (else the package's default)."""
    log = work / "dnsmasq.log"
    log.touch()
    sh("dnsmasq", "--test", f"--conf-file={conf}")
    lease_args = [f"--dhcp-leasefile={leases}"] if leases is not None else []
    proc = Proc(ns.cmd("dnsmasq", f"--conf-file={conf}", "--keep-in-foreground",
                       f"--log-facility={log}", f"--pid-file={work / 'dnsmasq.pid'}",
                       *lease_args, "--user=root", "--group=root"), work / "dnsmasq.out")
    return proc, log


def start_nginx(ns: Netns, work: Path, *, root: Path, state: Path, images: Path,
                listen: str, site_repo: Path | None = None) -> tuple[Proc, Path]:
    """nginx with the role's own site (files/pxe-nginx.conf.jinja) in a minimal main config;
    ``site_repo``: a site package repository's directory, served as the role serves it."""
    repo = None if site_repo is None else {"dir": str(site_repo),
                                           "http_path": bootstrap.SITE_REPO_HTTP}
    site = jinja2.Template((ROLE / "files" / "pxe-nginx.conf.jinja").read_text()).render(
        root=root, state=state, images=images, port=f"{listen}:80", site_repo=repo,
        # the fleet page's server (provisioning.page): served from work/page, on its port
        page=root.parent / "page", page_port=8080, management=listen,
        management_cidrs=[f"{listen}/32"])
    ndir = work / "nginx"
    ndir.mkdir()
    (ndir / "site.conf").write_text(site)
    log = ndir / "access.log"
    (ndir / "nginx.conf").write_text(
        "user root;\nworker_processes 1;\npid " + str(ndir / "nginx.pid") + ";\n"
        "error_log " + str(ndir / "error.log") + " info;\n"
        "events { worker_connections 64; }\n"
        "http {\n  access_log " + str(log) + " combined;\n"
        "  client_body_temp_path " + str(ndir) + "/body;\n"
        "  proxy_temp_path " + str(ndir) + "/proxy;\n"
        "  fastcgi_temp_path " + str(ndir) + "/fcgi;\n"
        "  uwsgi_temp_path " + str(ndir) + "/uwsgi;\n"
        "  scgi_temp_path " + str(ndir) + "/scgi;\n"
        "  include " + str(ndir / "site.conf") + ";\n}\n")
    log.touch()
    args = ["nginx", "-p", str(ndir), "-e", str(ndir / "error.log"), "-c",
            str(ndir / "nginx.conf")]
    sh(*ns.cmd(*args, "-t", "-q"))
    return Proc(ns.cmd(*args, "-g", "daemon off;"), ndir / "nginx.out"), log


def kvm_works(work: Path, kernel: Path, seconds: float = 10.0) -> bool:
    """A short real probe (not the presence of /dev/kvm): a KVM guest must boot the
    installer kernel as far as mounting root within ``seconds``."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    log = work / "kvm-probe.log"
    proc = Proc(["qemu-system-x86_64", "-accel", "kvm", "-m", "256", "-nodefaults",
                 "-display", "none", "-no-reboot", "-serial", f"file:{log}", "-kernel",
                 str(kernel), "-append", "console=ttyS0 panic=-1"], work / "kvm-probe.out")
    try:
        return wait_for(lambda: bool(re.search(r"VFS: |Kernel panic|Run /init",
                                               log.read_text(errors="replace")))
                        if log.exists() else False, seconds, step=0.5)
    finally:
        proc.stop()


def wait_for(pred: Callable[[], bool], timeout: float, step: float = 1.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return True
        time.sleep(step)
    return pred()


@dataclass
class Guest:
    name: str
    mac: str
    firmware: str  # "bios" | "uefi" (firmware PXE) | "uefi-ipxe" (the NIC's iPXE EFI ROM)
    proc: Proc
    serial: Path

    def console(self) -> str:
        return self.serial.read_text(errors="replace") if self.serial.exists() else ""


def start_guest(ns: Netns, work: Path, name: str, mac: str, firmware: str, accel: str,
                disk: Path | None = None, memory_mb: int = 1024,
                reboots: bool = False, extra: Sequence[str] = ()) -> Guest:
    """A QEMU guest on a tap of NS; it exits when it reboots unless REBOOTS."""
    tap = ns.tap()
    serial = work / f"{name}.serial"
    argv = ["qemu-system-x86_64", "-accel", accel, "-smp", "1", "-m", str(memory_mb),
            "-display", "none", "-nodefaults", *([] if reboots else ["-no-reboot"]),
            "-serial", f"file:{serial}",
            "-netdev", f"tap,id=n0,ifname={tap},script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=n0,mac={mac},bootindex=1"
            # UEFI: the firmware's own PXE (shim, GRUB), not the iPXE EFI ROM of the NIC
            + (",romfile=" if firmware == "uefi" else "")]
    if firmware.startswith("uefi"):
        vars_copy = work / f"{name}.vars.fd"
        shutil.copyfile(OVMF_VARS, vars_copy)
        argv += ["-machine", "q35",
                 "-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={OVMF_CODE}",
                 "-drive", f"if=pflash,format=raw,unit=1,file={vars_copy}"]
    else:
        argv += ["-machine", "pc", "-boot", "order=nc"]
    if disk is not None:
        argv += ["-drive", f"file={disk},format=raw,if=ide,index=0"]
    argv += extra
    return Guest(name, mac, firmware, Proc(ns.cmd(*argv), work / f"{name}.qemu.out"), serial)


@dataclass(frozen=True)
class HttpReq:
    client: str
    path: str
    status: int


# nginx's combined log format: client, -, user, [time], "METHOD path proto", status
_ACCESS = re.compile(r'(\S+) \S+ \S+ \[[^]]*\] "(?:GET|HEAD) (\S+) [^"]*" (\d+)')


def http_log(path: Path) -> list[HttpReq]:
    """The GET and HEAD requests of an nginx access log, in order."""
    lines = path.read_text(errors="replace").splitlines()
    return [HttpReq(m[1], m[2], int(m[3])) for m in map(_ACCESS.match, lines) if m]


class Machine(Protocol):
    """What a fake BMC's hardware agent acts on (fake_bmc_hardware.py)."""

    lock: threading.Lock

    def notify(self, system: dict[str, Any]) -> None: ...

    def stop(self, why: str) -> None: ...


class PowerAgent:
    """One machine's power as sushy-tools' fake driver reports it: ``Off`` stops the guest,
    a ``Restart`` stops and starts it, ``On`` starts it when it is not running. Each
    notification and action goes to ``<work>/hardware.jsonl``. A subclass starts the guest
    (:meth:`launch`: its QEMU process and name)."""

    def __init__(self, ns: Netns, work: Path) -> None:
        self.ns = ns
        self.work = work
        self.guest: Proc | None = None
        self.guest_name = ""
        self.boots = 0
        self.lock = threading.Lock()

    def log(self, **event: Any) -> None:
        import json

        with (self.work / "hardware.jsonl").open("a") as fh:
            fh.write(json.dumps({"t": time.time(), **event}) + "\n")

    def notify(self, system: dict[str, Any]) -> None:
        pending = system.get("pending_power") or {}
        want = pending.get("power_state") or system.get("power_state")
        self.log(event="notification", power_state=system.get("power_state"),
                 pending=pending.get("power_state"), boot_device=system.get("boot_device"),
                 boot_mode=system.get("boot_mode"))
        with self.lock:
            running = self.guest is not None and self.guest.alive()
            if want == "Off" and running:
                self.stop("power off")
            elif want and "Restart" in want:
                self.stop("restart")
                self.start(system)
            elif want == "On" and not running:
                self.start(system)

    def launch(self, system: dict[str, Any], name: str) -> tuple[Proc, dict[str, Any]] | None:
        """Start the guest ``name``; its process and what the power-on event adds, or None
        (and the reason logged) where this machine cannot boot as ``system`` asks."""
        raise NotImplementedError

    def start(self, system: dict[str, Any]) -> None:
        name = f"guest-{self.boots + 1}"
        started = self.launch(system, name)
        if started is None:
            return
        self.boots += 1
        self.guest, self.guest_name = started[0], name
        self.log(event="power-on", guest=name, pid=self.guest.p.pid,
                 boot_device=system.get("boot_device"), **started[1])

    def stop(self, why: str) -> None:
        if self.guest is not None:
            self.guest.stop()
            self.log(event="power-off", guest=self.guest_name, why=why)
            self.guest = None


def serve_hardware(port: int, hw: Machine) -> None:
    """Serve sushy-tools' external notifications (PUT, the system's JSON) to ``hw`` on
    127.0.0.1:PORT. Prints ``ready`` once listening; SIGTERM or the end stops the machine."""
    import json
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            hw.notify(json.loads(body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *a: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)

    def end(*_: object) -> None:
        with hw.lock:
            hw.stop("hardware agent ended")
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, end)
    print("ready", flush=True)
    try:
        server.serve_forever()
    finally:
        with hw.lock:
            hw.stop("hardware agent ended")
