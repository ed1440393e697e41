"""The compute layer's facts and rules: miniray's central Valkey, its workers, Triton and
the code sync (the inventory's ``compute:`` section).

Which nodes get which compute role is derived here (pillar ``node:roles``), and
:func:`check_compute` holds ``fleet validate``'s rules for the section: one central
server on a node that is not retired; the server and the code sync host on a cluster
network that every worker shares; worker groups in a Slurm partition (the worker runs as a
requeued Slurm job); Python >= 3.12 on every worker's OS (miniray requires it); Triton's
groups among the worker groups; the code sync host (the NFS export) not a worker;
miniray's pinned tree (compute.miniray) wherever a worker group has nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fleet.inventory import schema
from fleet.inventory.model import Node, YamlPath
from fleet.inventory.slurmcompat import DEBIAN_SUITES
from fleet.problems import Problem

if TYPE_CHECKING:
    from fleet.inventory.checks.ctx import Ctx

# miniray hard-codes 6379 (StrictRedis(port=6379)) and its rsync URL port 1026
VALKEY_PORT = 6379
RSYNC_PORT = 1026
# the code sync host's kernel NFS server (NFSv4 only: no portmapper, no mountd port)
NFS_PORT = 2049
# tritonserver's HTTP, gRPC and metrics ports (miniray: TRITON_SERVER_ADDRESS 127.0.0.1:8000)
TRITON_PORTS = {"http": 8000, "grpc": 8001, "metrics": 8002}
# the python3 of each OS release fleet installs (its archive's default python3)
OS_PYTHON: dict[str, tuple[int, int]] = {
    "ubuntu-24.04": (3, 12), "ubuntu-22.04": (3, 10), "debian-12": (3, 11)}
MIN_PYTHON = (3, 12)  # miniray's requires-python
# where the provisioning host's nginx serves the Python package cache (salt/provisioning)
PYCACHE_PATH = "/pypi"
ROLES = ("compute.valkey", "compute.worker", "compute.triton", "codesync.server",
         "codesync.client")


def cluster_networks(raw: schema.Inventory) -> list[str]:
    """compute.networks, or every provisioning network when it names none."""
    assert raw.compute is not None
    return list(raw.compute.networks) or [
        n for n, net in raw.networks.items() if net.purpose == "provisioning"]


def is_worker(raw: schema.Inventory, node: Node) -> bool:
    return raw.compute is not None and node.group in raw.compute.worker_groups


def preemptible_partition(raw: schema.Inventory, node: Node) -> str | None:
    """The Slurm partition of miniray's worker jobs where ``node`` is a worker: a drain
    requeues that partition's jobs (fleet.master.slurm.requeue_preemptible)."""
    return raw.compute.partition if raw.compute is not None and is_worker(raw, node) else None


def roles(raw: schema.Inventory, node: Node) -> list[str]:
    """The compute roles of ``node`` (pillar node:roles; salt/top.sls maps each)."""
    comp = raw.compute
    if comp is None:
        return []
    out = []
    if node.hostname == comp.valkey.host:
        out.append("compute.valkey")
    if node.hostname == comp.codesync.host:
        out.append("codesync.server")
    if is_worker(raw, node):
        out += ["compute.worker", "codesync.client"]
        if runs_triton(raw, node):
            out.append("compute.triton")
    return out


def runs_triton(raw: schema.Inventory, node: Node) -> bool:
    """Whether the worker ``node`` runs tritonserver (role compute.triton)."""
    t = raw.compute.triton if raw.compute is not None else None
    return (t is not None and t.mode != "off" and is_worker(raw, node)
            and (not t.groups or node.group in t.groups))


def miniray_manages_triton(raw: schema.Inventory, node: Node) -> bool:
    """The worker's TRITON_SERVER_ENABLED: miniray's worker then checks the server's health
    every loop and, when a GPU job replaces another, cleans Triton up through the docker CLI
    (`docker ps --filter name=tritonserver`, `docker top`), which only the container (mode
    container, named tritonserver) answers. With the wheel's server that cleanup would raise
    inside the worker's allocation, so the worker leaves Triton alone: tasks still reach the
    server on 127.0.0.1 themselves."""
    assert raw.compute is not None
    return runs_triton(raw, node) and raw.compute.triton.mode == "container"


def node_os(raw: schema.Inventory, node: Node) -> str | None:
    """The OS release the node is installed with (None: a Debian suite fleet does not
    know)."""
    if node.image is not None:
        image = raw.site.images.get(node.image)
        return DEBIAN_SUITES.get(image.suite) if image is not None else None
    return f"{raw.site.os.distro}-{raw.site.os.release}"


def python_cache_url(raw: schema.Inventory, prov: Node) -> str:
    """The site's Python package cache as workers reach it: the provisioning host's
    nginx, on the address and port the nodes boot from (every worker PXE-boots from it)."""
    port = "" if raw.site.http_port == 80 else f":{raw.site.http_port}"
    return f"http://{prov.address}{port}{PYCACHE_PATH}"


