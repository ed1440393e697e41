"""The status collector's service on the master (``fleet status --collect``, the unit
``fleet-status-collect.service`` of salt/provisioning/status.sls): each collected source
refreshed on its own interval, side by side (a slow BMC round holds no other source), the
cache saved atomically after each answer. The intervals are defined here, once: the
reader (``fleet status``) judges staleness by them too."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor
from pathlib import Path

from fleet.status.collector import Collector, Source

# seconds between two refreshes of each collected source (fleet.status.codec.COLLECTED)
INTERVALS = {"power": 60.0, "bmc_hardware": 900.0, "boot": 60.0, "key": 30.0,
             "minion": 15.0, "slurm": 30.0, "alerts": 30.0}
# the BMC round (at most --parallel at once): its starts spread over this share of the
# power interval (144 BMCs: one every 0.33 s)
POWER_SPREAD = 0.8
# the hardware facts change only when a part does: each BMC read (some 20 to 80 requests)
# once every bmc_hardware interval, the reads spread over this share of it
HARDWARE_SPREAD = 0.5
CACHE_NAME = "collected.json"


class Service:
    """``step`` starts every due source not already being asked, in ``pool``; each answer
    is saved to ``path`` as it comes."""

    def __init__(self, collector: Collector, path: Path, *, pool: Executor | None = None,
                 progress: Callable[[str], None] = lambda _m: None,
                 warn: Callable[[str], None] = lambda _m: None) -> None:
        self.collector = collector
        self.path = path
        self.pool = pool or ThreadPoolExecutor(max_workers=max(1, len(collector.sources)),
                                               thread_name_prefix="fleet-collect")
        self.progress = progress
        self.warn = warn  # a source failing, or answering again (the journal's lines)
        self.running: set[str] = set()
        self.guard = threading.Lock()

    def step(self) -> float:
        """Starts the due sources; the seconds until the next one not running is due."""
        with self.guard:
            due = [s for s in self.collector.due() if s.name not in self.running]
            self.running.update(s.name for s in due)
        for s in due:
            self.pool.submit(self._refresh, s)
        return self.next_in()

    def next_in(self) -> float:
        now = self.collector.clock()
        with self.guard:
            waits = [0.0 if (t := self.collector.entries.get(s.name)) is None
                     or t.tried is None else t.tried + s.interval - now
                     for s in self.collector.sources.values() if s.name not in self.running]
        return max(0.0, min(waits, default=min(INTERVALS.values())))

    def _refresh(self, source: Source) -> None:
        try:
            before = self.collector.entries.get(source.name)
            self.collector.refresh(source)
            e = self.collector.entries[source.name]
            self.progress(f"{source.name}: " + (f"failed: {e.error}" if e.error else
                                                f"{len(e.values or {})} value(s)"))
            if e.error and (before is None or not before.error):
                self.warn(f"{source.name}: no answer: {e.error}")
            elif not e.error and before is not None and before.error:
                self.warn(f"{source.name}: answers again")
            self.collector.save(self.path)
        except OSError as exc:  # the cache not written: said, tried again next answer
            self.warn(f"{self.path}: not written: {exc}")
        finally:
            with self.guard:
                self.running.discard(source.name)

    def run(self, stop: threading.Event, most: float = 5.0,
            until: Callable[[], bool] = lambda: False) -> None:
        """Until ``stop`` is set or ``until()`` holds: steps, waiting for the next due
        source (at most ``most`` seconds, so that a source that answers is soon asked
        again)."""
        while not stop.is_set() and not until():
            stop.wait(max(0.2, min(self.step(), most)))


def once(collector: Collector, path: Path) -> None:
    """Every source once, side by side, then the cache saved (``--collect --once``)."""
    with ThreadPoolExecutor(max_workers=max(1, len(collector.sources))) as pool:
        list(pool.map(collector.refresh, collector.sources.values()))
    collector.save(path)
