"""The full-install VM test bed (tests/vm, `make test-vm`): what tests/pxe's bed lacks for a
whole Debian install.

- A Debian mirror in the namespace: a veth pair links the test's namespace to this host
  (a /30 of its own, VETH_NET, that no host route uses); on the host side nginx is a
  caching reverse proxy of deb.debian.org (packages cached under
  ~/.cache/fleet-vm-mirror/proxy, so a rerun downloads only the indexes); in the namespace a
  second nginx listens on MIRROR_IP:80 (an extra address on the provisioning bridge) and
  forwards there; it also serves the lab's wheelhouse (/wheels/) and the installer
  stand-in's files (/standin/). dnsmasq answers deb.debian.org and security.debian.org
  with MIRROR_IP (an extra hosts file on its command line; the rendered dnsmasq.conf is
  used as is), so the installer's security and updates sources work as on a connected
  network.
- Salt for the installed guest: Salt's apt repository (site.salt.repo) is not reachable
  from this host and Debian 12 has no salt-minion package, so the test inserts, before
  the rendered late-commands' last one (the callback), commands that install Salt with
  pip from the lab's wheelhouse (fleet.lab.image.wheelhouse, served by the mirror nginx
  under /wheels/) and a salt-minion systemd unit; the rendered commands that configure
  the minion (id, master, the rotated key) are unchanged.
- A first-boot unit (test only) that writes the SHA-256 of the DER public key derived
  from the disk's /etc/salt/pki/minion/minion.pem to the serial console: the test
  compares it with the key the master accepted.
- A Salt master in the namespace (the real salt-master, the test's pki dir, a one-state
  tree) for `fleet reinstall`'s converge step.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from fleet.render.preseed import write_file
from support import pxelab
from support.pxelab import Netns, Proc

ROOT = pxelab.ROOT
ENABLED = os.environ.get("FLEET_VM") == "1"
SKIP_REASON = ("FULL VM INSTALL TEST NOT RUN: set FLEET_VM=1 (as root, with the packages "
               "of tools/install-pxe-deps.sh and tools/install-vm-deps.sh, and a host that "
               "reaches deb.debian.org) or run `make test-vm`; it reinstalls a QEMU "
               "guest under TCG, about 25 minutes")
UPSTREAM = os.environ.get("FLEET_VM_UPSTREAM", "http://deb.debian.org")
CACHE = Path(os.environ.get("FLEET_VM_CACHE", Path.home() / ".cache" / "fleet-vm-mirror"))
# nginx's own: its cache loader deletes any file there that it did not write
PROXY_CACHE = CACHE / "proxy"
STANDIN_CACHE = CACHE / "standin"  # the base-system tarball, the installer kernel's .deb
VETH_NET = ("10.250.77.1", "10.250.77.2", 30)  # host side, namespace side
MIRROR_IP = "10.1.0.11"  # on the namespace's provisioning bridge (no node has it)
MIRROR_NAMES = ("deb.debian.org", "security.debian.org")
FIRSTBOOT_MARK = "FLEET-VM-FIRSTBOOT"
CONVERGED_FILE = "/etc/fleet-vm-converged"


def _nginx_conf(ndir: Path, body: str) -> Path:
    ndir.mkdir(parents=True, exist_ok=True)
    conf = ndir / "nginx.conf"
    conf.write_text(
        "user root;\nworker_processes 1;\npid " + str(ndir / "nginx.pid") + ";\n"
        "error_log " + str(ndir / "error.log") + " info;\n"
        "events { worker_connections 256; }\n"
        "http {\n  access_log " + str(ndir / "access.log") + " combined;\n"
        "  client_body_temp_path " + str(ndir) + "/body;\n"
        "  proxy_temp_path " + str(ndir) + "/proxy;\n"
        "  fastcgi_temp_path " + str(ndir) + "/fcgi;\n"
        "  uwsgi_temp_path " + str(ndir) + "/uwsgi;\n"
        "  scgi_temp_path " + str(ndir) + "/scgi;\n"
        "  include /etc/nginx/mime.types;\n  default_type application/octet-stream;\n"
        + body + "}\n")
    (ndir / "access.log").touch()
    return conf


def _nginx(argv_prefix: list[str], ndir: Path, conf: Path) -> Proc:
    args = ["nginx", "-p", str(ndir), "-e", str(ndir / "error.log"), "-c", str(conf)]
    subprocess.run([*argv_prefix, *args, "-t", "-q"], check=True, text=True,
                   capture_output=True)
    return Proc([*argv_prefix, *args, "-g", "daemon off;"], ndir / "nginx.out")


@dataclass
class Mirror:
    ns: Netns
    work: Path
    wheels: Path
    standin: Path  # the installer stand-in's files for the guest (tests/vm/standin.py)
    host_if: str = ""
    host_proc: Proc | None = None
    ns_proc: Proc | None = None

    def __enter__(self) -> Mirror:
        host, peer, plen = VETH_NET
        self.host_if = f"fvmh{os.getpid() % 100000}"
        ns_if = f"fvmn{os.getpid() % 100000}"
        pxelab.sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", ns_if)
        try:
            pxelab.sh("ip", "link", "set", ns_if, "netns", self.ns.name)
            pxelab.sh("ip", "addr", "add", f"{host}/{plen}", "dev", self.host_if)
            pxelab.sh("ip", "link", "set", self.host_if, "up")
            self.ns.run("ip", "addr", "add", f"{peer}/{plen}", "dev", ns_if)
            self.ns.run("ip", "link", "set", ns_if, "up")
            self.ns.run("ip", "addr", "add", f"{MIRROR_IP}/32", "dev", self.ns.bridge)
            PROXY_CACHE.mkdir(parents=True, exist_ok=True)
            hdir = self.work / "mirror-host"
            # packages (pool/) are immutable: cached a month; indexes (dists/) never
            # cached, so the installer sees the mirror's current, consistent state
            body = ("  proxy_http_version 1.1;\n"  # the upstream answers 1.0 with a 426
                    f"  proxy_cache_path {PROXY_CACHE} levels=1:2 keys_zone=fleetvm:16m "
                    "max_size=8g inactive=60d use_temp_path=off;\n"
                    f"  server {{\n    listen {host}:3142;\n"
                    f"    location / {{ proxy_pass {UPSTREAM};\n"
                    f"      proxy_set_header Host {UPSTREAM.split('://', 1)[1]}; }}\n"
                    f"    location ~ /pool/ {{ proxy_pass {UPSTREAM};\n"
                    f"      proxy_set_header Host {UPSTREAM.split('://', 1)[1]};\n"
                    "      proxy_cache fleetvm; proxy_cache_valid 200 60d;\n"
                    "      proxy_cache_lock on; add_header X-Cache $upstream_cache_status; }\n"
                    "  }\n")
            self.host_proc = _nginx([], hdir, _nginx_conf(hdir, body))
            ndir = self.work / "mirror-ns"
            body = (f"  server {{\n    listen {MIRROR_IP}:80;\n"
                    f"    location /wheels/ {{ alias {self.wheels}/; autoindex on; }}\n"
                    f"    location /standin/ {{ alias {self.standin}/; }}\n"
                    f"    location / {{ proxy_pass http://{host}:3142;\n"
                    "      proxy_http_version 1.1; proxy_buffering off; }\n"
                    "  }\n")
            self.ns_proc = _nginx(self.ns.cmd(), ndir, _nginx_conf(ndir, body))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for p in (self.ns_proc, self.host_proc):
            if p is not None:
                p.stop()
        if self.host_if:
            pxelab.sh("ip", "link", "del", self.host_if, check=False)

    @property
    def url(self) -> str:
        return f"http://{MIRROR_IP}"

    def access_log(self) -> Path:
        return self.work / "mirror-ns" / "access.log"

    def cache_status(self) -> dict[str, int]:
        """HIT/MISS counts of the host side (for the benchmark's notes)."""
        counts: dict[str, int] = {}
        log = self.work / "mirror-host" / "access.log"
        for line in log.read_text(errors="replace").splitlines():
            if "/pool/" in line:
                key = "pool requests"
                counts[key] = counts.get(key, 0) + 1
        return counts


def start_dnsmasq(ns: Netns, conf: Path, work: Path) -> tuple[Proc, Path]:
    """pxelab.start_dnsmasq, plus a hosts file that names the mirror (see the module)."""
    hosts = work / "mirror-hosts"
    hosts.write_text("".join(f"{MIRROR_IP} {name}\n" for name in MIRROR_NAMES))
    log = work / "dnsmasq.log"
    log.touch()
    pxelab.sh("dnsmasq", "--test", f"--conf-file={conf}")
    proc = Proc(ns.cmd("dnsmasq", f"--conf-file={conf}", "--keep-in-foreground",
                       f"--addn-hosts={hosts}", f"--log-facility={log}",
                       f"--pid-file={work / 'dnsmasq.pid'}", "--user=root", "--group=root"),
                work / "dnsmasq.out")
    return proc, log


def salt_late_commands(wheels_url: str, salt_version: str) -> list[str]:
    """Test-only stand-ins for the rendered `apt-get install salt-minion` (Salt's apt
    repository is unreachable here): Salt from pip in /opt/salt, a salt-minion unit, and
    the first-boot unit that prints the disk's minion key fingerprint."""
    unit = ["[Unit]", "Description=Salt minion (pip, fleet test-vm)",
            "After=network-online.target", "Wants=network-online.target", "[Service]",
            "ExecStart=/opt/salt/bin/salt-minion", "Restart=on-failure", "[Install]",
            "WantedBy=multi-user.target"]
    pki = "/etc/salt/pki/minion"
    script = ["#!/bin/sh",
              f"k=$(openssl pkey -in {pki}/minion.pem -pubout -outform DER | sha256sum "
              "| cut -d' ' -f1)",
              f'echo "{FIRSTBOOT_MARK} host=$(hostname) minion-key-sha256=$k" > /dev/ttyS0']
    first = ["[Unit]", "Description=fleet test-vm: print the minion key fingerprint",
             "[Service]", "Type=oneshot", "ExecStart=/usr/local/sbin/fleet-vm-firstboot",
             "[Install]", "WantedBy=multi-user.target"]
    return [
        "in-target env DEBIAN_FRONTEND=noninteractive apt-get install -y python3-venv",
        "in-target python3 -m venv /opt/salt",
        "in-target /opt/salt/bin/pip install --disable-pip-version-check --no-index "
        f"--trusted-host {urlsplit(wheels_url).hostname} --find-links {wheels_url} "
        f"salt=={salt_version}",
        write_file(unit, "/etc/systemd/system/salt-minion.service"),
        "in-target systemctl enable salt-minion",
        write_file(script, "/usr/local/sbin/fleet-vm-firstboot"),
        "chmod 0755 /target/usr/local/sbin/fleet-vm-firstboot",
        write_file(first, "/etc/systemd/system/fleet-vm-firstboot.service"),
        "in-target systemctl enable fleet-vm-firstboot",
    ]


def insert_before_callback(preseed: str, callback: str, extra: list[str]) -> str:
    """The rendered preseed with ``extra`` late-commands before the callback (its last)."""
    tail = "; " + callback
    lines = preseed.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("d-i preseed/late_command string ") and line.endswith(tail):
            lines[i] = line[:-len(tail)] + "; " + "; ".join(extra) + tail
            return "\n".join(lines) + "\n"
    raise AssertionError("the rendered preseed's late_command does not end with the callback")


def salt_master(ns: Netns, conf: Path, states: Path) -> Proc:
    """The real salt-master in the namespace, on the test's config (tests/reinstall's
    salt_master_config) plus a state tree with one state."""
    states.mkdir(parents=True, exist_ok=True)
    (states / "top.sls").write_text("base:\n  '*':\n    - fleetvm\n")
    (states / "fleetvm.sls").write_text(
        f"{CONVERGED_FILE}:\n  file.managed:\n    - contents: converged by fleet test-vm\n")
    with (conf / "master").open("a") as fh:
        fh.write(f"file_roots:\n  base:\n    - {states}\nworker_threads: 2\n"
                 "auto_accept: false\n")
    exe = Path(sys.executable).parent / "salt-master"  # the venv's (requirements.txt)
    return Proc(ns.cmd(exe, "-c", conf, "-l", "info"), conf.parent / "master.out")
