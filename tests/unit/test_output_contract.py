"""The output contract of every verb (docs/output.md): with --json, exactly one JSON
document on stdout, on success and on failure, valid against docs/output.schema.json,
and the exit code of fleet.exitcodes' table, one meaning per code. Every verb of the
registry is run as a user runs it (a subprocess), none skipped."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fleet.commands import VERBS
from fleet.exitcodes import Exit
from support.cli import ROOT, SMALL
from support.schema import problems

SCHEMA = json.loads((ROOT / "docs" / "output.schema.json").read_text(encoding="utf-8"))

# every verb (its action where it has some) with what it needs besides the inventory
ARGV: dict[str, list[str]] = {
    "validate": [], "render": ["-o", "{tmp}/out"], "diff": ["-o", "{tmp}/out"],
    "secrets": ["init", "--secrets", "{tmp}/secrets"],
    "apply": ["gpu-01"], "health": ["gpu-01"],
    "status": ["gpu-01", "--no-power", "--no-alerts"],
    "rollout": ["gpu-01", "--state-dir", "{tmp}/rollout"],
    "reinstall": ["gpu-01", "--state-dir", "{tmp}/reinstall"],
    "endpoint": ["--bind", "127.0.0.1:0", "--state-dir", "{tmp}/reinstall"],
    "pxe": ["status"], "power": ["status", "gpu-01"], "console": ["gpu-01"],
    "node": ["list"], "ports": [], "cabling": ["gpu-01"], "keys": ["check"],
    "discover": ["list", "--reports", "{tmp}/reports"],
    "burnin": ["status", "--results", "{tmp}/burnin"],
    "page": ["--out", "{tmp}/page"],
    "mkv": ["show", "data"], "repo": ["list", "--repo", "{tmp}/repo"], "lab": ["status"],
    "log": ["--log", "{tmp}/audit.jsonl"],
    "backup": ["check", "--password-file", "{tmp}/key"],
    "restore": ["--root", "{tmp}/root", "--password-file", "{tmp}/key"],
}
# the verbs whose first contact is the Salt master (rollout and reinstall first ask
# Slurm and the BMCs), each as it asks it
MASTER = [["apply", "gpu-01"], ["health", "gpu-01"],
          ["status", "gpu-01", "--live", "--no-power", "--no-alerts"], ["keys", "check"],
          ["keys", "finger"], ["mkv", "rebuild", "data"], ["cabling", "gpu-01"]]


def fleet(argv: list[str], tmp: Path, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT / "tools"), **(env or {})}
    args = [a.replace("{tmp}", str(tmp)) for a in argv]
    return subprocess.run([sys.executable, "-m", "fleet", *args], capture_output=True,
                          text=True, timeout=120, check=False, env=full, cwd=cwd or tmp)


def document(r: subprocess.CompletedProcess[str], verb: str) -> dict[str, Any]:
    """The one document on stdout, checked against the schema and the exit code."""
    doc = json.loads(r.stdout)  # one document: json.loads refuses anything after it
    assert isinstance(doc, dict), r.stdout
    assert problems(SCHEMA, doc) == [], (r.stdout, r.stderr)
    assert doc["verb"] == verb and doc["exit"] == r.returncode
    assert doc["ok"] is (r.returncode == 0)
    return doc


def test_every_verb_of_the_registry_is_run_here() -> None:
    assert set(ARGV) == set(VERBS)


@pytest.mark.parametrize("verb", [v for v in VERBS if v != "lab"])
def test_a_missing_inventory_is_one_json_document_and_exit_4(verb: str, tmp_path: Path) -> None:
    r = fleet([verb, *ARGV[verb], "-i", str(tmp_path / "nope.yaml"), "--json"], tmp_path)
    assert r.returncode == Exit.IO, (r.stdout, r.stderr)
    doc = document(r, verb)
    assert any("cannot read" in e["message"] for e in doc["errors"]), doc


def test_lab_refused_is_one_json_document(tmp_path: Path) -> None:
    """lab takes no -i (its inventory is the checkout's); a LAB_OS that is none is a usage
    error, refused before any container is touched."""
    r = fleet(["lab", "status", "--json"], tmp_path, env={"LAB_OS": "no-such-os"})
    assert r.returncode == Exit.USAGE, (r.stdout, r.stderr)
    assert "no-such-os" in document(r, "lab")["errors"][0]["message"]


@pytest.mark.parametrize("argv", MASTER, ids=" ".join)
def test_an_unreachable_master_is_one_json_document_and_exit_4(argv: list[str],
                                                               tmp_path: Path) -> None:
    """$FLEET_SALT_CONFIG names a config dir of no running master: every verb that asks
    the master says so in its document and exits 4 (mkv exited 5, as a failed step)."""
    conf = tmp_path / "salt"
    conf.mkdir()
    r = fleet([*argv, "-i", str(SMALL), "--json"], tmp_path,
              env={"FLEET_SALT_CONFIG": str(conf)})
    assert r.returncode == Exit.IO, (r.stdout, r.stderr)
    assert document(r, argv[0])["errors"]


SALT_VERBS = [["apply"], ["health"], ["status"], ["rollout"], ["reinstall", "gpu-01"],
              ["endpoint"], ["power", "status", "gpu-01"], ["cabling"], ["keys", "check"],
              ["keys", "finger"], ["mkv", "rebuild", "data"], ["mkv", "rebalance", "data"]]


@pytest.mark.parametrize("argv", SALT_VERBS, ids=" ".join)
def test_every_verb_that_talks_to_the_master_honours_fleet_salt_config(
        argv: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from fleet.cli import build_parser

    monkeypatch.setenv("FLEET_SALT_CONFIG", str(tmp_path))
    args = build_parser(argv).parse_args(argv)
    assert args.salt_config == tmp_path
    monkeypatch.delenv("FLEET_SALT_CONFIG")
    assert build_parser(argv).parse_args(argv).salt_config == Path("/etc/salt")


def _held(lock: Path) -> int:
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


# each code of the table, reached as a user reaches it, and what it then means
REACH: dict[Exit, list[str]] = {
    Exit.OK: ["validate", "-i", str(SMALL)],
    Exit.INVALID: ["validate", "-i", "{tmp}/bad.yaml"],
    Exit.USAGE: ["node", "list", "nosuch-node", "-i", str(SMALL)],
    Exit.DIFFERS: ["render", "--check", "-o", "{tmp}/out", "-i", str(SMALL)],
    Exit.IO: ["validate", "-i", "{tmp}/nope.yaml"],
    Exit.FAILED: ["power", "status", "gpu-01", "--secrets", "{tmp}", "-i", str(SMALL)],
    Exit.BUSY: ["rollout", "gpu-01", "--state-dir", "{tmp}/rollout", "-i", str(SMALL)],
}


@pytest.mark.parametrize("code", list(REACH), ids=lambda c: c.name)
def test_each_exit_code_is_reached_with_its_one_meaning(code: Exit, tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text("site: 1\n")
    fd = _held(tmp_path / "rollout" / "lock") if code is Exit.BUSY else -1
    try:
        r = fleet([*REACH[code], "--json"], tmp_path)
    finally:
        if fd >= 0:
            os.close(fd)
    assert r.returncode == code, (r.stdout, r.stderr)
    doc = document(r, REACH[code][0])
    said = " ".join(e["message"] for e in doc["errors"])
    meaning = {Exit.INVALID: "is missing", Exit.USAGE: "nosuch-node", Exit.IO: "cannot read",
               Exit.BUSY: "another `fleet rollout` is running"}
    assert meaning.get(code, "") in said
    if code is Exit.FAILED:
        assert doc["nodes"][0]["status"] == "failed" and doc["nodes"][0]["problems"]
    if code is Exit.DIFFERS:
        assert doc["added"]


# every verb that takes a TARGET, as its argv before the target
TARGETED = {"apply": ["apply"], "cabling": ["cabling"], "health": ["health"],
            "node": ["node", "list"], "power": ["power", "status"], "status": ["status"],
            "rollout": ["rollout"]}


@pytest.mark.parametrize("verb", list(TARGETED))
def test_a_target_that_names_no_node_is_a_usage_error_of_every_verb(
        verb: str, tmp_path: Path) -> None:
    """One path from TARGET to hostnames (Context.targets): no verb asks the master or a
    BMC for a node that is not in the inventory."""
    r = fleet([*TARGETED[verb], "nosuch-node", "--state-dir", str(tmp_path / "state"),
               "-i", str(SMALL), "--json"] if verb in ("apply", "health", "rollout")
              else [*TARGETED[verb], "nosuch-node", "-i", str(SMALL), "--json"], tmp_path)
    assert r.returncode == Exit.USAGE, (r.stdout, r.stderr)
    assert "fleet: target: " in r.stderr and "nosuch-node" in r.stderr
    assert "nosuch-node" in document(r, verb)["errors"][0]["message"]


def test_a_usage_error_is_exit_2_with_its_document(tmp_path: Path) -> None:
    """argparse's own refusals too: not a number where one is wanted."""
    r = fleet(["apply", "--batch", "x", "-i", str(SMALL), "--json"], tmp_path)
    assert r.returncode == Exit.USAGE
    assert "--batch" in document(r, "apply")["errors"][0]["message"]
    assert "usage: fleet apply" in r.stderr


def test_a_bug_is_exit_70_with_its_document(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """No input reaches a bug on purpose: a verb that raises one stands in for it."""
    from fleet import cli
    from fleet.commands import validate

    def broken(*_: object) -> Exit:
        raise RuntimeError("a stand-in bug")

    monkeypatch.setattr(validate, "run", broken)
    assert cli.main(["validate", "-i", str(SMALL), "--json"]) == Exit.INTERNAL
    doc = json.loads(capsys.readouterr().out)
    assert problems(SCHEMA, doc) == [] and doc["exit"] == 70
    assert "a stand-in bug" in doc["errors"][0]["message"]


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, Exit.INTERRUPTED),
                                           (signal.SIGTERM, Exit.TERMINATED)])
def test_a_signal_ends_a_run_with_its_code_of_the_table(sig: signal.Signals, code: Exit,
                                                        tmp_path: Path) -> None:
    """`fleet endpoint` serves until a signal ends it: 128 + the signal, as in the table."""
    (tmp_path / "salt").mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fleet", "endpoint", "-i", str(SMALL), "--bind",
         "127.0.0.1:0", "--state-dir", str(tmp_path / "state"), "--salt-config",
         str(tmp_path / "salt"), "-v", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    said = ""
    while "serving on" not in said and time.monotonic() < deadline:
        said += proc.stderr.readline()
    assert "serving on" in said, said
    proc.send_signal(sig)
    out, _err = proc.communicate(timeout=30)
    assert proc.returncode == code
    assert json.loads(out)["exit"] == code
