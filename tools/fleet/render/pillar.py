"""Render Salt pillar: ``pillar/top.sls`` (by minion id only) and the data it assigns.

- ``nodes/<id>.sls``   that node only: roles, addresses, hardware, disks, BMC address,
                       its minion config (fleet.render.bootstrap)
- ``site.sls``         every node: domain, time, admins, Salt master and repository, apt mirror
- ``hosts.sls``        every node: the hosts table
- ``slurm.sls``        Slurm nodes only: nodes, partitions, GRES, topology
- ``mkv.sls``          mkv masters only: arrays and their volume lists
- ``provisioning.sls`` the provisioning host only
- ``monitoring.sls``   the monitoring host only: Prometheus's targets and alert rules
- ``compute.sls``      nodes with a compute role: Valkey, the code sync, workers, Triton
- ``secrets.munge``    Slurm nodes only; lives in the git-ignored secrets pillar root
- ``secrets.aptcache`` the provisioning host only (the apt cache's admin password); there too
- ``secrets.siterepo`` every node, with a site package repository (its public key); there too
- ``secrets.backupkey`` the storage server of an sftp backup destination (the master's
                       backup login public key); there too
"""

from __future__ import annotations

from typing import Any

from fleet.cabling import role as lldp_role
from fleet.inventory import aptcache, burnintools, lifecycle, nvidia, roles, schema
from fleet.inventory.model import Interface, Inventory, Node
from fleet.render import batch, bootstrap, compute, monitoring, yamlout
from fleet.render.header import header
from fleet.render.hostlist import compress
from fleet.render.mkvlayout import MKV_ROOT, data_mount, subvolume
from fleet.render.names import host_names
from fleet.render.saltsize import site_sizing

SECRET_SLS = {"munge": "secrets.munge", "aptcache": "secrets.aptcache",
              "siterepo": "secrets.siterepo", "backupkey": "secrets.backupkey"}
# Node pillar entries shared by every node of a profile or group: emitted once, reused.
PER_PROFILE = frozenset({"hardware", "os", "roles", "disks", "boot_mode", "profile", "group",
                         "nvidia"})


def _header() -> str:
    # '#!yaml': Salt's default pipeline is jinja|yaml; rendered data must never be
    # interpreted as a template.
    return "#!yaml\n" + header("#")


def _dump(data: Any) -> str:
    return _header() + yamlout.dump(data)


def render(inv: Inventory) -> dict[str, str]:
    out = site_files(inv)
    for files in node_files(inv, list(inv.nodes.values())).values():
        out.update(files)
    return out


def node_files(inv: Inventory, nodes: list[Node]) -> dict[str, dict[str, str]]:
    """Each of ``nodes``' own pillar file, by hostname (a batch: see
    :func:`fleet.render.render_all`)."""
    memo = yamlout.Memo()
    return {node.hostname: {f"pillar/nodes/{node.hostname}.sls": _header() + memo.dump_mapping(
        "node", _node(inv, node), PER_PROFILE)} for node in nodes}


def _top(inv: Inventory, node: Node) -> list[str]:
    site = inv.raw.site
    sls = ["site", "hosts", f"nodes.{node.hostname}"]
    if site.apt.repo is not None:
        sls.append(SECRET_SLS["siterepo"])
    if node.has("slurm.compute") or node.has("slurm.controller"):
        sls += ["slurm", SECRET_SLS["munge"]]
    if node.has("mkv.master"):
        sls.append("mkv")
    if node.hostname == site.provisioning_host:
        sls += ["provisioning", SECRET_SLS["aptcache"]]
    elif site.salt.standby is not None and node.hostname == site.salt.standby.host:
        sls.append("provisioning")  # its salt-master's checkout (provisioning.master)
    if node.hostname == monitoring.host(inv):
        sls.append("monitoring")
    if compute.has_role(inv, node):
        sls.append("compute")
    if node.hostname == roles.backup_host(inv.raw):
        sls.append(SECRET_SLS["backupkey"])
    return sls


