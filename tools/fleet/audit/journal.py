"""A record to the systemd journal, with structured fields (``FLEET_VERB=power``...),
through journald's native protocol on its socket; no journal here is said, never fatal."""

from __future__ import annotations

import json
import os
import socket
import struct
from pathlib import Path
from typing import Any

SOCKET_ENV = "FLEET_JOURNAL_SOCKET"  # another socket than journald's (tests)
SOCKET_DEFAULT = "/run/systemd/journal/socket"
NOTICE, WARNING = 5, 4  # syslog priorities: a run that succeeded, one that did not


def socket_path() -> str:
    return os.environ.get(SOCKET_ENV) or SOCKET_DEFAULT


def fields(record: dict[str, Any]) -> dict[str, str]:
    """The journal entry of a record: a message a person reads, and a field per key."""
    by = record["user"] + (f" (sudo {record['sudo_user']})" if record["sudo_user"] else "")
    words = " ".join(w for w in (record["verb"], record["action"], record["target"]) if w)
    out = {
        "MESSAGE": f"fleet {words}: {record['outcome']} (exit {record['exit']}) by {by}",
        "PRIORITY": str(NOTICE if record["exit"] == 0 else WARNING),
        "SYSLOG_IDENTIFIER": "fleet",
        "FLEET_RECORD": json.dumps(record, sort_keys=True),
    }
    for key in ("verb", "action", "target", "user", "sudo_user", "exit", "outcome"):
        if record.get(key) is not None:
            out[f"FLEET_{key.upper()}"] = str(record[key])
    if record.get("nodes"):
        out["FLEET_NODES"] = ",".join(record["nodes"])
    return out


def encode(entry: dict[str, str]) -> bytes:
    """journald's native datagram: each field as NAME, newline, 64-bit little-endian
    length, value, newline (the form that allows any byte in a value)."""
    out = bytearray()
    for name, value in entry.items():
        data = value.encode("utf-8")
        out += name.encode("ascii") + b"\n" + struct.pack("<Q", len(data)) + data + b"\n"
    return bytes(out)


def send(record: dict[str, Any]) -> str | None:
    """Send the record; None when it was sent, else why not (said by the caller)."""
    path = socket_path()
    if not Path(path).exists():
        return f"no systemd journal here ({path})"
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.sendto(encode(fields(record)), path)
    except OSError as exc:
        return f"the journal refused the record ({path}: {exc.strerror or exc})"
    return None
