"""A node's burn-in results: one per check, the latest, kept as ``<root>/<node>.json``
(0600, written atomically). A result comes from the node (its runner's JSON): untrusted,
checked against a strict schema and bounded like any report."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StringConstraints, ValidationError

from fleet.inventory.schema.hardware import BurninCheck
from fleet.inventory.types import Text

MAX_RESULT_BYTES = 64 * 1024
FigureName = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]{0,39}$")]


class Result(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    check: BurninCheck
    passed: StrictBool
    """the tool's own verdict (stress-ng's errors, memtester's, fio's verify, ...)"""
    figures: dict[FigureName, float] = Field(default_factory=dict, max_length=32)
    """what it measured, by name (bogo_ops_s, read_mib_s, busbw_gb_s, ...)"""
    reason: Text | None = None
    """why it failed, in the tool's words"""
    started: float = Field(ge=0)
    seconds: float = Field(ge=0)


class ResultError(ValueError):
    """Why a result was refused: one line."""


def parse(body: bytes) -> Result:
    if len(body) > MAX_RESULT_BYTES:
        raise ResultError(f"result of {len(body)} bytes: at most {MAX_RESULT_BYTES}")
    try:
        return Result.model_validate_json(body)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "result"
        raise ResultError(f"{where}: {err['msg']}") from None


def parse_lines(body: bytes) -> list[Result]:
    """The results of a file of the runner's output, one a line (blank lines skipped; at
    least one), bounded as one result is: ``MAX_RESULT_BYTES`` in all."""
    if len(body) > MAX_RESULT_BYTES:
        raise ResultError(f"results of {len(body)} bytes: at most {MAX_RESULT_BYTES}")
    got = []
    for n, line in enumerate(body.splitlines(), 1):
        if line.strip():
            try:
                got.append(parse(line))
            except ResultError as exc:
                raise ResultError(f"line {n}: {exc}") from None
    if not got:
        raise ResultError("no result in it")
    return got


def _path(root: Path, node: str) -> Path:
    return root / f"{node}.json"


def load(root: Path, node: str) -> dict[str, Result]:
    """The node's latest result per check (none: {})."""
    try:
        doc = json.loads(_path(root, node).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return {check: parse(json.dumps(r).encode()) for check, r in doc.items()}


def record(root: Path, node: str, result: Result) -> None:
    """Keep ``result`` as the node's latest for its check."""
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    doc = {c: r.model_dump(mode="json") for c, r in load(root, node).items()}
    doc[result.check] = result.model_dump(mode="json")
    fd, tmp = tempfile.mkstemp(dir=root, prefix=f".{node}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f, sort_keys=True)
        Path(tmp).replace(_path(root, node))
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def now() -> float:
    return time.time()
