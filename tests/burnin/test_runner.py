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


def _standin(tmp_path: Path, name: str, text: str) -> str:
    """A STAND-IN tool (no GPU here) printing ``text``; the PATH that finds it."""
    fake = tmp_path / name
    fake.write_text(f"#!/bin/sh\ncat <<'EOF'\n{text}\nEOF\n")
    fake.chmod(0o755)
    return f"{tmp_path}:/usr/bin:/bin"


def _h100s(n: int, width: dict[int, int] | None = None, mib: int = 81559,
           ecc: str = "Enabled") -> str:
    """nvidia-smi's CSV of runner.GPU_QUERY for ``n`` H100s (``width``: GPU -> its x)."""
    return "\n".join(f"{i}, 00000000:{0x18 + i:02X}:00.0, {(width or {}).get(i, 16)}, 16, "
                     f"{1 if i else 5}, 5, {mib}, {ecc}" for i in range(n))


def test_a_missing_gpu_fails_gpu_present(tmp_path: Path) -> None:
    """nvidia-smi is a stand-in (no GPU here): 7 H100s where the profile has 8. GPU 1..6
    at PCIe gen 1 (idle: a GPU lowers its generation to save power) pass."""
    path = _standin(tmp_path, "nvidia-smi", _h100s(7))
    rc, r = run("gpu-present", "--expect-gpus", "8", path=path)
    assert rc == 1 and not r.passed and r.reason == "7 GPUs of 8"
    assert r.figures == {"gpus": 7.0, "pcie_width_min": 16.0, "pcie_gen_min": 1.0,
                         "memory_gb_min": 81559 / 1024}
    rc, r = run("gpu-present", "--expect-gpus", "7", "--expect-memory-gb", "80", path=path)
    assert rc == 0 and r.passed, r.reason


def test_a_gpu_at_x8_short_memory_or_ecc_off_fails_gpu_present(tmp_path: Path) -> None:
    """Stand-in nvidia-smi: GPU 3 trained its link at x8 of x16 (a riser, a dirty slot)."""
    path = _standin(tmp_path, "nvidia-smi", _h100s(8, {3: 8}))
    rc, r = run("gpu-present", "--expect-gpus", "8", path=path)
    assert rc == 1 and r.reason == "GPU 3 (00000000:1B:00.0) PCIe x8 of x16"
    assert r.figures["pcie_width_min"] == 8.0
    path = _standin(tmp_path, "nvidia-smi", _h100s(8, mib=40960, ecc="Disabled"))
    rc, r = run("gpu-present", "--expect-gpus", "8", "--expect-memory-gb", "80", path=path)
    assert rc == 1 and r.reason is not None
    assert r.reason.startswith("GPU 0 (00000000:18:00.0) memory 40.0 GiB of 80 GB; "
                               "GPU 0 (00000000:18:00.0) ECC Disabled"), r.reason


@pytest.mark.parametrize(("check", "tool"), [("gpu-present", "nvidia-smi"),
                                             ("gpu-stress", "gpu_burn"),
                                             ("nccl-allreduce", "all_reduce_perf")])
def test_a_gpu_check_without_its_tool_is_not_run_never_passed(check: str, tool: str,
                                                              tmp_path: Path) -> None:
    rc, r = run(check, "--expect-gpus", "8", path=str(tmp_path))
    assert rc == 1 and not r.passed and r.reason == f"not run: {tool} not installed"


# STAND-IN outputs in the form of gpu_burn's (its progress redrawn with a carriage return)
# and all_reduce_perf's (no GPU here)
GPU_BURN = """GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)
GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2)
50.0%  proc'd: 2260 (51000 Gflop/s) - 2205 (10 Gflop/s)   errors: 0 - 6   temps: 60 C - 62 C\r\
100.0%  proc'd: 4520 (51234 Gflop/s) - 4410 (49876 Gflop/s)   errors: 0 - 12   temps: 61 C - 63 C
Tested 2 GPUs:
\tGPU 0: OK
\tGPU 1: FAULTY"""
ALL_REDUCE = """#       size         count      type   redop    root     time   algbw   busbw #wrong
  1073741824     268435456     float     sum      -1   4521.3  237.48  415.59      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 389.214"""


def test_gpu_stress_names_a_faulty_gpu_and_keeps_the_slowest_rate(tmp_path: Path) -> None:
    rc, r = run("gpu-stress", "--seconds", "1", "--expect-gpus", "2",
                path=_standin(tmp_path, "gpu_burn", GPU_BURN))
    assert rc == 1 and r.reason == "GPU 1 FAULTY"
    assert r.figures == {"gpus": 2.0, "gpu_tflops": 49.876}


def test_nccl_allreduce_keeps_the_bus_bandwidth(tmp_path: Path) -> None:
    rc, r = run("nccl-allreduce", "--expect-gpus", "8",
                path=_standin(tmp_path, "all_reduce_perf", ALL_REDUCE))
    assert rc == 0 and r.passed and r.figures == {"busbw_gb_s": 389.214}


@pytest.mark.parametrize(("check", "tool", "pin"),
                         [("gpu-stress", "gpu_burn", "site.burnin_tools.gpu_burn"),
                          ("nccl-allreduce", "all_reduce_perf",
                           "site.burnin_tools.nccl_tests")])
def test_a_built_tool_not_built_names_its_pin(check: str, tool: str, pin: str,
                                              tmp_path: Path) -> None:
    """--tool the path nvidia.burnin builds to, nothing there (the pin set, the highstate
    not applied yet): not run, naming the path and the inventory field; a program of the
    same name on PATH is not taken instead."""
    path = _standin(tmp_path, tool, ALL_REDUCE if tool == "all_reduce_perf" else GPU_BURN)
    built = tmp_path / "opt" / "current" / tool
    rc, r = run(check, "--expect-gpus", "2", "--tool", str(built), "--pinned-by", pin,
                path=path)
    assert rc == 1 and not r.passed and r.figures == {}
    shown = str(built) if len(str(built)) <= 64 else "..." + str(built)[-61:]
    assert r.reason == f"not run: {tool} not installed (no {shown}: nvidia.burnin builds it " \
                       f"from {pin})"


def test_the_built_gpu_burn_runs_in_its_own_directory(tmp_path: Path) -> None:
    """gpu_burn loads compare.ptx from its working directory: the runner starts the
    build (a STAND-IN that fails without compare.ptx beside it) where it lies."""
    tree = tmp_path / "gpu-burn" / "current"
    tree.mkdir(parents=True)
    (tree / "compare.ptx").write_text("// stand-in\n")
    fake = tree / "gpu_burn"
    fake.write_text("#!/bin/sh\ntest -f compare.ptx || { echo 'no compare.ptx' >&2; exit 3; }\n"
                    f"cat <<'EOF'\n{GPU_BURN.replace('FAULTY', 'OK')}\nEOF\n")
    fake.chmod(0o755)
    rc, r = run("gpu-stress", "--seconds", "1", "--expect-gpus", "2", "--tool", str(fake),
                "--pinned-by", "site.burnin_tools.gpu_burn", path="/usr/bin:/bin",
                cwd=tmp_path)
    assert rc == 0 and r.passed, r.reason
    assert r.figures == {"gpus": 2.0, "gpu_tflops": 49.876}
