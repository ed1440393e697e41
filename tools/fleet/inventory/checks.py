"""Cross-object rules, run on the expanded inventory after the schema has passed.

Each rule is a generator of :class:`Problem`; all of them run, so one ``fleet validate``
reports every error. A rule that finds a collision reports it at the later occurrence
and names where the first one is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from ipaddress import IPv4Address
from typing import TypeVar, Unpack

from fleet.inventory import aptcache, racks, schema
from fleet.inventory.compute import check_compute
from fleet.inventory.lifecycle import check_lifecycle
from fleet.inventory.model import Node, YamlPath
from fleet.inventory.netutil import normalize_mac
from fleet.inventory.nvidia import check_nvidia_branch
from fleet.inventory.slurmcompat import check_slurm_versions
from fleet.inventory.types import rel_path
from fleet.problems import Problem, ProblemOptions, Reporter, dotted, short
from fleet.yamlsrc import Source


@dataclass(frozen=True)
class Ctx(Reporter):
    raw: schema.Inventory
    nodes: dict[str, Node]
    src: Source


Rule = Callable[[Ctx], Iterator[Problem]]

K = TypeVar("K")


def _claim(c: Ctx, seen: dict[K, tuple[str, YamlPath]], value: K, owner: str, path: YamlPath,
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
            yield from _claim(c, seen, mac, node.hostname, path, str(value), code="duplicate_mac")


def check_serials(c: Ctx) -> Iterator[Problem]:
    seen: dict[str, tuple[str, YamlPath]] = {}
    guids: dict[str, tuple[str, YamlPath]] = {}
    spelled: dict[str, str] = {}
    for node in c.nodes.values():  # one machine whatever the case: labels and BMCs differ
        key = node.serial.casefold()
        first = spelled.setdefault(key, node.serial)
        yield from _claim(c, seen, key, node.hostname, ("nodes", node.hostname, "serial"),
                          node.serial, code="duplicate_serial",
                          hint=None if first == node.serial else
                          f"as {first}: serials are compared ignoring case")
        if node.ib_guid:
            yield from _claim(c, guids, node.ib_guid, node.hostname,
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
            yield from _claim(c, seen, addr, f"{node.hostname} ({nic})", origin, str(addr),
                              shown=shown, code="duplicate_ip")


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


# Fixed ports of the services the Salt roles run (salt/*/defaults.yaml), TCP.
SSH_PORT, DNS_PORT = 22, 53
SALT_PORTS = (4505, 4506)
SLURMCTLD_PORT, SLURMD_PORT = 6817, 6818
# the monitoring roles' (fleet.render.monitoring): node_exporter on every node, the rest
# on the monitoring host
MONITORING_PORTS = {"node_exporter": 9100, "prometheus": 9090, "alertmanager": 9093,
                    "blackbox": 9115}


_Service = tuple[str, int, str, YamlPath, bool]  # host, port, what, path, fixed port


def _services(c: Ctx) -> list[_Service]:
    """Every TCP service of every node, with the field that places it there."""
    raw = c.raw
    site = raw.site
    services: list[_Service] = []

    def add(host: str, port: int, what: str, path: YamlPath, fixed: bool = False) -> None:
        if host in c.nodes:
            services.append((host, port, what, path, fixed))

    for host in c.nodes:
        add(host, SSH_PORT, "sshd", ("nodes", host), True)
        add(host, MONITORING_PORTS["node_exporter"], "prometheus-node-exporter",
            ("nodes", host), True)
    mon = site.monitoring.host or site.provisioning_host
    for what in ("prometheus", "alertmanager", "blackbox"):
        add(mon, MONITORING_PORTS[what], f"{what} (monitoring)", ("site", "monitoring", "host"),
            True)
    prov = site.provisioning_host
    add(prov, DNS_PORT, "dnsmasq (DNS)", ("site", "provisioning_host"), True)
    add(prov, site.http_port, "nginx (the boot HTTP server)", ("site", "http_port"))
    if prov in c.nodes:
        add(prov, aptcache.port(site, c.nodes[prov]), "apt-cacher-ng (the apt cache)",
            ("site", "apt", "mirror"))
    for port in SALT_PORTS:
        add(site.salt.master, port, "salt-master", ("site", "salt", "master"), True)
    add(site.salt.master, site.salt.reinstall_port, "fleet reinstall's endpoint",
        ("site", "salt", "reinstall_port"))
    if raw.slurm is not None:
        add(raw.slurm.controller, SLURMCTLD_PORT, "slurmctld", ("slurm", "controller"), True)
        for node in c.nodes.values():
            if node.has("slurm.compute"):
                add(node.hostname, SLURMD_PORT, "slurmd", ("nodes", node.hostname), True)
    if raw.mkv is not None:
        for aname, array in raw.mkv.arrays.items():
            apath: YamlPath = ("mkv", "arrays", aname)
            add(array.master, array.port, f"mkv master of array {aname}", (*apath, "port"))
            for node in c.nodes.values():
                if node.mkv_array == aname:
                    add(node.hostname, array.volume_port, f"mkv volume of array {aname}",
                        (*apath, "volume_port"))
    return services


def check_service_ports(c: Ctx) -> Iterator[Problem]:
    """Two services of one host on one TCP port: the second one would not start."""
    services = _services(c)
    seen: dict[tuple[str, int], tuple[str, YamlPath, bool]] = {}
    reported: set[tuple[YamlPath, str]] = set()
    for host, port, what, path, fixed in sorted(services, key=lambda s: not s[4]):
        first = seen.get((host, port))
        if first is None:
            seen[(host, port)] = (what, path, fixed)
            continue
        fwhat, fpath, _ = first
        if fwhat.startswith("mkv ") and what.startswith("mkv "):
            continue  # check_mkv_ports reports these, by array
        if (path, fwhat) in reported:
            continue  # once per field and clash, not once per volume host
        reported.add((path, fwhat))
        where = "" if fpath[0] == "nodes" else f" ({c.src.pos(fpath)})"
        yield c.problem(path, f"port {port} on {host} is already used by {fwhat}{where}; "
                        f"{what} cannot listen there too", code="duplicate_port")


# Directories outside the inventory that deployments own (salt/provisioning/defaults.yaml).
IMAGES_DIR = "/srv/fleet/images"


def _inside(a: str, b: str) -> bool:
    return a == b or a.startswith(b.rstrip("/") + "/")


def check_paths(c: Ctx) -> Iterator[Problem]:
    """The directories that states create, sync into (rsync --delete) or own must be apart:
    none may equal or contain another (the checkout holds the secrets root)."""
    site = c.raw.site
    dirs: list[tuple[str, str, YamlPath | None]] = [
        (site.checkout, "the checkout (and the secrets root in it)", ("site", "checkout")),
        (site.pxe_root, "pxe_root", ("site", "pxe_root")),
        (site.pxe_state, "pxe_state", ("site", "pxe_state")),
        (site.pxe_state + "-tokens", "the install tokens directory (pxe_state-tokens)", None),
        (IMAGES_DIR, "the installer images directory", None),
    ]
    if c.raw.mkv is not None:
        for aname, array in c.raw.mkv.arrays.items():
            dirs.append((array.index_path, f"the index of mkv array {aname}",
                         ("mkv", "arrays", aname, "index_path")))
    for i, (path, what, ypath) in enumerate(dirs):
        for other, owhat, opath in dirs[:i]:
            if not (_inside(path, other) or _inside(other, path)):
                continue
            how = "is" if path == other else ("is inside" if _inside(path, other)
                                              else "contains")
            where = f" ({c.src.pos(opath)})" if opath is not None else ""
            target = ypath if ypath is not None else opath
            assert target is not None
            yield c.problem(target, f"{what} {path} {how} {owhat} {other}{where}", code="overlap",
                            hint="each deployment directory needs a tree of its own")
            break


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
            yield from _claim(c, seen, (iface.switch, iface.port), f"{node.hostname} ({nic})",
                              origin, f"{iface.switch} port {iface.port}", shown=shown,
                              code="duplicate_port")


def check_hardware(c: Ctx) -> Iterator[Problem]:
    for node in c.nodes.values():
        hw = node.facts.hardware
        if hw is None:
            continue
        p = node.profile
        path: YamlPath = ("nodes", node.hostname, "hardware")
        expected = {
            "gpus": p.gpu.count if p.gpu else 0,
            "cpu_sockets": p.cpu.sockets,
            "cores_per_socket": p.cpu.cores_per_socket,
            "memory_gb": p.memory_gb,
        }
        for field, want in expected.items():
            got = getattr(hw, field)
            if got is not None and got != want:
                yield c.problem((*path, field), f"{got} does not match profile "
                                f"{node.profile_name!r}, which has {want}",
                                code="hardware_mismatch",
                                hint="repair the machine, or give it a profile that matches")


@dataclass(frozen=True)
class _Membership:
    """A role whose node groups name one entry of a top-level table, and the words for it."""

    role: str  # slurm.compute
    field: str  # the node group's field: slurm_partition
    needs: str  # a slurm_partition
    place: str  # a partition
    what: str  # partition (unknown partition 'x')
    section: str  # the top-level section: slurm
    table: str  # its table of entries: partitions


MEMBERSHIPS = (
    _Membership("slurm.compute", "slurm_partition", "a slurm_partition", "a partition",
                "partition", "slurm", "partitions"),
    _Membership("mkv.volume", "mkv_array", "an mkv_array", "an mkv array", "mkv array", "mkv",
                "arrays"),
)


def _entries(raw: schema.Inventory, m: _Membership) -> dict[str, object] | None:
    section = getattr(raw, m.section)
    return None if section is None else dict(getattr(section, m.table))


def check_memberships(c: Ctx) -> Iterator[Problem]:
    """A group with the role names an existing entry; a group without it names none."""
    for gname, group in c.raw.node_groups.items():
        gpath: YamlPath = ("node_groups", gname)
        for m in MEMBERSHIPS:
            value = getattr(group, m.field)
            has_role = m.role in group.roles
            if has_role and value is None:
                yield c.problem((*gpath, "roles"), f"{m.role} nodes need {m.needs}",
                                code="missing")
            if value is None:
                continue
            if not has_role:
                yield c.problem((*gpath, m.field),
                                f"only groups with role {m.role} can be in {m.place}",
                                code="mismatch")
            entries = _entries(c.raw, m)
            if entries is None or value not in entries:
                known = ", ".join(entries) if entries is not None \
                    else f"none (no {m.section} section)"
                yield c.problem((*gpath, m.field), f"unknown {m.what} {value!r}",
                                code="unknown_ref", hint=f"known {m.table}: {known}")


def check_roles(c: Ctx) -> Iterator[Problem]:
    """What a role needs of the group's hardware profile."""
    raw = c.raw
    for gname, group in raw.node_groups.items():
        gpath: YamlPath = ("node_groups", gname)
        profile = raw.profiles.get(group.profile)
        if profile is None:
            continue
        if (group.mkv_array is not None and raw.mkv is not None
                and group.mkv_array in raw.mkv.arrays
                and not profile.data_disks):
            yield c.problem((*gpath, "mkv_array"),
                            f"profile {group.profile!r} has no data disks for mkv",
                            code="mismatch")
        if "nvidia" in group.roles and profile.gpu is None:
            yield c.problem((*gpath, "roles"), f"role nvidia needs GPUs, but profile "
                            f"{group.profile!r} has none", code="mismatch")
        if "infiniband" in group.roles and not any(
                n.kind == "infiniband" for n in profile.nics.values()):
            yield c.problem((*gpath, "roles"), f"role infiniband needs an InfiniBand NIC, "
                            f"but profile {group.profile!r} has none", code="mismatch")


