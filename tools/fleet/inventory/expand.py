"""Expand node groups into one :class:`~fleet.inventory.model.Node` per machine.

Rules, so that nothing is typed 75 times:
- ``hosts: tbox-[001-038]`` names the machines; the number is the node's *index*;
- a NIC's address is ``ip_base + index`` and its switch port ``first_port + position``
  (position = 0-based place in the group), unless the node overrides ``ip``/``port``;
- MACs, serials and other per-machine facts come from ``nodes.<hostname>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from ipaddress import IPv4Address
from typing import NamedTuple, Unpack

from fleet.inventory import schema
from fleet.inventory.model import Interface, Node, YamlPath
from fleet.inventory.netutil import try_normalize_mac
from fleet.inventory.types import host_name
from fleet.problems import Problem, ProblemOptions, Reporter, short
from fleet.yamlsrc import Source

_RANGE = re.compile(r"^(?P<prefix>[a-z0-9-]*)\[(?P<lo>\d+)-(?P<hi>\d+)\](?P<suffix>[a-z0-9-]*)$")
_TRAILING = re.compile(r"(\d+)$")
MAX_RANGE = 100_000
# All node groups together: far above any site (the real one has 144 machines, the render
# benchmarks 10,000), low enough that a typo such as [1-99999] in a few groups is refused
# before it costs minutes and gigabytes.
MAX_NODES = 100_000


def expand_hosts(pattern: str) -> list[tuple[str, int | None]]:
    """``tbox-[001-003]`` -> ``[("tbox-001", 1), ("tbox-002", 2), ("tbox-003", 3)]``.

    Raises ValueError for an empty or oversized range."""
    m = _RANGE.match(pattern)
    if not m:
        t = _TRAILING.search(pattern)
        return [(pattern, int(t.group(1)) if t else None)]
    lo_s, hi_s = m["lo"], m["hi"]
    lo, hi = int(lo_s), int(hi_s)
    if hi < lo:
        raise ValueError(f"range {short(pattern)} is empty: {hi} < {lo}")
    if hi - lo + 1 > MAX_RANGE:
        raise ValueError(f"range {short(pattern)} has more than {MAX_RANGE} hosts")
    width = len(lo_s) if lo_s.startswith("0") else 0
    return [(f"{m['prefix']}{i:0{width}d}{m['suffix']}", i) for i in range(lo, hi + 1)]


def _bad_host_name(hosts: list[tuple[str, int | None]]) -> str | None:
    """The problem with the first expanded name that is no RFC 1123 host name, if any."""
    for hostname, _ in hosts:
        try:
            host_name(hostname)
        except ValueError as exc:
            return f"expands to {exc}"
    return None


class _Ctx(Reporter):
    def __init__(self, src: Source) -> None:
        self.src = src
        self.problems: list[Problem] = []

    def err(self, path: YamlPath, message: str, **opts: Unpack[ProblemOptions]) -> None:
        self.problems.append(self.problem(path, message, **opts))


def expand(inv: schema.Inventory, src: Source) -> tuple[dict[str, Node], list[Problem]]:
    ctx = _Ctx(src)
    nodes: dict[str, Node] = {}
    claimed: dict[str, str] = {}  # hostname -> group
    total = 0
    for gname, group in inv.node_groups.items():
        gpath: YamlPath = ("node_groups", gname)
        hosts = _hosts(ctx, gpath, group)
        total += len(hosts)
        if total > MAX_NODES:
            ctx.err((*gpath, "hosts"), f"the node groups up to this one expand to {total:,} "
                    f"machines, more than fleet's limit of {MAX_NODES:,}", code="too_many")
            break
        members = _claim(ctx, inv, gname, hosts, claimed)
        profile = _profile(ctx, inv, gpath, group)
        if profile is None or not _group_nics_ok(ctx, inv, gpath, group, profile):
            continue
        for position, hostname, index in members:
            member = _Member(gname, group, profile, hostname, index, position,
                             inv.nodes[hostname])
            node = _node(ctx, inv, member)
            if node is not None:
                nodes[hostname] = node
    for hostname in inv.nodes:
        if hostname not in claimed:
            ctx.err(("nodes", hostname), f"{hostname} is not in any node group",
                    code="unknown_ref", key=True,
                    hint="add it to a node group's 'hosts' range or remove the entry")
    return nodes, ctx.problems


def _hosts(ctx: _Ctx, gpath: YamlPath, group: schema.NodeGroup) -> list[tuple[str, int | None]]:
    """The group's machines (name, index); none when its ``hosts`` is wrong."""
    try:
        hosts = expand_hosts(group.hosts)
    except ValueError as exc:
        ctx.err((*gpath, "hosts"), str(exc))
        return []
    bad = _bad_host_name(hosts)
    if bad is not None:
        ctx.err((*gpath, "hosts"), bad, code="host_name")
        return []
    return hosts


