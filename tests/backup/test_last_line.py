"""fleet status's backup line: when the last good backup was, in UTC with its age
(fleet.master.text.stamp), and STALE past a day."""

from __future__ import annotations

from datetime import UTC, datetime

from fleet.backup.run import last_line


def test_the_last_good_backup_is_shown_in_utc_with_its_age() -> None:
    entry = {"time": "2026-12-05T01:00:00+00:00", "snapshot": "abcdef1234567890"}
    line = last_line(entry, now=datetime(2026, 12, 5, 4, 0, tzinfo=UTC))
    assert line == ("master backup: last good 2026-12-05 01:00:00 UTC (3h ago), snapshot "
                    "abcdef12, verified")
    stale = last_line(entry, now=datetime(2026, 12, 7, 4, 0, tzinfo=UTC))
    assert stale.endswith("(2d ago), snapshot abcdef12, verified  STALE: older than a day")
