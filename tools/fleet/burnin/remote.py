"""A node's burn-in checks run on the node through the Salt master. The runner
(:mod:`fleet.burnin.runner`, standard library only) travels in the command line itself,
base64, so the node needs no copy of fleet, only the tools its checks call (base.burnin
installs them); its JSON answer is untrusted like any report (fleet.burnin.results)."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from fleet.burnin import results
from fleet.burnin.results import Result, ResultError
from fleet.burnin.runner import CHECKS
from fleet.inventory.model import Node
from fleet.inventory.schema.hardware import BurninTest, Profile
from fleet.master.salt import Salt

RUNNER = Path(__file__).with_name("runner.py")
DEFAULT_MB = 256  # memtester's and fio's size where the profile names none
MARGIN_S = 300  # beyond a check's own duration: tool start, the salt round trip


@dataclass(frozen=True)
class Planned:
    check: str
    argv: list[str]
    timeout: float


def plan(profile: Profile, only: list[str] | None = None, node: Node | None = None
         ) -> tuple[list[Planned], list[str]]:
    """The profile's checks the runner can run, in the profile's order (``only``: these of
    them), and those it cannot here (ib-write-bw: two nodes, not yet written). ``node``
    gives link-speed the node's MAC and HCA GUID (None: each NIC found by name or kind)."""
    code = _runner_code()
    runs: list[Planned] = []
    missing: list[str] = []
    for check, test in profile.burnin.items():
        if only is not None and check not in only:
            continue
        if check not in CHECKS:
            missing.append(check)
            continue
        runs.append(Planned(check, ["python3", "-c", code, check,
                                         *_args(check, test, profile, node)],
                            test.seconds * 2 + MARGIN_S))
    return runs, missing


@cache
def _runner_code() -> str:
    """``python3 -c`` code that runs the runner, read and encoded once per run of fleet."""
    return ("import base64;exec(compile(base64.b64decode("
            f"'{base64.b64encode(RUNNER.read_bytes()).decode()}'),'fleet-burnin','exec'))")


def links(profile: Profile, node: Node | None) -> list[str]:
    """link-speed's ``--link NIC,KIND,GBPS,ID`` per NIC of the profile: ID the node's
    MAC of that NIC (the inventory has the boot NIC's), its HCA GUID for an InfiniBand NIC
    (one ib_guid per node: the first), else ``-``."""
    out, guid = [], node.ib_guid if node else None
    for name, nic in profile.nics.items():
        iface = node.interfaces.get(name) if node else None
        ident = iface.mac if iface is not None and iface.mac else "-"
        if nic.kind == "infiniband" and guid:
            ident, guid = guid, None
        out += ["--link", f"{name},{nic.kind},{nic.speed_gbps},{ident}"]
    return out


def _args(check: str, test: BurninTest, profile: Profile, node: Node | None) -> list[str]:
    mb = str(test.mb or DEFAULT_MB)
    gpus = ["--expect-gpus", str(profile.gpu.count if profile.gpu else 0)]
    return {"cpu-stress": ["--seconds", str(test.seconds)],
            "memtester": ["--mb", mb],
            "disk-verify": ["--seconds", str(test.seconds), "--mb", mb],
            "link-speed": links(profile, node),
            "gpu-present": [*gpus, "--expect-memory-gb",
                            str(profile.gpu.memory_gb if profile.gpu else 0)],
            "gpu-stress": ["--seconds", str(test.seconds), *gpus],
            "nccl-allreduce": ["--seconds", str(test.seconds), *gpus],
            }.get(check, [])


def run(salt: Salt, node: str, planned: Planned) -> Result:
    """One check on ``node``: its result, or :class:`ResultError` saying why none came."""
    got = salt.run_argv(node, planned.argv, timeout=planned.timeout)
    if not isinstance(got, dict) or not isinstance(got.get("stdout"), str):
        raise ResultError(f"{planned.check}: no answer from {node} ({str(got)[:120]})")
    lines = [ln for ln in got["stdout"].splitlines() if ln.startswith("{")]
    if not lines:
        raise ResultError(f"{planned.check}: {node} printed no result (exit "
                          f"{got.get('retcode')}): {str(got.get('stderr', ''))[-160:]}")
    return results.parse(lines[-1].encode())


def run_node(salt: Salt, root: Path, node: str, runs: list[Planned],
             say: Callable[[str], None]) -> list[Result]:
    """Every planned check on ``node``, each result kept as it comes."""
    done = []
    for planned in runs:
        say(f"{node}: {planned.check} ...")
        result = run(salt, node, planned)
        if result.check != planned.check:
            raise ResultError(f"{node} answered {result.check} for {planned.check}")
        results.record(root, node, result)
        say(f"{node}: {planned.check} {'passed' if result.passed else 'FAILED'} "
            f"({result.seconds:.0f}s)")
        done.append(result)
    return done
