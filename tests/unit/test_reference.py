"""docs/inventory-reference.md is generated from the schema and checked like the render."""

from __future__ import annotations

from pathlib import Path

from fleet.inventory import reference, schema

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "inventory-reference.md"


def test_the_committed_reference_is_current() -> None:
    assert reference.main(["--check", str(DOC)]) == 0, "run `make docs` and commit"


def test_a_stale_reference_fails_the_check(tmp_path: Path) -> None:
    stale = tmp_path / "ref.md"
    stale.write_text(reference.render().replace("`site.domain`", "`site.dommain`"))
    assert reference.main(["--check", str(stale)]) == 3
    assert reference.main(["--write", str(stale)]) == 0
    assert reference.main(["--check", str(stale)]) == 0


def test_every_schema_field_has_a_row() -> None:
    paths = {r.path for r in reference.rows()}
    for name in schema.Site.model_fields:
        assert f"site.{name}" in paths
    for name in schema.NodeGroup.model_fields:
        assert f"node_groups.<name>.{name}" in paths
    assert "site.salt.reinstall_port" in paths
    assert any(p.startswith("profiles.<name>.disks[].") for p in paths)


def test_every_field_has_a_description() -> None:
    missing = [r.path for r in reference.rows() if not r.description.strip()]
    assert not missing, (f"{len(missing)} field(s) of fleet/inventory/schema/ without a "
                         f"description (Field(description=...)): {', '.join(missing)}")
