"""Shared by the benchmarks: the machine's description and docs/benchmarks.md sections."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def read_quiet(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def cpu_model() -> str:
    for line in read_quiet("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def mem_total() -> str:
    for line in read_quiet("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            return f"{int(line.split()[1]) / 1024**2:.1f} GiB"
    return "unknown"


def os_name() -> str:
    for line in read_quiet("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return f"{line.split('=', 1)[1].strip(chr(34))}, Linux {platform.release()}"
    return platform.platform()


def load_average() -> str:
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def commit() -> str:
    out = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "tools",
                            "salt", "lab"], capture_output=True, text=True,
                           check=False).stdout.strip()
    return f"{out or 'unknown'}{' (tools/salt/lab modified)' if dirty else ''}"


def replace_section(path: Path, heading: str, text: str) -> None:
    """Replace the section that starts with the line ``heading`` (up to the next ``## ``)
    in ``path`` with ``text``, or append it: each benchmark owns its own section."""
    if path.exists():
        old = path.read_text(encoding="utf-8").splitlines()
    else:
        old = ["# Benchmarks", "",
               "Measured performance of fleet. Each `## ` section is written by its own "
               "benchmark and replaced only by it.", ""]
    start = next((i for i, line in enumerate(old) if line.strip() == heading), None)
    if start is None:
        while old and not old[-1].strip():
            old.pop()
        new = [*old, "", *text.splitlines()]
    else:
        end = next((i for i in range(start + 1, len(old)) if old[i].startswith("## ")),
                   len(old))
        tail = old[end:]
        new = [*old[:start], *text.splitlines(), *([""] if tail else []), *tail]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(new).rstrip("\n") + "\n", encoding="utf-8")
