"""A node's burn-in checks run on the node through the Salt master. The runner
(:mod:`fleet.burnin.runner`, standard library only) travels in the command line itself,
base64, so the node needs no copy of fleet, only the tools its checks call (base.burnin
installs them); its JSON answer is untrusted like any report (fleet.burnin.results)."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from fleet.burnin import results
from fleet.burnin.pairs import PAIR_CHECKS, Partner, rail_gbps
from fleet.burnin.results import Result, ResultError
from fleet.burnin.runner import CHECKS
from fleet.inventory.burnintools import TOOLS
from fleet.inventory.model import Node
from fleet.inventory.schema.hardware import BurninTest, Profile
from fleet.inventory.schema.site import Site
from fleet.master.salt import MasterError, Salt

RUNNER = Path(__file__).with_name("runner.py")
DEFAULT_MB = 256  # memtester's and fio's size where the profile names none
MAX_REASON = 180  # a result's reason, as the runner cuts its own
MARGIN_S = 300  # beyond a check's own duration: tool start, the salt round trip


@dataclass(frozen=True)
class Planned:
    check: str
    argv: list[str]
    timeout: float
    refused: str | None = None
    """why it is not sent to the node: kept as its failed result (None: it is run)"""


def plan(profile: Profile, only: list[str] | None = None, node: Node | None = None,
         site: Site | None = None) -> tuple[list[Planned], list[str]]:
    """The profile's checks of one node the runner can run, in the profile's order
    (``only``: these of them), and those it cannot (none today). The checks between two
    nodes (:data:`fleet.burnin.pairs.PAIR_CHECKS`) are in neither: :func:`pair_plan`.
    ``node`` gives link-speed the node's MAC and HCA GUID (None: each NIC found by name or
    kind). ``site`` gives a check of a built tool (gpu-stress, nccl-allreduce) that
    tool's path, or, its pin null, a refusal naming the pin (None: found on PATH)."""
    code = _runner_code()
    runs: list[Planned] = []
    missing: list[str] = []
    for check, test in profile.burnin.items():
        if (only is not None and check not in only) or check in PAIR_CHECKS:
            continue
        if check not in CHECKS:
            missing.append(check)
            continue
        runs.append(Planned(check, ["python3", "-c", code, check,
                                    *_args(check, test, profile, node), *_tool(check, site)],
                            test.seconds * 2 + MARGIN_S, unpinned(check, site)))
    return runs, missing


def _tool(check: str, site: Site | None) -> list[str]:
    """The runner's ``--tool PATH --pinned-by FIELD`` of a check whose tool nvidia.burnin
    builds (fleet.inventory.burnintools: the one definition of its path)."""
    tool = TOOLS.get(check)
    return [] if tool is None or site is None else ["--tool", tool.path,
                                                    "--pinned-by", tool.pin]


def unpinned(check: str, site: Site | None) -> str | None:
    """Why a check of a built tool cannot run anywhere: its pin is null."""
    tool = TOOLS.get(check)
    if tool is None or site is None or tool.artifact(site) is not None:
        return None
    return (f"not run: {tool.pin} is null (no pinned {tool.name} source: nvidia.burnin "
            f"builds no {tool.binary.rsplit('/', 1)[-1]}; docs/discovery.md, Burn-in tools)")


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


CONNECT_S = 60  # how long the two sides of a pair wait for each other


def pair_plan(profile: Profile, node: Node, partner: Partner, check: str = "ib-write-bw"
              ) -> tuple[Planned, Planned]:
    """The server side (on ``partner``) and the client side (on ``node``) of a pair
    check: ib_write_bw on each node's planned HCA (its ib_guid), the client pointed at
    the partner's IPoIB address and judged against the profile's first InfiniBand NIC's
    rate less the check's tolerance. Both bounded: the server waits ``CONNECT_S`` for
    its client, the client retries as long, then each runs the check's seconds."""
    test = profile.burnin[check]  # type: ignore[index]  # a BurninCheck by its caller
    code = _runner_code()
    rate = rail_gbps(profile)
    common = [check, "--seconds", str(max(test.seconds, 1)),
              "--connect-seconds", str(CONNECT_S)]
    timeout = CONNECT_S + test.seconds + MARGIN_S
    server = Planned(check, ["python3", "-c", code, *common, "--role", "server",
                             "--ib-guid", partner.ib_guid or "-"], timeout)
    client = Planned(check, ["python3", "-c", code, *common, "--role", "client",
                             "--peer", str(partner.address), "--ib-guid", node.ib_guid or "-",
                             "--expect-gbps", str(rate),
                             "--tolerance-percent", str(test.tolerance_percent)], timeout)
    return server, client


def run_pair(salt: Salt, node: str, partner: str, server: Planned, client: Planned
             ) -> Result:
    """One pair check: the server started on ``partner``, the client on ``node`` at the
    same time (the client retries its connection until the server listens). The
    client's result is the node's; the server's answer (untrusted too) only adds its
    reason to a failed client's."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        served = pool.submit(run, salt, partner, server)
        try:
            got = run(salt, node, client)
        finally:
            try:
                other: Result | str = served.result()
            except (ResultError, MasterError) as exc:  # the client's own outcome stands
                other = str(exc)
    if got.check != client.check:
        raise ResultError(f"{node} answered {got.check} for {client.check}")
    if got.passed:
        return got
    why = got.reason or "failed"
    said = other if isinstance(other, str) else None if other.passed else other.reason
    if said:
        why += f"; partner {partner}: {said}"
    return Result.model_validate({**got.model_dump(), "reason": _clean(f"with {partner}: {why}")})


def _clean(text: str) -> str:
    """A reason made of a node's words: printable ASCII, cut."""
    return re.sub(r"[^\x20-\x7e]", "?", text)[:MAX_REASON]


def pair_check(salt: Salt, profile: Profile, node: Node, partners: list[Partner],
               check: str, why_none: str, say: Callable[[str], None]) -> Result:
    """``check`` of ``node`` with its first partner, then the next if that pair failed
    (one bad partner does not fail a good node); no partner: a failed result saying
    ``why_none``."""
    result = not_run(check, why_none)
    for partner in partners:
        say(f"{node.hostname}: {check} with {partner.host} ...")
        server, client = pair_plan(profile, node, partner, check)
        result = run_pair(salt, node.hostname, partner.host, server, client)
        if result.passed:
            break
    return result


def not_run(check: str, why: str) -> Result:
    """The failed result kept for a check that could not run: a node that had no partner,
    a tool whose pin is null (never a pass)."""
    return Result.model_validate({"check": check, "passed": False, "reason": _clean(why),
                                  "started": results.now(), "seconds": 0.0})


def run(salt: Salt, node: str, planned: Planned) -> Result:
    """One check on ``node``: its result, or :class:`ResultError` saying why none came; a
    refused check is not sent, its failed result says why."""
    if planned.refused is not None:
        return not_run(planned.check, planned.refused)
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
