"""The status collector's cache: each source refreshed on its own interval, its last answer
kept with the time it came, and shown with its age; a source that stops answering shows
as stale (unknown, with the age of its last answer), never as its last value.

The sources are those of :mod:`fleet.status.sources` (each asked once for all nodes,
bounded; their values as :mod:`fleet.status.codec` keeps them); the service that ticks
this on the master is :mod:`fleet.status.service`, and ``fleet status`` reads the cache
by default. An answer's time is when it was asked (its age is never understated). The
cache file is JSON, written atomically, mode 0644: it holds states, no secret.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fleet.status.sources import SourceError
from fleet.status.view import Column, _ago

# A source whose last answer is older than this many of its intervals is stale.
STALE_AFTER = 3


@dataclass(frozen=True)
class Source:
    name: str
    interval: float  # seconds between two refreshes
    ask: Callable[[], dict[str, Any]]  # values by node; raises SourceError


@dataclass
class Entry:
    """What one source last said: ``values`` at ``at`` (None: never answered); the last
    attempt at ``tried`` and its failure (None: it answered)."""

    values: dict[str, Any] | None = None
    at: float | None = None
    tried: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class Reading:
    """A source as ``fleet status`` shows it: the column, and the age of its answer."""

    column: Column
    age: float | None  # seconds since the answer shown (None: none)
    stale: bool


class Collector:
    def __init__(self, sources: Sequence[Source], clock: Callable[[], float] = time.time,
                 entries: dict[str, Entry] | None = None) -> None:
        self.sources = {s.name: s for s in sources}
        self.clock = clock
        self.entries = entries if entries is not None else {}
        self.lock = threading.Lock()  # the entries, between a refresh and a save

    def due(self) -> list[Source]:
        now = self.clock()
        return [s for s in self.sources.values()
                if (t := self.entries.get(s.name, Entry()).tried) is None
                or now - t >= s.interval]

    def refresh(self, source: Source) -> None:
        old = self.entries.get(source.name, Entry())
        start = self.clock()
        try:
            values = source.ask()
        except SourceError as exc:  # the last answer stays, with its own time
            with self.lock:
                self.entries[source.name] = Entry(old.values, old.at, start,
                                                  str(exc) or "failed")
            return
        with self.lock:
            self.entries[source.name] = Entry(values, start, start, None)

    def tick(self) -> None:
        for source in self.due():
            self.refresh(source)

    def reading(self, name: str) -> Reading:
        now = self.clock()
        e = self.entries.get(name, Entry())
        if e.at is None or e.values is None:
            why = e.error or "no answer yet"
            return Reading(Column(error=f"collector: {why}"), None, True)
        age = max(0.0, now - e.at)
        if age > STALE_AFTER * self.sources[name].interval:
            why = f"; last try: {e.error}" if e.error else ""
            return Reading(Column(error=f"stale: last answer {_ago(e.at, now)}{why}"), age, True)
        return Reading(Column(values=dict(e.values)), age, False)

    def save(self, path: Path) -> None:
        tmp = path.with_name(f".{path.name}.tmp")
        with self.lock:
            data = json.dumps({name: asdict(e) for name, e in self.entries.items()})
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(data)
            tmp.replace(path)
        except BaseException:
            with suppress(OSError):
                tmp.unlink()
            raise


def load(path: Path) -> dict[str, Entry]:
    """The entries a collector saved; none (every source unanswered) where the file is
    missing or not one it wrote."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return {str(name): _entry(e) for name, e in doc.items()}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def _entry(e: dict[str, Any]) -> Entry:
    values, at, tried, error = e["values"], e["at"], e["tried"], e["error"]
    if not (values is None or isinstance(values, dict)) or not all(
            x is None or isinstance(x, int | float) for x in (at, tried)) or not (
            error is None or isinstance(error, str)):
        raise TypeError("not a collector entry")
    return Entry(values, at, tried, error)
