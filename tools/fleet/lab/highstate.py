"""Apply the highstate through the lab master and summarize it per node: the one Salt
client (fleet.master.salt) through the lab's ``.lab/bin/salt`` wrappers, the one verdict
(fleet.master.highstate)."""

from __future__ import annotations

import json
import time
from typing import Any

from fleet.lab.paths import Paths
from fleet.lab.run import LabError, run, wait_for
from fleet.master.highstate import NodeResult, judge
from fleet.master.runner import CommandError, SubprocessRunner
from fleet.master.salt import MasterError, NoJobError, Salt


def client(paths: Paths, timeout: float = 60.0) -> Salt:
    """The one Salt client, asking the lab's master (its salt / salt-run wrappers)."""
    return Salt(SubprocessRunner({tool: [str(paths.bin / tool)]
                                  for tool in ("salt", "salt-run")}), timeout)


def salt(paths: Paths, *args: str, timeout: float = 1800) -> Any:
    """``salt ARGS --out=json --static`` as the tests ask the lab's master (any target)."""
    out = run([paths.bin / "salt", "--out=json", "--static", *args],
              check=False, timeout=timeout).stdout
    return json.loads(out) if out.strip() else {}


def ping(paths: Paths, minions: list[str], timeout: float = 300) -> float:
    """Wait until every minion answers test.ping; returns the seconds it took."""
    master = client(paths, timeout=10)

    def answered() -> bool:
        try:
            got = master.call(minions, "test.ping")
        except MasterError:  # the CLI itself stalled (a loaded 2-core host): ask again
            return False
        return all(got.get(m) is True for m in minions)

    return wait_for(f"test.ping from {','.join(minions)}", answered, timeout=timeout,
                    interval=2)


def apply(paths: Paths, minions: list[str], *, target: str = "*",
          timeout: float = 3600) -> tuple[list[NodeResult], float]:
    """``state.apply`` on the minions ``target`` names (``*``: all of ``minions``, or a
    comma-separated list), published asynchronously and collected from the master's job
    cache (fleet.master.salt: a minion busy with dpkg on a 2-core host is given up only
    when it twice says the job no longer runs, or when ``timeout`` is spent)."""
    t0 = time.monotonic()
    named = target.split(",")
    wanted = [m for m in minions if target == "*" or m in named]
    try:
        got = client(paths).highstate(wanted, t0 + timeout)
    except (NoJobError, CommandError) as exc:
        raise LabError(f"state.apply on {target}: {exc}") from None
    took = time.monotonic() - t0
    return [judge(x, got.returns.get(x), jid=got.jid) for x in wanted], took


def format_results(results: list[NodeResult], took: float) -> str:
    lines = [f"{'node':<10} {'ok':>4} {'changed':>8} {'failed':>7} {'time':>8}  status"]
    for r in results:
        ok = r.states - r.changed - len(r.failed)
        lines.append(f"{r.node:<10} {ok:>4} {r.changed:>8} {len(r.failed):>7} "
                     f"{r.run_s or 0.0:>7.1f}s  {r.status.value}")
        lines += [f"    FAILED {p}" for p in r.problems()]
        if r.changed <= 5:  # a re-apply: name what was not idempotent
            lines += [f"    changed {c}" for c in r.changes]
    lines.append(f"highstate wall time {took:.1f}s")
    return "\n".join(lines)


def converge(paths: Paths, minions: list[str], first: list[str],
             ) -> tuple[list[NodeResult], float]:
    """The highstate on ``first`` (the provisioning host: its apt cache serves the
    others' packages), then on the rest, as a site is brought up."""
    results: list[NodeResult] = []
    took = 0.0
    rest = [m for m in minions if m not in first]
    for group in ([m for m in minions if m in first], rest):
        if group:
            r, t = apply(paths, group, target=",".join(group))
            results += r
            took += t
    order = {m: i for i, m in enumerate(minions)}
    return sorted(results, key=lambda r: order[r.node]), took