def _claim(ctx: _Ctx, inv: schema.Inventory, gname: str, hosts: list[tuple[str, int | None]],
           claimed: dict[str, str]) -> list[tuple[int, str, int | None]]:
    """The group's members (position, hostname, index): its hosts that no earlier group
    has and that have an entry under ``nodes``."""
    gpath: YamlPath = ("node_groups", gname)
    members: list[tuple[int, str, int | None]] = []
    missing: list[str] = []
    for position, (hostname, index) in enumerate(hosts):
        if hostname in claimed:
            ctx.err((*gpath, "hosts"),
                    f"{hostname} is already in node group {claimed[hostname]!r}",
                    shown=f"node_groups.{gname}.hosts", code="duplicate")
            continue
        claimed[hostname] = gname
        if hostname in inv.nodes:
            members.append((position, hostname, index))
        else:
            missing.append(hostname)
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more"
                                          if len(missing) > 5 else "")
        ctx.err((*gpath, "hosts"),
                f"{shown} {'has' if len(missing) == 1 else 'have'} no entry under 'nodes'",
                code="missing_node",
                hint=f"add 'nodes: {missing[0]}: {{serial: ..., mac: ..., bmc_mac: ...}}'")
    return members


def _profile(ctx: _Ctx, inv: schema.Inventory, gpath: YamlPath,
             group: schema.NodeGroup) -> schema.Profile | None:
    """The group's profile (None when unknown); its image checked too."""
    profile = inv.profiles.get(group.profile)
    if profile is None:
        ctx.err((*gpath, "profile"), f"unknown profile {group.profile!r}",
                code="unknown_ref", hint=f"known profiles: {', '.join(inv.profiles) or 'none'}")
        return None
    if group.image is not None and group.image not in inv.site.images:
        ctx.err((*gpath, "image"), f"unknown image {group.image!r}", code="unknown_ref",
                hint=f"known images (site.images): {', '.join(inv.site.images) or 'none'}")
    return profile


def _group_nics_ok(ctx: _Ctx, inv: schema.Inventory, gpath: YamlPath,
                   group: schema.NodeGroup, profile: schema.Profile) -> bool:
    ok = True
    wanted = {*profile.nics, "bmc"}
    for nic, rule in group.nics.items():
        npath = (*gpath, "nics", nic)
        if nic not in wanted:
            ctx.err(npath, f"profile {group.profile!r} has no NIC {nic!r}", code="unknown_ref",
                    key=True, hint=f"its NICs are: {', '.join(sorted(wanted))}")
            ok = False
            continue
        net = inv.networks.get(rule.network)
        if net is None:
            ctx.err((*npath, "network"), f"unknown network {rule.network!r}", code="unknown_ref",
                    hint=f"known networks: {', '.join(inv.networks)}")
            ok = False
            continue
        kind = "bmc" if nic == "bmc" else profile.nics[nic].kind
        expected = {"bmc": "bmc", "ethernet": "provisioning", "infiniband": "ipoib"}[kind]
        if net.purpose != expected:
            ctx.err((*npath, "network"),
                    f"{kind} NIC {nic!r} cannot sit on {net.purpose} network {rule.network!r}",
                    code="mismatch", hint=f"use a network with purpose: {expected}")
            ok = False
        if rule.switch is not None:
            sw = inv.switches.get(rule.switch)
            if sw is None:
                ctx.err((*npath, "switch"), f"unknown switch {rule.switch!r}", code="unknown_ref",
                        hint=f"known switches: {', '.join(inv.switches) or 'none'}")
                ok = False
            elif sw.kind != ("infiniband" if kind == "infiniband" else "ethernet"):
                ctx.err((*npath, "switch"), f"{kind} NIC {nic!r} cannot be cabled to "
                        f"{sw.kind} switch {rule.switch!r}", code="mismatch")
                ok = False
    for nic in sorted(wanted - set(group.nics)):
        ctx.err((*gpath, "nics"), f"NIC {nic!r} of profile {group.profile!r} has no rule",
                code="missing", hint=f"add nics.{nic}: {{network: ..., ip_base: ...}}")
        ok = False
    provs = [n for n, r in group.nics.items()
             if n != "bmc" and inv.networks[r.network].purpose == "provisioning"] if ok else []
    if ok and len(provs) != 1:
        ctx.err((*gpath, "nics"), f"exactly one NIC must be on a provisioning network, found "
                f"{len(provs)}", code="mismatch")
        ok = False
    return ok


