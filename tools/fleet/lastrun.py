"""The last result of ``fleet apply`` and of ``fleet health`` for each node, kept on the
master for ``fleet status``: ``<state>/<node>/last.json``, one small JSON document per
node (``verb``, ``ts``, ``status``, ``ok``, ``summary``), written atomically (a temporary
file beside it, fsynced, renamed over the old one): a crash mid-write leaves the
previous result, never half of one.

Read back, a record is checked, not trusted: a file that is not such a document is an
error for that node (named, with the file), never a result."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleet.master.text import clean

FILE = "last.json"
MAX_BYTES = 64 * 1024
SUMMARY_MAX = 400


@dataclass(frozen=True)
class Last:
    verb: str      # apply | health
    ts: float      # when the run ended (seconds since the epoch)
    status: str    # apply: ok|changed|failed|no-return|lost|no-key; health: healthy|unhealthy
    ok: bool
    summary: str   # what failed, or ""

    def as_json(self) -> dict[str, Any]:
        return {"verb": self.verb, "ts": round(self.ts, 3), "status": self.status,
                "ok": self.ok, "summary": self.summary}


def path(state_dir: Path, node: str) -> Path:
    return state_dir / node / FILE


def _clean(text: str) -> str:
    return clean(text, SUMMARY_MAX)


def record(state_dir: Path, verb: str, results: Iterable[tuple[str, str, bool, str]],
           ts: float | None = None) -> list[Path]:
    """``(node, status, ok, summary)`` of each node of one run, each written atomically;
    returns the files written. Raises OSError (the first that fails) when the state
    directory cannot be written."""
    when = time.time() if ts is None else ts
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    written = []
    for node, status, ok, summary in results:
        doc = Last(verb, when, status, ok, _clean(summary)).as_json()
        dest = path(state_dir, node)
        dest.parent.mkdir(mode=0o700, exist_ok=True)
        tmp = dest.with_name(f".{FILE}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, (json.dumps(doc, sort_keys=True) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        tmp.replace(dest)
        written.append(dest)
    return written


def keep(state_dir: Path, verb: str, results: Iterable[tuple[str, str, bool, str]]) -> None:
    """:func:`record` for a verb's run (apply, health): a state dir that cannot be written
    is said on stderr, and changes nothing else of the run."""
    try:
        record(state_dir, verb, results)
    except OSError as exc:
        print(f"fleet {verb}: the results were not kept for `fleet status`: {exc} "
              "(--state-dir)", file=sys.stderr)


class LastError(Exception):
    """A record that is there but is no record (garbled, too long, another shape)."""


def read(state_dir: Path, node: str, verb: str) -> Last | None:
    """The node's last ``verb`` result; None when it has none."""
    p = path(state_dir, node)
    try:
        with p.open("rb") as f:
            body = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    if len(body) > MAX_BYTES:
        raise LastError(f"{p}: longer than {MAX_BYTES} bytes: not a `fleet {verb}` record")
    try:
        doc = json.loads(body)
        if not isinstance(doc, dict) or doc.get("verb") != verb:
            raise ValueError(f"not a `fleet {verb}` record")
        ts, status, ok, summary = doc["ts"], doc["status"], doc["ok"], doc["summary"]
        if not (isinstance(ts, (int, float)) and isinstance(status, str)
                and isinstance(ok, bool) and isinstance(summary, str)):
            raise ValueError("ts, status, ok or summary of the wrong type")
    except (ValueError, KeyError, UnicodeDecodeError) as exc:
        raise LastError(f"{p}: {exc} (rerun `fleet {verb}` on {node} to rewrite it)"
                        ) from None
    return Last(verb, float(ts), _clean(status)[:20], ok, _clean(summary))
