"""Each node's burn-in verdict against its profile's baseline.

The baseline of a figure of a check is the median of that figure over the nodes of the
profile whose own result of the check passed (at least ``MIN_BASELINE`` of them; fewer: no
baseline, the figure is not compared and the verdict says so). A figure worse than the
baseline by more than the check's ``tolerance_percent`` is an outlier, and the node fails,
with its figure against the baseline. Which way is worse is the figure's own: every figure
named in ``BETTER`` is judged, any other is kept and shown only. A profile that configures
no check fails every node of it: no burn-in that ran nothing passes.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from fleet.burnin.results import Result
from fleet.inventory.model import Inventory
from fleet.inventory.schema.hardware import BurninTest

MIN_BASELINE = 3
# the maintenance reason `fleet burnin finish` writes for a node that failed: this prefix,
# then the failing check ("burn-in smart: failed (...)")
REASON_PREFIX = "burn-in "
Better = Literal["higher", "lower"]
BETTER: dict[str, Better] = {
    "bogo_ops_s": "higher",  # stress-ng --metrics-brief
    "mem_mib_s": "higher",
    "read_mib_s": "higher",  # fio
    "write_mib_s": "higher",
    "read_iops": "higher",
    "write_iops": "higher",
    "link_gbps": "higher",  # ethtool / ibstat against the profile
    "gpu_tflops": "higher",
    "busbw_gb_s": "higher",  # nccl-tests all_reduce_perf
    "bw_gb_s": "higher",  # ib_write_bw
    "lat_us": "lower",
}
Status = Literal["pending", "passed", "failed"]
Baselines = dict[str, dict[str, tuple[float, int]]]  # check -> figure -> (median, of n)


@dataclass(slots=True)
class Verdict:
    node: str
    status: Status
    done: int
    total: int
    failures: list[str] = field(default_factory=list)  # "check: why", the first is the reason
    notes: list[str] = field(default_factory=list)  # figures not compared, and why


def baselines(results: Mapping[str, Mapping[str, Result]]) -> Baselines:
    """The baselines of one profile from its nodes' results (node -> check -> result)."""
    values: dict[str, dict[str, list[float]]] = {}
    for by_check in results.values():
        for check, r in by_check.items():
            if r.passed:
                for name, v in r.figures.items():
                    values.setdefault(check, {}).setdefault(name, []).append(v)
    return {check: {name: (statistics.median(vs), len(vs)) for name, vs in figs.items()}
            for check, figs in values.items()}


def _outlier(check: str, r: Result, test: BurninTest, base: Mapping[str, tuple[float, int]],
             notes: list[str]) -> str | None:
    for name, value in sorted(r.figures.items()):
        better = BETTER.get(name)
        if better is None or name not in base:
            continue
        median, n = base[name]
        if n < MIN_BASELINE:
            notes.append(f"{check}: {name} not compared (baseline of {n} node(s), "
                         f"{MIN_BASELINE} needed)")
            continue
        if median == 0:
            continue
        off = (value - median) / median * 100
        worse = -off if better == "higher" else off
        if worse > test.tolerance_percent:
            return (f"{check}: {name} {value:g} against the baseline {median:g} "
                    f"({off:+.1f}%, tolerance {test.tolerance_percent}%, median of {n})")
    return None


def judge(node: str, profile: str, tests: Mapping[str, BurninTest],
          results: Mapping[str, Result], base: Baselines) -> Verdict:
    """The node's verdict: failed when ``profile`` configures no check, or at the first
    failing check or outlier; pending while a check of its profile has no result; else
    passed."""
    v = Verdict(node, "pending", sum(1 for c in tests if c in results), len(tests))
    if not tests:
        v.failures.append(f"profile {profile} configures no burn-in checks")
    for check, test in tests.items():
        r = results.get(check)
        if r is None:
            continue
        if not r.passed:
            v.failures.append(f"{check}: failed" + (f" ({r.reason})" if r.reason else ""))
            continue
        why = _outlier(check, r, test, base.get(check, {}), v.notes)
        if why is not None:
            v.failures.append(why)
    if v.failures:
        v.status = "failed"
    elif v.done == v.total:
        v.status = "passed"
    return v


def judge_all(profiles: Mapping[str, str], tests: Mapping[str, Mapping[str, BurninTest]],
              results: Mapping[str, Mapping[str, Result]]) -> dict[str, Verdict]:
    """Every node's verdict; ``profiles``: node -> its profile, ``tests``: profile -> its
    burn-in, ``results``: node -> its results. Baselines are per profile, over every node
    of the profile with results (in burn-in or not: a re-run compares with all)."""
    by_profile: dict[str, dict[str, Mapping[str, Result]]] = {}
    for node, profile in profiles.items():
        by_profile.setdefault(profile, {})[node] = results.get(node, {})
    base = {p: baselines(rs) for p, rs in by_profile.items()}
    return {node: judge(node, p, tests.get(p, {}), results.get(node, {}), base[p])
            for node, p in profiles.items()}


def for_inventory(inv: Inventory, results: Mapping[str, Mapping[str, Result]]
                  ) -> dict[str, Verdict]:
    """Every node's verdict against its profile's burn-in; ``results``: node -> its
    results (a node without any: none ran)."""
    profiles = {h: n.profile_name for h, n in inv.nodes.items()}
    tests: dict[str, dict[str, BurninTest]] = {
        p: {str(c): t for c, t in prof.burnin.items()} for p, prof in inv.raw.profiles.items()}
    return judge_all(profiles, tests, results)


def failed_check(state: str, reason: str | None) -> str | None:
    """The failing check's line of a node that burn-in left in maintenance (None: not
    one)."""
    if state != "maintenance" or not reason or not reason.startswith(REASON_PREFIX):
        return None
    return reason[len(REASON_PREFIX):]
