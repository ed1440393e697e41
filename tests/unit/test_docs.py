"""Docs that list code facts are checked against the code: the README's map names every
package (docs/architecture.md's map: tests/unit/test_architecture.py), the README's exit
codes are fleet.exitcodes', every link and every backticked repository path in the docs
points at a file of this repository, nothing points outside it, and every test the docs
name (`tests/x.py::test_y`, `` `::test_z` `` after it, `[row]` of the rule table) exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleet.exitcodes import summary

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.parent.name for p in (ROOT / "tools" / "fleet").glob("*/__init__.py"))
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
# `tests/a/b.py::test_x[param]`, then any `::test_y` of the same file after a comma
TEST_REF = re.compile(r"`(tests/[\w/]+\.py)((?:::\w+(?:\[[\w-]+\])?)?)`((?:,\s*`::\w+`)*)")


def test_there_are_packages() -> None:
    assert {"inventory", "render", "reinstall"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_the_readme_map_names_every_package(package: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"`tools/fleet/{package}/`" in readme


def test_the_readme_lists_the_exit_codes_of_the_enum() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"Exit codes: {summary()}." in readme


def test_the_output_doc_tables_the_exit_codes_of_the_enum() -> None:
    """docs/output.md's table: every code of fleet.exitcodes with its meaning, no other."""
    from fleet.exitcodes import MEANING

    text = (ROOT / "docs" / "output.md").read_text(encoding="utf-8")
    table = text.split("## Exit codes", 1)[1]
    rows = dict(re.findall(r"^\| (\d+) \| ([^|]+?) \|$", table, flags=re.M))
    assert rows == {str(int(code)): meaning for code, meaning in MEANING.items()}


def test_the_readme_lists_every_verb_of_the_registry_in_order() -> None:
    """The README's verb table: one row per verb of fleet.commands.VERBS, in --help's order."""
    from fleet.commands import VERBS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    table = readme.split("`fleet` (in `.venv/bin`) has these verbs", 1)[1].split("\n\n", 2)[1]
    cells = [re.split(r"(?<!\\)\|", row)[1] for row in table.splitlines()[2:]]
    named = [re.findall(r"`([a-z-]+)", cell) for cell in cells]
    listed = list(dict.fromkeys(w for words in named for w in words if w in VERBS))
    assert listed == list(VERBS)


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_links_stay_inside_the_repository(doc: Path) -> None:
    for target in LINK.findall(doc.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0]
        assert "://" not in target and not target.startswith("mailto:"), \
            f"{doc.name}: link outside the repository: {target}"
        if not path:
            continue
        resolved = (doc.parent / path).resolve()
        assert ROOT in resolved.parents or resolved == ROOT, \
            f"{doc.name}: link outside the repository: {target}"
        assert resolved.exists(), f"{doc.name}: link to a missing file: {target}"


# a backticked word that starts with a top-level folder or file of the repository
# (`salt/lib/map.jinja`, `tests/unit/test_docs.py::test_x`, `docs/lab.md`) is a path
# here; a placeholder (<role>, *, {x}, $VAR) or a space makes it a pattern, not a path
TICKED = re.compile(r"`([^`\n]+)`")
TOP = sorted(p.name for p in ROOT.iterdir() if not p.name.startswith("."))


def _ticked_paths(doc: Path) -> list[str]:
    out = []
    for word in TICKED.findall(doc.read_text(encoding="utf-8")):
        if " " in word or any(c in word for c in "<>*{}$|"):
            continue
        path = re.split(r"::|:\d", word)[0].rstrip("/")
        if path.split("/")[0] in TOP and ("/" in path or path != word):
            out.append(path)
    return out


def test_the_docs_name_repository_paths() -> None:
    named = [p for d in DOCS for p in _ticked_paths(d)]
    assert len(named) > 100 and "salt/lib/map.jinja" in named


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_backticked_repository_paths_exist(doc: Path) -> None:
    missing = [p for p in _ticked_paths(doc) if not (ROOT / p).exists()]
    assert not missing, (f"{doc.relative_to(ROOT)} names paths that are not in the "
                         f"repository: {missing}")


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_no_backticked_path_points_outside_the_repository(doc: Path) -> None:
    """`../shared/x.md` and the like: a fact the reader cannot open from a clone. Write the
    fact itself instead."""
    outside = []
    for word in TICKED.findall(doc.read_text(encoding="utf-8")):
        for part in word.split():
            if not part.startswith("../"):
                continue
            resolved = (doc.parent / part.split("::")[0]).resolve()
            if ROOT not in resolved.parents or not resolved.exists():
                outside.append(part)
    assert not outside, f"{doc.relative_to(ROOT)} points outside the repository: {outside}"


def _named_tests(doc: Path) -> list[tuple[str, str, str]]:
    """(file, test, parameter or "") for every test the doc names."""
    out = []
    for m in TEST_REF.finditer(doc.read_text(encoding="utf-8")):
        first = re.fullmatch(r"(?:::(\w+)(?:\[([\w-]+)\])?)?", m.group(2))
        assert first is not None
        if first.group(1):
            out.append((m.group(1), first.group(1), first.group(2) or ""))
        out += [(m.group(1), name, "") for name in re.findall(r"`::(\w+)`", m.group(3))]
        if not first.group(1):
            out.append((m.group(1), "", ""))
    return out


def test_the_docs_name_tests() -> None:
    assert len([t for d in DOCS for t in _named_tests(d) if t[1]]) > 20


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_test_the_docs_name_exists(doc: Path) -> None:
    import yaml

    rows = {r["name"] for r in yaml.safe_load(
        (ROOT / "tests" / "unit" / "single_edits.yaml").read_text(encoding="utf-8"))}
    missing = []
    for file, test, param in _named_tests(doc):
        path = ROOT / file
        if not path.is_file():
            missing.append(file)
        elif test and not re.search(rf"^\s*def {test}\(", path.read_text(encoding="utf-8"),
                                    re.M):
            missing.append(f"{file}::{test}")
        elif param and file.endswith("test_single_edits.py") and param not in rows:
            missing.append(f"{file}::{test}[{param}]: no such row in single_edits.yaml")
    assert not missing, f"{doc.name} names tests that do not exist: {missing}"


def test_the_force_table_is_the_one_definition() -> None:
    """docs/operations.md's `--force` table: each verb's meaning, as fleet.cliparts.FORCE
    (the one declaration) gives it to --help."""
    from fleet.cliparts import FORCE

    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    table = text.split("## `--force`, verb by verb", 1)[1].split("\n\n")[2]
    rows = dict(re.findall(r"^\| `(?:fleet |python -m fleet\.lab\.)(\w+)` \| (.+?) \|$", table,
                           flags=re.M))
    assert rows == FORCE
