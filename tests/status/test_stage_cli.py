"""The stage column through the real `fleet status` command line (tests/status/site.py:
the small inventory, the real salt-key, stand-ins for salt and scontrol): every node's
stage in the document, and a reports store that cannot be read leaving the column
unknown, with the reason, while the other columns still show."""

from __future__ import annotations

from pathlib import Path

from status.site import ALL, make_site, nodes


def test_the_stage_of_every_node_and_a_store_that_cannot_be_read(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    rc, doc, err = site.run("--discover-reports", str(tmp_path / "reports"),
                            "--burnin-results", str(tmp_path / "burnin"))
    assert rc == 0, err
    got = nodes(doc)
    assert {n: got[n]["stage"]["stage"] for n in ALL} == {n: got[n]["state"] for n in ALL}
    assert doc["discovered"] == {"matched": {}, "unmatched": [], "unreadable": {}}
    (tmp_path / "not-a-dir").write_text("x")
    rc, doc, err = site.run("--discover-reports", str(tmp_path / "not-a-dir"),
                            "--burnin-results", str(tmp_path / "burnin"))
    assert rc == 0, err  # unknown does not fail
    assert doc["sources"]["stage"]["error"].endswith(
        "not-a-dir: not a directory (the commissioning reports are kept in one)")
    assert all(n["unknown"] == ["stage"] and n["key"] == "accepted" for n in doc["nodes"])
    assert doc["discovered"] is None
