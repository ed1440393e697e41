"""A closed pipe ends a verb quietly, as every Unix tool: ``fleet node list --json | head``
exits 128 + SIGPIPE with nothing on stderr (no BrokenPipeError traceback)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from fleet.exitcodes import Exit

ROOT = Path(__file__).resolve().parents[2]


def test_a_reader_that_goes_away_ends_the_run_quietly() -> None:
    # the reader closes its end before fleet writes (it loads the inventory first)
    proc = subprocess.Popen([sys.executable, "-m", "fleet", "node", "list", "--json"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == Exit.PIPE == 141
    assert err == ""
