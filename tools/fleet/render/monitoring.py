"""Monitoring from the inventory: who runs what, Prometheus's targets and its alert rules.

The same inventory that renders PXE and Salt says which node runs Prometheus
(``site.monitoring.host``, default the provisioning host), which nodes export what, and
what each node should have (its profile's GPU count, its InfiniBand NICs), so a node added
to the inventory is a scrape target with thresholds of its own the moment it is rendered.

The inventory's networks have no "management" purpose: the management address of a node
is its provisioning-network address (its boot NIC's), the one Salt and Slurm use. Every
exporter binds to it only, never to the IPoIB or BMC networks.
"""

from __future__ import annotations

from typing import Any

from fleet.inventory import compute
from fleet.inventory import roles as node_roles
from fleet.inventory.checks.services import MONITORING_PORTS, SLURMCTLD_PORT
from fleet.inventory.lifecycle import default_target
from fleet.inventory.model import Inventory, Node
from fleet.inventory.schema import MonitoringThresholds
from fleet.render.mkvlayout import MKV_ROOT

PORTS = MONITORING_PORTS

# the roles fleet derives (fleet.inventory.roles; salt/top.sls maps each to its SLS)
ROLES = node_roles.MONITORING
# filesystems FilesystemFull ignores: in memory, read-only images, containers' roots
PSEUDO_FS = "tmpfs|devtmpfs|ramfs|squashfs|overlay|nsfs|fuse.lxcfs|autofs"
# node_exporter's names (node_infiniband_<counter>) of the port error counters
IB_ERRORS = ("symbol_error_total", "link_error_recovery_total", "link_downed_total",
             "port_errors_received_total", "port_receive_remote_physical_errors_total",
             "local_link_integrity_errors_total", "excessive_buffer_overrun_errors_total")
IB_ACTIVE = 4  # /sys/class/infiniband/*/ports/*/state "4: ACTIVE"


def host(inv: Inventory) -> str:
    return node_roles.monitoring_host(inv.raw)


def address(node: Node) -> str:
    """The node's management address: its provisioning-network address (see above)."""
    return str(node.address)


def ib_ports(node: Node) -> int:
    return sum(1 for i in node.interfaces.values() if i.kind == "infiniband")


def site_pillar(inv: Inventory) -> dict[str, Any]:
    m = inv.raw.site.monitoring
    server = inv.nodes[host(inv)]
    return {"host": server.hostname, "address": address(server), "ports": dict(PORTS),
            "interval_s": m.scrape_interval_s}


def node_pillar(node: Node) -> dict[str, Any]:
    return {"address": address(node)}


def pillar(inv: Inventory) -> dict[str, Any]:
    """pillar/monitoring.sls: the monitoring host's Prometheus, targets and rules."""
    m = inv.raw.site.monitoring
    return {
        "retention_days": m.retention_days,
        "storage_path": m.storage_path,
        "targets": targets(inv),
        "rules": rules(inv),
    }


def _labels(node: Node) -> dict[str, str]:
    labels = {"node": node.hostname, "group": node.group, "profile": node.profile_name}
    if node.profile.gpu is not None and node.has("nvidia"):
        labels["gpus_expected"] = str(node.profile.gpu.count)
    if ib_ports(node):
        labels["ib_ports"] = str(ib_ports(node))
    return labels


def targets(inv: Inventory) -> dict[str, list[dict[str, Any]]]:
    """Prometheus file_sd groups by job: every node's exporter (its GPU, InfiniBand, Slurm
    and textfile metrics with it), each mkv volume server and array master, slurmctld,
    and tritonserver's own metrics on each node that runs it (role compute.triton). A
    planned node is not scraped before it is installed (fleet.inventory.lifecycle)."""
    port = PORTS["node_exporter"]
    triton_port = compute.TRITON_PORTS["metrics"]
    scraped = [inv.nodes[h] for h in default_target(inv, "monitoring")[0]]
    out: dict[str, list[dict[str, Any]]] = {
        "node": [{"targets": [f"{address(n)}:{port}"], "labels": _labels(n)}
                 for n in scraped],
        "mkv_volume": [], "mkv_master": [], "slurmctld": [],
        "triton": [{"targets": [f"{address(n)}:{triton_port}"], "labels": {"node": n.hostname}}
                   for n in scraped if compute.runs_triton(inv.raw, n)],
    }
    if inv.raw.mkv is not None:
        for aname, array in inv.raw.mkv.arrays.items():
            master = inv.nodes[array.master]
            out["mkv_master"].append({"targets": [f"{address(master)}:{array.port}"],
                                      "labels": {"node": master.hostname, "array": aname}})
            for vol in inv.in_array(aname):
                out["mkv_volume"].append({
                    "targets": [f"http://{address(vol)}:{array.volume_port}/"],
                    "labels": {"node": vol.hostname, "array": aname}})
    if inv.raw.slurm is not None:
        ctl = inv.nodes[inv.raw.slurm.controller]
        out["slurmctld"].append({"targets": [f"{address(ctl)}:{SLURMCTLD_PORT}"],
                                 "labels": {"node": ctl.hostname}})
    return out


