"""One systemd container per lab node: the node's hostname, MAC and address on the lab
network, its minion key and minimal minion config in place before salt-minion starts
(as the autoinstall leaves a real node)."""

from __future__ import annotations

import tempfile
import time
from functools import partial
from pathlib import Path

from fleet.health.expect import data_mounts
from fleet.inventory import compute
from fleet.lab import headtools, keys, siterepo
from fleet.lab import podman as pm
from fleet.lab.paths import NETWORK, Paths
from fleet.lab.plan import LabNode, Plan
from fleet.lab.run import LabError, wait_for
from fleet.render import bootstrap

# which checkout's lab a container belongs to: container names are global to podman,
# and a node bind-mounts files of its own checkout
CHECKOUT_LABEL = "fleet-lab.checkout"

def create(paths: Paths, plan: Plan, node: LabNode, image: str, *,
           identity: bool = True) -> None:
    """Create (not start) the node's container. ``identity``: put its minion key and
    config in place, as an install leaves them; without, the container is a blank disk
    for the lab's fake installer (tests/lab/fake_lab_hardware.py)."""
    # the NIC carries its inventory name, as netplan's set-name gives it on a real node
    # (dnsmasq's interface=, slurm's and mkv's addresses all refer to it)
    net = f"{NETWORK}:interface_name={node.nic},ip={node.address},mac={node.mac}"
    args = ["create", "--name", node.container, "--hostname", node.hostname,
            "--network", net,
            "--systemd=always", "--no-hosts", "--label", "fleet-lab=1",
            "--label", f"{CHECKOUT_LABEL}={paths.repo}",
            "--stop-signal", "SIGRTMIN+3", "--stop-timeout", "20"]
    # slurmd stats every GRES File=: each GPU is a harmless character device here
    for i in range(node.gpus):
        args += ["--device", f"/dev/null:/dev/nvidia{i}:rwm"]
    # lldpd (the lldp role, every node) reads and sends LLDP on a raw socket: NET_RAW,
    # on this container's own network namespace only
    caps = ["NET_RAW"]
    if "provisioning" in node.roles:
        # the head node's checkout: the rendered pxe/ tree that provisioning syncs
        args += ["-v", f"{paths.render / 'pxe'}:/srv/fleet/checkout/pxe:ro"]
        # dnsmasq's DHCP needs NET_ADMIN (ARP entries) and NET_RAW (ping before offer);
        # both act on this container's own network namespace only
        caps.append("NET_ADMIN")
        # the inventory and fleet's wheelhouse: `fleet pxe` runs on the head node
        args += headtools.mounts(paths)
        # the site package repository, filled on the host (fleet.lab.siterepo)
        args += siterepo.mount_args(paths, plan)
        # its own minion key, on the master's disk as on a real head (paths.head_pki)
        (paths.head_pki / "minion").mkdir(mode=0o700, parents=True, exist_ok=True)
        args += ["-v", f"{paths.head_pki}:/etc/salt/pki:rw"]
    args += ["--cap-add", ",".join(caps)]
    compute_roles = compute.roles(plan.inventory.raw, plan.inventory.nodes[node.hostname])
    if "mkv.master" in node.roles or compute_roles:
        args += ["-v", f"{paths.lab / 'artifacts'}:/srv/fleet/artifacts:ro"]
    args += _code_mounts(paths, plan, compute_roles)
    # each data disk of an mkv volume is a real mount (a small tmpfs), as on a node its
    # disk is: `fleet health` checks that every one is mounted (an unmounted one would
    # take the volume's writes onto the OS disk), and the lab tests unmount one
    for mount in data_mounts(plan.inventory.nodes[node.hostname]):
        args += ["--tmpfs", f"{mount}:rw,size=64m,mode=0755"]
    pm.podman(paths, *args, image, "/sbin/init")
    if not identity:
        return
    pem, pub = keys.ensure(paths, node.hostname)
    with tempfile.TemporaryDirectory() as tmp:
        conf = Path(tmp) / "fleet.conf"
        # as the installers write it (the highstate then finds it unchanged)
        inv = plan.inventory
        conf.write_text(bootstrap.minion_conf(inv, inv.nodes[node.hostname]))
        for src, dst in ((conf, "/etc/salt/minion.d/fleet.conf"),
                         (pem, "/etc/salt/pki/minion/minion.pem"),
                         (pub, "/etc/salt/pki/minion/minion.pub")):
            pm.podman(paths, "cp", str(src), f"{node.container}:{dst}")


