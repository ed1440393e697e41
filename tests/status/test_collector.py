"""The status collector's cache: values shown with their age, a source that stops
answering shown as stale (not as its last value), the cache file read back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fleet.status import collector
from fleet.status.collector import Collector, Source
from fleet.status.sources import SourceError


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Flaky:
    """A source (a fake: it stands for a BMC pool or salt-key) that answers until told."""

    def __init__(self) -> None:
        self.answers = True
        self.calls = 0

    def __call__(self) -> dict[str, Any]:
        self.calls += 1
        if not self.answers:
            raise SourceError("salt-key timed out")
        return {"gpu-01": f"accepted-{self.calls}"}


def test_values_come_with_their_age_and_refresh_on_their_interval() -> None:
    clock, key = Clock(), Flaky()
    c = Collector([Source("key", 30.0, key)], clock)
    c.tick()
    clock.now += 12
    r = c.reading("key")
    assert (r.column.values, r.age, r.stale) == ({"gpu-01": "accepted-1"}, 12.0, False)
    c.tick()  # not due yet
    assert key.calls == 1
    clock.now += 18
    c.tick()
    assert key.calls == 2 and c.reading("key").age == 0.0


def test_a_source_that_stops_answering_shows_stale_not_its_last_value() -> None:
    clock, key = Clock(), Flaky()
    c = Collector([Source("key", 30.0, key)], clock)
    c.tick()
    key.answers = False
    clock.now += 31
    c.tick()  # fails: the last answer is still young enough to show, with its age
    r = c.reading("key")
    assert r.column.values == {"gpu-01": "accepted-1"} and r.age == 31.0 and not r.stale
    for _ in range(3):
        clock.now += 30
        c.tick()
    r = c.reading("key")
    assert r.stale and r.column.values == {}
    assert r.column.error == "stale: last answer 2m ago; last try: salt-key timed out"
    key.answers = True
    clock.now += 30
    c.tick()
    r = c.reading("key")
    assert not r.stale and r.column.values == {"gpu-01": f"accepted-{key.calls}"}


def test_a_source_never_answered_is_unknown() -> None:
    key = Flaky()
    key.answers = False
    c = Collector([Source("key", 30.0, key)], Clock())
    assert c.reading("key").column.error == "collector: no answer yet"
    c.tick()
    r = c.reading("key")
    assert r.stale and r.age is None and r.column.error == "collector: salt-key timed out"


def test_the_cache_file_is_read_back_and_a_bad_one_is_empty(tmp_path: Path) -> None:
    clock = Clock()
    c = Collector([Source("key", 30.0, Flaky())], clock)
    c.tick()
    path = tmp_path / "status.json"
    c.save(path)
    assert path.stat().st_mode & 0o777 == 0o644
    again = Collector([Source("key", 30.0, Flaky())], clock, collector.load(path))
    assert again.reading("key").column.values == {"gpu-01": "accepted-1"}
    assert again.due() == []
    path.write_text('{"key": {"values": "x", "at": 1, "tried": 1, "error": null}}')
    assert collector.load(path) == {}
    path.write_text("nope")
    assert collector.load(path) == {}