def site_files(inv: Inventory) -> dict[str, str]:
    """The pillar files of the whole site (every node's are :func:`node_files`)."""
    out: dict[str, str] = {}
    top = {node.hostname: _top(inv, node) for node in inv.nodes.values()}
    out["pillar/top.sls"] = _dump({"base": top})
    out["pillar/site.sls"] = _dump({"site": _site(inv)})
    out["pillar/hosts.sls"] = _dump({"hosts": _hosts(inv)})
    if inv.raw.slurm is not None:
        out["pillar/slurm.sls"] = _dump({"slurm": _slurm(inv)})
    if inv.raw.mkv is not None:
        out["pillar/mkv.sls"] = _dump({"mkv": _mkv(inv)})
    out["pillar/provisioning.sls"] = _dump({"provisioning": _provisioning(inv)})
    out["pillar/monitoring.sls"] = _dump({"monitoring": monitoring.pillar(inv)})
    if inv.raw.compute is not None:
        out["pillar/compute.sls"] = _dump({"compute": compute.pillar(inv)})
    return out


def _iface(iface: Interface, inv: Inventory) -> dict[str, Any]:
    net = inv.raw.networks[iface.network]
    d: dict[str, Any] = {
        "kind": iface.kind,
        "network": iface.network,
        "address": str(iface.address) if iface.address else None,
        "prefixlen": iface.cidr.prefixlen,
        "cidr": str(iface.cidr),
        "gateway": str(iface.gateway) if iface.gateway else None,
        "vlan": iface.vlan,
        "mtu": iface.mtu,
        "mac": iface.mac,
        "switch": iface.switch,
        "port": iface.port,
        "speed_gbps": iface.speed_gbps,
    }
    if iface.kind == "infiniband":
        d["ipoib_mode"] = net.ipoib_mode
        d["pkey"] = net.pkey
    return d


def _node(inv: Inventory, node: Node) -> dict[str, Any]:
    p = node.profile
    site = inv.raw.site
    interfaces = {name: _iface(i, inv) for name, i in node.interfaces.items() if name != "bmc"}
    interfaces[node.boot_nic]["boot"] = True
    d: dict[str, Any] = {
        "hostname": node.hostname,
        "fqdn": f"{node.hostname}.{site.domain}",
        "group": node.group,
        "profile": node.profile_name,
        "roles": list(node.all_roles),
        "serial": node.serial,
        "boot_mode": p.boot_mode,
        "os": batch.once("pillar.os", lambda: {"distro": site.os.distro,
                                               "release": site.os.release}),
        "hardware": batch.once(("pillar.hardware", id(p)), lambda: _hardware(p)),
        "interfaces": interfaces,
        "bmc": _bmc(node),
        "disks": _disks(node),
        "ib_guid": node.ib_guid,
        "salt": bootstrap.node_pillar(inv, node),
        "apt": aptcache.node_apt(site, inv.nodes[site.provisioning_host], node),
        "monitoring": monitoring.node_pillar(node),
        "lldp": lldp_role.node_pillar(node),
    }
    if node.has("nvidia"):
        d["nvidia"] = batch.once(("pillar.nvidia", id(p)), lambda: {
            "branches": nvidia.branches(site, p), "burnin_tools": burnintools.pillar(site)})
    if (reach := compute.node_pillar(inv, node)) is not None:
        d["compute"] = reach
    if node.hostname == roles.backup_host(inv.raw):
        d["backup_target"] = _backup_target(inv)
    return d | _node_services(inv, node)


def _hardware(p: schema.Profile) -> dict[str, Any]:
    return {
        "vendor": p.vendor,
        "model": p.model,
        "cpu": p.cpu.model_dump(),
        "memory_gb": p.memory_gb,
        "gpu": p.gpu.model_dump(exclude={"driver_branch"}) if p.gpu else None,
    }


def _backup_target(inv: Inventory) -> dict[str, Any]:
    """The master's backup login on an sftp destination's storage server (backup.target):
    its user, the repository's directory, and its key's options (from the masters only:
    their nodes' addresses, and site.salt.master_address where it names another, the
    lab's master on its host)."""
    from fleet import backupsftp as sftp

    site = inv.raw.site
    assert site.backup is not None and site.backup.destination.user is not None
    dest = site.backup.destination
    masters = [site.salt.master] + ([site.salt.standby.host] if site.salt.standby else [])
    found = [str(inv.nodes[m].address) for m in masters if m in inv.nodes]
    addresses = list(dict.fromkeys([*found, str(inv.master_address)]))
    return {"user": dest.user, "path": dest.path, "options": sftp.login_options(addresses)}


def _bmc(node: Node) -> dict[str, Any]:
    bmc = node.interfaces.get("bmc")
    return {
        "address": str(bmc.address) if bmc and bmc.address else None,
        "mac": node.bmc_mac,
        "kind": node.profile.bmc.kind,
        "protocol": node.profile.bmc.protocol,
        "switch": bmc.switch if bmc else None,
        "port": bmc.port if bmc else None,
    }


