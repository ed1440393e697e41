"""No stale lint exception: every per-file ignore in pyproject.toml names files that exist
(an ignore for a file that moved or went away would silently cover a new file of the old
name). funclimits' own list of long functions is kept true by tools/funclimits.py."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _expand(pattern: str) -> list[str]:
    """``a/{b,c}.py`` -> ``a/b.py``, ``a/c.py`` (ruff's globs use braces so)."""
    m = re.search(r"\{([^{}]*)\}", pattern)
    if m is None:
        return [pattern]
    return [e for alt in m.group(1).split(",")
            for e in _expand(pattern[:m.start()] + alt + pattern[m.end():])]


def stale_ignores(ignores: dict[str, list[str]], root: Path) -> list[str]:
    """The per-file-ignore patterns (each brace alternative) that match no file."""
    return [p for key in ignores for p in _expand(key) if not any(root.glob(p))]


def test_a_planted_stale_ignore_is_found(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "tree.py").write_text("")
    ignores = {"tools/{tree,journal}.py": ["PTH"], "tools/gone.py": ["C901"],
               "tools/*.py": ["E"]}
    assert stale_ignores(ignores, tmp_path) == ["tools/journal.py", "tools/gone.py"]


def test_no_per_file_ignore_is_stale() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    ignores = config["tool"]["ruff"]["lint"].get("per-file-ignores", {})
    stale = stale_ignores(ignores, ROOT)
    assert not stale, ("pyproject.toml [tool.ruff.lint.per-file-ignores] names files that "
                       "do not exist: drop the entry, or write the path it has now: "
                       + ", ".join(stale))


def debts(exceptions: dict[str, str]) -> list[str]:
    """The long-function exceptions whose reason is a debt (to split), not a reason."""
    return [name for name, why in exceptions.items()
            if "debt" in why.lower() or "to split" in why.lower()]


def test_a_planted_debt_is_found() -> None:
    assert debts({"a.f": "the hot loop, locals bound once",
                  "a.g": "debt: one exchange; to split", "a.h": "a table; to split by group"}
                 ) == ["a.g", "a.h"]


def test_no_long_function_is_kept_as_a_debt() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found = debts(config["tool"]["fleet"]["lint"]["exceptions"])
    assert not found, ("a function past the length limit is listed as a debt: split it "
                       "(docs/architecture.md, Long functions): " + ", ".join(found))
