"""Docs that list code facts are checked against the code: the README's map and
docs/architecture.md name every package, the README's exit codes are fleet.exitcodes',
and every link in the docs points at a file of this repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fleet.exitcodes import summary

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = sorted(p.parent.name for p in (ROOT / "tools" / "fleet").glob("*/__init__.py"))
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_there_are_packages() -> None:
    assert {"inventory", "render", "reinstall"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_the_readme_map_names_every_package(package: str) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"`tools/fleet/{package}/`" in readme


@pytest.mark.parametrize("package", PACKAGES)
def test_the_architecture_names_every_package(package: str) -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"fleet/{package}/" in text


def test_the_readme_lists_the_exit_codes_of_the_enum() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"Exit codes: {summary()}." in readme


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
