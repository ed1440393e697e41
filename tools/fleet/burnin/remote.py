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


def plan(profile: Profile, only: list[str] | None = None) -> tuple[list[Planned], list[str]]:
    """The profile's checks the runner can run, in the profile's order (``only``: these of
    them), and those it cannot here (GPU stress, NCCL, the links: not yet written)."""
    code = _runner_code()
    runs: list[Planned] = []
    missing: list[str] = []
    for check, test in profile.burnin.items():
        if only is not None and check not in only:
            continue
        if check not in CHECKS:
            missing.append(check)
            continue
        runs.append(Planned(check, ["python3", "-c", code, check, *_args(check, test, profile)],
                            test.seconds * 2 + MARGIN_S))
    return runs, missing


@cache
def _runner_code() -> str:
    """``python3 -c`` code that runs the runner, read and encoded once per run of fleet."""
    return ("import base64;exec(compile(base64.b64decode("
            f"'{base64.b64encode(RUNNER.read_bytes()).decode()}'),'fleet-burnin','exec'))")


def _args(check: str, test: BurninTest, profile: Profile) -> list[str]:
    mb = str(test.mb or DEFAULT_MB)
    return {"cpu-stress": ["--seconds", str(test.seconds)],
            "memtester": ["--mb", mb],
            "disk-verify": ["--seconds", str(test.seconds), "--mb", mb],
            "gpu-present": ["--expect-gpus", str(profile.gpu.count if profile.gpu else 0)],
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
