"""``fleet log`` shows each run's time as people read one (UTC and its age), from the
record's ISO time; a record whose time is no time is shown as written, cleaned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet.audit.record import FORMAT
from fleet.cli import main
from fleet.exitcodes import Exit
from support.cli import SMALL


def test_a_runs_time_is_shown_in_utc_with_its_age(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "audit.jsonl"
    base = {"v": FORMAT, "user": "root", "verb": "render", "outcome": "ok", "exit": 0}
    log.write_text(json.dumps(base | {"time": "2025-12-02T01:00:00+00:00"}) + "\n"
                   + json.dumps(base | {"time": "yesterday\x1b[31m"}) + "\n")
    assert main(["log", "--log", str(log), "-i", str(SMALL)]) == Exit.OK
    first, second = capsys.readouterr().out.splitlines()
    assert first.startswith("2025-12-02 01:00:00 UTC (") and " ago)  root" in first
    assert "+00:00" not in first
    assert second.startswith("yesterday [31m  root") and "\x1b" not in second
