"""The lab's named stand-in for a hardware-only package the archive lists but does not
serve (Ubuntu's archive listed NVIDIA 580.196.07 and answered 404 for its files, seen
2026-12-04).

The stand-in has the index's name, version, architecture, Depends, Pre-Depends and
Provides, carries the marker field ``X-Fleet-Stand-In`` (the reason), and holds only what
the states look for: an inert systemd unit for each unit of ``units`` (lab/standins.yaml).
The states, pins and holds run unchanged against it; the driver check reports it by that
name in the lab and fails it on any other node (salt/nvidia/files).

Only a hardware-only package may be stood in for: a GPU driver, its firmware, kernel
modules or Fabric Manager (:data:`HARDWARE_SOURCES`), nothing a container could use.
"""

from __future__ import annotations

import subprocess
import tempfile
from collections.abc import Mapping
from fnmatch import fnmatchcase
from pathlib import Path

from fleet.repo.wanted import source_of

MARKER = "X-Fleet-Stand-In"
# the source packages whose binaries only hardware uses
HARDWARE_SOURCES = ("nvidia-graphics-drivers-*", "linux-restricted-modules*",
                    "linux-restricted-signatures*", "fabric-manager-*", "linux-firmware*",
                    "firmware-nvidia-*")
COPIED = ("Package", "Version", "Architecture", "Multi-Arch", "Pre-Depends", "Depends",
          "Provides", "Conflicts", "Breaks", "Replaces", "Section", "Priority")
UNIT = """\
[Unit]
Description=fleet lab stand-in of {unit} ({package} is a stand-in: {reason})

[Service]
Type=oneshot
ExecStart=/bin/false

[Install]
WantedBy=multi-user.target
"""


def hardware_only(record: Mapping[str, str]) -> bool:
    return any(fnmatchcase(source_of(record), glob) for glob in HARDWARE_SOURCES)


def units_for(package: str, units: Mapping[str, list[str]]) -> list[str]:
    return [u for glob, names in units.items() if fnmatchcase(package, glob) for u in names]


def control(record: Mapping[str, str], reason: str) -> str:
    lines = [f"{k}: {record[k]}" for k in COPIED if record.get(k)]
    first = record.get("Description", "").split("\n", 1)[0]
    lines += ["Maintainer: fleet lab <root@localhost>", f"{MARKER}: {reason}",
              f"Description: fleet lab stand-in: {first}",
              " Not the real package: the archive listed it and did not serve it. It carries",
              " only what fleet's states look for. Never install it outside the lab."]
    return "\n".join(lines) + "\n"


def build(record: Mapping[str, str], reason: str, units: list[str], out_dir: Path) -> Path:
    """The stand-in .deb of ``record`` in ``out_dir``."""
    name, version = record["Package"], record["Version"]
    arch = record.get("Architecture", "amd64")
    deb = out_dir / f"{name}_{version.split(':', 1)[-1]}_{arch}.deb"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        (root / "DEBIAN").mkdir(parents=True)
        (root / "DEBIAN" / "control").write_text(control(record, reason))
        unit_dir = root / "usr" / "lib" / "systemd" / "system"
        for unit in units:
            unit_dir.mkdir(parents=True, exist_ok=True)
            (unit_dir / unit).write_text(UNIT.format(unit=unit, package=name, reason=reason))
        doc = root / "usr" / "share" / "doc" / name
        doc.mkdir(parents=True)
        (doc / "README.fleet-stand-in").write_text(f"{name} {version}: {reason}\n")
        subprocess.run(["dpkg-deb", "--root-owner-group", "-Zxz", "--build", str(root),
                        str(deb)], check=True, capture_output=True, text=True, timeout=120)
    return deb
