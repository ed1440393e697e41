"""Identity and addresses: MACs, serials and GUIDs, IP addresses, networks and their
VLANs, the master's address, switch ports. A value taken twice is reported at the later
occurrence, naming the first."""

from __future__ import annotations

from collections.abc import Iterator
from ipaddress import IPv4Address
from typing import TypeVar, Unpack

from fleet.inventory import schema
from fleet.inventory.checks.ctx import Ctx
from fleet.inventory.model import YamlPath
from fleet.inventory.netutil import normalize_mac
from fleet.problems import Problem, ProblemOptions, short

K = TypeVar("K")


def claim(c: Ctx, seen: dict[K, tuple[str, YamlPath]], value: K, owner: str, path: YamlPath,
           said: str, **opts: Unpack[ProblemOptions]) -> Iterator[Problem]:
    """``value`` (``said`` in a message) taken for ``owner`` at ``path``, or, when an earlier
    owner has it, the problem that names that one."""
    if value in seen:
        other, opath = seen[value]
        yield c.problem(path, f"{said} is already used by {other} ({c.src.pos(opath)})", **opts)
    else:
        seen[value] = (owner, path)


def check_macs(c: Ctx) -> Iterator[Problem]:
    seen: dict[str, tuple[str, YamlPath]] = {}
    for node in c.nodes.values():
        for field in ("mac", "bmc_mac"):
            path: YamlPath = ("nodes", node.hostname, field)
            value = getattr(node.facts, field)
            try:
                mac = normalize_mac(value)
            except ValueError:
                yield c.problem(path, f"{short(value)} is not a MAC address", code="mac_format",
                                hint="write six hex octets such as 0c:c4:7a:12:34:56")
                continue
            first = int(mac[:2], 16)
            if mac == "ff:ff:ff:ff:ff:ff":
                yield c.problem(path, f"{mac} is the broadcast address", code="mac_broadcast")
                continue
            if first & 1:
                yield c.problem(path, f"{mac} is a multicast MAC (first octet is odd)",
                                code="mac_multicast", hint="copy the MAC from the NIC's label")
                continue
            if mac == "00:00:00:00:00:00":
                yield c.problem(path, f"{mac} is not a real MAC", code="mac_format")
                continue
            yield from claim(c, seen, mac, node.hostname, path, str(value), code="duplicate_mac")


def check_serials(c: Ctx) -> Iterator[Problem]:
    seen: dict[str, tuple[str, YamlPath]] = {}
    guids: dict[str, tuple[str, YamlPath]] = {}
    spelled: dict[str, str] = {}
    for node in c.nodes.values():  # one machine whatever the case: labels and BMCs differ
        key = node.serial.casefold()
        first = spelled.setdefault(key, node.serial)
        yield from claim(c, seen, key, node.hostname, ("nodes", node.hostname, "serial"),
                          node.serial, code="duplicate_serial",
                          hint=None if first == node.serial else
                          f"as {first}: serials are compared ignoring case")
        if node.ib_guid:
            yield from claim(c, guids, node.ib_guid, node.hostname,
                              ("nodes", node.hostname, "ib_guid"), node.ib_guid,
                              code="duplicate_guid")


def check_addresses(c: Ctx) -> Iterator[Problem]:
    seen: dict[IPv4Address, tuple[str, YamlPath]] = {}
    reserved: dict[IPv4Address, tuple[str, YamlPath]] = {}
    for name, net in c.raw.networks.items():
        if net.gateway is not None:
            reserved[net.gateway] = (f"the gateway of network {name}",
                                     ("networks", name, "gateway"))
    pools = {name: (net.dhcp_pool, ("networks", name, "dhcp_pool"))
             for name, net in c.raw.networks.items() if net.dhcp_pool}
    for node in c.nodes.values():
        for nic, iface in node.interfaces.items():
            addr = iface.address
            if addr is None:
                continue
            origin = node.origin.get(f"ip.{nic}", ("nodes", node.hostname))
            shown = f"nodes.{node.hostname}.ip.{nic}"
            cidr = iface.cidr
            if addr not in cidr:
                yield c.problem(origin, f"{addr} is outside network {iface.network} ({cidr})",
                                shown=shown, code="outside_network")
                continue
            if cidr.prefixlen < 31 and addr in (cidr.network_address, cidr.broadcast_address):
                yield c.problem(origin, f"{addr} is the network or broadcast address of {cidr}",
                                shown=shown, code="outside_network")
                continue
            pool_entry = pools.get(iface.network)
            if pool_entry is not None:
                pool, ppath = pool_entry
                if pool is not None and pool.start <= addr <= pool.end:
                    yield c.problem(origin, f"{addr} is inside the DHCP pool {pool.start}-"
                                    f"{pool.end} of network {iface.network} "
                                    f"({c.src.pos(ppath)})", shown=shown, code="in_dhcp_pool",
                                    hint="static addresses must lie outside the dynamic pool")
                    continue
            if addr in reserved:
                what, rpath = reserved[addr]
                yield c.problem(origin, f"{addr} is {what} ({c.src.pos(rpath)})", shown=shown,
                                code="duplicate_ip")
                continue
            if addr in seen:  # claim()'s rule, with the address's text made only here
                yield from claim(c, seen, addr, "", origin, str(addr), shown=shown,
                                  code="duplicate_ip")
            else:
                seen[addr] = (f"{node.hostname} ({nic})", origin)


