"""Managed by Salt (monitoring). Prometheus text format for node_exporter's textfile
collector, written atomically (a temporary file in the same directory, then rename), so
the exporter never reads half a file. Shared by the fleet-*-metrics collectors."""

from __future__ import annotations

import os
import re
import tempfile

NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")


def escape(value: str) -> str:
    """A label value in the text format: backslash, double quote and newline escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Metrics:
    """Samples grouped by metric name, each name with its HELP and TYPE once."""

    def __init__(self) -> None:
        self._meta: dict[str, tuple[str, str]] = {}
        self._samples: dict[str, list[str]] = {}

    def declare(self, name: str, kind: str, help_text: str) -> None:
        if not NAME.match(name):
            raise ValueError(f"bad metric name {name!r}")
        self._meta.setdefault(name, (kind, help_text))
        self._samples.setdefault(name, [])

    def add(self, name: str, value: float, **labels: str) -> None:
        if name not in self._meta:
            raise KeyError(f"metric {name} was not declared")
        text = ",".join(f'{k}="{escape(str(v))}"' for k, v in sorted(labels.items()))
        number = repr(float(value)) if value != int(value) else str(int(value))
        self._samples[name].append(f"{name}{{{text}}} {number}" if text else f"{name} {number}")

    def text(self) -> str:
        lines: list[str] = []
        for name, (kind, help_text) in self._meta.items():
            lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]
            lines += self._samples[name]
        return "\n".join(lines) + "\n"


def write_atomic(path: str, text: str) -> None:
    """``text`` at ``path`` whole or not at all (mode 0644: the exporter's user reads it)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".fleet-", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