class _Member(NamedTuple):
    """One machine of a node group, as :func:`_node` expands it."""

    gname: str
    group: schema.NodeGroup
    profile: schema.Profile
    hostname: str
    number: int | None  # the number in its name (Node.index)
    position: int  # its 0-based place in the group
    facts: schema.NodeFacts

    @property
    def npath(self) -> YamlPath:
        return ("nodes", self.hostname)

    @property
    def gpath(self) -> YamlPath:
        return ("node_groups", self.gname)


def _node(ctx: _Ctx, inv: schema.Inventory, m: _Member) -> Node | None:
    facts, group, profile = m.facts, m.group, m.profile
    origin: dict[str, YamlPath] = {"node": m.npath, "hostname": (*m.gpath, "hosts")}
    for key, table in (("ip", facts.ip), ("port", facts.port), ("nics", facts.nics)):
        for nic in table:
            if nic not in group.nics:
                ctx.err((*m.npath, key, nic), f"node has no NIC {nic!r}", code="unknown_ref",
                        key=True, hint=f"its NICs are: {', '.join(group.nics)}")
    interfaces: dict[str, Interface] = {}
    boot_nic = ""
    for nic, group_rule in group.nics.items():
        rule = facts.nics.get(nic, group_rule)
        if nic in facts.nics and not _node_rule_ok(ctx, inv, m, nic, group_rule, rule):
            return None
        iface = _interface(ctx, inv, m, nic, rule, origin)
        if iface is None:
            return None
        interfaces[nic] = iface
        if inv.networks[rule.network].purpose == "provisioning":
            boot_nic = nic
    if facts.slurm_partition is not None:
        origin["partition"] = (*m.npath, "slurm_partition")
    origin["mac"] = (*m.npath, "mac")
    origin["bmc_mac"] = (*m.npath, "bmc_mac")
    roles = (*schema.IMPLICIT_ROLES, *group.roles)
    return Node(
        hostname=m.hostname, index=m.number, position=m.position, group=m.gname,
        profile_name=group.profile, profile=profile, roles=roles, serial=facts.serial,
        mac=try_normalize_mac(facts.mac), bmc_mac=try_normalize_mac(facts.bmc_mac),
        ib_guid=facts.ib_guid, interfaces=interfaces, boot_nic=boot_nic,
        partition=facts.slurm_partition or group.slurm_partition, mkv_array=group.mkv_array,
        boot_disk=facts.boot_disk or _profile_boot_match(profile), facts=facts, origin=origin,
        image=group.image, state=facts.state, reason=facts.reason,
    )