def _alert(name: str, expr: str, severity: str, summary: str, action: str) -> dict[str, Any]:
    """One rule; its ``for:`` is set in rules() from ``thresholds.for_s``."""
    return {"alert": name, "expr": expr, "for": "",
            "labels": {"severity": severity},
            "annotations": {"summary": summary, "action": action}}


def _by_count(label: str, counts: set[int], metric: str) -> str:
    """``metric`` below what each node should have, one term per distinct expected count
    in the inventory (the node's target carries its own count as ``label``)."""
    return " or ".join(f'{metric}{{{label}="{c}"}} < {c}' for c in sorted(counts))


def rules(inv: Inventory) -> dict[str, Any]:
    """Prometheus alert rules, thresholds from ``site.monitoring.thresholds``: a group
    each for the nodes, GPUs, InfiniBand and the site's services."""
    t = inv.raw.site.monitoring.thresholds
    nodes = list(inv.nodes.values())
    gpu_counts = {n.profile.gpu.count for n in nodes if n.profile.gpu and n.has("nvidia")}
    ib_counts = {ib_ports(n) for n in nodes if ib_ports(n)}
    node_rules = _node_rules(t, 10 * inv.raw.site.monitoring.scrape_interval_s)
    gpu_rules = _gpu_rules(t, gpu_counts)
    ib_rules = _ib_rules(t, ib_counts)
    service_rules = _service_rules(t)
    for rule in node_rules + gpu_rules + ib_rules + service_rules:
        rule["for"] = duration(getattr(t.for_s, rule["alert"]))
    return {"groups": [
        {"name": "fleet-node", "rules": node_rules},
        {"name": "fleet-gpu", "rules": gpu_rules},
        {"name": "fleet-infiniband", "rules": ib_rules},
        {"name": "fleet-services", "rules": service_rules},
    ]}


def _node_rules(t: MonitoringThresholds, stale_s: int) -> list[dict[str, Any]]:
    """Every node: its exporter, filesystems, mkv subvolumes, clock, textfiles."""
    mkv_mounts = f"{MKV_ROOT}/sv[0-9A-F]+"
    fs = 'fstype!~"' + PSEUDO_FS + '"'
    return [
        _alert("NodeDown", 'up{job="node"} == 0', "critical",
               "{{ $labels.node }}: its node exporter does not answer",
               "ping it and its BMC; `fleet health {{ $labels.node }}`"),
        _alert("FilesystemFull",
               f'100 * (1 - node_filesystem_avail_bytes{{{fs},mountpoint!~"{mkv_mounts}"}}'
               f' / node_filesystem_size_bytes) > {t.filesystem_used_percent}',
               "warning",
               "{{ $labels.node }}: {{ $labels.mountpoint }} is {{ $value | humanize }}% used",
               "free space (logs, /var/lib); a full / stops Salt and slurmd"),
        _alert("MkvVolumeFull",
               f'100 * (1 - node_filesystem_avail_bytes{{mountpoint=~"{mkv_mounts}"}}'
               f' / node_filesystem_size_bytes) > {t.mkv_volume_used_percent}',
               "warning",
               "{{ $labels.node }}: mkv subvolume {{ $labels.mountpoint }} is "
               "{{ $value | humanize }}% used",
               "rebalance or grow the array (`fleet mkv show ARRAY`)"),
        _alert("ClockDrift",
               f"abs(node_timex_offset_seconds) * 1000 > {t.clock_offset_ms}"
               ' or node_timex_sync_status == 0', "warning",
               "{{ $labels.node }}: the clock is off or not synchronized",
               "`chronyc tracking` on the node; check site.ntp_servers"),
        _alert("TextfileCollectorStale",
               'time() - node_textfile_mtime_seconds{file=~"(.*/)?fleet-[a-z]+[.]prom"}'
               f" > {stale_s}",
               "warning",
               "{{ $labels.node }}: {{ $labels.file }} is not being rewritten",
               "`systemctl status 'fleet-*-metrics.timer'` on the node"),
    ]