def check_profiles(c: Ctx) -> Iterator[Problem]:
    """The installer must only ever touch the boot disk."""
    for pname, profile in c.raw.profiles.items():
        path: YamlPath = ("profiles", pname, "disks")
        boots = [(i, d) for i, d in enumerate(profile.disks) if d.role == "boot"]
        if len(boots) != 1 or boots[0][1].count != 1:
            yield c.problem(path, "a profile needs exactly one boot disk (role: boot, count: 1)",
                            code="boot_disk")
            continue
        i, boot = boots[0]
        data = profile.data_disks
        if not data:
            continue
        match = boot.match
        if match is None or match.model_dump(exclude_none=True) == {}:
            yield c.problem((*path, i), "a profile with data disks needs a boot-disk 'match' "
                            "(serial, model, id_path or size), or an install could pick a data "
                            "disk", code="boot_disk")
        elif match.size == "largest" and any(d.size_gb >= boot.size_gb for d in data):
            yield c.problem((*path, i, "match", "size"), "'largest' would pick a data disk: "
                            "the boot disk is not the largest", code="boot_disk")
        elif match.size == "smallest" and any(d.size_gb <= boot.size_gb for d in data):
            yield c.problem((*path, i, "match", "size"), "'smallest' would pick a data disk: "
                            "the boot disk is not the smallest", code="boot_disk")


