"""tools/beside.sh, which runs the QEMU tiers beside the lab tier in `make test`: the tier
beside is printed whole after both end, a failure of either is the exit status and is
named, and an interrupt reaches the tier beside as SIGINT (so pytest tears down)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

BESIDE = Path(__file__).resolve().parents[2] / "tools" / "beside.sh"


def beside(tmp_path: Path, bg: str, *main: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(BESIDE), str(tmp_path / "log" / "x.log"), bg, *main],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize("bg, main, rc, named", [
    ("echo from-beside", ("true",), 0, None),
    ("echo from-beside; exit 3", ("true",), 3, "the tier beside it failed (exit 3)"),
    ("echo from-beside", ("sh", "-c", "exit 4"), 4, "the main tier failed (exit 4)"),
    ("echo from-beside; exit 3", ("sh", "-c", "exit 4"), 4, "the main tier failed (exit 4)"),
])
def test_the_exit_is_the_failed_tiers_and_the_tier_beside_is_printed(
        tmp_path: Path, bg: str, main: tuple[str, ...], rc: int, named: str | None) -> None:
    proc = beside(tmp_path, bg, *main)
    assert proc.returncode == rc, proc.stderr
    assert "from-beside" in proc.stdout and "=== end of:" in proc.stdout
    # its own time, even when the command exits by itself (the main tier's may be longer)
    # (whole seconds of bash's SECONDS: 0 or 1 for these, as a second boundary falls)
    assert re.search(rf"^beside: its own time: [01] s \(exit {3 if 'exit 3' in bg else 0}\)$",
                     proc.stdout, re.M), proc.stdout
    if named:
        assert named in proc.stderr
    else:
        assert not proc.stderr


def test_an_interrupt_reaches_the_tier_beside_as_sigint(tmp_path: Path) -> None:
    mark = tmp_path / "got-int"
    bg = f"trap 'touch {mark}; exit 9' INT; while :; do sleep 0.1; done"
    proc = subprocess.Popen(["bash", str(BESIDE), str(tmp_path / "x.log"), bg, "sleep", "30"],
                            start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(1.5)
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C: the whole foreground group
    assert proc.wait(timeout=30) == 130
    assert mark.exists(), "the tier beside never got the SIGINT"