def _disks(node: Node) -> dict[str, Any]:
    """The boot disk the installer matches, and the data disks (one mkv subvolume each on
    a volume node)."""
    p = node.profile
    data_disks: list[dict[str, Any]] = []
    for i, disk in enumerate(p.data_disks):
        entry: dict[str, Any] = {"index": i, "kind": disk.kind, "size_gb": disk.size_gb}
        if node.mkv_array is not None:
            entry |= {"name": subvolume(i), "mount": data_mount(i)}
        data_disks.append(entry)
    boot = next(d for d in p.disks if d.role == "boot")
    return {
        "boot": {"kind": boot.kind, "size_gb": boot.size_gb,
                 "match": node.boot_disk.model_dump(exclude_none=True)
                 if node.boot_disk else {}},
        "data": data_disks,
    }


def _node_services(inv: Inventory, node: Node) -> dict[str, Any]:
    """What the node's InfiniBand, Slurm partition and mkv array add to its pillar."""
    d: dict[str, Any] = {}
    ib = [i for i in node.interfaces.values() if i.kind == "infiniband"]
    if ib:
        d["infiniband"] = {"subnet_manager": any(
            node.hostname in inv.raw.switches[i.switch].sm_hosts for i in ib if i.switch)}
    if node.partition is not None:
        d["slurm"] = {"partition": node.partition}
    if node.mkv_array is not None and inv.raw.mkv is not None:
        array = inv.raw.mkv.arrays[node.mkv_array]
        d["mkv"] = {
            "array": node.mkv_array,
            "port": array.volume_port,
            "volume": f"{node.hostname}:{array.volume_port}",
            "root": f"{MKV_ROOT}",
            "subvolumes": len(node.profile.data_disks),
        }
    return d


def _site(inv: Inventory) -> dict[str, Any]:
    site = inv.raw.site
    prov = inv.nodes[site.provisioning_host]
    return {
        "name": site.name,
        "domain": site.domain,
        "timezone": site.timezone,
        "ntp_servers": list(site.ntp_servers),
        "dns_servers": [str(a) for a in site.dns_servers],
        "os": site.os.model_dump(),
        "admins": [a.model_dump() for a in site.admins],
        "salt": {
            "master": site.salt.master,
            "master_address": str(inv.master_address),
            "version": site.salt.version,
            "repo": site.salt.repo,
            "master_finger": site.salt.master_finger,
            "sizing": site_sizing(inv),
            "bootstrap": bootstrap.site_pillar(inv),
            **_standby(inv),
        },
        "apt": site.apt.model_dump(),
        "provisioning": {"host": prov.hostname, "address": str(prov.address),
                         "http_port": site.http_port},
        "monitoring": monitoring.site_pillar(inv),
    }


def _standby(inv: Inventory) -> dict[str, Any]:
    """``site:salt:standby`` (provisioning.standby, provisioning.keysource), only with one:
    where each master is, the standby's sync key and how often it pulls."""
    standby = inv.raw.site.salt.standby
    if standby is None or inv.standby_address is None:
        return {}
    return {"standby": {"host": standby.host, "address": str(inv.standby_address),
                        "master_address": str(inv.nodes[inv.raw.site.salt.master].address),
                        "sync_key": standby.sync_key,
                        "sync_interval_s": standby.sync_interval_s}}


def _hosts(inv: Inventory) -> list[dict[str, Any]]:
    return [{"address": str(addr), "names": [fqdn, short]}
            for addr, short, fqdn in host_names(inv)]


