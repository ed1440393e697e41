"""The last results `fleet apply` and `fleet health` keep for `fleet status`
(fleet.lastrun): written atomically per node, read back checked; and the two verbs
writing them. `fleet health` runs against the fake master and controller of
tests/health/fakesite.py; `fleet apply` against a STAND-IN Salt master (below: accepted
keys, a publish, one return per node), as no master runs here (tests/swarm runs the real
one)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fleet import lastrun
from fleet.cli import main
from fleet.master.pyclient import Keys, Return
from health.fakesite import FakeSite
from support.cli import SMALL


def test_record_then_read_each_node(tmp_path: Path) -> None:
    written = lastrun.record(tmp_path / "st", "apply", [
        ("gpu-01", "failed", False, "base-x (file.managed):\x1b[31m no\nfile"),
        ("gpu-02", "ok", True, "")], ts=1000.0)
    assert written == [tmp_path / "st/gpu-01/last.json", tmp_path / "st/gpu-02/last.json"]
    got = lastrun.read(tmp_path / "st", "gpu-01", "apply")
    assert got == lastrun.Last("apply", 1000.0, "failed", False,
                               "base-x (file.managed): [31m no file")
    assert lastrun.read(tmp_path / "st", "gpu-03", "apply") is None
    assert sorted(p.name for p in (tmp_path / "st/gpu-01").iterdir()) == ["last.json"]
    assert (tmp_path / "st/gpu-01/last.json").stat().st_mode & 0o777 == 0o600
    lastrun.record(tmp_path / "st", "apply", [("gpu-01", "ok", True, "")], ts=2000.0)
    assert lastrun.read(tmp_path / "st", "gpu-01", "apply").ts == 2000.0  # type: ignore[union-attr]


@pytest.mark.parametrize("body", [b"{not json", b'{"verb": "health", "ts": 1, "status": '
                                  b'"ok", "ok": true, "summary": ""}', b'{"verb": "apply"}',
                                  b'{"verb": "apply", "ts": "x", "status": "ok", "ok": true,'
                                  b' "summary": ""}', b"[" * 70000])
def test_a_record_that_is_no_record_is_an_error_naming_the_file(tmp_path: Path,
                                                                body: bytes) -> None:
    p = tmp_path / "gpu-01" / "last.json"
    p.parent.mkdir()
    p.write_bytes(body)
    with pytest.raises(lastrun.LastError, match=str(p)):
        lastrun.read(tmp_path, "gpu-01", "apply")


def test_fleet_health_keeps_each_nodes_result(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    site = FakeSite()
    site.nodes["gpu-02"].gpus = 7
    monkeypatch.setattr("fleet.master.runner.runner_for", lambda *_a: site)
    state = tmp_path / "health"
    rc = main(["health", "-i", str(SMALL), "--state-dir", str(state), "-q"])
    assert rc == 5
    bad = lastrun.read(state, "gpu-02", "health")
    assert bad is not None and (bad.status, bad.ok) == ("unhealthy", False)
    assert "7" in bad.summary and "GPU" in bad.summary
    good = lastrun.read(state, "gpu-01", "health")
    assert good is not None and (good.status, good.ok, good.summary) == ("healthy", True, "")


class StandInMaster:
    """A STAND-IN for the Salt master of `fleet apply` (fleet.master.pyclient.Master): gpu-01
    and gpu-02 accepted, stor-1 pending; one highstate return each, on the event bus."""

    def __init__(self, _config: Path) -> None:
        self.sent: list[Return] = []

    def keys(self) -> Keys:
        return Keys(accepted=frozenset({"gpu-01", "gpu-02"}), pending=frozenset({"stor-1"}),
                    rejected=frozenset())

    def publish(self, nodes: list[str], fun: str, args: list[str],
                kwargs: dict[str, Any]) -> tuple[str, list[str]]:
        ok = {"__id__": "a", "result": True, "changes": {}, "__run_num__": 0}
        bad = {"__id__": "base-x", "result": False, "changes": {}, "__run_num__": 1,
               "comment": "Source file not found", "name": "/etc/x", "__sls__": "base"}
        self.sent = [Return("1", "gpu-01", {"file_|-a_|-/etc/a_|-managed": ok}, 0),
                     Return("1", "gpu-02", {"file_|-a_|-/etc/a_|-managed": ok,
                                            "file_|-base-x_|-/etc/x_|-managed": bad}, 2)]
        return "1", nodes

    def events(self, wait: float) -> list[Return]:
        out, self.sent = self.sent, []
        return out

    def lookup(self, jid: str) -> dict[str, Return]:
        return {}

    def running(self, jid: str, nodes: list[str], timeout: float) -> dict[str, bool]:
        return {}

    def close(self) -> None:
        pass


def test_fleet_apply_keeps_each_nodes_result_but_not_of_a_test_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("fleet.master.pyclient.SaltMaster", StandInMaster)
    state = tmp_path / "apply"
    argv = ["apply", "gpu-01,gpu-02,stor-1", "-i", str(SMALL), "--state-dir", str(state),
            "--json"]
    assert main([*argv, "--test"]) == 5
    assert not state.exists()  # a test run changes nothing, and keeps nothing
    capsys.readouterr()
    assert main(argv) == 5
    report = {n["node"]: n["status"] for n in json.loads(capsys.readouterr().out)["nodes"]}
    assert report == {"gpu-01": "ok", "gpu-02": "failed", "stor-1": "no-key"}
    got = {n: lastrun.read(state, n, "apply") for n in report}
    assert {n: (g.status, g.ok) for n, g in got.items() if g} == {
        "gpu-01": ("ok", True), "gpu-02": ("failed", False), "stor-1": ("no-key", False)}
    assert got["gpu-02"].summary == "base-x (file.managed): Source file not found"  # type: ignore[union-attr]
    assert got["stor-1"].summary == "key pending, not accepted (salt-key -a)"  # type: ignore[union-attr]


def test_an_unwritable_state_dir_is_said_and_changes_nothing_else(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("fleet.master.pyclient.SaltMaster", StandInMaster)
    blocker = tmp_path / "file"
    blocker.write_text("")
    rc = main(["apply", "gpu-01", "-i", str(SMALL), "--state-dir", str(blocker / "x"), "-q"])
    assert rc == 0
    assert "the results were not kept for `fleet status`" in capsys.readouterr().err
