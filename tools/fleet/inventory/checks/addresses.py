"""Identity and addresses: MACs, serials and GUIDs, IP addresses, networks and their
VLANs, the master's address, switch ports. A value taken twice is reported at the later
occurrence, naming the first."""

from __future__ import annotations

from collections.abc import Iterator
from ipaddress import IPv4Address
from typing import NamedTuple, TypeVar, Unpack

from fleet.inventory import schema
from fleet.inventory.checks.ctx import Ctx
from fleet.inventory.model import Interface, Node, YamlPath
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
    seen: dict[str, tuple[str, str]] = {}  # MAC -> its first node and field (texts made later)
    for node in c.nodes.values():
        facts = node.facts
        for field, value in (("mac", facts.mac), ("bmc_mac", facts.bmc_mac)):
            try:
                mac = normalize_mac(value)
            except ValueError:
                yield c.problem(("nodes", node.hostname, field), f"{short(value)} is not a MAC "
                                "address", code="mac_format",
                                hint="write six hex octets such as 0c:c4:7a:12:34:56")
                continue
            wrong = _not_a_nic(mac)
            if wrong is not None:
                message, code, hint = wrong
                yield c.problem(("nodes", node.hostname, field), message, code=code, hint=hint)
            elif mac in seen:  # claim()'s rule, with the texts made only here
                other, ofield = seen[mac]
                yield from claim(c, {mac: (other, ("nodes", other, ofield))}, mac, node.hostname,
                                 ("nodes", node.hostname, field), str(value),
                                 code="duplicate_mac")
            else:
                seen[mac] = (node.hostname, field)


def _not_a_nic(mac: str) -> tuple[str, str, str | None] | None:
    """Why a normalized MAC cannot be a NIC's (message, code, hint), or None."""
    if mac == "ff:ff:ff:ff:ff:ff":
        return f"{mac} is the broadcast address", "mac_broadcast", None
    if mac[1] in "13579bdf":  # the first octet's lowest bit
        return (f"{mac} is a multicast MAC (first octet is odd)", "mac_multicast",
                "copy the MAC from the NIC's label")
    if mac == "00:00:00:00:00:00":
        return f"{mac} is not a real MAC", "mac_format", None
    return None


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
    # Addresses as integers (an IPv4Address hashes and compares in Python), and each owner's
    # texts made only for a problem: 30,000 interfaces at 10,000 nodes.
    seen: dict[int, tuple[Node, str]] = {}
    reserved: dict[int, tuple[str, YamlPath]] = {}
    for name, net in c.raw.networks.items():
        if net.gateway is not None:
            reserved[int(net.gateway)] = (f"the gateway of network {name}",
                                          ("networks", name, "gateway"))
    spans: dict[str, _Span] = {}  # by network
    for node in c.nodes.values():
        for nic, iface in node.interfaces.items():
            if iface.address is None:
                continue
            addr = int(iface.address)
            if (span := spans.get(iface.network)) is None:
                span = spans[iface.network] = _span(c, iface)
            wrong = _misplaced(c, iface, addr, span, reserved)
            if wrong is not None:
                origin, shown = _where(node, "ip", nic)
                message, code, hint = wrong
                yield c.problem(origin, message, shown=shown, code=code, hint=hint)
            elif addr in seen:
                yield from _taken_again(c, addr, seen[addr], node, nic, "ip", str(iface.address),
                                        "duplicate_ip")
            else:
                seen[addr] = (node, nic)


class _Span(NamedTuple):
    """A network's addresses as integers: its first and last, whether those are hosts'
    too (a /31 or /32), and its DHCP pool's first and last (an empty range: none)."""

    first: int
    last: int
    edges_usable: bool
    pool: tuple[int, int]


def _span(c: Ctx, iface: Interface) -> _Span:
    cidr = iface.cidr
    net = c.raw.networks.get(iface.network)
    pool = net.dhcp_pool if net is not None else None
    return _Span(int(cidr.network_address), int(cidr.broadcast_address), cidr.prefixlen >= 31,
                 (1, 0) if pool is None else (int(pool.start), int(pool.end)))


def _misplaced(c: Ctx, iface: Interface, addr: int, span: _Span,
               reserved: dict[int, tuple[str, YamlPath]]) -> tuple[str, str, str | None] | None:
    """Why an interface's address cannot be its own (message, code, hint), or None."""
    said = iface.address
    if not span.first <= addr <= span.last:
        return f"{said} is outside network {iface.network} ({iface.cidr})", "outside_network", None
    if not span.edges_usable and addr in (span.first, span.last):
        return (f"{said} is the network or broadcast address of {iface.cidr}", "outside_network",
                None)
    if span.pool[0] <= addr <= span.pool[1]:
        start, end = (IPv4Address(a) for a in span.pool)
        ppath = ("networks", iface.network, "dhcp_pool")
        return (f"{said} is inside the DHCP pool {start}-{end} of network "
                f"{iface.network} ({c.src.pos(ppath)})", "in_dhcp_pool",
                "static addresses must lie outside the dynamic pool")
    if addr in reserved:
        what, rpath = reserved[addr]
        return f"{said} is {what} ({c.src.pos(rpath)})", "duplicate_ip", None
    return None


def _where(node: Node, field: str, nic: str) -> tuple[YamlPath, str]:
    """Where a node's ``field`` ("ip" or "port") of ``nic`` comes from (``Node.origin``),
    and its name in a message (``shown``)."""
    return (node.origin.get(f"{field}.{nic}", ("nodes", node.hostname)),
            f"nodes.{node.hostname}.{field}.{nic}")


def _taken_again(c: Ctx, key: K, first: tuple[Node, str], node: Node, nic: str, field: str,
                 said: str, code: str) -> Iterator[Problem]:
    """:func:`claim`'s problem for ``key``, which ``node``'s ``nic`` takes after ``first``
    (a node and its NIC): the owners' texts and positions made only now, for a problem."""
    other, onic = first
    origin, shown = _where(node, field, nic)
    owner = (f"{other.hostname} ({onic})", _where(other, field, onic)[0])
    return claim(c, {key: owner}, key, "", origin, said, shown=shown, code=code)


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
            origin, _shown = _where(node, "ip", nic)
            yield c.problem(path, f"{addr} is the address of {node.hostname} ({nic}, "
                            f"{c.src.pos(origin)})", code="duplicate_ip")
            return


def check_switch_ports(c: Ctx) -> Iterator[Problem]:
    seen: dict[tuple[str, int], tuple[Node, str]] = {}  # texts made only for a problem
    for node in c.nodes.values():
        for nic, iface in node.interfaces.items():
            if iface.switch is None or iface.port is None:
                continue
            sw = c.raw.switches[iface.switch]
            key = (iface.switch, iface.port)
            if iface.port > sw.ports:
                origin, shown = _where(node, "port", nic)
                yield c.problem(origin, f"{iface.switch} port {iface.port} does not exist "
                                f"({iface.switch} has {sw.ports} ports)", shown=shown,
                                code="port_range")
            elif key in seen:
                yield from _taken_again(c, key, seen[key], node, nic, "port",
                                        f"{iface.switch} port {iface.port}", "duplicate_port")
            else:
                seen[key] = (node, nic)

