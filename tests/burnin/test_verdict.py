"""The burn-in verdict: the baseline is the median of the profile's passing nodes; an
outlier beyond the check's tolerance fails, with its figure against the baseline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.burnin import results
from fleet.burnin.results import Result, ResultError, parse
from fleet.burnin.verdict import MIN_BASELINE, baselines, judge, judge_all
from fleet.inventory.schema.hardware import BurninTest

TESTS = {"cpu-stress": BurninTest(seconds=60, tolerance_percent=10),
         "disk-verify": BurninTest(seconds=30, tolerance_percent=20),
         "smart": BurninTest(seconds=0)}


def r(check: str, passed: bool = True, **figures: float) -> Result:
    return Result(check=check, passed=passed, figures=figures, started=1.0, seconds=2.0)


def node(ops: float, read: float = 3000.0, smart: bool = True) -> dict[str, Result]:
    return {"cpu-stress": r("cpu-stress", bogo_ops_s=ops),
            "disk-verify": r("disk-verify", read_mib_s=read, write_mib_s=2000.0),
            "smart": r("smart", smart)}


def test_the_baseline_is_the_median_of_passing_results_only() -> None:
    got = baselines({"a": node(100), "b": node(110), "c": node(90),
                     "d": {"cpu-stress": r("cpu-stress", False, bogo_ops_s=1.0)}})
    assert got["cpu-stress"]["bogo_ops_s"] == (100, 3)
    assert got["disk-verify"]["read_mib_s"] == (3000.0, 3)


def test_an_outlier_fails_with_its_figure_against_the_baseline() -> None:
    fleet = {"a": node(1000), "b": node(1010), "c": node(990), "weak": node(850)}
    v = judge_all(dict.fromkeys(fleet, "tinybox-pro"), {"tinybox-pro": TESTS}, fleet)
    assert [v[n].status for n in "abc"] == ["passed"] * 3
    assert v["weak"].status == "failed"
    assert v["weak"].failures == [
        "cpu-stress: bogo_ops_s 850 against the baseline 995 (-14.6%, tolerance 10%, "
        "median of 4)"]


def test_within_tolerance_and_better_than_the_baseline_pass() -> None:
    fleet = {"a": node(1000), "b": node(1000), "c": node(1000), "slow": node(910),
             "fast": node(2000, read=9000.0)}
    v = judge_all(dict.fromkeys(fleet, "p"), {"p": TESTS}, fleet)
    assert v["slow"].status == "passed" and v["fast"].status == "passed"


def test_a_lower_is_better_figure_fails_when_higher() -> None:
    test = {"ib-write-bw": BurninTest(seconds=10, tolerance_percent=10)}
    fleet = {n: {"ib-write-bw": r("ib-write-bw", lat_us=v)}
             for n, v in (("a", 2.0), ("b", 2.1), ("c", 1.9), ("d", 2.6))}
    v = judge_all(dict.fromkeys(fleet, "p"), {"p": test}, fleet)
    assert v["d"].status == "failed" and "lat_us 2.6 against the baseline 2.05" in \
        v["d"].failures[0]
    assert v["a"].status == "passed"


def test_a_failed_check_fails_with_the_tools_reason_first() -> None:
    res = node(1000)
    res["smart"] = Result(check="smart", passed=False, reason="nvme0n1: critical warning 0x04",
                          started=1.0, seconds=0.0)
    v = judge("n", "p", TESTS, res, baselines({"n": res}))
    assert v.status == "failed"
    assert v.failures == ["smart: failed (nvme0n1: critical warning 0x04)"]


def test_missing_checks_leave_the_node_pending_with_its_progress() -> None:
    res = {"cpu-stress": r("cpu-stress", bogo_ops_s=1000)}
    v = judge("n", "p", TESTS, res, baselines({"n": res}))
    assert (v.status, v.done, v.total) == ("pending", 1, 3)


def test_a_profile_with_no_check_fails_every_node_of_it() -> None:
    res = node(1000)  # results recorded by hand do not make an empty burn-in pass
    v = judge_all({"n": "bare", "m": "bare"}, {"bare": {}}, {"n": res})
    assert {(x.status, x.done, x.total) for x in v.values()} == {("failed", 0, 0)}
    assert v["m"].failures == ["profile bare configures no burn-in checks"]
    assert judge("n", "p", {}, res, baselines({"n": res})).status == "failed"


def test_too_few_passing_nodes_are_no_baseline_and_say_so() -> None:
    fleet = {"a": node(1000), "weak": node(100)}
    v = judge_all(dict.fromkeys(fleet, "p"), {"p": TESTS}, fleet)
    assert v["weak"].status == "passed"
    assert v["weak"].notes[0] == (f"cpu-stress: bogo_ops_s not compared (baseline of 2 "
                                  f"node(s), {MIN_BASELINE} needed)")


def test_baselines_are_per_profile() -> None:
    fleet = {"a": node(1000), "b": node(1000), "c": node(1000),
             "x": node(100), "y": node(100), "z": node(100)}
    profiles = {**dict.fromkeys("abc", "fast"), **dict.fromkeys("xyz", "slow")}
    v = judge_all(profiles, {"fast": TESTS, "slow": TESTS}, fleet)
    assert {n: v[n].status for n in fleet} == dict.fromkeys(fleet, "passed")


@pytest.mark.parametrize(("doc", "where"), [
    ({"check": "rm -rf", "passed": True, "started": 1, "seconds": 1}, "check"),
    ({"check": "smart", "passed": "yes", "started": 1, "seconds": 1}, "passed"),
    ({"check": "smart", "passed": True, "started": 1, "seconds": 1,
      "figures": {"Bad Name": 1.0}}, "figures"),
    ({"check": "smart", "passed": True, "started": 1, "seconds": 1,
      "reason": "a\x1b[2Jb"}, "reason"),
    ({"check": "smart", "passed": True, "started": 1, "seconds": 1, "x": 1}, "x"),
])
def test_results_from_nodes_are_checked(doc: dict[str, object], where: str) -> None:
    with pytest.raises(ResultError, match=where):
        parse(json.dumps(doc).encode())


def test_nan_and_oversized_results_are_refused() -> None:
    with pytest.raises(ResultError):
        parse(b'{"check": "smart", "passed": true, "started": 1, "seconds": 1, '
              b'"figures": {"lat_us": NaN}}')
    with pytest.raises(ResultError, match="at most"):
        parse(b" " * (results.MAX_RESULT_BYTES + 1))


def test_a_file_of_results_is_bounded_and_refused_whole_at_a_bad_line() -> None:
    """`fleet burnin record`'s file of the runner's lines: at most one result's bound in
    all, at least one result, and a hostile line names its number (nothing is kept)."""
    good = json.dumps({"check": "smart", "passed": True, "started": 1, "seconds": 1})
    assert [g.check for g in results.parse_lines(f"{good}\n\n{good}\n".encode())] == [
        "smart", "smart"]
    with pytest.raises(ResultError, match="at most"):
        results.parse_lines(
            ((good + "\n") * (results.MAX_RESULT_BYTES // len(good) + 1)).encode())
    with pytest.raises(ResultError, match="no result"):
        results.parse_lines(b"\n \n")
    hostile = json.dumps({"check": "smart", "passed": True, "started": 1, "seconds": 1,
                          "reason": "a\x1b[2Jb"})
    with pytest.raises(ResultError, match="line 2: reason"):
        results.parse_lines(f"{good}\n{hostile}\n".encode())


def test_results_are_kept_per_node_latest_per_check(tmp_path: Path) -> None:
    results.record(tmp_path, "tbox-001", r("smart"))
    results.record(tmp_path, "tbox-001", r("cpu-stress", bogo_ops_s=5.0))
    results.record(tmp_path, "tbox-001", r("cpu-stress", bogo_ops_s=7.0))
    got = results.load(tmp_path, "tbox-001")
    assert set(got) == {"smart", "cpu-stress"} and got["cpu-stress"].figures == {
        "bogo_ops_s": 7.0}
    assert (tmp_path / "tbox-001.json").stat().st_mode & 0o777 == 0o600