def _host_with_role(c: Ctx, path: YamlPath, host: str, role: str) -> Iterator[Problem]:
    node = c.nodes.get(host)
    if node is None:
        if host not in c.raw.nodes:
            yield c.problem(path, f"unknown node {host!r}", code="unknown_ref")
    elif role not in node.roles:
        yield c.problem(path, f"{host} does not have role {role}", code="mismatch",
                        hint=f"add {role} to the roles of node group {node.group!r}")


def check_salt_master(c: Ctx) -> Iterator[Problem]:
    """The provisioning host and the Salt master are nodes (the first with its role)."""
    raw = c.raw
    yield from _host_with_role(c, ("site", "provisioning_host"), raw.site.provisioning_host,
                               "provisioning")
    if raw.site.salt.master not in raw.nodes:
        yield c.problem(("site", "salt", "master"), f"unknown node {raw.site.salt.master!r}",
                        code="unknown_ref")


def check_monitoring(c: Ctx) -> Iterator[Problem]:
    """The monitoring host, when named, is a node of the inventory."""
    host = c.raw.site.monitoring.host
    if host is not None and host not in c.raw.nodes:
        yield c.problem(("site", "monitoring", "host"), f"unknown node {host!r}",
                        code="unknown_ref", hint="name a node of nodes:, or leave it out "
                        "(the provisioning host)")


