"""The master as the site renders it, against a swarm of real minions: every minion
returns, for test.ping and for a real state.apply, and fleet apply names the one that
cannot."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fleet.apply.run import Options, apply
from fleet.master.highstate import Status
from fleet.master.pyclient import SaltMaster
from support import swarmconf
from support.swarm import Swarm


def _apply(sw: Swarm, ids: list[str], opts: Options) -> dict[str, Status]:
    master = SaltMaster(sw.config_dir)
    try:
        return {r.node: r.status for r in apply(master, ids, opts, lambda _m: None)}
    finally:
        master.close()


def test_master_config_is_the_rendered_one(swarm: Swarm) -> None:
    import yaml

    conf = yaml.safe_load((swarm.config_dir / "master.d" / "fleet.conf").read_text())
    assert conf["auto_accept"] is False and conf["open_mode"] is False
    assert conf["file_roots"]["base"] == [str(swarmconf.ROOT / "salt")]
    assert conf["pillar_roots"]["base"][0] == str(swarmconf.ROOT / "pillar")


def test_every_minion_returns_test_ping_ten_times(swarm: Swarm) -> None:
    for run in range(10):
        got = _apply(swarm, swarm.ids, Options(fun="test.ping", timeout=120))
        missing = sorted(n for n, s in got.items() if s is not Status.OK)
        assert not missing, f"run {run}: no test.ping return from {missing}"


def test_every_minion_applies_a_real_state(swarm: Swarm) -> None:
    got = _apply(swarm, swarm.ids, Options(args=("swarm-cheap", "saltenv=swarm"),
                                           timeout=300))
    bad = {n: s.value for n, s in got.items() if s.bad}
    assert not bad
    for mid in swarm.ids:  # the state really ran, on each minion, as that minion
        assert (swarm.minion_dir(mid) / "cache" / "swarm-cheap").read_text().strip() == mid
    again = _apply(swarm, swarm.ids, Options(args=("swarm-cheap", "saltenv=swarm"),
                                             timeout=300))
    assert set(again.values()) == {Status.OK}  # nothing left to change


def test_batch_window_accounts_for_every_minion(swarm: Swarm) -> None:
    got = _apply(swarm, swarm.ids, Options(fun="test.ping", batch=7, timeout=120))
    assert sorted(got) == sorted(swarm.ids)
    assert set(got.values()) == {Status.OK}


def test_fleet_apply_names_a_stopped_minion_and_a_node_without_key(swarm: Swarm) -> None:
    up, stopped = swarm.ids[1], swarm.ids[2]
    no_key = next(n for n in swarmconf.render_ids() if n not in swarm.ids)
    swarm.stop_minions([stopped])
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "fleet", "apply", f"{up},{stopped},{no_key}", "--test",
             "--json", "--timeout", "60", "--salt-config", str(swarm.config_dir),
             "-i", str(swarmconf.ROOT / "inventory.yaml")],
            capture_output=True, text=True, timeout=600, cwd=Path(swarmconf.ROOT))
    finally:
        swarm.start_minions([stopped])
    assert proc.returncode == 5, proc.stderr
    nodes = {n["node"]: n for n in json.loads(proc.stdout)["nodes"]}
    assert nodes[stopped]["status"] == "no-return"
    assert "never answered find_job" in nodes[stopped]["why"]
    assert nodes[no_key]["status"] == "no-key"
    assert nodes[up]["status"] in ("ok", "changed", "failed")  # it returned
    assert nodes[up]["states"] > 10  # its whole highstate, compiled and checked


def test_fleet_apply_keeps_what_it_found_and_fleet_status_shows_it(
        swarm: Swarm, tmp_path: Path) -> None:
    """A real `fleet apply` (no --test) of a stopped minion and a node without a key:
    nothing is applied anywhere, and each result is kept in --state-dir; `fleet status`
    then shows both, with the minion silent and the key missing, first."""
    up, stopped = swarm.ids[3], swarm.ids[4]
    no_key = next(n for n in swarmconf.render_ids() if n not in swarm.ids)
    inventory = str(swarmconf.ROOT / "inventory.yaml")
    state = tmp_path / "apply"
    swarm.stop_minions([stopped])
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "fleet", "apply", f"{stopped},{no_key}", "--json",
             "--timeout", "60", "--salt-config", str(swarm.config_dir), "-i", inventory,
             "--state-dir", str(state)],
            capture_output=True, text=True, timeout=600, cwd=Path(swarmconf.ROOT))
        assert proc.returncode == 5, proc.stderr
        kept = {n: json.loads((state / n / "last.json").read_text())
                for n in (stopped, no_key)}
        assert (kept[stopped]["status"], kept[no_key]["status"]) == ("no-return", "no-key")
        status = subprocess.run(
            [sys.executable, "-m", "fleet", "status", f"{up},{stopped},{no_key}", "--json",
             # --ping: every swarm minion connects from 127.0.0.1, which the master's own
             # view (manage.alived matches peers by address) cannot tell apart
             "--live", "--ping", "--no-power", "--no-alerts",
             "--salt-config", str(swarm.config_dir),
             "-i", inventory, "--apply-state-dir", str(state), "--pxe-state", str(tmp_path),
             "--reinstall-state-dir", str(tmp_path / "r"),
             "--rollout-state-dir", str(tmp_path / "o"),
             "--slurm-command", "false", "--salt-timeout", "20"],
            capture_output=True, text=True, timeout=600, cwd=Path(swarmconf.ROOT))
    finally:
        swarm.start_minions([stopped])
    doc = json.loads(status.stdout)
    got = {n["node"]: n for n in doc["nodes"]}
    assert [n["node"] for n in doc["nodes"]][2] == up  # the two problems first
    assert got[stopped]["minion"] == "silent" and got[stopped]["key"] == "accepted"
    assert got[stopped]["apply"]["status"] == "no-return"
    assert got[no_key]["key"] == "missing" and got[no_key]["apply"]["status"] == "no-key"
    assert got[up]["minion"] == "answers" and got[up]["apply"] is None