def _code_mounts(paths: Paths, plan: Plan, roles: list[str]) -> list[str]:
    """The code sync's export, one host directory: the code sync host's export, and a
    worker's /code.nfs as a read-only bind mount of it (a stand-in for the NFS mount: the
    lab's kernel has no NFS client)."""
    comp = plan.inventory.raw.compute
    if comp is None:
        return []
    src = paths.lab / "code-export"
    src.mkdir(parents=True, exist_ok=True)
    args = []
    if "codesync.server" in roles:
        args += ["-v", f"{src}:{comp.codesync.export}:rw"]
    if "codesync.client" in roles:
        args += ["-v", f"{src}:/code.nfs:ro"]
    return args


def ensure(paths: Paths, plan: Plan, images: dict[str, str]) -> list[str]:
    """Create and start what is missing (each node from ``images[hostname]``); returns
    the containers created."""
    created = []
    for node in plan.nodes:
        if pm.exists(paths, "container", node.container):
            info = pm.inspect(paths, node.container)
            owner = (info.get("Config", {}).get("Labels") or {}).get(CHECKOUT_LABEL)
            if owner != str(paths.repo):
                raise LabError(f"container {node.container} belongs to the lab of "
                               f"{owner or 'an unknown checkout'}: run `make lab-down` there "
                               f"(or `podman rm -f {node.container}`) first")
            # an older image keeps running: `make lab-down` to rebuild nodes
        else:
            create(paths, plan, node, images[node.hostname])
            created.append(node.container)
        state = pm.inspect(paths, node.container)["State"]
        if not state.get("Running"):
            pm.podman(paths, "start", node.container)
    for node in plan.nodes:
        wait_for(f"systemd in {node.container}", partial(_booted, paths, node), timeout=180)
    return created


def add(paths: Paths, plan: Plan, node: LabNode, image: str) -> None:
    """One node added to a lab that is up: its container created (key and minion config
    in place, as ``create``), started, and systemd up in it."""
    create(paths, plan, node, image)
    pm.podman(paths, "start", node.container)
    wait_for(f"systemd in {node.container}", partial(_booted, paths, node), timeout=180)


def _booted(paths: Paths, node: LabNode) -> bool:
    out = pm.exec_(paths, node.container, "systemctl", "is-system-running",
                   check=False, timeout=30).stdout.strip()
    return out in ("running", "degraded")


def remove(paths: Paths, names: list[str]) -> None:
    """Stop and remove them all at once (podman stops them in parallel)."""
    present = [n for n in names if pm.exists(paths, "container", n)]
    for attempt in range(3):
        if not present:
            return
        # podman can lose a race with a container that stops by itself under load
        # ("container state improper: stopped"): a second rm removes it
        done = pm.podman(paths, "rm", "-f", "-t", "10", *present, check=attempt == 2)
        if done.returncode == 0:
            return
        time.sleep(2)
        present = [n for n in present if pm.exists(paths, "container", n)]


def all_lab_containers(paths: Paths) -> list[str]:
    out = pm.podman(paths, "ps", "-a", "--filter", "label=fleet-lab=1",
                    "--format", "{{.Names}}").stdout
    return [line for line in out.splitlines() if line]


def rss_mb(paths: Paths, node: LabNode) -> float:
    """Resident memory of the node's salt-minion processes, in MB."""
    out = pm.exec_(paths, node.container, "ps", "-C", "salt-minion", "-o", "rss=",
                   check=False).stdout
    kb = sum(int(x) for x in out.split() if x.isdigit())
    if kb == 0:  # the venv's entry point shows as python3
        out = pm.exec_(paths, node.container, "sh", "-c",
                       "ps -eo rss=,args= | grep '[s]alt-minion' | awk '{s+=$1} END {print s}'",
                       check=False).stdout
        kb = int(out.strip() or 0)
    return kb / 1024