def check_slurm(c: Ctx) -> Iterator[Problem]:
    """The controller, one default partition, and each partition's nodes on its fabric; Slurm
    roles only with a ``slurm`` section."""
    raw = c.raw
    if raw.slurm is None:
        for gname, group in raw.node_groups.items():
            if {"slurm.compute", "slurm.controller"} & set(group.roles):
                yield c.problem(("node_groups", gname, "roles"),
                                "nodes have Slurm roles but there is no 'slurm' section",
                                code="missing", hint="add a top-level 'slurm:' section")
                break
        return
    yield from _host_with_role(c, ("slurm", "controller"), raw.slurm.controller,
                               "slurm.controller")
    defaults = [p for p, part in raw.slurm.partitions.items() if part.default]
    if len(defaults) > 1:
        yield c.problem(("slurm", "partitions", defaults[1], "default"),
                        f"only one partition can be the default (also {defaults[0]})")
    members: dict[str, list[Node]] = {p: [] for p in raw.slurm.partitions}
    for node in c.nodes.values():
        if node.partition in members:
            members[node.partition].append(node)
    for pname, part in raw.slurm.partitions.items():
        yield from _partition(c, pname, part, members[pname])


def _partition(c: Ctx, pname: str, part: schema.Partition,
               members: list[Node]) -> Iterator[Problem]:
    ppath: YamlPath = ("slurm", "partitions", pname)
    sw = c.raw.switches.get(part.ib_switch)
    if sw is None:
        yield c.problem((*ppath, "ib_switch"), f"unknown switch {part.ib_switch!r}",
                        code="unknown_ref")
    elif sw.kind != "infiniband":
        yield c.problem((*ppath, "ib_switch"),
                        f"{part.ib_switch} is an {sw.kind} switch, not InfiniBand",
                        code="mismatch")
    if not members:
        yield c.problem(ppath, f"partition {pname} has no nodes", code="empty", key=True,
                        hint="put a node group in it (slurm_partition) or remove it")
    for node in members:
        ib = [i for i in node.interfaces.values() if i.kind == "infiniband"]
        if ib and sw is not None and all(i.switch != part.ib_switch for i in ib):
            yield c.problem(node.origin.get("partition",
                                            ("node_groups", node.group, "slurm_partition")),
                            f"{node.hostname} is in partition {pname} but not cabled "
                            f"to its fabric {part.ib_switch}", code="mismatch",
                            hint="a partition's jobs must never span IB fabrics")
            break


