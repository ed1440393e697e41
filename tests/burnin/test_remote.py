"""fleet.burnin.remote, what `fleet burnin run` sends: the runner itself in the command line
(run here exactly as a minion's cmd.run_all runs it), the profile's checks in order, those
without a runner named; and the refusal of a node in service without --drain."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from discover.sites import ROOT
from fleet.burnin import remote
from fleet.burnin.results import ResultError, parse
from fleet.inventory.load import load_inventory
from fleet.inventory.schema.hardware import BurninTest, Profile
from fleet.master.runner import Result
from fleet.master.salt import Salt

SITE = ROOT / "inventory.yaml"


def _tinybox(**burnin: BurninTest) -> Profile:
    """The site's GPU box with this burn-in (the site sets its own in the "receive a rack"
    runbook, docs/operations.md)."""
    return load_inventory(SITE).raw.profiles["tinybox-pro"].model_copy(
        update={"burnin": burnin})


def test_the_command_line_carries_the_runner_and_runs_it() -> None:
    profile = _tinybox(**{"cpu-stress": BurninTest(seconds=60), "smart": BurninTest(seconds=0),
                          "gpu-present": BurninTest(seconds=0)})
    runs, missing = remote.plan(profile)
    assert [r.check for r in runs] == list(profile.burnin) and not missing
    smart = next(r for r in runs if r.check == "smart")
    assert smart.argv[:2] == ["python3", "-c"]
    sent = re.search(r"b64decode\('([A-Za-z0-9+/=]+)'\)", smart.argv[2])
    assert sent and base64.b64decode(sent.group(1)) == remote.RUNNER.read_bytes()
    # the very argv, as a minion runs it (no shell): one result the master accepts
    proc = subprocess.run(smart.argv, capture_output=True, text=True, timeout=120,
                          check=False)
    result = parse(proc.stdout.strip().splitlines()[-1].encode())
    assert result.check == "smart" and "disks" in result.figures
    gpu = next(r for r in runs if r.check == "gpu-present")
    assert gpu.argv[-4:] == ["--expect-gpus", "8", "--expect-memory-gb", "24"]


def test_the_pair_checks_are_planned_apart_and_only_narrows() -> None:
    profile = _tinybox(**{"cpu-stress": BurninTest(seconds=5),
                          "ib-write-bw": BurninTest(),
                          "memtester": BurninTest(seconds=0, mb=32)})
    runs, missing = remote.plan(profile)
    assert [r.check for r in runs] == ["cpu-stress", "memtester"]
    assert missing == []  # ib-write-bw: between two nodes (tests/burnin/test_pairs.py)
    assert runs[0].argv[-2:] == ["--seconds", "5"] and runs[1].argv[-2:] == ["--mb", "32"]
    only, _ = remote.plan(profile, ["memtester"])
    assert [r.check for r in only] == ["memtester"]


def test_a_node_in_service_is_refused_without_drain() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fleet", "burnin", "run", "tbox-001", "-i", str(SITE),
         "--salt-config", "/nonexistent"],
        capture_output=True, text=True, timeout=120, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tools")})
    assert proc.returncode == 2, proc.stderr
    assert "tbox-001 in service: --drain takes them out first" in proc.stderr


def test_an_unknown_check_is_a_usage_error() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fleet", "burnin", "run", "tbox-001", "--checks",
         "cpu-stress,gpu-stres", "--drain", "-i", str(SITE), "--salt-config", "/nonexistent"],
        capture_output=True, text=True, timeout=120, check=False, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "tools")})
    assert proc.returncode == 2, proc.stderr
    assert "--checks gpu-stres: no such check" in proc.stderr


class _Answers:
    """What the salt CLI prints for the node's cmd.run_all: a node's answer is hostile."""

    def __init__(self, answer: object) -> None:
        self.answer = answer

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        return Result(tuple(argv), 0, json.dumps({"tbox-001": self.answer}), "")


@pytest.mark.parametrize("answer, why", [
    ({"retcode": 0, "stdout": '{"check": "smart", "passed": true, "figures": {"x": 1e999}, '
      '"started": 1, "seconds": 1}', "stderr": ""}, "figures"),
    ({"retcode": 1, "stdout": "\x1b[2J no json", "stderr": "\x1b]0;pwned\x07"}, "no result"),
    ("Minion did not return. [No response]", "no answer"),
    ({"retcode": 0, "stdout": '{"check": "cpu-stress", "passed": true, "figures": {}, '
      '"started": 1, "seconds": 1}', "stderr": ""}, "answered cpu-stress for smart"),
])
def test_a_hostile_or_wrong_answer_is_refused_and_nothing_is_kept(
        tmp_path: Path, answer: object, why: str) -> None:
    (smart,) = remote.plan(_tinybox(smart=BurninTest(seconds=0)))[0]
    with pytest.raises(ResultError) as err:
        remote.run_node(Salt(_Answers(answer)), tmp_path, "tbox-001", [smart], lambda m: None)
    assert why in str(err.value)
    assert not list(tmp_path.iterdir())  # no result recorded