def _slurm(inv: Inventory) -> dict[str, Any]:
    slurm = inv.raw.slurm
    assert slurm is not None
    controller = inv.nodes[slurm.controller]
    # One NodeName line per profile (the hardware that slurmd -C must report) and state:
    # planned nodes are State=FUTURE (defined, never scheduled until they are active)
    by_profile: dict[tuple[str, str], list[Node]] = {}
    for node in inv.with_role("slurm.compute"):
        state = "FUTURE" if node.state == "planned" else "UNKNOWN"
        by_profile.setdefault((node.profile_name, state), []).append(node)
    node_lines = []
    gres = []
    for (pname, state), nodes in by_profile.items():
        p = nodes[0].profile
        names = compress(n.hostname for n in nodes)
        node_lines.append({
            "names": names,
            "state": state,
            "sockets": p.cpu.sockets,
            "cores_per_socket": p.cpu.cores_per_socket,
            "threads_per_core": p.cpu.threads_per_core,
            "real_memory_mb": p.memory_gb * 1024 * (100 - slurm.memory_reserve_percent) // 100,
            "features": [pname],
            "gres": f"gpu:{p.gpu.model}:{p.gpu.count}" if p.gpu else None,
        })
        gres += _gres_lines(names, p)
    partitions = []
    topology = []
    for pname, part in slurm.partitions.items():
        members = inv.in_partition(pname)
        # a node in burn-in is in the burn-in partition alone, but on its switch still
        partitions.append({"name": pname, "default": part.default, "max_time": part.max_time,
                           "nodes": compress(n.hostname for n in members
                                             if lifecycle.in_user_partitions(n))})
        topology.append({"switch": part.ib_switch,
                         "nodes": compress(n.hostname for n in members)})
    return {
        "cluster": slurm.cluster,
        "version": slurm.version,
        "controller": {"host": controller.hostname, "address": str(controller.address)},
        "nodes": node_lines,
        "gres": gres,
        "partitions": partitions,
        "topology": topology,
        "drains": lifecycle.drains(inv),
        "preempt": compute.slurm_preempt(inv),
        "burnin": _burnin_partition(inv),
    }


def _burnin_partition(inv: Inventory) -> dict[str, str] | None:
    """pillar ``slurm:burnin``: the burn-in partition (fleet.inventory.lifecycle) and its
    nodes (None: no compute node is in burn-in; a partition of no nodes is no line)."""
    nodes = [n.hostname for n in inv.nodes.values() if lifecycle.in_burnin_partition(n)]
    return ({"partition": lifecycle.BURNIN_PARTITION, "nodes": compress(nodes)}
            if nodes else None)


def _gres_lines(names: str, p: schema.Profile) -> list[dict[str, Any]]:
    """Explicit File= lines (Debian/Ubuntu slurm-wlm has no NVML), GPUs split evenly over
    sockets so jobs get cores local to their GPUs."""
    if not p.gpu:
        return []
    out = []
    per_socket = -(-p.gpu.count // p.cpu.sockets)  # ceil: every GPU listed once
    cores = p.cpu.cores_per_socket
    for s in range(p.cpu.sockets):
        first = s * per_socket
        last = min(first + per_socket, p.gpu.count) - 1
        if first > last:
            break
        files = f"/dev/nvidia{first}" if first == last else f"/dev/nvidia[{first}-{last}]"
        out.append({"names": names, "name": "gpu", "type": p.gpu.model,
                    "file": files, "cores": f"{s * cores}-{(s + 1) * cores - 1}"})
    return out

def _mkv(inv: Inventory) -> dict[str, Any]:
    mkv = inv.raw.mkv
    assert mkv is not None
    arrays = {}
    for aname, array in mkv.arrays.items():
        vols = inv.in_array(aname)
        subvolumes = len(vols[0].profile.data_disks) if vols else 0
        arrays[aname] = {
            "master": array.master,
            "port": array.port,
            "replicas": array.replicas,
            "subvolumes": subvolumes,
            "index_path": array.index_path,
            "volume_port": array.volume_port,
            "volumes": [f"{n.hostname}:{array.volume_port}" for n in vols],
            "purpose": array.purpose,
        }
    out: dict[str, Any] = {"version": mkv.version, "arrays": arrays}
    if mkv.artifact is not None:
        out["artifact"] = mkv.artifact.model_dump(exclude_none=True)
    return out


def _provisioning(inv: Inventory) -> dict[str, Any]:
    site = inv.raw.site
    out = {
        "checkout": site.checkout,
        "pxe_root": site.pxe_root,
        "pxe_state": site.pxe_state,
        "upstream_dns": [str(a) for a in site.upstream_dns],
        "http_port": site.http_port,
        "install": site.install.model_dump(),
        # the same files relative to the role's images directory (served as /images/;
        # fleet.inventory.checks.install.check_install_media holds them there)
        "media": {
            "iso": site.install.iso_url.split("/images/", 1)[1],
            "kernel": site.install.kernel.removeprefix("images/"),
            "initrd": site.install.initrd.removeprefix("images/"),
        },
        "apt_cache": aptcache.pillar(site, inv.nodes[site.provisioning_host]),
        "networks": {
            name: {"purpose": n.purpose, "cidr": str(n.cidr), "vlan": n.vlan,
                   "gateway": str(n.gateway) if n.gateway else None}
            for name, n in inv.raw.networks.items()
        },
    }
    if (pycache := compute.provisioning_pillar(inv)) is not None:
        out["python_cache"] = pycache
    return out
