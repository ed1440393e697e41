"""`fleet mkv`: the unit is stopped for the run and always started again, and a stale
unit is refused. Salt's CLI is replaced by a scripted runner here (the lab test,
tests/lab/test_mkv_ops.py, runs it through the real master; tests/salt/test_mkv_unit.py
compares the flags with the unit Salt renders); the rule against single-disk volumes is
in fleet validate."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory, parse
from fleet.master.runner import Result
from fleet.mkv.flags import array_flags, parse_exec_start
from fleet.mkv.ops import MasterHost, MkvOpError, StaleUnitError, run_maintenance
from fleet.problems import InventoryError

ROOT = Path(__file__).resolve().parents[2]
BINARY = "/usr/local/bin/mkv"


def test_maintenance_verbs_keep_replicas_and_subvolumes() -> None:
    inv = load_inventory(ROOT / "inventory.yaml")
    flags = array_flags(inv, "models")
    argv = flags.argv(BINARY, "rebuild")
    assert argv[-1] == "rebuild"
    assert argv[argv.index("-replicas") + 1] == "3"
    assert argv[argv.index("-subvolumes") + 1] == "24"
    assert argv[:-1] == flags.argv(BINARY, "server")[:-1]


def test_parse_exec_start() -> None:
    shown = ("{ path=/usr/local/bin/mkv ; argv[]=/usr/local/bin/mkv -port 3000 -db /x server"
             " ; ignore_errors=no ; start_time=[n/a] ; pid=0 ; code=(null) }")
    assert parse_exec_start(shown) == ["/usr/local/bin/mkv", "-port", "3000", "-db", "/x",
                                       "server"]
    assert parse_exec_start("") == []


class ScriptedSalt:
    """Stands in for `salt --out=json <minion> cmd.run_all ARGV`: answers by the argv's
    first words and records every call."""

    def __init__(self, minion: str, exec_start: str, verb_rc: int = 0,
                 answer: bool = True) -> None:
        self.minion, self.exec_start = minion, exec_start
        self.verb_rc, self.answer = verb_rc, answer
        self.calls: list[list[str]] = []
        self.active = True

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        cmd: list[str] = json.loads(argv[argv.index("cmd.run_all") + 1])
        self.calls.append(cmd)
        if not self.answer:
            return Result(tuple(argv), 1, "", "Minion did not return. [No response]")
        out, rc = "", 0
        if cmd[:3] == ["systemctl", "show", "-p"]:
            out = self.exec_start if cmd[3] == "ExecStart" else "mkv"
        elif cmd[:2] == ["systemctl", "stop"]:
            self.active = False
        elif cmd[:2] == ["systemctl", "start"]:
            self.active = True
        elif cmd[:2] == ["systemctl", "is-active"]:
            out = "active" if self.active else "inactive"
        else:
            assert not self.active, "mkv ran while the master unit was running"
            rc = self.verb_rc
        body = {self.minion: {"retcode": rc, "stdout": out, "stderr": "", "pid": 1}}
        return Result(tuple(argv), 0, json.dumps(body), "")


def _flags():  # type: ignore[no-untyped-def]
    return array_flags(load_inventory(ROOT / "inventory.yaml"), "cache")


def _exec_start(argv: list[str]) -> str:
    return f"{{ path={argv[0]} ; argv[]={' '.join(argv)} ; ignore_errors=no }}"


@pytest.mark.parametrize("rc", [0, 1])
def test_rebuild_stops_runs_and_always_restarts(rc: int) -> None:
    flags = _flags()
    salt = ScriptedSalt(flags.master, _exec_start(flags.argv(BINARY, "server")), verb_rc=rc)
    report = run_maintenance(MasterHost(salt, flags.master), flags, "rebuild", timeout=60,
                             say=lambda _: None)
    ran = [c for c in salt.calls if c[0] != "systemctl"]
    assert ran == [flags.argv(BINARY, "rebuild")]
    order = [c[1] if c[0] == "systemctl" else "mkv" for c in salt.calls]
    assert order[-4:] == ["stop", "mkv", "start", "is-active"]
    assert report.returncode == rc and report.restarted and report.ok == (rc == 0)


def test_stale_unit_is_refused_before_anything_stops() -> None:
    flags = _flags()
    stale = flags.argv(BINARY, "server")
    stale[stale.index("-replicas") + 1] = "3"  # upstream's default, not the array's
    salt = ScriptedSalt(flags.master, _exec_start(stale))
    with pytest.raises(StaleUnitError, match="-replicas 3"):
        run_maintenance(MasterHost(salt, flags.master), flags, "rebalance", timeout=60,
                        say=lambda _: None)
    assert all(c[1] == "show" for c in salt.calls)


def test_a_master_that_does_not_answer_is_an_error() -> None:
    flags = _flags()
    salt = ScriptedSalt(flags.master, "", answer=False)
    with pytest.raises(MkvOpError, match="did not run"):
        run_maintenance(MasterHost(salt, flags.master), flags, "rebuild", timeout=60,
                        say=lambda _: None)


def test_single_data_disk_volumes_are_rejected() -> None:
    text = (ROOT / "tests" / "fixtures" / "small.yaml").read_text(encoding="utf-8")
    old = "{role: data, kind: sata-ssd, size_gb: 7680, count: 11}"
    assert text.count(old) == 1
    text = text.replace(old, "{role: data, kind: sata-ssd, size_gb: 7680, count: 1}")
    with pytest.raises(InventoryError) as info:
        parse(text, "inventory.yaml")
    found = [p for p in info.value.problems if p.code == "single_disk"]
    assert found, [str(p) for p in info.value.problems]
    p = found[0]
    assert p.path == "mkv.arrays.data" and "OS disk" in p.message
    line = text.splitlines()[p.pos.line - 1]
    assert line.strip().startswith("data:"), line
