"""A STAND-IN for the site's Z9264F switches (no switch exists here), as far as LLDP goes.

The lab's podman bridge is the switch fabric: each node's ``prov`` NIC is one end of a
veth pair whose other end, on the host, is a port of that bridge. The stand-in gives those
host ends the inventory's switch and port: one container of the lab's image in the host's
network namespace (``--network host``, NET_RAW and NET_ADMIN there; lldpd from the lab's
apt cache on head-01) runs one lldpd per inventory switch, bound with ``-I`` to the host
ends of that switch's nodes only, announcing the switch's name as its system name and on
each port a port ID ``ethernet1/1/<port>`` (Dell OS10's interface name; subtype "local",
with the same port description, as Linux cannot name an interface with slashes). The
bridge forwards no LLDP frame (its group_fwd_mask stays 0): each node hears its own port
only, as on a switch.

A cable swap between two nodes is the two ports' names exchanged: that switch's lldpd is
restarted with the new port map (its shutdown LLDPDUs make the nodes forget the old
port at once, as pulling a cable does)."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field

from fleet.cabling.compare import expected_links
from fleet.cabling.nics import boot_nic_name
from fleet.lab import podman as pm
from fleet.lab.nodes import CHECKOUT_LABEL
from fleet.lab.paths import PREFIX, Paths
from fleet.lab.plan import Plan
from fleet.lab.run import run

CONTAINER = f"{PREFIX}-standin-switch"


def port_name(port: int) -> str:
    return f"ethernet1/1/{port}"


def host_end(paths: Paths, container: str, nic: str) -> str:
    """The host's name of the other end of ``nic``'s veth pair in ``container``."""
    peer = int(pm.exec_(paths, container, "cat", f"/sys/class/net/{nic}/iflink").stdout)
    links = json.loads(run(["ip", "-j", "link", "show"]).stdout)
    (name,) = [link["ifname"] for link in links if link["ifindex"] == peer]
    return str(name)


@dataclass
class StandinSwitch:
    paths: Paths
    plan: Plan
    # switch -> {host end: port number}
    ports: dict[str, dict[str, int]] = field(default_factory=dict)
    # node -> (switch, host end)
    ends: dict[str, tuple[str, str]] = field(default_factory=dict)
    daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(self) -> None:
        links = expected_links(self.plan.inventory, boot_nic_name())
        for node in self.plan.nodes:
            switch, port = links[(node.hostname, node.nic)]
            end = host_end(self.paths, node.container, node.nic)
            self.ports.setdefault(switch, {})[end] = port
            self.ends[node.hostname] = (switch, end)
        self._container()
        for switch in self.ports:
            self._lldpd(switch)

    def _container(self) -> None:
        head = self.plan.node(self.plan.inventory.raw.site.provisioning_host).container
        image = pm.inspect(self.paths, head)["Image"]
        pm.podman(self.paths, "rm", "-f", "-t", "0", CONTAINER)
        pm.podman(self.paths, "run", "-d", "--name", CONTAINER, "--network", "host",
                  "--cap-add", "NET_RAW,NET_ADMIN", "--label", "fleet-lab=1",
                  "--label", f"{CHECKOUT_LABEL}={self.paths.repo}", image,
                  "sleep", "infinity")
        # the apt sources and settings base.apt gave a node: head-01's apt cache, which
        # this container reaches over the bridge as the host does
        node = next(n for n in self.plan.nodes if n.container != head).container
        self._apt(node)

    def _apt(self, node: str) -> None:
        tmp = self.paths.lab / "standin-apt"
        run(["rm", "-rf", str(tmp)])
        pm.podman(self.paths, "cp", f"{node}:/etc/apt", str(tmp))
        pm.podman(self.paths, "cp", f"{tmp}/.", f"{CONTAINER}:/etc/apt")
        env = ["env", "DEBIAN_FRONTEND=noninteractive"]
        pm.exec_(self.paths, CONTAINER, *env, "apt-get", "update", "-q", timeout=300)
        pm.exec_(self.paths, CONTAINER, *env, "apt-get", "install", "-q", "-y",
                 "--no-install-recommends", "lldpd", timeout=300)
        pm.exec_(self.paths, CONTAINER, "mkdir", "-p", "/run/lldpd")

    def _config(self, switch: str) -> str:
        # every 5 s (not 30): a node that started after it hears it within a poll or two
        lines = [f"configure system hostname {switch}", "configure lldp tx-interval 5"]
        for end, port in sorted(self.ports[switch].items()):
            name = port_name(port)
            lines.append(f"configure ports {end} lldp portidsubtype local {name} "
                         f"description {name}")
        return "\n".join(lines) + "\n"

    def _lldpd(self, switch: str) -> None:
        conf = f"/etc/lldpd-standin-{switch}.conf"
        pm.podman(self.paths, "exec", "-i", CONTAINER, "sh", "-c", f"cat > {conf}",
                  input=self._config(switch))
        ends = ",".join(sorted(self.ports[switch]))
        # lldpd in the foreground of a `podman exec` (its pid kept, to stop it by)
        script = (f'echo $$ > /run/lldpd-standin-{switch}.pid; exec lldpd -d '
                  f'-u /run/lldpd-{switch}.socket -I {ends} -O {conf}')
        self.daemons[switch] = subprocess.Popen(
            ["podman", "--runtime", "runc", "exec", CONTAINER, "sh", "-c", script],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "CONTAINERS_CONF": str(pm.ensure_conf(self.paths))})

    def _stop(self, switch: str) -> None:
        """SIGTERM: lldpd sends a shutdown LLDPDU on each port as it exits."""
        pm.exec_(self.paths, CONTAINER, "sh", "-c",
                 f"kill -TERM $(cat /run/lldpd-standin-{switch}.pid)", check=False)
        proc = self.daemons.pop(switch)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()

    def swap(self, a: str, b: str) -> None:
        """Swap the cables of nodes ``a`` and ``b`` (on one switch)."""
        (sw, end_a), (sw_b, end_b) = self.ends[a], self.ends[b]
        assert sw == sw_b, f"{a} is on {sw}, {b} on {sw_b}"
        ports = self.ports[sw]
        self._stop(sw)
        ports[end_a], ports[end_b] = ports[end_b], ports[end_a]
        self._lldpd(sw)

    def remove(self) -> None:
        for switch in list(self.daemons):
            self._stop(switch)
        pm.podman(self.paths, "rm", "-f", "-t", "0", CONTAINER, check=False)
