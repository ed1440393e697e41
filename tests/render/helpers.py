"""Helpers for the renderer tests."""

from __future__ import annotations

import base64
import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.render import render_all

SMALL = Path(__file__).resolve().parents[1] / "fixtures" / "small.yaml"

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=4096)
def load_yaml(text: str) -> Any:
    """yaml.safe_load (libyaml when present), cached: tests parse the same files often.
    Callers must not modify the result."""
    return yaml.load(text, Loader=_Loader)  # a SafeLoader: safe


def read_tree(root: Path) -> tuple[dict[str, bytes], set[str]]:
    """Files (relative path -> bytes) and directories under root; the writer's lock file
    and the incremental render's store (.render.inputs: not rendered output) aside.
    Anything that is not a plain file or directory reads as a marker."""
    files: dict[str, bytes] = {}
    dirs: set[str] = set()
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if rel in (".render.lock", ".render.inputs"):
            continue
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            files[rel] = b"<not a regular file>"
        elif p.is_dir():
            dirs.add(rel)
        else:
            files[rel] = p.read_bytes()
    return files, dirs


def preseed_writes(text: str) -> dict[str, str]:
    """The files a preseed's late_command writes (``echo B64 | base64 -d > /target/P``)."""
    return {m.group(2): base64.b64decode(m.group(1)).decode()
            for m in re.finditer(r"echo ([A-Za-z0-9+/=]+) \| base64 -d > /target([^\s;]+)",
                                 text)}


# what every load line of a rendered install.ipxe ends with (a failed load reboots)
IPXE_ON_FAIL = " || goto failed"


def ipxe_kernel_line(script: str) -> str:
    """The `kernel ...` line of an install.ipxe, without its failure branch."""
    line = next(ln for ln in script.splitlines() if ln.startswith("kernel "))
    return line.removesuffix(IPXE_ON_FAIL)


def render_debian_part_a(tmp: Path, image: dict[str, Any]) -> tuple[Inventory, dict[str, str]]:
    """The small inventory with ``image`` as site image ``debian-12`` and part-a's nodes on
    it (an overlay in ``tmp``), loaded and rendered."""
    overlay = tmp / "overlay.yaml"
    overlay.write_text(json.dumps({"site": {"images": {"debian-12": image}},
                                   "node_groups": {"part-a": {"image": "debian-12"}}}))
    inv = load_inventory(SMALL, overlay)
    return inv, render_all(inv)