def addresses_on(raw: schema.Inventory, node: Node) -> list[str]:
    """The node's addresses on the cluster networks, in NIC order."""
    nets = cluster_networks(raw)
    return [str(i.address) for i in node.interfaces.values()
            if i.network in nets and i.address is not None]


def check_compute(c: Ctx) -> Iterator[Problem]:
    """The rules of the ``compute:`` section (this module's docstring)."""
    comp = c.raw.compute
    if comp is None:
        return
    yield from _check_networks(c, comp)
    if c.raw.slurm is not None and comp.partition in c.raw.slurm.partitions:
        first = c.src.pos(("slurm", "partitions", comp.partition))
        yield c.problem(("compute", "partition"), f"{comp.partition} is already a partition "
                        f"of slurm.partitions ({first})",
                        code="duplicate", hint="the workers' preemptible partition needs a "
                                               "name of its own")
    yield from _check_triton(c, comp)
    servers: list[tuple[YamlPath, Node, str]] = []
    for path, host, what in ((("compute", "valkey", "host"), comp.valkey.host, "Valkey"),
                             (("compute", "codesync", "host"), comp.codesync.host,
                              "the code sync")):
        node, problems = _server_node(c, path, host, what)
        yield from problems
        if node is not None:
            servers.append((path, node, what))
    yield from _check_export_host(c, comp)
    yield from _check_export_fs(c, comp)
    yield from _check_workers(c, comp, servers)


def _check_networks(c: Ctx, comp: schema.Compute) -> Iterator[Problem]:
    for i, name in enumerate(comp.networks):
        net = c.raw.networks.get(name)
        if net is None:
            yield c.problem(("compute", "networks", i), f"unknown network {name!r}",
                            code="unknown_ref",
                            hint=f"known networks: {', '.join(c.raw.networks)}")
        elif net.purpose == "bmc":
            yield c.problem(("compute", "networks", i), f"{name} is a BMC network: no "
                            "worker or service has an address on it", code="mismatch",
                            hint="name the provisioning or IPoIB networks the workers use")
    if not cluster_networks(c.raw):
        yield c.problem(("compute",), "there is no cluster network: no provisioning network, "
                        "and compute.networks names none", code="missing", key=True)


def _check_triton(c: Ctx, comp: schema.Compute) -> Iterator[Problem]:
    t = comp.triton
    for i, gname in enumerate(t.groups):
        if gname not in comp.worker_groups:
            yield c.problem(("compute", "triton", "groups", i), f"{gname!r} is not one of "
                            "compute.worker_groups: Triton runs on workers only",
                            code="unknown_ref",
                            hint=f"worker groups: {', '.join(comp.worker_groups)}")
    need = {"wheel": ("artifact", t.artifact), "container": ("image", t.image)}.get(t.mode)
    if need is not None and need[1] is None:
        yield c.problem(("compute", "triton", "mode"), f"mode {t.mode} needs "
                        f"compute.triton.{need[0]}", code="missing",
                        hint="the pinned nvidia-pytriton wheel (url, sha256)"
                        if t.mode == "wheel" else "the image as name@sha256:<digest>")


def _server_node(c: Ctx, path: YamlPath, host: str, what: str) -> tuple[Node | None,
                                                                         list[Problem]]:
    """The node that runs ``what``, or the problems that keep it from running there."""
    facts = c.raw.nodes.get(host)
    if facts is None:
        return None, [c.problem(path, f"unknown node {host!r}", code="unknown_ref",
                                hint="name a node of nodes:")]
    node = c.nodes.get(host)
    if node is None:
        return None, [c.problem(path, f"{host} is retired: {what} cannot run there",
                                code="retired", hint="name another node")]
    if not addresses_on(c.raw, node):
        nets = ", ".join(cluster_networks(c.raw))
        return None, [c.problem(path, f"{host} has no address on a cluster network ({nets}): "
                                f"{what} would be unreachable", code="mismatch",
                                hint="add the network to compute.networks, or name a node "
                                     "on it")]
    return node, []


def _check_export_host(c: Ctx, comp: schema.Compute) -> Iterator[Problem]:
    """The code sync host exports over the kernel NFS server to every worker: it must not
    be a worker itself (it would mount its own export over NFS, which can deadlock under
    memory pressure, and its Slurm job could be preempted by its own clients' reads)."""
    node = c.nodes.get(comp.codesync.host)
    if node is not None and is_worker(c.raw, node):
        yield c.problem(("compute", "codesync", "host"), f"{node.hostname} is a worker "
                        f"(node group {node.group} in compute.worker_groups): the code sync "
                        "host would mount its own NFS export", code="mismatch",
                        hint="name a node outside the worker groups (the head node, a "
                             "storage node)")