def _max_mtu(net: schema.Network) -> tuple[int, str, str | None]:
    """The largest MTU of the network's link, what that link is, and a hint (the schema's
    576..65520 holds for every link). Ethernet: jumbo frames of at most 9216 bytes, the most
    data-center switches take (Dell OS10, NVIDIA Cumulus); IPoIB datagram mode: the 4096-byte
    InfiniBand MTU less the 4-byte IPoIB header; connected mode: the Linux driver's 65520."""
    if net.purpose != "ipoib":
        return 9216, "an Ethernet link (jumbo frames)", None
    if net.ipoib_mode == "datagram":
        return 4092, "IPoIB in datagram mode", "ipoib_mode: connected allows up to 65520"
    return 65520, "IPoIB in connected mode", None


def check_networks(c: Ctx) -> Iterator[Problem]:
    nets = list(c.raw.networks.items())
    for i, (name, net) in enumerate(nets):
        path: YamlPath = ("networks", name)
        if net.gateway is not None and net.gateway not in net.cidr:
            yield c.problem((*path, "gateway"), f"{net.gateway} is outside {net.cidr}",
                            code="outside_network")
        if net.dhcp_pool is not None:
            pool = net.dhcp_pool
            if pool.start not in net.cidr or pool.end not in net.cidr:
                yield c.problem((*path, "dhcp_pool"), f"pool {pool.start}-{pool.end} is outside "
                                f"{net.cidr}", code="outside_network")
            elif pool.end < pool.start:
                yield c.problem((*path, "dhcp_pool"), f"pool ends ({pool.end}) before it starts "
                                f"({pool.start})")
        if net.purpose != "ipoib" and net.pkey is not None:
            yield c.problem((*path, "pkey"), "pkey applies only to ipoib networks")
        top, link, hint = _max_mtu(net)
        if net.mtu > top:
            yield c.problem((*path, "mtu"), f"{net.mtu} is more than {top}, the largest MTU "
                            f"of {link}", code="mtu_range", hint=hint)
        for other_name, other in nets[:i]:
            if net.cidr.overlaps(other.cidr):
                yield c.problem((*path, "cidr"), f"{net.cidr} overlaps network {other_name} "
                                f"({other.cidr})", code="overlap")


def check_network_addresses(c: Ctx) -> Iterator[Problem]:
    """Gateways and DHCP pools against the special addresses of their networks; VLANs."""
    vlans: dict[int, str] = {}
    for name, net in c.raw.networks.items():
        path: YamlPath = ("networks", name)
        cidr = net.cidr
        special = {cidr.network_address: "network", cidr.broadcast_address: "broadcast"} \
            if cidr.prefixlen < 31 else {}
        if net.gateway is not None and net.gateway in special:
            yield c.problem((*path, "gateway"), f"{net.gateway} is the {special[net.gateway]} "
                            f"address of {cidr}, not a host", code="gateway")
        pool = net.dhcp_pool
        if pool is not None and pool.start <= pool.end:
            inside = [(a, what) for a, what in special.items() if pool.start <= a <= pool.end]
            if net.gateway is not None and pool.start <= net.gateway <= pool.end:
                inside.append((net.gateway, "gateway"))
            for addr, what in inside:
                yield c.problem((*path, "dhcp_pool"), f"pool {pool.start}-{pool.end} holds "
                                f"the {what} address {addr}", code="in_dhcp_pool",
                                hint="a lease of it would break the network; shrink the pool")
        if net.vlan is not None:
            if net.vlan in vlans:
                other = vlans[net.vlan]
                yield c.problem((*path, "vlan"), f"VLAN {net.vlan} is already network "
                                f"{other}'s ({c.src.pos(('networks', other, 'vlan'))})",
                                code="duplicate_vlan", hint="one network per VLAN")
            else:
                vlans[net.vlan] = name


def check_master_address(c: Ctx) -> Iterator[Problem]:
    """An explicit ``site.salt.master_address`` must be a host address of some network and
    no other node's address (every minion would talk to that node instead)."""
    addr = c.raw.site.salt.master_address
    if addr is None:
        return
    path: YamlPath = ("site", "salt", "master_address")
    nets = [(n, net) for n, net in c.raw.networks.items() if addr in net.cidr]
    if not nets:
        yield c.problem(path, f"{addr} is outside every network of the inventory",
                        code="outside_network")
        return
    for name, net in nets:
        if net.cidr.prefixlen < 31 and addr in (net.cidr.network_address,
                                                 net.cidr.broadcast_address):
            yield c.problem(path, f"{addr} is the network or broadcast address of network "
                            f"{name} ({net.cidr})", code="outside_network")
            return
    master = c.raw.site.salt.master
    for node in c.nodes.values():
        for nic, iface in node.interfaces.items():
            if iface.address != addr or (node.hostname == master and nic == node.boot_nic):
                continue
            origin = node.origin.get(f"ip.{nic}", ("nodes", node.hostname))
            yield c.problem(path, f"{addr} is the address of {node.hostname} ({nic}, "
                            f"{c.src.pos(origin)})", code="duplicate_ip")
            return


def check_switch_ports(c: Ctx) -> Iterator[Problem]:
    seen: dict[tuple[str, int], tuple[str, YamlPath]] = {}
    for node in c.nodes.values():
        for nic, iface in node.interfaces.items():
            if iface.switch is None or iface.port is None:
                continue
            origin = node.origin.get(f"port.{nic}", ("nodes", node.hostname))
            shown = f"nodes.{node.hostname}.port.{nic}"
            sw = c.raw.switches[iface.switch]
            if iface.port > sw.ports:
                yield c.problem(origin, f"{iface.switch} port {iface.port} does not exist "
                                f"({iface.switch} has {sw.ports} ports)", shown=shown,
                                code="port_range")
                continue
            key = (iface.switch, iface.port)
            if key in seen:  # claim()'s rule, with the message's text made only here
                yield from claim(c, seen, key, "", origin, f"{iface.switch} port {iface.port}",
                                  shown=shown, code="duplicate_port")
            else:
                seen[key] = (f"{node.hostname} ({nic})", origin)
