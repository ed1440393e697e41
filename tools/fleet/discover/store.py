"""The reports received, one file per MAC: ``<root>/<mac with hyphens>.json`` (mode 0600,
written atomically), the last report of a machine replacing its earlier one. Each holds the
report as validated, when it came and from which address."""

from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from fleet.discover.report import Report, ReportError, parse
from fleet.inventory.netutil import hexhyp, normalize_mac

MAX_STORED = 4096  # reports kept at most; a new MAC beyond is refused


@dataclass(frozen=True, slots=True)
class Received:
    report: Report
    peer: str
    at: float


def path_of(root: Path, mac: str) -> Path:
    return root / f"{hexhyp(normalize_mac(mac))}.json"


def save(root: Path, report: Report, peer: str, at: float | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    target = path_of(root, report.boot_mac)
    if not target.exists() and sum(1 for _ in root.glob("*.json")) >= MAX_STORED:
        raise ReportError(f"{MAX_STORED} reports kept already: accept or remove some")
    doc = {"peer": peer, "at": time.time() if at is None else at,
           "report": report.model_dump(mode="json")}
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".report-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).replace(target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def load_all(root: Path) -> dict[str, Received | str]:
    """MAC -> what was received, or why its file could not be read (it is re-checked
    against the schema: the directory is not trusted more than the network)."""
    out: dict[str, Received | str] = {}
    if not root.is_dir():
        return out
    for p in sorted(root.glob("*.json")):
        mac = p.stem.replace("-", ":")
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
            report = parse(json.dumps(doc["report"]).encode())
            out[report.boot_mac] = Received(report, str(doc["peer"]), float(doc["at"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            out[mac] = f"{p.name}: {exc}"
    return out