# a hard link per job copy and unchanged file of xx/ until the prune: ext4 caps an inode at
# 65,000 links and btrfs at 65,535, XFS at 2^31 (rsync copies the file once a link fails)
HARDLINK_FS = ("xfs",)


def _check_export_fs(c: Ctx, comp: schema.Compute) -> Iterator[Problem]:
    sync = comp.codesync
    if sync.job_copy == "hardlink" and sync.fs not in HARDLINK_FS:
        yield c.problem(("compute", "codesync", "job_copy"), "job_copy hardlink needs the "
                        f"export on {' or '.join(HARDLINK_FS)}, but compute.codesync.fs is "
                        f"{sync.fs or 'null'}: every per-job copy adds a link to each "
                        "unchanged file of xx/, past ext4's 65,000 and btrfs's 65,535 links "
                        "per file", code="mismatch",
                        hint="fs: xfs (with device: a blank disk, or an XFS volume mounted "
                             "at the export), or job_copy: full")
    if sync.job_copy == "snapshot" and sync.fs != "btrfs":
        yield c.problem(("compute", "codesync", "job_copy"), "job_copy snapshot needs the "
                        f"export on btrfs, but compute.codesync.fs is {sync.fs or 'null'}: "
                        "each per-job copy is a btrfs snapshot of the subvolume xx/",
                        code="mismatch",
                        hint="fs: btrfs (with device: a blank disk, or a btrfs volume "
                             "mounted at the export), or job_copy: hardlink on xfs")
    if sync.device is not None and sync.fs is None:
        yield c.problem(("compute", "codesync", "device"), "device names a disk to format "
                        "but compute.codesync.fs is null: which file system to make?",
                        code="missing", hint="fs: xfs (or btrfs, ext4)")


def _check_workers(c: Ctx, comp: schema.Compute,
                   servers: list[tuple[YamlPath, Node, str]]) -> Iterator[Problem]:
    groups: dict[str, list[Node]] = {g: [] for g in comp.worker_groups}
    for node in c.nodes.values():
        if node.group in groups:
            groups[node.group].append(node)
    workers = [n.hostname for members in groups.values() for n in members]
    if comp.miniray is None and workers:
        yield c.problem(("compute",), f"compute.miniray is null, but {_few(workers)} "
                        "miniray workers: compute.worker installs the worker's tree from "
                        "it", code="missing", key=True, shown="compute.miniray",
                        hint="pin miniray's source: compute.miniray {source: URL or path of "
                             "its tar (git archive --prefix=miniray/), sha256: ...}")
    seen: set[str] = set()
    for i, gname in enumerate(comp.worker_groups):
        path: YamlPath = ("compute", "worker_groups", i)
        if gname in seen:
            yield c.problem(path, f"node group {gname} is listed twice", code="duplicate")
            continue
        seen.add(gname)
        if gname not in c.raw.node_groups:
            yield c.problem(path, f"unknown node group {gname!r}", code="unknown_ref",
                            hint=f"known node groups: {', '.join(c.raw.node_groups)}")
            continue
        yield from _check_group(c, path, gname, groups[gname], servers)


def _check_group(c: Ctx, path: YamlPath, gname: str, members: list[Node],
                 servers: list[tuple[YamlPath, Node, str]]) -> Iterator[Problem]:
    unpartitioned = [n.hostname for n in members if n.partition is None]
    if unpartitioned:
        yield c.problem(path, f"node group {gname}: {_few(unpartitioned)} in no Slurm "
                        "partition; the miniray worker runs as a requeued Slurm job",
                        code="mismatch", hint=f"give node group {gname} role slurm.compute "
                                              "and a slurm_partition")
    for os_name in sorted({node_os(c.raw, n) or "an unknown OS" for n in members}):
        py = OS_PYTHON.get(os_name)
        if py is None or py < MIN_PYTHON:
            shown = f"Python {py[0]}.{py[1]}" if py else "no known Python"
            yield c.problem(path, f"node group {gname} runs {os_name} ({shown}); miniray "
                            f"needs Python >= {MIN_PYTHON[0]}.{MIN_PYTHON[1]}",
                            code="mismatch", hint="install the group with Ubuntu 24.04 "
                                                  "(site.os.release, no image)")
    for spath, server, what in servers:
        nets = {i.network for i in server.interfaces.values()
                if i.network in cluster_networks(c.raw) and i.address is not None}
        cut = [n.hostname for n in members
               if not nets & {i.network for i in n.interfaces.values()}]
        if cut:
            yield c.problem(path, f"node group {gname}: {_few(cut)} on none of the networks "
                            f"where {what} on {server.hostname} listens "
                            f"({', '.join(sorted(nets))}, {c.src.pos(spath)})",
                            code="unreachable", hint="give the group a NIC on that network, "
                                                     "or add a network both share to "
                                                     "compute.networks")


def _few(hosts: list[str]) -> str:
    shown = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
    return f"{shown} {'is' if len(hosts) == 1 else 'are'}"