def _mkv_volumes(c: Ctx) -> dict[str, list[Node]]:
    volumes: dict[str, list[Node]] = {}
    for node in c.nodes.values():
        if node.mkv_array is not None:
            volumes.setdefault(node.mkv_array, []).append(node)
    return volumes


def check_mkv(c: Ctx) -> Iterator[Problem]:
    """Each array's master has the role; its volumes are enough for the replicas and have the
    same number (at least 2) of data disks."""
    if c.raw.mkv is None:
        return
    volumes = _mkv_volumes(c)
    for aname, array in c.raw.mkv.arrays.items():
        apath: YamlPath = ("mkv", "arrays", aname)
        yield from _host_with_role(c, (*apath, "master"), array.master, "mkv.master")
        vols = volumes.get(aname, [])
        if not vols:
            yield c.problem(apath, f"mkv array {aname} has no volumes", code="empty",
                            key=True, hint="put a node group in it (mkv_array) or remove it")
            continue
        if array.replicas > len(vols):
            yield c.problem((*apath, "replicas"), f"{array.replicas} replicas need at least "
                            f"{array.replicas} volumes, array {aname} has {len(vols)}",
                            code="replicas")
        counts = {len(n.profile.data_disks) for n in vols}
        if len(counts) > 1:
            yield c.problem(apath, f"all volumes of array {aname} need the same number of "
                            f"data disks (mkv -subvolumes), found {sorted(counts)}",
                            code="mismatch", key=True)
        elif counts == {1}:
            # mkv -subvolumes 1 puts keys under the volume's root, not under sv00,
            # which is where the one data disk is mounted: writes would fill the OS disk
            yield c.problem(apath, f"the volumes of array {aname} have one data disk "
                            "each: mkv -subvolumes 1 writes under the volume's root "
                            "(the OS disk), not on the data disk",
                            code="single_disk", key=True,
                            hint="give the profile at least 2 data disks, or put these "
                                 "nodes in no mkv array")


def check_mkv_ports(c: Ctx) -> Iterator[Problem]:
    """Two arrays on one port of one host (a master's port, or the volume port of its
    volumes)."""
    if c.raw.mkv is None:
        return
    volumes = _mkv_volumes(c)
    ports: dict[tuple[str, int], str] = {}
    for aname, array in c.raw.mkv.arrays.items():
        for host, port, what in ((array.master, array.port, "port"),
                                 (None, array.volume_port, "volume_port")):
            hosts = [host] if host else [n.hostname for n in volumes.get(aname, [])]
            for h in hosts:
                if (h, port) in ports:
                    yield c.problem(("mkv", "arrays", aname, what),
                                    f"port {port} on {h} is already used by array "
                                    f"{ports[(h, port)]}", code="duplicate_port")
                    break
                ports[(h, port)] = aname


def check_fabrics(c: Ctx) -> Iterator[Problem]:
    """Every InfiniBand fabric needs a subnet manager, on the switch or on cabled hosts."""
    cabled: dict[str, set[str]] = {}
    for node in c.nodes.values():
        for iface in node.interfaces.values():
            if iface.kind == "infiniband" and iface.switch is not None:
                cabled.setdefault(iface.switch, set()).add(node.hostname)
    for sname, sw in c.raw.switches.items():
        path: YamlPath = ("switches", sname)
        if sw.kind != "infiniband":
            if sw.sm_hosts:
                yield c.problem((*path, "sm_hosts"), "only InfiniBand switches have subnet "
                                "managers", code="mismatch")
            continue
        hosts = cabled.get(sname, set())
        if hosts and not sw.subnet_manager and not sw.sm_hosts:
            yield c.problem(path, f"fabric {sname} has no subnet manager: its ports would stay "
                            "INIT", code="no_sm", key=True,
                            hint="set subnet_manager: true (managed switch) or list sm_hosts")
        for i, host in enumerate(sw.sm_hosts):
            sm_node = c.nodes.get(host)
            if sm_node is None:
                if host not in c.raw.nodes:
                    yield c.problem((*path, "sm_hosts", i), f"unknown node {host!r}",
                                    code="unknown_ref")
            elif host not in hosts or not sm_node.has("infiniband"):
                yield c.problem((*path, "sm_hosts", i), f"{host} is not an infiniband node "
                                f"cabled to {sname}", code="mismatch")


