"""The function-length rule of make lint (tools/funclimits.py), on a small tree of its own."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import funclimits  # noqa: E402

CONF = '[tool.fleet.lint]\npaths = ["src"]\nmax-lines = 5\n[tool.fleet.lint.exceptions]\n'


def _tree(tmp_path: Path, body_lines: int, exceptions: str = "") -> Path:
    (tmp_path / "pyproject.toml").write_text(CONF + exceptions)
    pkg = tmp_path / "src" / "pkg"
    pkg.mkdir(parents=True)
    body = "".join(f"    x{i} = {i}\n\n    # a comment\n" for i in range(body_lines))
    (pkg / "mod.py").write_text('class C:\n    def f(self):\n        """Doc.\n\n        More."""\n'
                                + body.replace("    ", "        ") + "        return 0\n")
    return tmp_path


def test_code_lines_are_counted_without_blanks_comments_or_docstring(tmp_path: Path) -> None:
    # def + 3 assignments + return = 5: within; blank, comment and docstring lines ignored
    assert funclimits.breaches(_tree(tmp_path, 3)) == []


def test_a_long_function_is_named_with_what_to_do(tmp_path: Path) -> None:
    [line] = funclimits.breaches(_tree(tmp_path, 4))
    assert "pkg.mod.C.f is 6 lines of code, more than 5" in line
    assert "[tool.fleet.lint.exceptions]" in line


def test_a_listed_function_may_be_longer(tmp_path: Path) -> None:
    assert funclimits.breaches(_tree(tmp_path, 4, '"pkg.mod.C.f" = "why"\n')) == []


def test_a_stale_exception_is_an_error(tmp_path: Path) -> None:
    found = funclimits.breaches(_tree(tmp_path, 3, '"pkg.mod.C.f" = "why"\n"pkg.gone" = "x"\n'))
    assert found == [
        "pyproject.toml: exception pkg.mod.C.f is 5 lines of code, within 5: remove it",
        "pyproject.toml: exception pkg.gone names no function: remove it"]


def test_the_repository_keeps_the_rule() -> None:
    assert funclimits.breaches(ROOT) == []
