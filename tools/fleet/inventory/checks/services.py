"""The services the roles run: their TCP ports, and the hosts that Salt, Slurm, mkv and
monitoring name."""

from __future__ import annotations

from collections.abc import Iterator

from fleet.inventory import aptcache, schema
from fleet.inventory.checks.ctx import Ctx
from fleet.inventory.model import Node, YamlPath
from fleet.problems import Problem

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
    for host, path in _salt_masters(site):
        for port in SALT_PORTS:
            add(host, port, "salt-master", path, True)
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


def _salt_masters(site: schema.Site) -> list[tuple[str, YamlPath]]:
    """The hosts that run a salt-master (the standby too), with the field naming each."""
    out: list[tuple[str, YamlPath]] = [(site.salt.master, ("site", "salt", "master"))]
    if site.salt.standby is not None and site.salt.standby.host != site.salt.master:
        out.append((site.salt.standby.host, ("site", "salt", "standby", "host")))
    return out


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


def _host_with_role(c: Ctx, path: YamlPath, host: str, role: str) -> Iterator[Problem]:
    node = c.nodes.get(host)
    if node is None:
        if host not in c.raw.nodes:
            yield c.problem(path, f"unknown node {host!r}", code="unknown_ref")
    elif role not in node.roles:
        yield c.problem(path, f"{host} does not have role {role}", code="mismatch",
                        hint=f"add {role} to the roles of node group {node.group!r}")


def check_salt_master(c: Ctx) -> Iterator[Problem]:
    """The provisioning host and the Salt master are nodes (the first with its role); a
    standby master is another node."""
    raw = c.raw
    yield from _host_with_role(c, ("site", "provisioning_host"), raw.site.provisioning_host,
                               "provisioning")
    if raw.site.salt.master not in raw.nodes:
        yield c.problem(("site", "salt", "master"), f"unknown node {raw.site.salt.master!r}",
                        code="unknown_ref")
    standby = raw.site.salt.standby
    path: YamlPath = ("site", "salt", "standby", "host")
    if standby is None:
        return
    if standby.host not in raw.nodes:
        yield c.problem(path, f"unknown node {standby.host!r}", code="unknown_ref")
    elif standby.host == raw.site.salt.master:
        yield c.problem(path, f"{standby.host} is the Salt master itself; a standby is "
                        "another head node", code="mismatch",
                        hint="name a second head node, or remove site.salt.standby")


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
