"""`fleet validate` (and render's refusal of a bad inventory) through the real CLI."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from fleet.yamlsrc import load
from support.cli import run_fleet

WriteInventory = Callable[..., Path]
LINE = re.compile(
    r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): (?:(?P<path>[^\s:]+): )?(?P<msg>.+)$")


def _edit(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def _pos(text: str, needle: str, mark: str = "") -> tuple[int, int]:
    """Line and column of ``mark`` inside the only occurrence of ``needle``."""
    assert text.count(needle) == 1, needle
    offset = text.index(needle) + needle.index(mark)
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


@pytest.fixture
def bad(small_text: str) -> tuple[str, dict[str, tuple[int, int]]]:
    """The small inventory with three independent errors; where each one is."""
    text = _edit(small_text, "serial: GPU0002", "serial: GPU0001")
    text = _edit(text, 'bmc_mac: "52:54:00:01:00:97"', 'bmc_mac: "01:54:00:01:00:97"')
    text = _edit(text, "replicas: 2", "replicas: 3")
    where = {
        "nodes.gpu-02.serial": _pos(text, 'GPU0001, mac: "52:54:00:00:00:66"'),
        "nodes.stor-1.bmc_mac": _pos(text, '"01:54:00:01:00:97"'),
        "mkv.arrays.data.replicas": _pos(text, "replicas: 3", "3"),
    }
    return text, where


def _no_traceback(*outputs: str) -> None:
    for out in outputs:
        assert "Traceback" not in out
        assert "fleet: internal error" not in out


# --- validate ------------------------------------------------------------------------------


def test_validate_bad_inventory_exits_1_with_located_errors(
        inventory_file: WriteInventory, bad: tuple[str, dict[str, tuple[int, int]]]) -> None:
    text, where = bad
    path = inventory_file(text)
    r = run_fleet("validate", "-i", str(path))
    assert r.returncode == 1, r.stderr
    _no_traceback(r.stdout, r.stderr)
    lines = r.stderr.splitlines()
    located = [m for m in map(LINE.match, lines) if m]
    found = {m["path"]: (int(m["line"]), int(m["col"])) for m in located}
    for p, pos in where.items():
        assert found.get(p) == pos, f"{p} should be reported at {pos}:\n{r.stderr}"
    assert all(m["file"] == str(path) for m in located)
    # every line but the closing count is `file:line:col: path: message`
    assert len(located) == len(lines) - 1
    assert re.match(r"^3 errors\b", lines[-1]), lines[-1]
    assert r.stdout == ""


def test_validate_reports_messages_with_values(
        inventory_file: WriteInventory, bad: tuple[str, dict[str, tuple[int, int]]]) -> None:
    text, where = bad
    path = inventory_file(text)
    r = run_fleet("validate", "-i", str(path))
    line, col = where["nodes.gpu-02.serial"]
    first_line, first_col = _pos(text, 'GPU0001, mac: "52:54:00:00:00:65"')
    assert (f"{path}:{line}:{col}: nodes.gpu-02.serial: GPU0001 is already used by gpu-01 "
            f"({path}:{first_line}:{first_col})") in r.stderr.splitlines()


def test_validate_json_emits_every_error(
        inventory_file: WriteInventory, bad: tuple[str, dict[str, tuple[int, int]]]) -> None:
    text, where = bad
    path = inventory_file(text)
    r = run_fleet("validate", "--json", "-i", str(path))
    assert r.returncode == 1
    _no_traceback(r.stdout, r.stderr)
    doc = json.loads(r.stdout)
    assert doc["ok"] is False
    errors = doc["errors"]
    assert isinstance(errors, list) and len(errors) == 3
    for e in errors:
        assert set(e) >= {"file", "line", "column", "path", "code", "message"}
        assert e["file"] == str(path)
        assert e["line"] >= 1 and e["column"] >= 1 and e["message"]
    got = {e["path"]: (e["line"], e["column"]) for e in errors}
    assert got == where
    codes = {e["path"]: e["code"] for e in errors}
    assert codes == {"nodes.gpu-02.serial": "duplicate_serial",
                     "nodes.stor-1.bmc_mac": "mac_multicast",
                     "mkv.arrays.data.replicas": "replicas"}


def test_validate_yaml_syntax_error(inventory_file: WriteInventory, small_text: str) -> None:
    text = _edit(small_text, "  salt: {master: head-01}", "  salt: {master: head-01")
    path = inventory_file(text)
    r = run_fleet("validate", "-i", str(path))
    assert r.returncode == 1
    _no_traceback(r.stdout, r.stderr)
    m = LINE.match(r.stderr.splitlines()[0])
    assert m, r.stderr
    assert m["file"] == str(path)
    assert "YAML syntax error" in m["msg"]


def test_validate_good_inventory_exits_0(inventory_file: WriteInventory) -> None:
    path = inventory_file()
    r = run_fleet("validate", "-i", str(path))
    assert r.returncode == 0, r.stderr
    assert f"{path}: valid" in r.stdout
    _no_traceback(r.stdout, r.stderr)


def test_validate_good_inventory_json_and_quiet(inventory_file: WriteInventory) -> None:
    path = inventory_file()
    r = run_fleet("validate", "--json", "-i", str(path))
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] is True
    assert doc["summary"]["nodes"] == 7
    q = run_fleet("validate", "-q", "-i", str(path))
    assert (q.returncode, q.stdout, q.stderr) == (0, "", "")


def test_validate_the_default_inventory_from_the_repo_root() -> None:
    r = run_fleet("validate", "-q")  # -i defaults to ./inventory.yaml; cwd is the repo root
    assert (r.returncode, r.stderr) == (0, "")


def test_validate_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    r = run_fleet("validate", "-i", str(missing))
    assert r.returncode == 4  # an inventory that cannot be read: I/O, as the table says
    _no_traceback(r.stdout, r.stderr)
    first = r.stderr.splitlines()[0]
    assert first.startswith(f"{missing}:")
    assert "cannot read" in first and "No such file" in first


def test_validate_directory_and_binary_file(tmp_path: Path) -> None:
    r = run_fleet("validate", "-i", str(tmp_path))
    assert r.returncode == 4  # cannot be read: I/O
    _no_traceback(r.stdout, r.stderr)
    assert "cannot read" in r.stderr
    binary = tmp_path / "inv.yaml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    r = run_fleet("validate", "-i", str(binary))
    assert r.returncode == 1  # read, but not an inventory: invalid
    _no_traceback(r.stdout, r.stderr)
    assert "UTF-8" in r.stderr


# --- render refuses a bad inventory and writes nothing ------------------------------------------


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    out: dict[str, tuple[bytes, int]] = {}
    for dirpath, dirs, files in os.walk(root):
        for name in [*dirs, *files]:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            out[rel] = (p.read_bytes() if p.is_file() else b"<dir>", st.st_mtime_ns)
    return out


@pytest.mark.parametrize("extra", [[], ["--json"], ["--check"], ["--diff"]])
def test_render_bad_inventory_writes_nothing(
        tmp_path: Path, inventory_file: WriteInventory,
        bad: tuple[str, dict[str, tuple[int, int]]], extra: list[str]) -> None:
    out = tmp_path / "out"
    for rel, body in {"pillar/top.sls": "base: {}\n", "pillar/nodes/gpu-01.sls": "node: {}\n",
                      "pxe/dnsmasq.conf": "# old\n", "pxe/http/boot.ipxe": "#!ipxe\n"}.items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    old = 1_000_000_000_000_000_000  # 2001-09-09: any rewrite would change it
    for dirpath, dirs, files in os.walk(out):
        for name in [*dirs, *files]:
            os.utime(Path(dirpath) / name, ns=(old, old))
    os.utime(out, ns=(old, old))
    before = _snapshot(out)
    root_mtime = out.stat().st_mtime_ns

    path = inventory_file(bad[0])
    r = run_fleet("render", "-i", str(path), "-o", str(out), *extra)
    assert r.returncode == 1, (r.stdout, r.stderr)
    _no_traceback(r.stdout, r.stderr)
    assert _snapshot(out) == before
    assert out.stat().st_mtime_ns == root_mtime  # no staging directory came and went
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inventory.yaml", "out"]
    if "--json" in extra:
        assert json.loads(r.stdout)["ok"] is False
    else:
        assert "nothing was written" in r.stderr


def test_render_missing_inventory_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    r = run_fleet("render", "-i", str(tmp_path / "nope.yaml"), "-o", str(out))
    assert r.returncode == 4
    _no_traceback(r.stdout, r.stderr)
    assert not out.exists()


# --- usage -------------------------------------------------------------------------------------

HELP = [["--help"], ["validate", "--help"], ["render", "--help"], ["diff", "--help"], ["-h"],
        ["--version"]]
BAD_USAGE = [[], ["bogus"], ["validate", "--bogus"], ["render", "--check", "--diff"],
             ["validate", "-i"], ["validate", "extra-positional"]]


def _run_all(cases: list[list[str]]) -> list[tuple[list[str], Any]]:
    # each is a separate `python -m fleet` process; run them side by side to save time
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        return list(zip(cases, pool.map(lambda args: run_fleet(*args), cases), strict=True))


def test_help_exits_0() -> None:
    for args, r in _run_all(HELP):
        assert r.returncode == 0, (args, r.stderr)
        assert r.stdout.strip(), args
        _no_traceback(r.stdout, r.stderr)


def test_bad_usage_exits_2() -> None:
    for args, r in _run_all(BAD_USAGE):
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "usage:" in r.stderr, args
        _no_traceback(r.stdout, r.stderr)


def test_fixture_positions_are_what_the_cli_reports(small_text: str) -> None:
    # sanity check of the helper: _pos agrees with the loader's own positions
    src = load(small_text, "x")
    pos = src.values[("slurm", "controller")]
    assert (pos.line, pos.col) == _pos(small_text, "controller: head-01", "head-01")


# --- warnings: valid, exit 0, said ---------------------------------------------------------


def test_validate_warns_when_minions_would_not_pin_the_master(
        inventory_file: WriteInventory, small_text: str) -> None:
    """No site.salt.master_finger: a warning at site.salt saying how to record it, exit 0;
    with --json in the output; none once the fingerprint is recorded."""
    path = inventory_file(small_text)
    here = path.parent  # no ./secrets there
    r = run_fleet("validate", "-i", str(path), cwd=here)
    assert r.returncode == 0, r.stderr
    line, col = _pos(small_text, "salt: {master: head-01}")
    assert (f"warning: {path}:{line}:{col}: site.salt.master_finger: not recorded: every "
            "minion installed now trusts the first Salt master that answers it") \
        in r.stderr.splitlines()[0]
    assert "`fleet keys finger`" in r.stderr
    j = run_fleet("validate", "--json", "-i", str(path), cwd=here)
    assert j.returncode == 0 and j.stderr == ""
    assert [w["code"] for w in json.loads(j.stdout)["warnings"]] == ["no_master_finger"]
    finger = ":".join(["ab"] * 32)
    pinned = inventory_file(_edit(small_text, "salt: {master: head-01}",
                                  f'salt: {{master: head-01, master_finger: "{finger}"}}'),
                            name="pinned.yaml")
    r = run_fleet("validate", "-i", str(pinned), cwd=here)
    assert (r.returncode, r.stderr) == (0, "")


def test_validate_and_render_agree_with_a_secrets_store_here(tmp_path: Path) -> None:
    """After `fleet secrets init` (no BMC password written yet) in the working directory,
    validate and render exit 0 with the same warnings; `--secrets DIR` asks for the store
    to be checked, and then each missing password is an error."""
    from support.cli import SMALL

    init = run_fleet("secrets", "init", "-i", str(SMALL), cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert (tmp_path / "secrets" / "bmc").is_dir()
    v = run_fleet("validate", "-i", str(SMALL), cwd=tmp_path)
    r = run_fleet("render", "-i", str(SMALL), "-o", str(tmp_path / "out"), cwd=tmp_path)
    assert (v.returncode, r.returncode) == (0, 0), v.stderr + r.stderr
    warned = [w for w in v.stderr.splitlines() if w.startswith("warning: ")]
    assert warned == [w for w in r.stderr.splitlines() if w.startswith("warning: ")]
    missing = [w for w in warned if "password_secret" in w]
    assert missing and all("--secrets secrets` makes this an error" in w for w in missing)
    checked = run_fleet("validate", "-i", str(SMALL), "--secrets", "secrets", cwd=tmp_path)
    assert checked.returncode == 1
    assert len(checked.stderr.splitlines()) == len(missing) + 1  # the errors, then the count
