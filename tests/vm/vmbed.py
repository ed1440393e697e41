"""The full-install VM test bed (tests/vm, `make test-vm`): what tests/pxe's bed lacks for a
whole Debian install.

- A Debian mirror in the namespace: a veth pair links the test's namespace to this host
  (a /30 of its own, VETH_NET, that no host route uses); on the host side nginx is a
  caching reverse proxy of deb.debian.org (packages cached under
  ~/.cache/fleet-vm-mirror/proxy, so a rerun downloads only the indexes); in the namespace a
  second nginx listens on MIRROR_IP:80 (an extra address on the provisioning bridge) and
  forwards there; it also serves the installer stand-in's files (/standin/). dnsmasq
  answers deb.debian.org and security.debian.org with MIRROR_IP (an extra hosts file on
  its command line; the rendered dnsmasq.conf is used as is), so the installer's security
  and updates sources work as on a connected network.
- Salt for the installed guest: Salt's apt repository (site.salt.repo) is not reachable
  from this host and Debian 12 has no salt-minion package, so the stand-in's image
  carries Salt in /opt/salt (pip, from the lab's wheelhouse: fleet.lab.image.wheelhouse)
  and the test inserts, before the rendered late-commands' last one (the callback), a
  salt-minion systemd unit for it; the rendered commands that configure the minion (id,
  master, the rotated key) are unchanged.
- A first-boot unit (test only) that writes the SHA-256 of the DER public key derived
  from the disk's /etc/salt/pki/minion/minion.pem to the serial console: the test
  compares it with the key the master accepted.
- A time source, as a site has one: chronyd in the namespace on the provisioning network's
  gateway address (the lab's NTP server's configuration, fleet.lab.ntp: ``-x``, ``local
  stratum 8``, ``allow`` the subnet, no command port or socket), named by dnsmasq as the
  inventory's NTP server (NTP_NAME), so the guest's chrony, configured by the real
  ``base.time`` state, synchronises for real and the health gate's time check can pass.
- The site package repository (docs/repo.md), as a site has one: a secrets store of the
  test's with the repository's signing key (fleet.repo.signing), filled by fleet's own
  fill (fleet.repo.fill, as ``fleet repo fill`` and ``fleet lab up`` do) for the node's
  highstate (its held kernel and what is locked to it), through the mirror's caching proxy
  (the files the installer stand-in's image already fetched), and served by the boot
  nginx at the rendered ``/repo/``: the preseed's late_command trusts its key and pins it
  (fleet.render.bootstrap), the converge's base.apt does the same from the pillar.
- A Salt master in the namespace (the real salt-master, the test's pki dir) for `fleet
  reinstall`'s converge step: the real ``base.time`` state (with its ``base.apt``) from
  salt/ and the rendered pillar, plus a state of the test's own; see :func:`salt_master`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleet.apt.facts import NodeFacts
from fleet.inventory.model import Inventory
from fleet.lab import ntp
from fleet.render import render_all
from fleet.render.preseed import write_file
from support import pxelab
from support.pxelab import Netns, Proc

ROOT = pxelab.ROOT
ENABLED = os.environ.get("FLEET_VM") == "1"
SKIP_REASON = ("VM TESTS NOT RUN (the full install, and the compute tier's NFS export and "
               "cgroup v2 memory limit): set FLEET_VM=1 (as root, with the packages "
               "of tools/install-pxe-deps.sh and tools/install-vm-deps.sh, and a host that "
               "reaches deb.debian.org and archive.ubuntu.com) or run `make test-vm`; it "
               "reinstalls a QEMU guest and boots two more under TCG")
UPSTREAM = os.environ.get("FLEET_VM_UPSTREAM", "http://deb.debian.org")
CACHE = Path(os.environ.get("FLEET_VM_CACHE", Path.home() / ".cache" / "fleet-vm-mirror"))
# nginx's own: its cache loader deletes any file there that it did not write
PROXY_CACHE = CACHE / "proxy"
STANDIN_CACHE = CACHE / "standin"  # the base-system tarball, the installer kernel's .deb
VETH_NET = ("10.250.77.1", "10.250.77.2", 30)  # host side, namespace side
MIRROR_IP = "10.1.0.11"  # on the namespace's provisioning bridge (no node has it)
MIRROR_NAMES = ("deb.debian.org", "security.debian.org")
NTP_NAME = "ntp.lab.test"  # the overlay's one site.ntp_servers entry
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


@dataclass
class TimeSource:
    """chronyd in ``ns`` serving this host's clock to ``subnet`` on ``address`` (added to
    the bridge), with the lab's NTP server's configuration (fleet.lab.ntp.CONF); the
    daemon stays in the foreground (-d) so that it is ended by its pid."""

    ns: Netns
    work: Path
    address: str
    subnet: str
    proc: Proc | None = None

    def __enter__(self) -> TimeSource:
        self.ns.run("ip", "addr", "add", f"{self.address}/32", "dev", self.ns.bridge)
        d = self.work / "ntp"
        d.mkdir()
        conf = d / "chrony.conf"
        conf.write_text("# the VM test's NTP server (tests/vm/vmbed.py)\n" + ntp.CONF.split(
            "\n", 1)[1].format(gateway=self.address, subnet=self.subnet,
                               pidfile=d / "chronyd.pid", drift=d / "drift"))
        self.proc = Proc(self.ns.cmd("chronyd", "-d", "-x", "-f", conf), d / "chronyd.out")
        if not pxelab.wait_for(self.listening, 30, step=0.5):
            self.__exit__()
            raise RuntimeError(f"the bed's chronyd does not answer on {self.address}:123: "
                               + (d / "chronyd.out").read_text(errors="replace")[-2000:])
        return self

    def listening(self) -> bool:
        if self.proc is None or not self.proc.alive():
            return False
        out = self.ns.run("ss", "-Hlun", "src", f"{self.address}:123").stdout
        return bool(out.strip())

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.stop()


def start_dnsmasq(ns: Netns, conf: Path, work: Path, *,
                  ntp_ip: str) -> tuple[Proc, Path]:
    """pxelab.start_dnsmasq, plus a hosts file that names the mirror (see the module) and
    the NTP server (NTP_NAME at ``ntp_ip``)."""
    hosts = work / "mirror-hosts"
    hosts.write_text("".join(f"{MIRROR_IP} {name}\n" for name in MIRROR_NAMES)
                     + f"{ntp_ip} {NTP_NAME}\n")
    log = work / "dnsmasq.log"
    log.touch()
    pxelab.sh("dnsmasq", "--test", f"--conf-file={conf}")
    proc = Proc(ns.cmd("dnsmasq", f"--conf-file={conf}", "--keep-in-foreground",
                       f"--addn-hosts={hosts}", f"--log-facility={log}",
                       f"--pid-file={work / 'dnsmasq.pid'}", "--user=root", "--group=root"),
                work / "dnsmasq.out")
    return proc, log


def render_pillar(inv: Inventory, work: Path) -> None:
    """The inventory's rendered ``pillar/`` tree, written under ``work`` (for salt_master)."""
    for rel, text in render_all(inv).items():
        if rel.startswith("pillar/"):
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_text(text)


