"""Golden files: the full render of tests/fixtures/small.yaml must match tests/golden/small
byte for byte. After a deliberate renderer or template change, regenerate and review:

    .venv/bin/python tests/golden/update.py && git diff tests/golden/
"""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from render.helpers import read_tree
from support.cli import ROOT, SMALL, run_fleet

GOLDEN = ROOT / "tests" / "golden" / "small"
HINT = ("if the change is deliberate, run `.venv/bin/python tests/golden/update.py` "
        "and review `git diff tests/golden/`")
MAX_DIFFS = 5  # files shown in full diff on failure
MAX_LINES = 80  # lines shown per diff


def diff_report(want: dict[str, bytes], got: dict[str, bytes]) -> str:
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    differ = sorted(p for p in set(want) & set(got) if want[p] != got[p])
    out = [f"render of {SMALL.name} differs from {GOLDEN.relative_to(ROOT)}: "
           f"{len(missing)} missing, {len(extra)} unexpected, {len(differ)} differ"]
    out += [f"  missing (in golden, not rendered): {p}" for p in missing]
    out += [f"  unexpected (rendered, not in golden): {p}" for p in extra]
    for rel in differ[:MAX_DIFFS]:
        old = want[rel].decode("utf-8", "replace").splitlines(True)
        new = got[rel].decode("utf-8", "replace").splitlines(True)
        lines = list(difflib.unified_diff(old, new, f"golden/{rel}", f"rendered/{rel}"))
        if not lines:  # same text, different bytes (encoding, line endings)
            lines = [f"--- golden/{rel}\n+++ rendered/{rel}\n", "(bytes differ, text equal)\n"]
        if len(lines) > MAX_LINES:
            lines = [*lines[:MAX_LINES], f"... ({len(lines) - MAX_LINES} more diff lines)\n"]
        out.append("".join(line if line.endswith("\n") else line + "\n" for line in lines))
    if len(differ) > MAX_DIFFS:
        out.append(f"... and {len(differ) - MAX_DIFFS} more differing files: "
                   + ", ".join(differ[MAX_DIFFS:]))
    out.append(HINT)
    return "\n".join(out)


def test_golden_tree_exists() -> None:
    assert (GOLDEN / "pillar" / "top.sls").is_file(), f"no golden tree at {GOLDEN}; {HINT}"
    assert (GOLDEN / "pxe" / "dnsmasq" / "dnsmasq.conf").is_file(), HINT


def test_render_matches_golden(tmp_path: Path) -> None:
    r = run_fleet("render", "-q", "-i", str(SMALL), "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    got_files, got_dirs = read_tree(tmp_path)
    want_files, want_dirs = read_tree(GOLDEN)
    if got_files != want_files:
        pytest.fail(diff_report(want_files, got_files), pytrace=False)
    assert got_dirs == want_dirs, (f"directories differ: only in golden "
                                   f"{sorted(want_dirs - got_dirs)}, only rendered "
                                   f"{sorted(got_dirs - want_dirs)}; {HINT}")


def test_golden_holds_only_rendered_output() -> None:
    top = sorted(p.name for p in GOLDEN.iterdir())
    assert top == ["pictures", "pillar", "pxe"], f"unexpected entries in {GOLDEN}: {top}; {HINT}"


def test_diff_report_shows_unified_diff() -> None:
    """The failure message itself: names the file, shows a unified diff and the hint."""
    want = {"pillar/a.sls": b"x: 1\ny: 2\n", "pxe/gone": b"", "pillar/same": b"s\n"}
    got = {"pillar/a.sls": b"x: 1\ny: 3\n", "pxe/new": b"", "pillar/same": b"s\n"}
    msg = diff_report(want, got)
    assert "--- golden/pillar/a.sls" in msg
    assert "+++ rendered/pillar/a.sls" in msg
    assert "-y: 2" in msg
    assert "+y: 3" in msg
    assert "missing (in golden, not rendered): pxe/gone" in msg
    assert "unexpected (rendered, not in golden): pxe/new" in msg
    assert "pillar/same" not in msg
    assert "tests/golden/update.py" in msg


LIFECYCLE = ROOT / "tests" / "golden" / "lifecycle"
LIFECYCLE_OVERLAY = ROOT / "tests" / "fixtures" / "lifecycle-overlay.yaml"


def test_lifecycle_render_matches_golden(tmp_path: Path) -> None:
    """A node in each state (tests/fixtures/lifecycle-overlay.yaml): its DHCP hosts, boot
    files, pillar and Slurm lines, byte for byte."""
    r = run_fleet("render", "-q", "-i", str(SMALL), "--overlay", str(LIFECYCLE_OVERLAY),
                  "-o", str(tmp_path))
    assert r.returncode == 0, r.stderr
    got_files, _ = read_tree(tmp_path)
    want_files, _ = read_tree(LIFECYCLE)
    if got_files != want_files:
        pytest.fail(diff_report(want_files, got_files), pytrace=False)


def test_lifecycle_golden_has_each_state() -> None:
    """The golden tree itself says what each state renders (read, not regenerated)."""
    files, _ = read_tree(LIFECYCLE)
    retired, planned, maint = "gpu-01", "gpu-02", "gpu-03"
    assert not [p for p in files if retired in p], "a retired node has no file"
    for node in (planned, maint):
        assert f"pxe/dnsmasq/hosts/{node}" in files
        assert f"pxe/http/hosts/{node}/user-data" in files
        assert f"pillar/nodes/{node}.sls" in files
    slurm = files["pillar/slurm.sls"].decode()
    assert "names: gpu-02\n" in slurm and "state: FUTURE" in slurm
    assert "gpu-01" not in slurm
    assert 'gpu-03: "fleet-inventory: fan replaced; RMA #4711 \'urgent\'"' in slurm
    assert retired not in files["pxe/dnsmasq/dns-hosts"].decode()
    node2 = files["pillar/nodes/gpu-02.sls"].decode()
    assert "port: 2\n" in node2  # its slot: position 1 in part-a, whatever gpu-01 is
