"""The lab network: a podman bridge mirroring the inventory's provisioning network.

Only ever created when nothing on this host routes an overlapping prefix (other than
the lab's own bridge)."""

from __future__ import annotations

import json
from ipaddress import IPv4Network, ip_network

from fleet.lab import podman as pm
from fleet.lab.paths import NETWORK, Paths
from fleet.lab.plan import Plan
from fleet.lab.run import LabError, run


def _collisions(subnet: IPv4Network, own_bridge: str | None) -> list[str]:
    routes = json.loads(run(["ip", "-j", "-4", "route", "show", "table", "all"]).stdout)
    bad = []
    for r in routes:
        dst = r.get("dst", "")
        if dst in ("default", "") or r.get("type") in ("local", "broadcast"):
            continue
        if own_bridge is not None and r.get("dev") == own_bridge:
            continue
        try:
            net = ip_network(dst if "/" in dst else f"{dst}/32", strict=False)
        except ValueError:
            continue
        if net.overlaps(subnet):
            bad.append(f"{dst} dev {r.get('dev')}")
    return bad


def ensure(paths: Paths, plan: Plan) -> bool:
    """Create the network if missing; returns True if it was created."""
    if pm.exists(paths, "network", NETWORK):
        info = pm.inspect(paths, NETWORK)
        subnets = [s.get("subnet") for s in info.get("subnets", [])]
        if str(plan.subnet) not in subnets:
            raise LabError(f"podman network {NETWORK} exists with {subnets}, not "
                           f"{plan.subnet}: run `make lab-down` first")
        return False
    clash = _collisions(plan.subnet, None)
    if clash:
        raise LabError(f"the lab network {plan.subnet} overlaps routes on this host: "
                       f"{'; '.join(clash)}")
    pm.podman(paths, "network", "create", "--subnet", str(plan.subnet),
              "--gateway", str(plan.gateway), "--label", "fleet-lab=1", NETWORK)
    return True


def remove(paths: Paths) -> None:
    if pm.exists(paths, "network", NETWORK):
        pm.podman(paths, "network", "rm", "-f", NETWORK)