def _interface(ctx: _Ctx, inv: schema.Inventory, m: _Member, nic: str, rule: schema.NicRule,
               origin: dict[str, YamlPath]) -> Interface | None:
    """NIC ``nic`` of the machine by the group's ``rule`` (None: it has no address);
    ``origin`` gains where its address and port come from."""
    net = inv.networks[rule.network]
    address = _address(ctx, m, nic, rule, origin)
    if address is None:
        return None
    port: int | None = None
    if nic in m.facts.port:
        port = m.facts.port[nic]
        origin[f"port.{nic}"] = (*m.npath, "port", nic)
    elif nic in m.facts.nics and rule.first_port is not None:  # this node's own rule
        port = rule.first_port
        origin[f"port.{nic}"] = (*m.npath, "nics", nic, "first_port")
    elif rule.first_port is not None:
        port = rule.first_port + m.position
        origin[f"port.{nic}"] = (*m.gpath, "nics", nic, "first_port")
    if port is not None and rule.switch is None:
        ctx.err((*m.gpath, "nics", nic), f"NIC {nic!r} has a port but no switch",
                hint="add 'switch:'")
    kind = "bmc" if nic == "bmc" else m.profile.nics[nic].kind
    mac: str | None = None
    if nic == "bmc":
        mac = try_normalize_mac(m.facts.bmc_mac)
    elif net.purpose == "provisioning":
        mac = try_normalize_mac(m.facts.mac)
    return Interface(
        name=nic, kind=kind, network=rule.network, address=address, cidr=net.cidr,
        gateway=net.gateway, vlan=net.vlan, mtu=net.mtu, mac=mac, switch=rule.switch,
        port=port, speed_gbps=None if nic == "bmc" else m.profile.nics[nic].speed_gbps,
    )


def _node_rule_ok(ctx: _Ctx, inv: schema.Inventory, m: _Member, nic: str,
                  group_rule: schema.NicRule, rule: schema.NicRule) -> bool:
    """A node's own rule for ``nic``: its network of the same purpose as the group's, its
    switch of the kind the NIC needs."""
    npath = (*m.npath, "nics", nic)
    net = inv.networks.get(rule.network)
    if net is None:
        ctx.err((*npath, "network"), f"unknown network {rule.network!r}", code="unknown_ref",
                hint=f"known networks: {', '.join(inv.networks)}")
        return False
    if net.purpose != inv.networks[group_rule.network].purpose:
        ctx.err((*npath, "network"), f"{rule.network!r} is a {net.purpose} network, the "
                f"group's {group_rule.network!r} is not", code="mismatch")
        return False
    if rule.switch is not None:
        sw = inv.switches.get(rule.switch)
        kind = "bmc" if nic == "bmc" else m.profile.nics[nic].kind
        if sw is None:
            ctx.err((*npath, "switch"), f"unknown switch {rule.switch!r}", code="unknown_ref",
                    hint=f"known switches: {', '.join(inv.switches) or 'none'}")
            return False
        if sw.kind != ("infiniband" if kind == "infiniband" else "ethernet"):
            ctx.err((*npath, "switch"), f"{kind} NIC {nic!r} cannot be cabled to "
                    f"{sw.kind} switch {rule.switch!r}", code="mismatch")
            return False
    return True


def _address(ctx: _Ctx, m: _Member, nic: str, rule: schema.NicRule,
             origin: dict[str, YamlPath]) -> IPv4Address | None:
    """The NIC's own ``ip``, else ``ip_base + index``; None (said) when there is none."""
    if nic in m.facts.ip:
        origin[f"ip.{nic}"] = (*m.npath, "ip", nic)
        return m.facts.ip[nic]
    rpath: YamlPath = (*(m.npath if nic in m.facts.nics else m.gpath), "nics", nic)
    if rule.ip_base is None:
        ctx.err(rpath, f"{m.hostname}: NIC {nic!r} has no address",
                shown=f"nodes.{m.hostname}.ip.{nic}", code="missing",
                hint=f"set node_groups.{m.gname}.nics.{nic}.ip_base or "
                     f"nodes.{m.hostname}.ip.{nic}")
        return None
    if m.number is None:
        ctx.err((*rpath, "ip_base"),
                f"{m.hostname} has no number to add to ip_base",
                hint=f"give nodes.{m.hostname}.ip.{nic} instead")
        return None
    try:
        address = rule.ip_base + m.number
    except ValueError:
        ctx.err((*rpath, "ip_base"),
                f"{rule.ip_base} + {m.number} is not an IPv4 address")
        return None
    origin[f"ip.{nic}"] = (*rpath, "ip_base")
    return address


def _profile_boot_match(profile: schema.Profile) -> schema.DiskMatch | None:
    boot = next((d for d in profile.disks if d.role == "boot"), None)
    return boot.match if boot else None


def iter_nics(nodes: dict[str, Node]) -> Iterator[tuple[Node, Interface]]:
    for node in nodes.values():
        for iface in node.interfaces.values():
            yield node, iface
