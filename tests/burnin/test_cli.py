"""fleet burnin through its CLI on the site's inventory: results recorded, an outlier and
a failed check shown by status, finish writing active / maintenance (with the failing
check as reason) as an edit of the nodes' own lines, and the result still valid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from discover.sites import entry_line, with_burnin
from fleet.cli import main
from fleet.discover import edit
from fleet.inventory.load import parse

BURNIN = ("      cpu-stress: {seconds: 600, tolerance_percent: 10}\n"
          "      smart: {seconds: 0}\n")
NODES = ["tbox-001", "tbox-002", "tbox-003", "tbox-004", "tbox-005"]


def site_in_burnin(burnin: str = BURNIN) -> str:
    """The site, tinybox-pro's burn-in ``burnin`` (its check lines), NODES in burn-in."""
    text = with_burnin(burnin)
    for h in NODES:
        line = entry_line(text, h)
        text = text.replace(line, line.replace(": {", ": {state: burn-in, ", 1))
    return text


def result(tmp: Path, check: str, passed: bool = True, reason: str | None = None,
           **figures: float) -> str:
    path = tmp / f"r-{check}-{len(list(tmp.glob('r-*')))}.json"
    doc = {"check": check, "passed": passed, "figures": figures, "started": 1.0,
           "seconds": 600.0, **({"reason": reason} if reason else {})}
    path.write_text(json.dumps(doc))
    return str(path)


def record_results(tmp_path: Path, inv: Path) -> Path:
    """cpu-stress on every node (tbox-004 an outlier), smart on the first three and a
    failed smart on tbox-004, recorded through the CLI; the results directory."""
    res = tmp_path / "results"
    for h, ops in zip(NODES, (1000, 1010, 990, 700, 1005), strict=True):
        assert main(["burnin", "record", h, "--result",
                     result(tmp_path, "cpu-stress", bogo_ops_s=ops), "--results", str(res),
                     "-i", str(inv)]) == 0
    for h in NODES[:3]:
        assert main(["burnin", "record", h, "--result", result(tmp_path, "smart"),
                     "--results", str(res), "-i", str(inv)]) == 0
    bad = result(tmp_path, "smart", False, reason="nvme0n1: media errors 12")
    assert main(["burnin", "record", "tbox-004", "--result", bad, "--results", str(res),
                 "-i", str(inv)]) == 0
    return res


@pytest.fixture
def site(tmp_path: Path) -> tuple[Path, Path]:
    inv = tmp_path / "inventory.yaml"
    inv.write_text(site_in_burnin())
    return inv, record_results(tmp_path, inv)


def test_status_shows_the_outlier_the_failure_and_the_progress(
        site: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    inv, res = site
    capsys.readouterr()
    assert main(["burnin", "status", "--json", "--results", str(res), "-i", str(inv)]) == 5
    rows = {r["node"]: r for r in json.loads(capsys.readouterr().out)["nodes"]}
    assert [rows[h]["burnin"] for h in NODES] == ["passed"] * 3 + ["failed", "pending"]
    assert rows["tbox-004"]["failures"] == [
        "cpu-stress: bogo_ops_s 700 against the baseline 1000 (-30.0%, tolerance 10%, "
        "median of 5)", "smart: failed (nvme0n1: media errors 12)"]
    assert (rows["tbox-005"]["done"], rows["tbox-005"]["total"]) == (1, 2)


def test_finish_writes_active_and_maintenance_with_the_reason(
        site: tuple[Path, Path]) -> None:
    inv, res = site
    before = inv.read_text()
    assert main(["burnin", "finish", "--all", "--results", str(res), "-i", str(inv)]) == 5
    after = inv.read_text()
    assert edit.entry_of(after, "tbox-001")["state"] == "active"
    four = edit.entry_of(after, "tbox-004")
    assert four["state"] == "maintenance" and four["reason"].startswith(
        "burn-in cpu-stress: bogo_ops_s 700 against the baseline 1000")
    assert edit.entry_of(after, "tbox-005")["state"] == "burn-in"  # pending: left
    changed = [a for a, b in zip(before.splitlines(), after.splitlines(), strict=True)
               if a != b]
    assert [c.split(":")[0].strip() for c in changed] == NODES[:4]
    valid = parse(after, "inventory.yaml")
    assert valid.nodes["tbox-004"].reason == four["reason"]


def test_a_result_for_a_check_the_profile_has_not_is_refused(
        site: tuple[Path, Path], tmp_path: Path) -> None:
    inv, res = site
    r = result(tmp_path, "nccl-allreduce", busbw_gb_s=10.0)
    assert main(["burnin", "record", "tbox-001", "--result", r, "--results", str(res),
                 "-i", str(inv)]) == 2


def test_a_profile_with_no_check_fails_burnin_and_finish_refuses_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """tinybox-pro's burn-in removed: its nodes in burn-in fail (0/0 is no pass) and
    `finish` leaves them in burn-in, the inventory unchanged."""
    inv = tmp_path / "inventory.yaml"
    inv.write_text(site_in_burnin(""))
    res = tmp_path / "results"
    capsys.readouterr()
    assert main(["burnin", "status", "tbox-001", "--results", str(res), "-i", str(inv)]) == 5
    out = capsys.readouterr().out
    assert "FAILED   0/0" in out and "profile tinybox-pro configures no burn-in checks" in out
    before = inv.read_text()
    assert main(["burnin", "finish", "--all", "--json", "--results", str(res),
                 "-i", str(inv)]) == 5
    outcomes = json.loads(capsys.readouterr().out)["outcomes"]
    assert {(o["node"], o["to"], o["why"]) for o in outcomes} == {
        (h, "refused", "profile tinybox-pro configures no burn-in checks") for h in NODES}
    assert inv.read_text() == before


def test_record_keeps_each_line_of_the_runners_output(
        site: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One file of the runner's lines (one check each) is every result kept; one line
    that is not a check of the profile refuses the whole file, none kept."""
    inv, res = site
    lines = tmp_path / "tbox-005.json"
    lines.write_text(Path(result(tmp_path, "cpu-stress", bogo_ops_s=1001)).read_text() + "\n\n"
                     + Path(result(tmp_path, "smart")).read_text() + "\n")
    capsys.readouterr()
    assert main(["burnin", "record", "tbox-005", "--json", "--result", str(lines),
                 "--results", str(res), "-i", str(inv)]) == 0
    assert json.loads(capsys.readouterr().out)["kept"] == [
        {"check": "cpu-stress", "passed": True}, {"check": "smart", "passed": True}]
    assert main(["burnin", "status", "tbox-005", "--json", "--results", str(res),
                 "-i", str(inv)]) == 0
    assert json.loads(capsys.readouterr().out)["nodes"][0]["burnin"] == "passed"
    mixed = tmp_path / "mixed.json"
    mixed.write_text(Path(result(tmp_path, "smart", False)).read_text() + "\n"
                     + Path(result(tmp_path, "nccl-allreduce")).read_text() + "\n")
    assert main(["burnin", "record", "tbox-005", "--result", str(mixed),
                 "--results", str(res), "-i", str(inv)]) == 2
    assert main(["burnin", "status", "tbox-005", "--results", str(res), "-i", str(inv)]) == 0
    broken = tmp_path / "broken.json"
    broken.write_text(Path(result(tmp_path, "smart")).read_text() + "\n{\"check\": 1}\n")
    assert main(["burnin", "record", "tbox-005", "--result", str(broken),
                 "--results", str(res), "-i", str(inv)]) == 4
    assert "line 2: check" in capsys.readouterr().err
