"""The manifest each backup holds: fleet's version and the manifest format (a restore by
an older fleet refuses, naming both), when and where it was made, the inventory's commit,
the master's key fingerprint, and which items were present."""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import fleet

FORMAT = 1


class ManifestError(ValueError):
    """A manifest this fleet cannot restore (said to the operator as is)."""


def version_tuple(text: str) -> tuple[int, ...]:
    parts = re.findall(r"\d+", text)
    if not parts:
        raise ManifestError(f"{text!r} is no fleet version")
    return tuple(int(p) for p in parts)


@dataclass
class Manifest:
    fleet: str
    time: str
    host: str
    inventory_commit: str | None
    inventory_dirty: bool
    master_finger: str | None
    items: list[dict[str, Any]] = field(default_factory=list)
    format: int = FORMAT

    def text(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def parse(cls, data: bytes) -> Manifest:
        try:
            raw = json.loads(data)
            return cls(**{k: raw[k] for k in cls.__dataclass_fields__ if k in raw})
        except (ValueError, TypeError) as exc:
            raise ManifestError(f"the backup's manifest cannot be read: {exc}") from None

    def refuse_newer(self, ours: str | None = None) -> None:
        """Refuse a backup made by a newer fleet (or in a newer format), naming both."""
        ours = ours or fleet.__version__
        if version_tuple(self.fleet) > version_tuple(ours) or self.format > FORMAT:
            raise ManifestError(
                f"this backup was made by fleet {self.fleet} (manifest format "
                f"{self.format}); this is fleet {ours} (format {FORMAT}): restore it with "
                f"fleet {self.fleet} or newer (check out that commit and `make deps`)")


def inventory_commit(inventory: Path) -> tuple[str | None, bool]:
    """The commit of the checkout the inventory is in, and whether it has changes not
    committed (None where it is in no git checkout)."""
    where = inventory.resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(where), "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=True, timeout=30)
        dirty = subprocess.run(["git", "-C", str(where), "status", "--porcelain", "--",
                                str(inventory.resolve())], capture_output=True, text=True,
                               check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None, False
    return head.stdout.strip() or None, bool(dirty.stdout.strip())
