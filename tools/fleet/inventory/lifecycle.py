"""A node's lifecycle (``nodes.<host>.state``) and the rules and facts that follow from it.

- ``planned``: not installed yet. DHCP, DNS, boot files and pillar as any node; in Slurm as
  ``State=FUTURE`` (never scheduled); left out of the default target of ``fleet apply``,
  ``health`` and ``rollout`` and of Prometheus's targets (no NodeDown for a node not
  installed yet), and ``fleet keys check`` expects no key yet.
- ``burn-in``: accepted by ``fleet discover accept``: installed and configured like an
  active node, but in no user partition of Slurm (its training partition, the workers'
  preemptible one): a compute node is only in :data:`BURNIN_PARTITION`, hidden and
  root-only, where `fleet burnin run` submits its two-node NCCL job (so it is not
  drained: no user job can land on it) until ``fleet burnin`` passes it (then
  ``active``, in its partition at the controller's next apply; a failure:
  ``maintenance`` with the failing check as its reason); left out of health's and
  rollout's default target.
- ``active``: the default.
- ``maintenance`` (with ``reason``): rendered as active; the controller's next apply drains
  it in Slurm with ``fleet-inventory: <reason>`` (salt/slurm/drains.sls) and resumes it
  there once it is active again; left out of the default target of ``health`` and
  ``rollout`` (not of ``apply``: it is being worked on).
- ``retired``: keeps its place (slot) in its group's range, so every neighbour keeps its
  switch ports; rendered nowhere, seen by no other rule; ``fleet keys check`` flags its key.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from fleet.inventory.model import Inventory, Node, YamlPath
from fleet.problems import Problem, dotted

if TYPE_CHECKING:
    from fleet.inventory.checks.ctx import Ctx

# the prefix of every Slurm drain reason the inventory's maintenance state sets: the
# controller resumes only nodes drained with it (fleet health's drains have their own)
DRAIN_PREFIX = "fleet-inventory: "
# the internal Slurm partition of the compute nodes in burn-in (Hidden, RootOnly): the
# one name, which no partition of the inventory may take (check_lifecycle)
BURNIN_PARTITION = "fleet-burnin"
# which states a day-two command's default target leaves out
LEFT_OUT = {"apply": ("planned", "retired"),
            "health": ("planned", "maintenance", "retired"),
            "rollout": ("planned", "maintenance", "retired"),
            "status": ("planned", "retired"),
            "cabling": ("planned", "retired"),
            # Prometheus's scrape targets (fleet.render.monitoring)
            "monitoring": ("planned", "retired"),
            # the inventory's own view lists every node (retired ones too: cmd_node)
            "node": ()}


def default_target(inv: Inventory, verb: str) -> tuple[list[str], dict[str, list[str]]]:
    """The nodes a ``verb`` with no TARGET acts on, in inventory order, and the nodes it
    leaves out by state (``{"planned": [...], ...}``; retired ones are not in
    ``inv.nodes`` at all)."""
    skip = LEFT_OUT[verb]
    chosen = [h for h, n in inv.nodes.items() if n.state not in skip]
    left: dict[str, list[str]] = {}
    for state in skip:
        names = list(inv.retired) if state == "retired" else [
            h for h, n in inv.nodes.items() if n.state == state]
        if names:
            left[state] = names
    return chosen, left


def left_out_text(left: dict[str, list[str]]) -> str:
    """``left out of the default target: 2 planned (tbox-076, tbox-077), 1 retired (...)``."""
    parts = []
    for state, names in left.items():
        shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
        parts.append(f"{len(names)} {state} ({shown})")
    named = [s for s in left if s != "retired"]
    return "left out of the default target: " + ", ".join(parts) + (
        f" (name {' or '.join(named)} nodes in TARGET to include them)" if named else "")


def drains(inv: Inventory) -> dict[str, object]:
    """Pillar ``slurm:drains`` for the controller: the nodes to drain and with what reason,
    and the compute nodes to resume when the inventory drained them (a node in burn-in
    too: it is in no user partition, and its burn-in partition's job needs it)."""
    compute = inv.with_role("slurm.compute")
    return {
        "prefix": DRAIN_PREFIX,
        "drain": {n.hostname: DRAIN_PREFIX + (n.reason or "").strip()
                  for n in compute if n.state == "maintenance"},
        "resume": [n.hostname for n in compute if n.state in ("active", "burn-in")],
    }


def in_user_partitions(node: Node) -> bool:
    """Whether the node belongs in the partitions users' jobs run in (its training
    partition, the workers' preemptible one): not while in burn-in."""
    return node.state != "burn-in"


def in_burnin_partition(node: Node) -> bool:
    """Whether the node belongs in :data:`BURNIN_PARTITION`: a compute node in burn-in."""
    return node.state == "burn-in" and node.has("slurm.compute")


def check_lifecycle(c: Ctx) -> Iterator[Problem]:
    """Maintenance with a reason; a per-node ``slurm_partition`` on a compute node and
    naming a partition; no partition named as the burn-in one; no service
    (provisioning host, Salt master, Slurm controller, mkv master, subnet manager) on a
    retired node."""
    raw = c.raw
    for host, facts in raw.nodes.items():
        npath: YamlPath = ("nodes", host)
        if facts.state == "maintenance" and not (facts.reason or "").strip():
            # a reason given but blank is reported where it is written
            at = "reason" if facts.reason is not None else "state"
            yield c.problem((*npath, at), f"{host} is in maintenance without a reason",
                            code="missing", hint=f"add nodes.{host}.reason: <why> (Slurm's "
                                                 "drain reason)")
        node = c.nodes.get(host)
        if facts.slurm_partition is None or node is None:
            continue
        if not node.has("slurm.compute"):
            yield c.problem((*npath, "slurm_partition"), f"{host} is no Slurm compute node "
                            f"(node group {node.group!r} has no role slurm.compute)",
                            code="mismatch")
        elif raw.slurm is None or facts.slurm_partition not in raw.slurm.partitions:
            known = ", ".join(raw.slurm.partitions) if raw.slurm is not None else "none"
            yield c.problem((*npath, "slurm_partition"),
                            f"unknown partition {facts.slurm_partition!r}",
                            code="unknown_ref", hint=f"known partitions: {known}")
    yield from _burnin_name(c)
    services: dict[str, list[str]] = {}
    for path, host, what in _service_hosts(c):
        if host in raw.nodes and raw.nodes[host].state == "retired":
            services.setdefault(host, []).append(f"{what} ({dotted(path)}, "
                                                 f"{c.src.pos(path)})")
    for host, whats in services.items():
        yield c.problem(("nodes", host, "state"), f"{host} is retired, but it is "
                        + ", ".join(whats), code="retired",
                        hint=f"move these to another node first, or set nodes.{host}.state "
                             "back")


def _burnin_name(c: Ctx) -> Iterator[Problem]:
    """:data:`BURNIN_PARTITION` is fleet's: no partition of the inventory takes its name."""
    raw = c.raw
    taken: list[YamlPath] = []
    if raw.slurm is not None and BURNIN_PARTITION in raw.slurm.partitions:
        taken.append(("slurm", "partitions", BURNIN_PARTITION))
    if raw.compute is not None and raw.compute.partition == BURNIN_PARTITION:
        taken.append(("compute", "partition"))
    for path in taken:
        yield c.problem(path, f"{BURNIN_PARTITION} is the burn-in partition's name "
                        "(fleet's own, for the nodes in burn-in)", code="duplicate",
                        hint="name this partition otherwise")


def _service_hosts(c: Ctx) -> Iterator[tuple[YamlPath, str, str]]:
    raw = c.raw
    yield ("site", "provisioning_host"), raw.site.provisioning_host, "the provisioning host"
    yield ("site", "salt", "master"), raw.site.salt.master, "the Salt master"
    if raw.site.salt.standby is not None:
        yield (("site", "salt", "standby", "host"), raw.site.salt.standby.host,
               "the standby Salt master")
    if raw.slurm is not None:
        yield ("slurm", "controller"), raw.slurm.controller, "the Slurm controller"
    if raw.mkv is not None:
        for name, array in raw.mkv.arrays.items():
            yield ("mkv", "arrays", name, "master"), array.master, f"the master of mkv {name}"
    for sname, sw in raw.switches.items():
        for i, host in enumerate(sw.sm_hosts):
            yield ("switches", sname, "sm_hosts", i), host, f"a subnet manager of {sname}"
