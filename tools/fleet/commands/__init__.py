"""The ``fleet`` verbs: one module per verb in this package, ``fleet.commands.<verb>``
(``-`` in a verb's name is ``_`` in its module's), each with the same two entry points:

- ``register(sub, parents) -> None``: adds its subparser to ``sub`` (through
  :func:`fleet.cliparts.add_command`, or :func:`fleet.cliparts.add_actions` for a verb made
  of actions; :mod:`fleet.cli` gives it its short help from :data:`VERBS`) with the common
  options of ``parents`` (-i, --overlay, --json, -q, -v, --debug);
- ``run(args, ctx) -> Exit``: runs it, with the one :class:`fleet.context.Context`.

:data:`VERBS` is the registry: the verbs in the order ``fleet --help`` lists them, each
with its short help. Nothing is imported here, so ``fleet --help`` imports no verb:
:mod:`fleet.cli` imports only the module of the verb it runs."""

from __future__ import annotations

VERBS: dict[str, str] = {
    "validate": "check the inventory, report all errors",
    "render": "write pillar/, pxe/ and pictures/",
    "diff": "show what a render would change",
    "secrets": "manage the git-ignored secrets store",
    "apply": "run the highstate from the master, every node accounted for",
    "health": "check nodes: GPUs, Xid, IB, slurmd, munge, time, mkv disks, head services",
    "status": "one row per node: power, boot mode, key, minion, Slurm, last apply/health, "
              "alerts",
    "rollout": "apply a change wave by wave: drain, apply, (reboot), health, resume",
    "reinstall": "reinstall nodes: drain, new key, PXE, converge, check, resume",
    "endpoint": "serve the installers' key/callback endpoint alone (reinstall's, "
                "for every node)",
    "pxe": "show or switch nodes' PXE boot mode (install | local)",
    "power": "power nodes on, off, cycle or reset through their BMCs, or read their state",
    "console": "attach to a node's serial console (IPMI serial over LAN); ~. leaves",
    "node": "what the inventory says of nodes: list or show",
    "ports": "every switch port: which node and NIC, or free",
    "cabling": "check each NIC's switch and port against what its node hears by LLDP",
    "keys": "the master's minion keys against the inventory",
    "discover": "machines that reported from commissioning: match to planned nodes, accept",
    "burnin": "burn-in: each node's checks against its profile's baseline; finish to active",
    "page": "write the fleet page (racks coloured by live state)",
    "mkv": "minikeyvalue maintenance with each array's own flags",
    "repo": "the site package repository: fill it from the archive, list it",
    "backup": "an encrypted, verified backup of what only the master holds (restic)",
    "restore": "the master's keys, secrets, journals and boot modes back from a backup",
    "log": "the audit log: who ran which changing verb on which nodes, and how it ended",
    "lab": "the containerized lab (docs/lab.md)",
}


# The verbs that run long enough to be stopped: each installs fleet.signals' one catcher
# for its length (fleet.signals.long_verb, or a SignalCatcher of its own stop: reinstall,
# rollout, the endpoint, status --collect), so SIGINT/SIGTERM end it with 130/143 and one
# line saying what is left; tests/unit/test_architecture.py fails on one that does not.
LONG: frozenset[str] = frozenset({
    "apply", "health", "status", "rollout", "reinstall", "endpoint", "power", "cabling",
    "burnin", "mkv", "repo", "backup", "restore"})


def module_name(verb: str) -> str:
    return f"fleet.commands.{verb.replace('-', '_')}"
