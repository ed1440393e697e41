"""The collector's service loop (fleet.status.service) under a fake clock: each source
asked on its own interval, a source still being asked not asked twice, every answer saved
to the cache as it comes, and a source that stops answering read back as stale."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

from fleet.status import collector
from fleet.status.collector import Collector, Source
from fleet.status.service import Service
from fleet.status.sources import SourceError


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Later(Executor):
    """Runs what is submitted when told (``drain``), in this thread: a refresh in flight
    is one submitted and not yet drained."""

    def __init__(self) -> None:
        self.queue: list[Callable[[], Any]] = []

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.queue.append(lambda: fn(*args, **kwargs))
        return Future()

    def drain(self) -> None:
        while self.queue:
            self.queue.pop(0)()


class Counted:
    """A source (a FAKE for salt-key or slurm) counting its calls; raises when told."""

    def __init__(self, name: str) -> None:
        self.name, self.calls, self.answers = name, 0, True

    def __call__(self) -> dict[str, Any]:
        self.calls += 1
        if not self.answers:
            raise SourceError(f"{self.name}: no answer")
        return {"gpu-01": f"{self.name}-{self.calls}"}


def _service(tmp_path: Path) -> tuple[Service, Clock, Later, Counted, Counted]:
    clock, pool = Clock(), Later()
    key, minion = Counted("key"), Counted("minion")
    c = Collector([Source("key", 30.0, key), Source("minion", 15.0, minion)], clock)
    return Service(c, tmp_path / "collected.json", pool=pool), clock, pool, key, minion


def test_each_source_on_its_interval_each_answer_saved(tmp_path: Path) -> None:
    svc, clock, pool, key, minion = _service(tmp_path)
    svc.step()
    svc.step()
    assert len(pool.queue) == 2 and svc.running == {"key", "minion"}  # none asked twice
    pool.drain()
    assert (key.calls, minion.calls) == (1, 1)
    assert svc.next_in() == 15.0
    saved = collector.load(svc.path)
    assert saved["key"].values == {"gpu-01": "key-1"} and saved["key"].at == clock.now
    for _ in range(4):  # one minute, in steps of 15 s
        clock.now += 15
        svc.step()
        pool.drain()
    assert (key.calls, minion.calls) == (3, 5)
    assert collector.load(svc.path)["minion"].values == {"gpu-01": "minion-5"}


def test_a_source_that_stops_answering_is_read_back_stale(tmp_path: Path) -> None:
    svc, clock, pool, key, _minion = _service(tmp_path)
    said: list[str] = []
    svc.warn = said.append
    svc.step()
    pool.drain()
    key.answers = False
    for _ in range(7):
        clock.now += 15
        svc.step()
        pool.drain()
    reader = Collector([Source("key", 30.0, key), Source("minion", 15.0, _minion)], clock,
                       collector.load(svc.path))
    r = reader.reading("key")
    assert r.stale and r.column.values == {} and r.age == 105.0
    assert r.column.error == "stale: last answer 1m ago; last try: key: no answer"
    assert not reader.reading("minion").stale
    assert said == ["key: no answer: key: no answer"]  # once, not at every try
    key.answers = True
    clock.now += 30
    svc.step()
    pool.drain()
    assert said[1:] == ["key: answers again"]


def test_a_cache_that_cannot_be_written_is_said_and_the_loop_goes_on(
        tmp_path: Path) -> None:
    svc, clock, pool, key, _minion = _service(tmp_path)
    said: list[str] = []
    svc.warn = said.append
    svc.path = tmp_path / "no-such-dir" / "collected.json"
    svc.step()
    pool.drain()
    assert any("not written" in m for m in said) and svc.running == set()
    clock.now += 30
    svc.step()
    pool.drain()
    assert key.calls == 2


def test_the_docs_say_the_intervals_and_the_bmc_round_the_code_has() -> None:
    """docs/operations.md (The collector) lists code facts: checked here, not copied."""
    import yaml

    from fleet.status.collector import STALE_AFTER
    from fleet.status.service import INTERVALS, POWER_SPREAD
    from support.cli import ROOT

    doc = " ".join((ROOT / "docs" / "operations.md").read_text().split())
    by: dict[float, list[str]] = {}
    for name, secs in INTERVALS.items():
        by.setdefault(secs, []).append(name)
    said = "; ".join(f"{', '.join(sorted(names, key=list(INTERVALS).index))} {secs:g} s"
                     for secs, names in sorted(by.items()))
    assert f"({'`INTERVALS`'} in `tools/fleet/status/service.py`, the one definition: " \
           f"{said})" in doc, said
    spread = INTERVALS["power"] * POWER_SPREAD
    assert f"i x {spread:g} s / N ({POWER_SPREAD:.0%} of the interval)".replace(
        "%", " %") in doc
    assert f"for up to {STALE_AFTER} of its intervals; after that its column is unknown" in doc
    defaults = yaml.safe_load((ROOT / "salt" / "provisioning" / "defaults.yaml").read_text())
    assert f"salt/provisioning/defaults.yaml, {defaults['values']['status']['bmc_parallel']})" \
        in doc
