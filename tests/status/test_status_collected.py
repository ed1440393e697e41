"""``fleet status`` from the collector, through the real command line (tests/status/site.py:
the real salt-key, STAND-INS for salt, salt-run and scontrol): ``--collect --once`` fills
the cache (minion presence from ``salt-run manage.alived``, no test.ping job); ``fleet
status`` then reads it, asking none of those sources, each column with its age; a stale
source is unknown, never its last value; ``--live`` asks them now; the long-running
collector as a real process, stopped by SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from status.site import Site, make_site, nodes
from support.cli import SMALL


def _salt_calls(site: Site) -> list[str]:
    return [c for c in site.calls() if c.split()[0] in ("salt", "salt-run")]


def test_collect_once_then_status_reads_the_cache_with_ages(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    site.answering.remove("gpu-03")
    rc, doc, err = site.run("--collect", "--once", live=False)
    assert rc == 0 and doc["ok"] is True and doc["failed"] == {}, err
    salt = _salt_calls(site)
    assert len(salt) == 1 and salt[0].endswith("manage.alived --out=json"), salt  # no job
    (tmp_path / "calls.log").unlink()
    site.key("gpu-02", "minions_pre")  # after the collection: the cache does not know yet
    rc, doc, err = site.run(live=False)
    assert rc == 5, err
    assert site.calls() == []  # salt, salt-run, scontrol: none asked
    got = nodes(doc)
    assert got["gpu-03"]["minion"] == "not connected"
    assert got["gpu-03"]["problems"] == ["minion not connected to the master"]
    assert got["gpu-01"]["minion"] == "connected" and got["gpu-02"]["key"] == "accepted"
    assert got["gpu-04"]["slurm"] == {"state": "IDLE", "reason": ""}
    for name in ("boot", "key", "minion", "slurm"):
        col = doc["sources"][name]
        assert col["error"] is None and 0 <= col["age_s"] < 120, (name, col)
    assert doc["sources"]["apply"]["age_s"] is None  # read now, as always
    rc, doc, err = site.run()  # --live: asked now, the minions from the master's view
    assert rc == 5 and nodes(doc)["gpu-02"]["key"] == "pending", err
    assert nodes(doc)["gpu-03"]["minion"] == "not connected"
    rc, doc, err = site.run("--ping")  # --live --ping: a test.ping job on each
    assert rc == 5 and nodes(doc)["gpu-03"]["minion"] == "silent", err
    argv, env = site.argv(live=False, json_out=False)
    table = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, timeout=60)
    line = [x for x in table.stdout.splitlines() if x.startswith("from the collector")]
    assert line and "key " in line[0] and " ago" in line[0], table.stdout


def test_a_stale_source_is_unknown_never_its_last_value(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    rc, _doc, err = site.run("--collect", "--once", live=False)
    assert rc == 0, err
    cache = tmp_path / "status" / "collected.json"
    entries = json.loads(cache.read_text())
    old = time.time() - 3600  # the key source last answered an hour ago, and failed since
    entries["key"] |= {"at": old, "tried": time.time() - 10, "error": "salt-key timed out"}
    cache.write_text(json.dumps(entries))
    rc, doc, err = site.run(live=False)
    assert rc == 0, err  # unknown does not fail
    key = doc["sources"]["key"]
    assert key["error"] == "stale: last answer 1h ago; last try: salt-key timed out", key
    assert key["age_s"] >= 3600
    for n in doc["nodes"]:
        assert n["key"] == {"unknown": key["error"]} and "key" in n["unknown"], n
    assert doc["sources"]["minion"]["error"] is None


def test_no_cache_says_where_and_what_to_run(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    rc, doc, err = site.run(live=False)
    assert rc == 0, err
    assert doc["counts"]["unknown"] == 7
    why = doc["sources"]["minion"]["error"]
    assert why.startswith(f"no collector cache at {tmp_path / 'status' / 'collected.json'}")
    assert "--live" in why and doc["sources"]["apply"]["error"] is None


def test_the_collector_runs_until_sigterm(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    argv, env = site.argv("--collect", "-v", live=False, json_out=False)
    cache = tmp_path / "status" / "collected.json"
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if cache.exists() and {"key", "minion", "slurm", "boot"} <= set(
                    json.loads(cache.read_text() or "{}")):
                break
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "4 of 4 source(s) answered" in out, (out, err)
    assert "minion: 7 value(s)" in err


def test_the_collector_stops_when_the_inventory_changes_and_says_a_failing_source(
        tmp_path: Path) -> None:
    """Its unit starts it again (Restart=always), on the new inventory's nodes."""
    site = make_site(tmp_path)
    site.slurm_broken = True
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(SMALL.read_text())
    argv, env = site.argv("--collect", live=False, json_out=False, inventory=inventory)
    cache = tmp_path / "status" / "collected.json"
    proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and not cache.exists():
            time.sleep(0.2)
        time.sleep(1.0)  # the other sources' first answers
        with inventory.open("a") as f:
            f.write("# an edit\n")
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert f"{inventory} changed: stopping" in err
    assert "fleet status --collect: slurm: no answer: `scontrol show node` exited 1" in err
    assert json.loads(cache.read_text())["slurm"]["error"].startswith("`scontrol show node`")
