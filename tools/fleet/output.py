"""The output contract of every ``fleet`` verb (docs/output.md, docs/output.schema.json).

With ``--json`` a verb writes exactly one JSON document on stdout, on success and on
failure: an object with ``ok``, ``verb``, ``exit`` (fleet.exitcodes) and ``errors`` (each
an object with at least ``message``), and the verb's own keys. A verb about nodes lists
them under ``nodes``, each with the same four keys whatever the verb: ``node``,
``status``, ``seconds`` (null where the verb does not time a node) and ``problems`` (a
list of sentences; empty when there are none), then its own.

A verb hands its document to :meth:`Output.emit`; :func:`fleet.cli.main` writes it once
the exit code is known, or, where the verb emitted none (it failed before it had one), a
failure document carrying what the run said on stderr."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from fleet.master.highstate import NodeResult

NODE_KEYS = ("node", "status", "seconds", "problems")


def node_entry(node: str, status: str, seconds: float | None, problems: list[str],
               extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One node as every verb reports it: the four common keys first, then the verb's own
    (``extra``, less any of the four it also has)."""
    own = {k: v for k, v in (extra or {}).items() if k not in NODE_KEYS}
    return {"node": node, "status": status,
            "seconds": None if seconds is None else round(seconds, 2),
            "problems": list(problems), **own}


def highstate_node(r: NodeResult) -> dict[str, Any]:
    """A node's highstate (fleet apply, fleet lab) in the common shape: its states' run
    time, what failed as its problem."""
    return node_entry(r.node, r.status.value, r.run_s, [r.summary()] if r.status.bad else [],
                      r.as_json())


class StderrTee:
    """stderr as it was, keeping each line written (for the failure document)."""

    def __init__(self, inner: TextIO) -> None:
        self.inner = inner
        self.lines: list[str] = []
        self._part = ""
        self._lock = threading.Lock()  # a parallel reinstall's threads all say things

    def write(self, text: str) -> int:
        with self._lock:
            self._part += text
            *done, self._part = self._part.split("\n")
            self.lines.extend(line for line in done if line.strip())
            return self.inner.write(text)

    def flush(self) -> None:
        self.inner.flush()

    def isatty(self) -> bool:
        return self.inner.isatty()

    def fileno(self) -> int:
        return self.inner.fileno()

    def __getattr__(self, name: str) -> Any:  # encoding, closed, ...: the stream's own
        return getattr(self.inner, name)

    @property
    def said(self) -> list[str]:
        return [*self.lines, *([self._part] if self._part.strip() else [])]


class Output:
    """The output mode of one run (json, quiet, verbose) and its one JSON document."""

    def __init__(self, verb: str, *, json_mode: bool, quiet: bool, verbose: bool) -> None:
        self.verb = verb
        self.json = json_mode
        self.quiet = quiet
        self.verbose = verbose
        self.document: dict[str, Any] | None = None
        self.errors: list[dict[str, Any]] = []
        self.tee: StderrTee | None = None
        self.said: list[str] = []  # what the run said on stderr, with --json

    def emit(self, doc: dict[str, Any]) -> None:
        """The run's document (written by :meth:`finish`); a second one is a bug."""
        if self.document is not None:
            raise RuntimeError(f"fleet {self.verb}: a second JSON document")
        self.document = doc

    def error(self, message: str, **detail: Any) -> None:
        """An error for the document (say it on stderr too, as the verb always does)."""
        self.errors.append({"message": message, **detail})

    def capture_stderr(self) -> None:
        if self.json and self.tee is None:
            self.tee = StderrTee(sys.stderr)
            sys.stderr = self.tee

    def release_stderr(self) -> None:
        if self.tee is not None:
            sys.stderr = self.tee.inner
            self.said = self.tee.said
            self.tee = None

    def finish(self, code: int, out: TextIO | None = None) -> None:
        """With --json: the one document, with ``ok``, ``verb``, ``exit`` and ``errors``."""
        if not self.json:
            return
        said = [{"message": line} for line in self.said]
        doc = dict(self.document) if self.document is not None else {}
        errors = [*self.errors, *doc.get("errors", [])]
        if self.document is None and not errors and code != 0:
            errors = said  # it failed before it had a document: what it said is all there is
        doc.update(ok=code == 0, verb=self.verb,
                   exit=int(code), errors=[_error(e) for e in errors])
        print(json.dumps(doc, indent=2), file=out or sys.stdout, flush=True)


def _error(e: Any) -> dict[str, Any]:
    """Errors as objects with a message (a verb's own list may hold strings)."""
    return dict(e) if isinstance(e, dict) and "message" in e else {"message": str(e)}
