"""The audit log file on the master: JSON lines, opened O_APPEND for each record (one
write per record, so concurrent runs never interleave), mode 0640, never rewritten.

Its directory is made by the master's state (salt/master/); where it does not exist this
host is no master and nothing is recorded (said with --verbose)."""

from __future__ import annotations

import fnmatch
import json
import os
import stat
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from fleet.audit import journal
from fleet.audit.record import FORMAT
from fleet.master.statedir import StateDir

WHERE = StateDir("FLEET_AUDIT_LOG", "/var/log/fleet/audit.jsonl", "the audit log")
MODE = 0o640


def append(path: Path, record: dict[str, Any]) -> None:
    line = (json.dumps(record, sort_keys=True, ensure_ascii=True) + "\n").encode("ascii")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) & 0o027:  # made by hand, wider than 0640
            os.fchmod(fd, MODE)
        os.write(fd, line)
    finally:
        os.close(fd)


def keep(record: dict[str, Any], *, quiet: bool, verbose: bool) -> None:
    """Append ``record`` to the log and send it to the journal; what could not be done
    is said on stderr (not with -q), and the run's exit code stays its own."""
    path = WHERE.path()
    if not path.parent.is_dir():
        if verbose:
            print(f"fleet: audit: not recorded: {path.parent} does not exist (no master "
                  f"here; ${WHERE.env} names another log)", file=sys.stderr)
        return
    notes = []
    try:
        append(path, record)
    except OSError as exc:
        notes.append(f"NOT RECORDED in {path}: {exc.strerror or exc}")
    why = journal.send(record)
    if why is not None:
        notes.append(f"{why}: recorded in {path} only")
    if notes and not quiet:
        print("fleet: audit: " + "; ".join(notes), file=sys.stderr)


class LogError(ValueError):
    """A line of the log that is no record of this fleet (its line number in the text)."""


class Query(NamedTuple):
    since: datetime | None = None
    node: str | None = None


def read(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise LogError(f"{path}:{number}: not a JSON record ({exc.msg})") from None
            if not isinstance(record, dict) or not isinstance(record.get("v"), int):
                raise LogError(f"{path}:{number}: not an audit record")
            if record["v"] > FORMAT:
                raise LogError(f"{path}:{number}: record format {record['v']} is newer "
                               f"than this fleet's ({FORMAT}): read it with a newer fleet")
            yield record


def names_node(record: dict[str, Any], node: str) -> bool:
    """Whether the run touched ``node``: named in its nodes, or matched by its target
    (a name, a range or a glob; ``*``, the default target, names every node)."""
    from fleet.inventory.expand import expand_hosts

    if node in (record.get("nodes") or []):
        return True
    for item in str(record.get("target") or "").split(","):
        item = item.strip()
        try:
            hosts = [h for h, _ in expand_hosts(item)] if item else []
        except ValueError:
            hosts = []
        if node in hosts or (item and fnmatch.fnmatchcase(node, item)):
            return True
    return False


def select(records: Iterator[dict[str, Any]], query: Query) -> list[dict[str, Any]]:
    out = []
    for r in records:
        if query.since is not None and datetime.fromisoformat(r["time"]) < query.since:
            continue
        if query.node is not None and not names_node(r, query.node):
            continue
        out.append(r)
    return out
