"""`fleet burnin run --drain` of a node in service: drained first, then resumed only when
its verdict passes, the one judge of `fleet burnin status` and `finish` (an outlier against
the profile's baseline fails it as a failed check does); otherwise left drained with the
failure as its reason, said, exit 5. Slurm is a FAKE (support.fakeslurm) and the node's
answers to the master are STAND-INS of the runner's JSON (no minion here; the real runner
on a real minion: tests/swarm/test_burnin.py, the real drain on the lab:
tests/lab/test_burnin.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from burnin.test_cli import result
from discover.sites import with_burnin
from fleet.cli import main
from fleet.master import runner as master_runner
from fleet.master.salt import Salt
from support.fakeslurm import FakeSlurm

NODE = "tbox-001"  # active in the site's inventory
PEERS = ["tbox-002", "tbox-003", "tbox-004"]  # the profile's baseline, recorded
BURNIN = ("      cpu-stress: {seconds: 600, tolerance_percent: 10}\n"
          "      smart: {seconds: 0}\n")


def _rerun(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str], answers: dict[str, dict[str, Any]],
           baseline: float | None = None) -> tuple[int, dict[str, Any], FakeSlurm]:
    """`fleet burnin run NODE --drain --json`, the node answering each check with its
    STAND-IN answer; ``baseline``: PEERS' cpu-stress figure recorded first."""
    inv = tmp_path / "inventory.yaml"
    inv.write_text(with_burnin(BURNIN))
    res = tmp_path / "results"
    for h in PEERS if baseline is not None else []:
        assert main(["burnin", "record", h, "--result",
                     result(tmp_path, "cpu-stress", bogo_ops_s=baseline or 0.0),
                     "--results", str(res), "-i", str(inv)]) == 0
    slurm = FakeSlurm([])
    monkeypatch.setattr(master_runner, "runner_for", lambda *a: slurm)

    def standin(_self: Salt, node: str, argv: Sequence[str], *, timeout: float,
                runas: str | None = None) -> object:
        assert node == NODE
        check = argv[3]  # python3 -c RUNNER CHECK ...
        doc = {"check": check, "started": 1.0, "seconds": 1.0, **answers[check]}
        return {"retcode": 0, "stdout": json.dumps(doc) + "\n", "stderr": ""}

    monkeypatch.setattr(Salt, "run_argv", standin)
    capsys.readouterr()
    code = main(["burnin", "run", NODE, "--drain", "--json", "--drain-timeout", "5",
                 "--results", str(res), "-i", str(inv), "--salt-config", "/nonexistent"])
    (row,) = json.loads(capsys.readouterr().out)["nodes"]
    return code, row, slurm


def _updates(slurm: FakeSlurm) -> list[tuple[str, ...]]:
    return [c[3:] for c in slurm.calls if c[:2] == ("scontrol", "update")]


PASS = {"cpu-stress": {"passed": True, "figures": {"bogo_ops_s": 1000.0}},
        "smart": {"passed": True}}


def test_a_rerun_that_passes_resumes_the_node(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, row, slurm = _rerun(tmp_path, monkeypatch, capsys, PASS, baseline=1000.0)
    assert code == 0 and row["left_drained"] is None, row
    assert _updates(slurm) == [("State=DRAIN", "Reason=fleet burnin run"), ("State=RESUME",)]


def test_a_failed_check_leaves_the_node_drained_with_it_as_the_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    answers = {**PASS, "smart": {"passed": False, "reason": "nvme0n1: media errors 12"}}
    code, row, slurm = _rerun(tmp_path, monkeypatch, capsys, answers)
    assert code == 5, row
    assert row["left_drained"] == "smart: failed (nvme0n1: media errors 12)", row
    assert _updates(slurm)[-1] == (
        "State=DRAIN", "Reason=fleet burnin run: smart: failed (nvme0n1: media errors 12)")
    assert ("State=RESUME",) not in _updates(slurm)


def test_a_baseline_outlier_leaves_the_node_drained_though_every_tool_passed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    answers = {**PASS, "cpu-stress": {"passed": True, "figures": {"bogo_ops_s": 500.0}}}
    code, row, slurm = _rerun(tmp_path, monkeypatch, capsys, answers, baseline=1000.0)
    assert all(r["passed"] for r in row["ran"]), row  # each tool's own verdict: passed
    assert code == 5, row
    assert row["left_drained"].startswith(
        "cpu-stress: bogo_ops_s 500 against the baseline 1000 (-50.0%"), row
    assert ("State=RESUME",) not in _updates(slurm)
    assert _updates(slurm)[-1][1].startswith("Reason=fleet burnin run: cpu-stress: bogo_ops_s")


def test_the_text_output_says_it_was_left_drained(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    inv = tmp_path / "inventory.yaml"
    inv.write_text(with_burnin(BURNIN))
    monkeypatch.setattr(master_runner, "runner_for", lambda *a: FakeSlurm([]))

    def standin(_self: Salt, node: str, argv: Sequence[str], *, timeout: float,
                runas: str | None = None) -> object:
        ok = argv[3] != "smart"
        doc = {"check": argv[3], "passed": ok, "started": 1.0, "seconds": 1.0,
               **({} if ok else {"reason": "sda: FAILED"})}
        return {"retcode": 0, "stdout": json.dumps(doc), "stderr": ""}

    monkeypatch.setattr(Salt, "run_argv", standin)
    capsys.readouterr()
    assert main(["burnin", "run", NODE, "--drain", "--results", str(tmp_path / "r"),
                 "-i", str(inv), "--salt-config", "/nonexistent"]) == 5
    assert f"{NODE:12} {'':12} left drained: smart: failed (sda: FAILED)" in \
        capsys.readouterr().out


def test_a_node_whose_profile_has_no_check_is_refused_before_any_drain(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    inv = tmp_path / "inventory.yaml"
    inv.write_text(with_burnin(""))
    slurm = FakeSlurm([])
    monkeypatch.setattr(master_runner, "runner_for", lambda *a: slurm)
    capsys.readouterr()
    assert main(["burnin", "run", NODE, "--drain", "--results", str(tmp_path / "r"),
                 "-i", str(inv), "--salt-config", "/nonexistent"]) == 2
    assert (f"fleet burnin run: {NODE}: profile tinybox-pro configures no burn-in checks"
            in capsys.readouterr().err)
    assert slurm.calls == []
