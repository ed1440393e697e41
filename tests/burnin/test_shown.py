"""``fleet node show``'s burn-in lines: when a check ran is shown as people read a time
(fleet.master.text.stamp: UTC and its age), never as a raw or zone-less stamp."""

from __future__ import annotations

from fleet.burnin.shown import lines


def test_when_a_check_ran_is_shown_in_utc_with_its_age() -> None:
    rec = {"verdict": "pending", "done": 1, "total": 2, "failures": [], "notes": [],
           "checks": [{"check": "smart", "result": "passed", "reason": None, "figures": {},
                       "started": 1764637200.0, "seconds": 12.0},
                      {"check": "cpu-stress", "result": None}]}
    head, smart, stress = lines(rec)
    assert head == "  burn-in    pending, 1/2 checks ran"
    assert smart.startswith("    smart          passed, 2025-12-02 01:00:00 UTC (")
    assert smart.endswith(" ago), 12s") and "1764637200" not in smart
    assert stress == "    cpu-stress     not run yet"