def check_apt_cache(c: Ctx) -> Iterator[Problem]:
    """The apt URLs that name the provisioning host go through its apt-cacher-ng: acng's
    URL syntax (the upstream host first), and all on the one port it listens on."""
    site = c.raw.site
    prov = c.nodes.get(site.provisioning_host)
    if prov is None:
        return
    first: aptcache.AptUrl | None = None
    for u in aptcache.classify(site, prov):
        # every upstream gets a Remap- line (aptcache.pillar), one fetched directly too:
        # one that cannot be a word of it was dropped from the cache's list unsaid
        if u.error is not None:
            yield c.problem(u.path, f"{short(u.url)}: {u.error}", code="invalid")
            continue
        if not u.through:
            continue
        if first is None:
            first = u
        elif u.port != first.port:
            yield c.problem(u.path, f"port {u.port} differs from {dotted(first.path)}'s "
                            f"port {first.port} ({c.src.pos(first.path)}): the apt cache on "
                            f"{prov.hostname} listens on one port", code="mismatch")


def _rel_ok(value: str) -> bool:
    try:
        rel_path(value)
    except ValueError:
        return False
    return True


def check_install_media(c: Ctx) -> Iterator[Problem]:
    """The provisioning role puts the ISO and the kernel and initrd it unpacks into its
    images directory, which the boot HTTP server serves as /images/: so that is where
    site.install must name them."""
    site = c.raw.site
    prov = c.nodes.get(site.provisioning_host)
    media = site.install
    base: YamlPath = ("site", "install")
    for key in ("kernel", "initrd"):
        value = getattr(media, key)
        if not value.startswith("images/") or value == "images/":
            yield c.problem((*base, key), f"{value} is not under images/: the provisioning "
                            "role unpacks it from the ISO into its images directory, served "
                            "as images/", code="invalid")
    if media.kernel == media.initrd:
        yield c.problem((*base, "initrd"), f"{media.initrd} is also the kernel",
                        code="invalid")
    if prov is None:
        return
    port = "" if site.http_port == 80 else f":{site.http_port}"
    want = f"http://{prov.address}{port}/images/"
    if not media.iso_url.startswith(want) or len(media.iso_url) == len(want) \
            or media.iso_url.endswith("/") or "?" in media.iso_url or "#" in media.iso_url:
        yield c.problem((*base, "iso_url"), f"{short(media.iso_url)} is not a file under "
                        f"{want}: the provisioning role serves the ISO from its images "
                        "directory on the boot HTTP server", code="invalid")
    elif not _rel_ok(media.iso_url[len(want):]):
        yield c.problem((*base, "iso_url"), f"{short(media.iso_url)}: the file's path under "
                        "/images/ must be plain (letters, digits, ._+-, no percent-encoding)",
                        code="invalid")
    elif media.iso_url[len(want):] in (media.kernel[7:], media.initrd[7:]):
        yield c.problem((*base, "iso_url"), f"{short(media.iso_url)} is the kernel's or "
                        "initrd's path", code="invalid")


def check_racks(c: Ctx) -> Iterator[Problem]:
    """Rack placement: known racks, inside their height, one device per unit (racks.py)."""
    yield from racks.check_racks(c, c.raw, c.nodes)


RULES: tuple[Rule, ...] = (
    check_networks,
    check_network_addresses,
    check_master_address,
    check_service_ports,
    check_paths,
    check_apt_cache,
    check_install_media,
    check_macs,
    check_serials,
    check_addresses,
    check_switch_ports,
    check_hardware,
    check_memberships,
    check_roles,
    check_profiles,
    check_salt_master,
    check_monitoring,
    check_slurm,
    check_mkv,
    check_mkv_ports,
    check_fabrics,
    check_slurm_versions,
    check_racks,
    check_lifecycle,
    check_nvidia_branch,
    check_compute,
)


def run_all(c: Ctx) -> list[Problem]:
    problems: list[Problem] = []
    for rule in RULES:
        problems.extend(rule(c))
    return problems
