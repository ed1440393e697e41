"""The FAKE hardware behind the lab's FAKE BMCs (tests/lab/test_reinstall.py): receives the
external notifications of one sushy-tools Redfish emulator per lab node
(tests/bmc/fake_redfish_bmc.py ``--notify http://127.0.0.1:PORT/<node>``) and acts them out
on that node's container.

A power-off is a power cut: the container is stopped at once, before the BMC's request
returns (so the BMC reports off only once the node's old OS is gone, as a real one does).
A node's boot order has PXE first, as in the datacenter, so every power-on or reset asks
the head node's nginx for the node's boot script (``/state/<mac>.ipxe``, what iPXE
chains). The install script means an install:

1. the "disk" is wiped: the container is recreated from the node's lab image (its
   roles' packages installed, their services disabled: fleet.lab.preinstall), without a
   minion key or config (salt-minion does not start while the installer runs);
2. the installer fetches the node's own autoinstall user-data from the head node, from
   the node's address, and runs its late-commands in order, with ``/target`` the new
   root and ``curtin in-target --`` a chroot into it (as subiquity does). Commands that
   install salt-minion from Salt's apt repository are skipped, named in the log: the lab
   image has salt-minion from the wheelhouse, and that repository is not reachable;
3. the node reboots: through PXE again, where it must now get the local script (the
   callback set it); then from its disk (the container restarts).

The local script (or no link) boots the disk: the container is (re)started as it is.
Every event, with the node's Slurm state at each power action, goes to
``WORK/hardware.jsonl``. ``WORK/<node>.mode`` picks a test behaviour for the next install:
``hang`` (the installer never gets to its late-commands), ``break-apt`` (an apt config
that makes every later apt call fail, written after the late-commands), ``hold`` (the
installer waits before its late-commands until ``WORK/<node>.release`` exists, at most
600 s: a test acts meanwhile, e.g. a neighbour taking the node's address).

Run: python fake_lab_hardware.py --port P --work DIR   (prints ``ready``), with the
checkout's tools/ on PYTHONPATH
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import subprocess
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from fleet.lab import nodes as lab_nodes
from fleet.lab import podman as pm
from fleet.lab.paths import Paths
from fleet.lab.plan import LabNode, Plan
from fleet.lab.plan import load as load_plan
from fleet.master import slurm

ROOT = Path(__file__).resolve().parents[2]

# late-commands a lab install skips: salt-minion comes from the image's wheelhouse
SKIP = re.compile(r"apt-get|salt-archive-keyring|salt\.sources|salt\.pref")
CURTIN_SHIM = "#!/bin/sh\n# fleet lab fake installer: curtin in-target -- CMD\n" \
              "[ \"$1\" = in-target ] && shift\n[ \"$1\" = -- ] && shift\n" \
              "exec chroot /target \"$@\"\n"
HOLD_MINION = "[Unit]\n# fleet lab fake installer: no minion while installing\n" \
              "ConditionPathExists=!/etc/fleet-lab-installing\n"
DROPIN = "/etc/systemd/system/salt-minion.service.d/fleet-lab-installer.conf"
BROKEN_APT = "/etc/apt/apt.conf.d/00fleet-lab-broken"


class Hardware:
    def __init__(self, work: Path) -> None:
        self.work = work
        self.paths = Paths(ROOT)
        self.plan: Plan = load_plan(self.paths)
        self.head = next(n for n in self.plan.nodes if "provisioning" in n.roles)
        self.controller = next(n for n in self.plan.nodes if "slurm.controller" in n.roles)
        self.locks: dict[str, threading.Lock] = {}
        self.busy: dict[str, str] = {}  # node -> the action under way (off, boot)
        self.log_lock = threading.Lock()

    def log(self, node: str, **event: Any) -> None:
        with self.log_lock, (self.work / "hardware.jsonl").open("a") as fh:
            fh.write(json.dumps({"t": time.time(), "node": node, **event}) + "\n")

    def notify(self, node: str, system: dict[str, Any]) -> None:
        pending = system.get("pending_power") or {}
        want = str(pending.get("power_state") or system.get("power_state") or "")
        self.log(node, event="notification", power_state=system.get("power_state"),
                 pending=pending.get("power_state"), boot_device=system.get("boot_device"))
        lab_node = self.plan.node(node)
        running = pm.inspect(self.paths, lab_node.container)["State"].get("Running") \
            if pm.exists(self.paths, "container", lab_node.container) else False
        doing = self.busy.get(node)
        if want == "Off" and running and doing != "off":
            action = "off"
        elif "Restart" in want or (want == "On" and doing != "boot" and
                                   (not running or doing == "off")):
            # (a node being installed has no running container for a while; a power-on
            # that comes while the power-off still stops the container boots after it)
            action = "boot"
        else:
            return
        self.busy[node] = action
        if action == "off":  # a power cut: the node is dark before the BMC answers
            self.act(lab_node, action)
            return
        # a boot takes minutes: the BMC's request returns at once and the "hardware"
        # acts in the background, one action at a time per node
        threading.Thread(target=self.act, args=(lab_node, action), daemon=True).start()

    def act(self, node: LabNode, action: str) -> None:
        lock = self.locks.setdefault(node.hostname, threading.Lock())
        with lock:
            try:
                self.log(node.hostname, event=f"power-{action}",
                         slurm_state=self.slurm_state(node.hostname))
                if action == "off":  # ForceOff: no shutdown, at once
                    pm.podman(self.paths, "stop", "-t", "0", node.container, check=False)
                    self.log(node.hostname, event="powered-off")
                else:
                    self.boot(node, first=True)
            except Exception as exc:  # the node is left as it is; the test reads why
                self.log(node.hostname, event="error", error=f"{type(exc).__name__}: {exc}")
            finally:
                if self.busy.get(node.hostname) == action:
                    del self.busy[node.hostname]

    def slurm_state(self, node: str) -> str:
        res = pm.exec_(self.paths, self.controller.container, "sinfo", "-h", "-N", "-n",
                       node, "-o", "%T", check=False, timeout=30)
        # one row per partition the node is in (a worker node: two), each the node's state
        rows = slurm.node_rows(res.stdout)
        return ", ".join(rows) or f"unknown (rc {res.returncode})"

    def pxe_script(self, node: LabNode) -> str:
        """What iPXE would chain: the node's boot-mode link on the head node."""
        url = f"http://{self.head.address}/state/{node.mac.replace(':', '-')}.ipxe"
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                return str(resp.read().decode())
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return ""  # no link: boot.ipxe boots the disk
            raise

    def boot(self, node: LabNode, first: bool) -> None:
        script = self.pxe_script(node)
        mode = "install" if re.search(r"^kernel ", script, re.M) else "local"
        self.log(node.hostname, event="pxe", mode=mode)
        if mode == "install":
            if not first:
                self.log(node.hostname, event="install-loop",
                         error="PXE still serves the install script after an install")
                return
            if self.install(node, script):
                self.log(node.hostname, event="reboot")
                self.boot(node, first=False)
            return
        if pm.exists(self.paths, "container", node.container):
            self.reset(node)
            self.log(node.hostname, event="booted-disk")
        else:
            self.log(node.hostname, event="no-disk", error="nothing installed to boot")

    def reset(self, node: LabNode) -> None:
        """A reset: the container stops (at once, as on a reset) and starts again.

        Not ``podman restart``: when the container exits just as its stop timeout ends,
        podman's SIGKILL finds it stopped, fails, and leaves it stopped (seen in CI).
        """
        pm.podman(self.paths, "stop", "-t", "0", node.container, check=False)
        state = pm.inspect(self.paths, node.container)["State"]
        if state.get("Running"):
            raise RuntimeError(f"{node.container} still runs after its stop: {state}")
        pm.podman(self.paths, "start", node.container)

    def sh(self, node: LabNode, script: str,
           timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return pm.exec_(self.paths, node.container, "sh", "-c", script, check=False,
                        timeout=timeout)

    def install(self, node: LabNode, script: str) -> bool:
        behaviour = (self.work / f"{node.hostname}.mode").read_text().strip() \
            if (self.work / f"{node.hostname}.mode").exists() else "normal"
        info = pm.inspect(self.paths, node.container) \
            if pm.exists(self.paths, "container", node.container) else {}
        image = info.get("ImageName") or self.image()
        t0 = time.monotonic()
        self.log(node.hostname, event="install-start", behaviour=behaviour, image=image)
        lab_nodes.remove(self.paths, [node.container])
        lab_nodes.create(self.paths, self.plan, node, image, identity=False)
        marker = self.work / "installing"
        marker.write_text("fleet lab fake installer\n")
        dropin = self.work / "hold-minion.conf"
        dropin.write_text(HOLD_MINION)
        pm.podman(self.paths, "cp", str(marker), f"{node.container}:/etc/fleet-lab-installing")
        self.sh_create_dir(node)
        pm.podman(self.paths, "cp", str(dropin), f"{node.container}:{DROPIN}")
        pm.podman(self.paths, "start", node.container)
        self.wait_booted(node)
        if behaviour == "hang":
            self.log(node.hostname, event="install-hang", seconds=time.monotonic() - t0)
            return False
        if behaviour == "hold":
            self.log(node.hostname, event="install-held")
            release = self.work / f"{node.hostname}.release"
            deadline = time.monotonic() + 600
            while not release.exists() and time.monotonic() < deadline:
                time.sleep(0.5)
            self.log(node.hostname, event="install-released")
        m = re.search(r"s=(http://\S+?/)(?:\s|$|')", script)
        if m is None:
            self.log(node.hostname, event="install-failed",
                     error=f"no autoinstall data source in the install script: {script!r}")
            return False
        fetched = self.sh(node, f"curl -fsS --max-time 30 {shlex.quote(m.group(1))}user-data")
        if fetched.returncode != 0:
            self.log(node.hostname, event="install-failed",
                     error=f"user-data: {fetched.stderr.strip()}")
            return False
        late = yaml.safe_load(fetched.stdout)["autoinstall"].get("late-commands", [])
        self.sh(node, f"ln -sfn / /target && printf %s {shlex.quote(CURTIN_SHIM)} > "
                      "/usr/local/bin/curtin && chmod 0755 /usr/local/bin/curtin")
        for cmd in late:
            if SKIP.search(cmd):
                self.log(node.hostname, event="late-command", skipped=True, command=cmd[:120])
                continue
            res = self.sh(node, cmd)
            self.log(node.hostname, event="late-command", command=cmd[:120],
                     rc=res.returncode, output=(res.stdout + res.stderr).strip()[-400:])
            if res.returncode != 0:  # subiquity stops at a failed late-command
                self.log(node.hostname, event="install-failed", error=f"rc {res.returncode}")
                return False
        if behaviour == "break-apt":
            self.sh(node, f"echo 'this is not apt configuration' > {BROKEN_APT}")
        self.sh(node, f"rm -f /target /usr/local/bin/curtin /etc/fleet-lab-installing {DROPIN}")
        self.log(node.hostname, event="install-done", seconds=round(time.monotonic() - t0, 1))
        return True

    def sh_create_dir(self, node: LabNode) -> None:
        # podman cp needs the drop-in's directory in the (created, not started) container
        tmp = self.work / "dropin-dir" / "salt-minion.service.d"
        tmp.mkdir(parents=True, exist_ok=True)
        pm.podman(self.paths, "cp", str(tmp), f"{node.container}:/etc/systemd/system/")

    def wait_booted(self, node: LabNode) -> None:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            out = pm.exec_(self.paths, node.container, "systemctl", "is-system-running",
                           check=False, timeout=30).stdout.strip()
            if out in ("running", "degraded"):
                return
            time.sleep(1)
        raise RuntimeError(f"{node.container}: systemd did not come up")

    def image(self) -> str:
        """The lab OS's image (cached: this never builds while the lab is up)."""
        from fleet.lab.lab import build_image

        return build_image(self.paths).tag


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--work", type=Path, required=True)
    args = ap.parse_args()
    hw = Hardware(args.work)

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            hw.notify(self.path.strip("/"), json.loads(body))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *a: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
