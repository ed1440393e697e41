"""The function-length rule of ``make lint``: no function under the configured paths has
more than ``max-lines`` lines of code, counted from its ``def`` to its last line, blank
lines, comment lines and its docstring aside.

Configured in ``pyproject.toml`` ``[tool.fleet.lint]``; the functions allowed to be longer
are listed there by dotted name (``fleet.yamlsrc._load_events``) with their reason. A listed
function that no longer exists, or is no longer too long, is an error too, so the list stays
true. (Complexity is ruff's C901, ``[tool.ruff.lint.mccabe]``.)

    python tools/funclimits.py [--root DIR]    exit 0: all within; 1: a line per breach
"""

from __future__ import annotations

import argparse
import ast
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

Func = ast.FunctionDef | ast.AsyncFunctionDef


def _docstring(fn: Func) -> range:
    first = fn.body[0]
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str) and first.end_lineno is not None):
        return range(first.lineno, first.end_lineno + 1)
    return range(0)


def length(fn: Func, lines: list[str]) -> int:
    """Lines of code from the ``def`` (decorators aside) to the last line: blank lines,
    comment lines and the docstring are not counted."""
    assert fn.end_lineno is not None
    doc = _docstring(fn)
    return sum(1 for i in range(fn.lineno, fn.end_lineno + 1)
               if i not in doc and lines[i - 1].strip()
               and not lines[i - 1].lstrip().startswith("#"))


def functions(tree: ast.AST, prefix: str) -> Iterator[tuple[str, Func]]:
    """Every function and method, nested ones too, by dotted name under ``prefix``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            name = f"{prefix}.{node.name}"
            yield name, node
            yield from functions(node, name)
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}.{node.name}")
        else:
            yield from functions(node, prefix)


def module_name(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def breaches(root: Path) -> list[str]:
    conf = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["fleet"]["lint"]
    limit: int = conf["max-lines"]
    allowed: dict[str, str] = conf.get("exceptions", {})
    out: list[str] = []
    seen: dict[str, int] = {}
    for base in (root / p for p in conf["paths"]):
        for path in sorted(base.rglob("*.py")):
            text = path.read_text()
            lines = text.split("\n")
            for name, fn in functions(ast.parse(text, str(path)), module_name(path, base)):
                n = length(fn, lines)
                seen[name] = n
                if n > limit and name not in allowed:
                    out.append(f"{path.relative_to(root)}:{fn.lineno}: {name} is {n} lines "
                               f"of code, more than {limit}: split it, or list it with its "
                               "reason in pyproject.toml [tool.fleet.lint.exceptions]")
    for name in allowed:
        if name not in seen:
            out.append(f"pyproject.toml: exception {name} names no function: remove it")
        elif seen[name] <= limit:
            out.append(f"pyproject.toml: exception {name} is {seen[name]} lines of code, "
                       f"within {limit}: remove it")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent,
                    help="the repository (default: the one this file is in)")
    args = ap.parse_args(argv)
    found = breaches(args.root)
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
