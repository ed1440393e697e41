"""The health gate (reinstall step 8): each check asks the node (through Salt) or Slurm
and returns what it found; problems from all checks are collected, the node is drained
with them as the reason, and the step fails once.

- GPUs: ``nvidia-smi -L`` counts the profile's GPUs (``nvidia`` role, hardware only).
- IB ports: ``/sys/class/infiniband/*/ports/*/{state,phys_state,link_layer}``; as many
  InfiniBand ports as the profile has InfiniBand NICs must be ``4: ACTIVE`` and
  ``5: LinkUp`` (``infiniband`` role, hardware only).
- slurmd: ``scontrol show node`` is not NOT_RESPONDING and has the GPU GRES.
- mkv volume: its nginx answers HTTP where mkv's master reaches it (``mkv.volume``).

"Hardware only": skipped, and said so, where pillar ``fleet:hardware`` is false (the lab's
containers and VMs); as in the existing GPU check, a missing pillar value means hardware.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fleet.health import parse
from fleet.master import salt, slurm
from fleet.master.runner import CommandError
from fleet.reinstall.context import Context, StepFailedError

# the IB port read and its verdict are shared with `fleet health` (fleet.health.parse)
SYS_IB, IB_PORTS_CMD = parse.SYS_IB, parse.IB_PORTS_CMD
HTTP_TIMEOUT = 10  # seconds curl waits for each answer


@dataclass
class Findings:
    ok: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, good: bool, text: str) -> None:
        (self.ok if good else self.problems).append(text)


def salt_json(ctx: Context, target: str, *args: str, timeout: float) -> dict[str, object]:
    """``salt TARGET ARGS --out=json --static`` as a dict (fleet.master.salt)."""
    return salt.salt_json(ctx.runner, target, *args, timeout=timeout)


class _Hardware:
    """pillar fleet:hardware of the node, asked once and only when a check needs it."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._value: bool | None = None

    def __bool__(self) -> bool:
        if self._value is None:
            hw = salt_json(self.ctx, self.ctx.name, "pillar.get", "fleet:hardware", "True",
                           timeout=60).get(self.ctx.name)
            self._value = hw not in (False, "False")
        return self._value


def check(ctx: Context) -> str:
    """Run every check until all pass or ``health_timeout`` is spent (a node that has
    just converged may still be registering slurmd or restarting its minion); then, on
    a problem, drain the node (Slurm nodes) and fail once."""
    deadline = time.monotonic() + ctx.options.health_timeout
    while True:
        found = _check_once(ctx)
        if not found.problems or time.monotonic() >= deadline:
            break
        ctx.say(f"  health: {'; '.join(found.problems)}; checking again")
        time.sleep(ctx.options.poll)
    return _conclude(ctx, found)


def _check_once(ctx: Context) -> Findings:
    found = Findings()
    hardware = _Hardware(ctx)
    checks: list[tuple[str, Callable[[], None]]] = [
        ("GPU count", lambda: gpus(ctx, hardware, found)),
        ("IB ports", lambda: ib_ports(ctx, hardware, found)),
        ("slurmd", lambda: slurmd(ctx, found)),
        ("mkv volume", lambda: mkv_volume(ctx, found)),
    ]
    for what, run in checks:
        try:
            run()
        except CommandError as exc:  # one check's command failing leaves the others
            found.problems.append(f"{what} not checked: {exc}")
    return found


def _conclude(ctx: Context, found: Findings) -> str:
    for warning in found.warnings:
        ctx.warnings.append(warning)
        ctx.say(f"WARNING: {warning}")
    if found.problems:
        summary = "; ".join(found.problems)
        message = "health check failed: " + summary
        if ctx.is_slurm_node():
            try:
                slurm.drain(ctx.runner, ctx.name,
                            f"{ctx.options.reason}: health check failed: {summary}")
            except CommandError as exc:
                message += f" (and draining it failed: {exc})"
        raise StepFailedError(message)
    return "; ".join(found.ok + [f"warned: {w}" for w in found.warnings]) or "nothing to check"


