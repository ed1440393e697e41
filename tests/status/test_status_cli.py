"""``fleet status`` as an operator runs it (the real command line, a separate process) on
the small inventory: Salt's real key store (salt.key) on a throw-away pki dir, STAND-INS
for the salt CLI and scontrol (tests/status/site.py), a real HTTP server as Prometheus,
the PXE links, the results `fleet apply` and `fleet health` keep, a reinstall's real lock
and journal.
Each source once for all nodes; a source that fails leaves its column unknown with the
reason and the others still show."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from fleet import lastrun
from fleet.master.journal import Journal
from fleet.master.lock import NodeLock
from ops.helpers import arm_install
from status.site import ALL, Prometheus, firing, make_site, nodes
from support.cli import SMALL


def test_every_source_joined_each_problem_named_problems_first(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    site.key("gpu-02", "minions_pre")
    site.answering.remove("gpu-03")
    site.slurm["gpu-04"] = ("DOWN*", "Not responding")
    arm_install(tmp_path / "pxe-state", "52:54:00:00:00:65")  # gpu-01
    lastrun.record(tmp_path / "apply", "apply", [
        ("stor-1", "failed", False, "base-x (file.managed): Source file not found"),
        ("head-01", "changed", True, "")], ts=time.time() - 3700)
    lastrun.record(tmp_path / "health", "health", [("head-01", "healthy", True, "")])
    prom = Prometheus([firing("NodeDiskFull", "stor-2", "/srv/mkv/sv03 is 97% full")])
    try:
        rc, doc, err = site.run(prometheus=prom.url)
    finally:
        prom.close()
    assert rc == 5, err
    got = nodes(doc)
    order = [n["node"] for n in doc["nodes"]]
    assert order == ["gpu-01", "gpu-02", "gpu-03", "gpu-04", "stor-1", "stor-2", "head-01"]
    assert got["gpu-01"]["problems"][0].startswith("boot mode install")
    assert got["gpu-01"]["boot"] == {"mode": "install", "error": None}
    assert got["gpu-02"]["key"] == "pending"
    assert got["gpu-02"]["problems"] == ["minion key pending (not accepted on the master)"]
    assert got["gpu-03"]["minion"] == "not connected"  # the master's own view: no job
    assert got["gpu-03"]["problems"] == ["minion not connected to the master"]
    reason = "Not responding [root@2026-12-01T09:40:00]"  # as scontrol prints it
    assert got["gpu-04"]["slurm"] == {"state": "DOWN*", "reason": reason}
    assert got["gpu-04"]["problems"] == [f"slurm DOWN*: {reason}"]
    assert got["stor-1"]["apply"]["status"] == "failed"
    assert got["stor-1"]["problems"] == [
        "last apply failed (1h ago): base-x (file.managed): Source file not found"]
    assert got["stor-2"]["problems"] == [
        "alert NodeDiskFull (critical): /srv/mkv/sv03 is 97% full"]
    assert got["head-01"]["status"] == "ok"
    assert got["head-01"]["apply"]["status"] == "changed"
    assert got["head-01"]["health"]["status"] == "healthy"
    assert doc["counts"] == {"ok": 1, "problem": 6, "unknown": 0}
    # each source once, for all the nodes together; no job reached a minion
    calls = sorted(c.split()[0] for c in site.calls())
    assert calls == ["salt-run", "scontrol"], site.calls()


def test_ping_asks_every_minion_with_one_test_ping_job(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    site.answering.remove("gpu-03")
    rc, doc, err = site.run("--ping")
    assert rc == 5, err
    got = nodes(doc)
    assert got["gpu-03"]["minion"] == "silent"
    assert got["gpu-03"]["problems"] == ["minion does not answer test.ping"]
    assert got["gpu-01"]["minion"] == "answers"
    salt = [c for c in site.calls() if c.split()[0] in ("salt", "salt-run")]
    assert len(salt) == 1 and " test.ping " in f" {salt[0]} ", salt
    rc, _doc, err = site.run("--ping", live=False)  # a ping is asked now, or not at all
    assert rc == 2 and "--ping is for --live" in err


def test_all_ok_exits_0_and_an_unreachable_prometheus_is_a_note(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    rc, doc, err = site.run(prometheus="http://127.0.0.1:9")  # nothing listens there
    assert rc == 0, err
    assert doc["ok"] is True and doc["counts"] == {"ok": 7, "problem": 0, "unknown": 0}
    assert doc["sources"]["alerts"]["skipped"] == "Prometheus did not answer"
    assert len(doc["notes"]) == 1 and doc["notes"][0].startswith(
        "alerts not shown: http://127.0.0.1:9/api/v1/alerts")
    assert [n["node"] for n in doc["nodes"]] == ALL  # inventory order when all is well


def test_master_unreachable_exits_4_and_the_other_columns_still_show(
        tmp_path: Path) -> None:
    site = make_site(tmp_path)
    site.salt_broken = True
    arm_install(tmp_path / "pxe-state", "52:54:00:00:00:66")  # gpu-02
    for d in ("minions", "minions_pre", "minions_rejected", "minions_denied"):
        for f in (site.pki / d).iterdir():
            f.unlink()
        (site.pki / d).rmdir()  # not this master's pki: salt-key would list nothing
    rc, doc, err = site.run()
    assert rc == 4, err
    assert "the Salt master could not be asked" in err
    assert "no such directory" in doc["sources"]["key"]["error"]
    assert "Salt request timed out" in doc["sources"]["minion"]["error"]
    got = nodes(doc)
    assert got["gpu-01"]["status"] == "unknown"
    assert set(got["gpu-01"]["unknown"]) == {"key", "minion"}
    assert got["gpu-01"]["slurm"] == {"state": "IDLE", "reason": ""}
    assert got["gpu-02"]["status"] == "problem"  # what is known still counts
    assert got["gpu-02"]["boot"]["mode"] == "install"


def test_slurm_unreachable_leaves_its_column_unknown(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    site.slurm_broken = True
    rc, doc, err = site.run()
    assert rc == 0, err  # unknown is said, not failed
    assert "Unable to contact slurm controller" in doc["sources"]["slurm"]["error"]
    got = nodes(doc)
    assert got["gpu-01"]["status"] == "unknown" and got["gpu-01"]["unknown"] == ["slurm"]
    assert got["stor-1"]["status"] == "ok"  # no Slurm node: nothing unknown about it
    rc, doc, err = site.run("gpu-01")  # the table names the reason
    assert doc["target"] == "gpu-01" and list(nodes(doc)) == ["gpu-01"]


def test_the_pxe_state_missing_leaves_boot_unknown(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    (tmp_path / "pxe-state").rmdir()
    rc, doc, err = site.run()
    assert rc == 0, err
    assert "no PXE state directory on this host" in doc["sources"]["boot"]["error"]
    assert all(n["unknown"] == ["boot"] for n in doc["nodes"])


def test_reinstall_running_and_unfinished_and_a_garbled_record(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    arm_install(tmp_path / "pxe-state", "52:54:00:00:00:65")  # gpu-01: being reinstalled
    j = Journal(tmp_path / "reinstall" / "gpu-03")
    j.append("run", run="r7", mode="new")
    j.append("step", run="r7", step="power", phase="end", outcome="failed")
    (tmp_path / "apply" / "stor-2").mkdir()
    (tmp_path / "apply" / "stor-2" / "last.json").write_text("{not json")
    with NodeLock(tmp_path / "reinstall" / "gpu-01", "fleet reinstall"):
        rc, doc, err = site.run()
    assert rc == 5, err
    got = nodes(doc)
    assert got["gpu-01"]["status"] == "ok", got["gpu-01"]  # install is meant: it is held
    assert got["gpu-01"]["work"]["running"].startswith("fleet reinstall (pid ")
    assert got["gpu-03"]["problems"] == [
        "reinstall r7 unfinished at power: `fleet reinstall gpu-03 --resume` or `--abort`"]
    [p] = got["stor-2"]["problems"]
    assert p.startswith(f"last apply unreadable: {tmp_path / 'apply/stor-2/last.json'}: ")
    assert "rerun `fleet apply` on stor-2" in p


def test_the_default_target_leaves_planned_nodes_out_and_says_so(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    overlay = tmp_path / "planned.yaml"
    overlay.write_text("nodes:\n  gpu-04: {state: planned}\n")
    rc, doc, err = site.run("--overlay", str(overlay))
    assert rc == 0, err
    assert "gpu-04" not in nodes(doc)
    assert doc["left_out"] == {"planned": ["gpu-04"]}
    assert "left out of the default target: 1 planned (gpu-04)" in err
    rc, doc, err = site.run("gpu-04", "--overlay", str(overlay))
    assert nodes(doc)["gpu-04"]["state"] == "planned"


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    site.write_standins()
    from support.cli import SMALL, run_fleet

    assert run_fleet("status", "-i", str(SMALL), "gpu-99").returncode == 2
    assert run_fleet("status", "-i", str(SMALL), "--parallel", "0").returncode == 2


def test_boot_modes_through_pxe_command_in_one_call(tmp_path: Path) -> None:
    """--pxe-command: the real `fleet pxe status NODES --json`, once for all nodes, run by
    a wrapper as `ssh head-01 fleet` would (here: this checkout's fleet, the small
    inventory, the test's PXE state); a command that fails leaves the column unknown."""
    site = make_site(tmp_path)
    arm_install(tmp_path / "pxe-state", "52:54:00:00:00:65")  # gpu-01
    log = tmp_path / "pxe-calls.log"
    wrapper = tmp_path / "pxe-host"
    wrapper.write_text(f"#!/bin/sh\necho \"$@\" >> {log}\nexec {sys.executable} -m fleet \"$@\" "
                       f"-i {SMALL} --pxe-state {tmp_path / 'pxe-state'}\n")
    wrapper.chmod(0o755)
    rc, doc, err = site.run("--pxe-command", str(wrapper))
    assert rc == 5, err
    got = nodes(doc)
    assert got["gpu-01"]["boot"] == {"mode": "install", "error": None}
    assert got["gpu-02"]["boot"] == {"mode": "local", "error": None}
    assert doc["nodes"][0]["node"] == "gpu-01"
    assert len(log.read_text().splitlines()) == 1  # one call for the seven nodes
    rc, doc, err = site.run("--pxe-command", "false")
    assert rc == 0, err
    assert "boot mode: `false pxe status ... --json` exited 1" in doc["sources"]["boot"]["error"]
    assert all(n["unknown"] == ["boot"] for n in doc["nodes"])
