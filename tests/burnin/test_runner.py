"""tools/fleet/burnin/runner.py, the checks as a node runs them: the real stress-ng,
memtester and fio at short durations, each result accepted by the master's schema; the
GPU check against a stand-in nvidia-smi (no GPU here, named as a fake) that reports one
GPU missing; disk-verify refusing anything but a scratch file or an erased disk."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from discover.sites import ROOT
from fleet.burnin.results import Result, parse

RUNNER = ROOT / "tools" / "fleet" / "burnin" / "runner.py"
INSTALL = "run tools/install-host-deps.sh (make deps): it installs stress-ng, memtester and fio"


def run(*argv: str, path: str | None = None, cwd: Path | None = None) -> tuple[int, Result]:
    env = {**os.environ, **({"PATH": path} if path else {})}
    r = subprocess.run([sys.executable, str(RUNNER), *argv], capture_output=True, text=True,
                       timeout=300, check=False, env=env, cwd=cwd)
    return r.returncode, parse(r.stdout.encode())


@pytest.mark.parametrize("tool", ["stress-ng", "memtester", "fio"])
def test_the_real_tools_are_here(tool: str) -> None:
    """Fails (never skips) without them: the checks below would prove nothing."""
    assert shutil.which(tool) or shutil.which(tool, path="/usr/sbin:/sbin"), INSTALL


def test_cpu_stress_for_real() -> None:
    rc, r = run("cpu-stress", "--seconds", "2")
    assert rc == 0 and r.passed and r.figures["bogo_ops_s"] > 0 and r.seconds >= 2


def test_memtester_for_real() -> None:
    rc, r = run("memtester", "--mb", "4")
    assert rc == 0 and r.passed and r.figures["mem_mib_s"] > 0


def test_disk_verify_for_real_on_a_scratch_file(tmp_path: Path) -> None:
    target = tmp_path / "scratch.fio"
    rc, r = run("disk-verify", "--seconds", "2", "--mb", "8", "--target", str(target),
                cwd=tmp_path)
    assert rc == 0 and r.passed, r.reason
    assert [p.name for p in tmp_path.iterdir()] == ["scratch.fio"]  # no fio state left
    assert r.figures["write_mib_s"] > 0 and r.figures["read_mib_s"] > 0


@pytest.mark.parametrize("target", ["/dev/null", "/proc/self"])
def test_disk_verify_never_writes_what_is_no_scratch_file_or_erased_disk(
        target: str) -> None:
    rc, r = run("disk-verify", "--target", target)
    assert rc == 1 and not r.passed and r.reason == (
        f"{target} is neither a file nor a block device")


def test_a_missing_gpu_fails_gpu_present(tmp_path: Path) -> None:
    """nvidia-smi is a stand-in (no GPU here): 7 H100s where the profile has 8."""
    fake = tmp_path / "nvidia-smi"
    rows = "\n".join(f"{i}, 00000000:{0x18 + i:02X}:00.0, 16, 5, 81559, Enabled"
                     for i in range(7))
    fake.write_text(f"#!/bin/sh\ncat <<'EOF'\n{rows}\nEOF\n")
    fake.chmod(0o755)
    rc, r = run("gpu-present", "--expect-gpus", "8", path=f"{tmp_path}:/usr/bin:/bin")
    assert rc == 1 and not r.passed and r.reason == "7 GPUs of 8"
    assert r.figures == {"gpus": 7.0, "pcie_width_min": 16.0, "memory_gb_min": 81559 / 1024}
    rc, r = run("gpu-present", "--expect-gpus", "7", path=f"{tmp_path}:/usr/bin:/bin")
    assert rc == 0 and r.passed