def gpus(ctx: Context, hardware: _Hardware, found: Findings) -> None:
    gpu = ctx.node.profile.gpu
    if not ctx.node.has("nvidia") or gpu is None:
        return
    if not hardware:
        found.ok.append("GPU count not checked (fleet:hardware false)")
        return
    out = salt_json(ctx, ctx.name, "cmd.run", "nvidia-smi -L", timeout=120).get(ctx.name)
    count = sum(1 for ln in str(out).splitlines() if ln.startswith("GPU "))
    found.add(count == gpu.count, f"{count} of {gpu.count} GPUs seen by nvidia-smi")


def ib_ports(ctx: Context, hardware: _Hardware, found: Findings) -> None:
    """One InfiniBand NIC of the profile is one HCA port (the inventory names no devices,
    so any ports will do); ports beyond that count may be down (an uncabled second port)."""
    expected = sum(1 for nic in ctx.node.profile.nics.values() if nic.kind == "infiniband")
    if not ctx.node.has("infiniband") or expected == 0:
        return
    if not hardware:
        found.ok.append("IB ports not checked (fleet:hardware false)")
        return
    out = salt_json(ctx, ctx.name, "cmd.run", IB_PORTS_CMD, timeout=60).get(ctx.name)
    if not isinstance(out, str):
        found.problems.append(f"IB ports not read: the minion answered {out!r}")
        return
    found.add(*parse.ib_verdict(parse.ib_ports(out), expected, out))


def slurmd(ctx: Context, found: Findings) -> None:
    if not ctx.is_slurm_node():
        return
    gpu = ctx.node.profile.gpu
    res = ctx.runner.run(["scontrol", "show", "node", ctx.name]).check()
    if "NOT_RESPONDING" in res.stdout:
        found.problems.append("slurmd has not registered (NOT_RESPONDING)")
    elif gpu is not None and f"gpu:{gpu.count}" not in res.stdout.replace(
            f"gpu:{gpu.model.lower()}:", "gpu:"):
        found.problems.append(f"slurmd does not report Gres gpu:{gpu.count}")
    else:
        found.ok.append("slurmd registered")


def mkv_volume(ctx: Context, found: Findings) -> None:
    """GET / on the volume's nginx, asked from the array's mkv master through Salt, at the
    name:port in the master's -volumes list: the master redirects clients to that name,
    so this is the path that must work (a curl on the node itself would not see a
    firewall, a wrong listen address or a stale hosts entry). Any HTTP status below 500
    is an answer. The same call asks the master itself; the master not answering is a
    warning, not the node's failure."""
    mkv = ctx.inventory.raw.mkv
    if ctx.node.mkv_array is None or mkv is None or ctx.node.mkv_array not in mkv.arrays:
        return
    array = mkv.arrays[ctx.node.mkv_array]
    volume = f"http://{ctx.name}:{array.volume_port}/"
    master = f"http://{array.master}:{array.port}/"
    # --noproxy: a proxy in the minion's environment must not answer for the volume
    curl = f"curl -s --noproxy '*' -o /dev/null -m {HTTP_TIMEOUT} -w '%{{http_code}}'"
    cmd = (f"echo volume $({curl} {shlex.quote(volume)}); "
           f"echo master $({curl} {shlex.quote(master)})")
    out = salt_json(ctx, array.master, "cmd.run", cmd, timeout=60).get(array.master)
    codes: dict[str, int] = {}
    for line in str(out).splitlines():
        key, _, code = line.strip().partition(" ")
        if key in ("volume", "master") and code.isdigit():
            codes[key] = int(code)
    if "volume" not in codes:
        found.problems.append(f"mkv volume {volume} not checked: {array.master} answered "
                              f"{str(out).strip()[:200]!r}")
        return
    status = codes["volume"]
    if status == 0:
        found.problems.append(f"mkv volume {volume} does not answer (from {array.master})")
    elif status >= 500:
        found.problems.append(f"mkv volume {volume} answers HTTP {status} "
                              f"(from {array.master})")
    else:
        found.ok.append(f"mkv volume {volume} answers (HTTP {status}, from {array.master})")
    m = codes.get("master", 0)
    if 0 < m < 500:
        found.ok.append(f"mkv master {master} answers (HTTP {m})")
    else:
        found.warnings.append(f"mkv master of array '{ctx.node.mkv_array}' ({master}) "
                              + ("does not answer" if m == 0 else f"answers HTTP {m}"))