REPO_OS = "debian-12"  # the bed's Debian image (support.pxebed.DEBIAN_IMAGE)
REPO_CODENAME = "bookworm"


def repo_facts(work: Path, node: str) -> NodeFacts:
    """The apt facts of ``node``'s whole highstate (salt/'s top, the pillar rendered under
    ``work``), as ``fleet repo fill`` renders them: what the repository must hold."""
    import tempfile

    from fleet.apt.facts import from_lowstate
    from fleet.packages.highstates import saltrender, write_secrets_root

    with tempfile.TemporaryDirectory() as tmp:
        write_secrets_root(Path(tmp) / "secrets")
        renderer = saltrender().Renderer(ROOT / "salt", work / "pillar", Path(tmp) / "secrets",
                                         Path(tmp) / "cache")
        rendered = renderer.render(node, REPO_OS)
    if rendered.errors:
        raise RuntimeError(f"{node}'s highstate does not render: {rendered.errors}")
    return from_lowstate(rendered.lowstate, rendered.files)


def fill_site_repo(work: Path, node: str, facts: NodeFacts, secrets: Path, repo: Path
                   ) -> Any:
    """Fill ``repo`` for ``node`` with fleet's fill (fleet.repo.fill.Report), signed by the
    key of ``secrets`` (made here), from the archive as the node's rendered sources name
    it, reached through the host side of :class:`Mirror` (its package cache)."""
    from fleet.apt.archive import OSES, ScratchApt, keyring
    from fleet.repo import fill, signing

    signing.ensure(secrets)
    release = OSES[REPO_OS]
    proxy = f"http://{VETH_NET[0]}:3142"
    apt = ScratchApt(work / "repo-apt", release, keyring(release.distro, work / "repo-keyring"))
    apt.write_sources({f: text.replace(f"http://{MIRROR_IP}", proxy)
                       for f, text in facts.sources.items()}, keep_uris=True)
    apt.update()
    return fill.fill(apt, [(node, facts)], fill.Target(repo, secrets, REPO_CODENAME),
                     work / "repo-incoming")