def _gpu_rules(t: MonitoringThresholds, gpu_counts: set[int]) -> list[dict[str, Any]]:
    """The GPU nodes: GPUs visible as the profile says, Xid, ECC, temperature."""
    return [
        _alert("GpuMissing",
               _by_count("gpus_expected", gpu_counts, "fleet_gpus_visible")
               if gpu_counts else "vector(0) > 1",
               "critical",
               "{{ $labels.node }}: {{ $value }} GPUs visible, its profile has "
               "{{ $labels.gpus_expected }}",
               "drain it (`fleet health {{ $labels.node }} --drain`), check Xid, reseat"),
        _alert("GpuMetricsMissing",
               'up{job="node",gpus_expected!=""} == 1 unless on(node) fleet_gpus_visible',
               "warning",
               "{{ $labels.node }}: no GPU metrics although its profile has GPUs",
               "`systemctl status fleet-gpu-metrics.timer` on the node"),
        _alert("GpuXidErrors", "increase(fleet_gpu_xid_errors_total[30m]) > 0", "critical",
               "{{ $labels.node }}: GPU {{ $labels.gpu }} logged Xid errors",
               "`journalctl -k | grep Xid` on the node; 48/79/94/95: drain and reset"),
        _alert("GpuEccUncorrected", "increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[30m]) > 0",
               "critical",
               "{{ $labels.node }}: GPU {{ $labels.gpu }} uncorrected ECC errors",
               "drain the node; a GPU reset clears volatile counts"),
        _alert("GpuHot", f"DCGM_FI_DEV_GPU_TEMP > {t.gpu_temp_celsius}", "warning",
               "{{ $labels.node }}: GPU {{ $labels.gpu }} at {{ $value }} C",
               "check fans and airflow of the box"),
    ]


def _ib_rules(t: MonitoringThresholds, ib_counts: set[int]) -> list[dict[str, Any]]:
    """The InfiniBand ports: active, as many as the profile, error counters."""
    # each counter's increase labelled with its name, so the union has no duplicate
    # label sets and a counter a driver lacks only adds nothing
    ib_err = "sum by (node, instance, device, port) (" + " or ".join(
        f'label_replace(increase(node_infiniband_{c}[15m]), "counter", "{c}", "", "")'
        for c in IB_ERRORS) + ")"
    return [
        _alert("IbPortDown", f"node_infiniband_state_id != {IB_ACTIVE}", "critical",
               "{{ $labels.node }}: IB {{ $labels.device }} port {{ $labels.port }} is not "
               "ACTIVE", "`ibstat` on the node; the cable and the switch port; opensm"),
        _alert("IbPortMissing",
               " or ".join(f'up{{job="node",ib_ports="{c}"}} == 1 unless on(node) '
                           f'(count by (node) (node_infiniband_state_id) >= {c})'
                           for c in sorted(ib_counts)) if ib_counts else "vector(0) > 1",
               "critical",
               "{{ $labels.node }}: fewer IB ports than its {{ $labels.ib_ports }}",
               "`ibstat`; is the HCA driver loaded (`lsmod | grep mlx5`)?"),
        _alert("IbPortErrors", f"({ib_err}) > {t.ib_errors_per_15m}", "warning",
               "{{ $labels.node }}: IB {{ $labels.device }} port {{ $labels.port }}: "
               "{{ $value }} errors in 15 minutes", "reseat or replace the cable"),
    ]


def _service_rules(t: MonitoringThresholds) -> list[dict[str, Any]]:
    """The site's services: slurmctld, long drains, mkv volumes and masters."""
    return [
        _alert("SlurmControllerDown",
               'probe_success{job="slurmctld"} == 0 or fleet_slurm_up == 0', "critical",
               "slurmctld on {{ $labels.node }} does not answer",
               "`systemctl status slurmctld`; `journalctl -u slurmctld` on the controller"),
        _alert("SlurmNodesDrainedLong",
               f"time() - fleet_slurm_node_drained_since_seconds > {t.drained_hours * 3600}",
               "warning",
               "{{ $labels.slurm_node }} has been drained longer than "
               f"{t.drained_hours} h ({{{{ $labels.reason }}}})",
               "fix it and `fleet health {{ $labels.slurm_node }} --resume`, or reinstall"),
        _alert("MkvVolumeDown", 'probe_success{job="mkv_volume"} == 0', "critical",
               "mkv volume {{ $labels.node }} of array {{ $labels.array }} does not answer",
               "`systemctl status mkv-volume` on the node; its keys are unreadable now"),
        _alert("MkvMasterDown", 'probe_success{job="mkv_master"} == 0', "critical",
               "mkv master of array {{ $labels.array }} on {{ $labels.node }} unreachable",
               "`systemctl status mkv-{{ $labels.array }}` on {{ $labels.node }}"),
    ]


def duration(seconds: int) -> str:
    """Prometheus's duration of ``seconds``: whole minutes as such (``5m``), else ``45s``."""
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"

