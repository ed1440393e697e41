"""Apply the highstate through the lab master and summarize it per node."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from fleet.lab.paths import Paths
from fleet.lab.run import LabError, run, wait_for


@dataclass
class NodeResult:
    minion: str
    ok: int = 0
    changed: int = 0
    failed: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)


def salt(paths: Paths, *args: str, timeout: float = 1800) -> Any:
    out = run([paths.bin / "salt", "--out=json", "--static", *args],
              check=False, timeout=timeout).stdout
    return json.loads(out) if out.strip() else {}


def ping(paths: Paths, minions: list[str], timeout: float = 300) -> float:
    """Wait until every minion answers test.ping; returns the seconds it took."""
    target = ",".join(minions)

    def answered() -> bool:
        try:
            got = salt(paths, "-L", target, "test.ping", "-t", "10", timeout=90)
        except LabError:  # the CLI itself stalled (a loaded 2-core host): ask again
            return False
        return all(got.get(m) is True for m in minions)

    return wait_for(f"test.ping from {target}", answered, timeout=timeout, interval=2)


def summarize(minion: str, ret: Any) -> NodeResult:
    r = NodeResult(minion)
    if not isinstance(ret, dict):
        r.failed = 1
        r.failures.append(f"render error: {ret}")
        return r
    for sid, st in ret.items():
        if not isinstance(st, dict):
            continue
        r.seconds += float(st.get("duration") or 0) / 1000
        if st.get("result") is False:
            r.failed += 1
            r.failures.append(f"{sid}: {str(st.get('comment'))[:300]}")
        elif st.get("changes"):
            r.changed += 1
            r.changes.append(sid)
        else:
            r.ok += 1
    return r


def apply(paths: Paths, minions: list[str], *, target: str = "*",
          timeout: float = 3600) -> tuple[list[NodeResult], float]:
    """``salt TARGET state.apply`` (TARGET: ``*`` or a comma-separated list of minions),
    published asynchronously and collected from the
    master's job cache. The CLI's own wait gives up on a minion that does not answer
    ``find_job`` within gather_job_timeout, which a minion busy with dpkg on a 2-core
    host often does not: here a minion is given up only when it answered that the job
    no longer runs (twice, a return may land in between) or when ``timeout`` is spent."""
    t0 = time.monotonic()
    named = target.split(",")
    wanted = [m for m in minions if target == "*" or m in named]
    tgt = [target] if target == "*" else ["-L", target]
    out = run([paths.bin / "salt", "--async", *tgt, "state.apply"], timeout=120).stdout
    m = re.search(r"\b(\d{20})\b", out)
    if not m:
        raise LabError(f"salt --async {target} state.apply gave no job id: {out!r}")
    jid = m.group(1)
    rets: dict[str, Any] = {}
    gone: dict[str, int] = {}
    last_check = time.monotonic()
    while True:
        rets.update(_lookup(paths, jid))
        pending = [x for x in wanted if x not in rets]
        if not pending or time.monotonic() - t0 > timeout:
            break
        if time.monotonic() - last_check > 30:
            last_check = time.monotonic()
            running = salt(paths, "-L", ",".join(pending), "saltutil.find_job", jid,
                           "-t", "20", timeout=120)
            for x in pending:
                # {} = answered, not running it; missing = busy or unreachable: wait
                if x in running and not running[x]:
                    gone[x] = gone.get(x, 0) + 1
                    if gone[x] >= 2:
                        rets[x] = f"job {jid} died on {x} without a return"
                else:
                    gone.pop(x, None)
        time.sleep(3)
    took = time.monotonic() - t0
    results = [summarize(x, rets.get(x, f"no return from {x} after {took:.0f}s"))
               for x in wanted]
    return results, took


def _lookup(paths: Paths, jid: str) -> dict[str, Any]:
    out = run([paths.bin / "salt-run", "--out=json", "jobs.lookup_jid", jid],
              check=False, timeout=120).stdout
    try:
        data = json.loads(out) if out.strip() else {}
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def format_results(results: list[NodeResult], took: float) -> str:
    lines = [f"{'node':<10} {'ok':>4} {'changed':>8} {'failed':>7} {'time':>8}"]
    for r in results:
        lines.append(f"{r.minion:<10} {r.ok:>4} {r.changed:>8} {r.failed:>7} "
                     f"{r.seconds:>7.1f}s")
        lines += [f"    FAILED {f}" for f in r.failures]
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
    return sorted(results, key=lambda r: order[r.minion]), took
