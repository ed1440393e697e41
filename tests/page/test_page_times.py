"""When the page's status was collected, shown as people read a time: a producer's Unix
time becomes UTC and its age (fleet.master.text.stamp), a written time stays as written."""

from __future__ import annotations

from fleet.page.view import generated, generated_ts


def test_a_unix_collection_time_is_shown_in_utc_with_its_age() -> None:
    shown = generated({"nodes": [], "generated": 1764637200.0})
    assert shown is not None and shown.startswith("2025-12-02 01:00:00 UTC (")
    assert shown.endswith(" ago)") and "1764637200" not in shown
    assert generated({"time": 1764637200}) == shown


def test_a_written_time_stays_and_a_flag_is_no_time() -> None:
    assert generated({"generated": "2026-12-02T00:00:00Z"}) == "2026-12-02T00:00:00Z"
    assert generated({"generated": True}) is None and generated([]) is None


def test_the_page_gets_the_collection_time_as_a_number_to_age_when_drawn() -> None:
    """view.json's collected_ts: the page's script shows it in UTC with its age counted
    when it draws (every minute), not the age at the time the page was written."""
    assert generated_ts({"generated": 1764637200.0}) == 1764637200.0
    assert generated_ts({"generated": "2025-12-02T01:00:00Z"}) == 1764637200.0
    assert generated_ts({"time": "2025-12-02T02:00:00+01:00"}) == 1764637200.0
    for no in ({"generated": "yesterday"}, {"generated": "2025-12-02T01:00:00"},
               {"generated": float("inf")}, {"generated": True}, []):
        assert generated_ts(no) is None, no
