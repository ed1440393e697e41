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
from fleet.inventory import burnintools
from fleet.inventory.load import load_inventory
from fleet.inventory.schema.hardware import BURNIN_CHECKS, BurninTest, Profile
from fleet.inventory.schema.site import BurninTools
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


class _NoCall:
    """A salt CLI that must not be called: a refused check is never sent to the node."""

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        raise AssertionError(f"sent to the node: {list(argv)[:6]}")


GPU_CHECKS = {"gpu-stress": BurninTest(seconds=30), "nccl-allreduce": BurninTest(seconds=0)}


def test_a_null_pin_fails_its_check_naming_the_field_without_sending_it(
        tmp_path: Path) -> None:
    """The site's inventory pins neither gpu-burn nor nccl-tests (no verified checksum):
    both checks are failed results, kept like any, naming the inventory field."""
    inv = load_inventory(SITE)
    assert inv.raw.site.burnin_tools.gpu_burn is None
    assert inv.raw.site.burnin_tools.nccl_tests is None
    runs, missing = remote.plan(_tinybox(**GPU_CHECKS), None, inv.nodes["tbox-001"],
                                inv.raw.site)
    assert [r.check for r in runs] == ["gpu-stress", "nccl-allreduce"] and not missing
    kept = remote.run_node(Salt(_NoCall()), tmp_path, "tbox-001", runs, lambda m: None)
    assert [(r.check, r.passed) for r in kept] == [("gpu-stress", False),
                                                   ("nccl-allreduce", False)]
    assert kept[0].reason is not None and kept[0].reason.startswith(
        "not run: site.burnin_tools.gpu_burn is null (no pinned gpu-burn source: "
        "nvidia.burnin builds no gpu_burn")
    assert kept[1].reason is not None and kept[1].reason.startswith(
        "not run: site.burnin_tools.nccl_tests is null (no pinned nccl-tests source: "
        "nvidia.burnin builds no all_reduce_perf")
    assert (tmp_path / "tbox-001.json").exists()  # recorded: burn-in status shows it failed


def test_a_pinned_tool_is_run_at_the_path_nvidia_burnin_builds_it_to() -> None:
    inv = load_inventory(SITE)
    art = {"source": "http://10.1.0.10/pypi/artifacts/t.tar", "sha256": "a" * 64}
    site = inv.raw.site.model_copy(update={"burnin_tools": BurninTools.model_validate(
        {"gpu_burn": art, "nccl_tests": art})})
    runs, _ = remote.plan(_tinybox(**GPU_CHECKS), None, inv.nodes["tbox-001"], site)
    assert [r.refused for r in runs] == [None, None]
    assert runs[0].argv[-4:] == ["--tool", burnintools.TOOLS["gpu-stress"].path,
                                 "--pinned-by", "site.burnin_tools.gpu_burn"]
    assert runs[1].argv[-4:] == ["--tool", burnintools.TOOLS["nccl-allreduce"].path,
                                 "--pinned-by", "site.burnin_tools.nccl_tests"]
    assert burnintools.TOOLS["gpu-stress"].path == "/opt/fleet/burnin/gpu-burn/current/gpu_burn"
    # the pillar nvidia.burnin builds from names the same directory and program
    pillar = burnintools.pillar(site)
    for tool in burnintools.TOOLS.values():
        entry = pillar[tool.name]
        assert f"{entry['dir']}/current/{entry['binary']}" == tool.path


def test_every_built_tool_has_its_pin_in_the_schema() -> None:
    assert {t.field for t in burnintools.TOOLS.values()} == set(BurninTools.model_fields)
    assert set(burnintools.TOOLS) <= set(BURNIN_CHECKS)


def test_burnin_run_keeps_a_null_pins_failure_without_asking_salt(tmp_path: Path) -> None:
    """`fleet burnin run` of tbox-039 in burn-in, its profile's gpu-stress and
    nccl-allreduce with the site's null pins: both recorded as failed, naming the
    inventory field, exit 5 (a check failed); no Salt is reached (its config does not
    exist)."""
    from burnin.sitecase import run_without_salt

    code, kept = run_without_salt(tmp_path, "      gpu-stress: {seconds: 60}\n"
                                            "      nccl-allreduce: {seconds: 0}\n")
    assert code == 5
    for check, pin in (("gpu-stress", "gpu_burn"), ("nccl-allreduce", "nccl_tests")):
        assert not kept[check].passed and kept[check].reason is not None
        assert kept[check].reason.startswith(f"not run: site.burnin_tools.{pin} is null")


def test_the_sites_own_gpu_checks_fail_naming_their_null_pins(tmp_path: Path) -> None:
    """The site's tinybox-pro burn-in as inventory.yaml sets it, its pins null: each check
    of a built tool is kept failed, naming its pin, before any node is asked."""
    from burnin.sitecase import run_without_salt

    built = [c for c in load_inventory(SITE).raw.profiles["tinybox-pro"].burnin
             if c in burnintools.TOOLS]
    assert sorted(built) == sorted(burnintools.TOOLS)  # the site runs every one
    code, kept = run_without_salt(tmp_path, None, "--checks", ",".join(built))
    assert code == 5 and sorted(kept) == sorted(built)
    for check in built:
        assert not kept[check].passed, kept[check]
        assert (kept[check].reason or "").startswith(
            f"not run: {burnintools.TOOLS[check].pin} is null"), kept[check]
