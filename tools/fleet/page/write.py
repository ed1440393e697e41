"""Write the fleet page's directory: the static files, layout.json, status.json and, last,
view.json, each through a temporary file in the same directory and a rename, so the page
never reads a half-written file; a file whose content is unchanged is not rewritten."""

from __future__ import annotations

import datetime as dt
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from fleet.inventory.model import Inventory
from fleet.page import layout, view

STATIC = Path(__file__).parent / "static"
STATIC_FILES = ("index.html", "page.js", "page.css")


def _dump(data: Any) -> bytes:
    return (json.dumps(data, indent=1, sort_keys=False, ensure_ascii=True) + "\n").encode()


def files(inv: Inventory, doc: Any, refreshed: str, wiring: Any = None) -> dict[str, bytes]:
    """name -> content, in the order they are written (view.json last); ``wiring``: the
    ``fleet cabling --json`` document, if any."""
    out = {name: (STATIC / name).read_bytes() for name in STATIC_FILES}
    out["layout.json"] = _dump(layout.build(inv))
    out["status.json"] = _dump(doc)
    out["view.json"] = _dump(view.build(inv, doc, refreshed, wiring))
    return out


def replace(path: Path, data: bytes) -> bool:
    """Write ``path`` atomically (mode 0644); False when it already holds ``data``."""
    try:
        if path.read_bytes() == data:
            return False
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        Path(tmp).chmod(0o644)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def write(out: Path, inv: Inventory, doc: Any, now: dt.datetime | None = None,
          wiring: Any = None) -> list[str]:
    """Write the page into ``out`` (created); the names of the files that changed."""
    stamp = (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    out.mkdir(parents=True, exist_ok=True)
    return [name for name, data in files(inv, doc, stamp, wiring).items()
            if replace(out / name, data)]