def salt_late_commands() -> list[str]:
    """Test-only stand-ins for the rendered `apt-get install salt-minion` (Salt's apt
    repository is unreachable here): a salt-minion unit for the Salt that the image
    carries in /opt/salt (tests/vm/standin.py, base_tarball), and the first-boot unit that
    prints the disk's minion key fingerprint."""
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


def salt_master(ns: Netns, conf: Path, work: Path, secrets: Path | None = None) -> Proc:
    """The real salt-master in the namespace, on the test's config (tests/reinstall's
    salt_master_config). Its highstate is the real ``base.time`` (chrony, which the health
    gate checks; it includes ``base.apt``) from salt/, and a state of the test's own, on
    the pillar rendered under ``work/pillar`` plus one test-only key, said here:
    ``base:lookup:apt:salt_repo:enabled`` false, as in the lab (lab/pillar/lab.sls): the
    minion comes from a wheelhouse (salt_late_commands), Salt's repository is unreachable
    here, and its source would fail ``base.apt``'s ``apt-get update``. Not the other
    base states or roles: ``base.minion`` would install salt-minion from that repository.
    ``secrets``: the test's secrets store, whose pillar (the site repository's public key,
    ``secrets.siterepo``) joins the rendered one, as on the site's master."""
    states, pillar = work / "states", work / "pillar-vm"
    states.mkdir(parents=True, exist_ok=True)
    pillar.mkdir(parents=True, exist_ok=True)
    (states / "top.sls").write_text("base:\n  '*':\n    - base.time\n    - fleetvm\n")
    (states / "fleetvm.sls").write_text(
        f"{CONVERGED_FILE}:\n  file.managed:\n    - contents: converged by fleet test-vm\n")
    (pillar / "top.sls").write_text("vm:\n  '*':\n    - vm\n")
    (pillar / "vm.sls").write_text(
        "base:\n  lookup:\n    apt:\n      salt_repo:\n        enabled: false\n")
    with (conf / "master").open("a") as fh:
        # the test's top.sls first: it is the one the master reads
        fh.write(f"file_roots:\n  base:\n    - {states}\n    - {ROOT / 'salt'}\n"
                 f"pillar_roots:\n  base:\n    - {work / 'pillar'}\n"
                 + (f"    - {secrets / 'pillar'}\n" if secrets is not None else "")
                 + f"  vm:\n    - {pillar}\n"
                 "state_top_saltenv: base\nworker_threads: 2\nauto_accept: false\n")
    exe = Path(sys.executable).parent / "salt-master"  # the venv's (requirements.txt)
    return Proc(ns.cmd(exe, "-c", conf, "-l", "info"), conf.parent / "master.out")


Handlers = dict[int, Any]


def raise_on_signals() -> Handlers:
    """SIGINT and SIGTERM raise KeyboardInterrupt in a VM fixture, so that its cleanup
    (guests, namespace) runs; a background job of a non-interactive shell inherits SIGINT
    ignored, which this takes back. The old handlers: give them to restore_signals."""
    def interrupted(signum: int, _frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    return {s: signal.signal(s, interrupted) for s in (signal.SIGINT, signal.SIGTERM)}


def restore_signals(old: Handlers) -> None:
    for signum, handler in old.items():
        signal.signal(signum, handler)
