"""``fleet cabling`` as an operator runs it (the real command line, a separate process) on
the small inventory, with a STAND-IN for the salt CLI (tests/cabling/site.py): one salt
call for the whole target, bounded; the table with problems first and --json; the exit
codes; what a minion sends never reaching the terminal raw."""

from __future__ import annotations

import json
from pathlib import Path

from cabling.site import ALL, Site, lldp_doc, run_all


def test_cabled_as_inventoried_is_ok_with_one_bounded_salt_call(tmp_path: Path) -> None:
    site = Site(tmp_path)
    rc, out, err = site.run()
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["ok"] is True and doc["target"] == "*"
    assert {v["node"]: v["verdict"] for v in doc["nodes"]} == dict.fromkeys(ALL, "ok")
    assert doc["counts"] == {"ok": 7}
    gpu1 = next(f for f in doc["findings"] if f["node"] == "gpu-01")
    assert gpu1 == {"node": "gpu-01", "interface": "prov", "status": "ok",
                    "expected": {"switch": "sw1", "port": 1},
                    "found": {"switch": "sw1", "port": 1, "port_id": "ethernet1/1/1"}}
    (call,) = site.calls()
    assert call[call.index("-L") + 1].split(",") == ALL
    assert call[call.index("cmd.run_all") + 1] == "lldpcli -f json show neighbors"
    assert "-t7" in call and "--static" not in call  # no batch mode: no extra ping job


def test_a_swap_names_exactly_the_two_nodes_with_expected_and_found(tmp_path: Path) -> None:
    site = Site(tmp_path)
    site.answers["gpu-01"] = run_all(lldp_doc(("prov", "sw1", "ethernet1/1/2")))
    site.answers["gpu-02"] = run_all(lldp_doc(("prov", "sw1", "ethernet1/1/1")))
    rc, out, err = site.run()
    assert rc == 5, err
    doc = json.loads(out)
    bad = {f["node"]: f for f in doc["findings"] if f["status"] != "ok"}
    assert set(bad) == {"gpu-01", "gpu-02"}
    assert bad["gpu-01"]["status"] == "wrong_port"
    assert bad["gpu-01"]["expected"] == {"switch": "sw1", "port": 1}
    assert bad["gpu-01"]["found"]["port"] == 2
    assert [f["node"] for f in doc["findings"][:2]] == ["gpu-01", "gpu-02"]  # problems first
    rc, table, _ = site.run(json_out=False)
    lines = table.splitlines()
    assert rc == 5 and lines[0].split() == ["NODE", "NIC", "STATUS", "EXPECTED", "FOUND"]
    assert lines[1].split()[:6] == ["gpu-01", "prov", "WRONG", "PORT", "sw1", "port"]
    assert "sw1 port 2 (ethernet1/1/2)" in lines[1]
    assert lines[-1].startswith("7 link(s): 2 wrong port, 5 ok")


def test_target_asks_only_its_nodes(tmp_path: Path) -> None:
    site = Site(tmp_path)
    site.answers["stor-1"] = run_all(lldp_doc())  # nothing heard: not in the target
    rc, out, err = site.run("gpu-0[1-2],head-01")
    assert rc == 0, err
    doc = json.loads(out)
    assert {v["node"] for v in doc["nodes"]} == {"gpu-01", "gpu-02", "head-01"}
    assert {f["node"] for f in doc["findings"]} == {"gpu-01", "gpu-02", "head-01"}
    (call,) = site.calls()
    assert sorted(call[call.index("-L") + 1].split(",")) == ["gpu-01", "gpu-02", "head-01"]


def test_a_target_naming_no_node_is_usage_and_asks_nothing(tmp_path: Path) -> None:
    site = Site(tmp_path)
    rc, _out, err = site.run("nosuch-01")
    assert rc == 2 and "nosuch-01" in err
    assert site.calls() == []


def test_master_down_is_exit_4(tmp_path: Path) -> None:
    site = Site(tmp_path)
    site.salt_broken = True
    rc, _out, err = site.run()
    assert rc == 4 and "master is not responding" in err


def test_a_master_the_cli_cannot_reach_is_exit_4_though_it_exits_0(tmp_path: Path) -> None:
    """Not "no minion answered" (exit 5): the salt CLI's own message, one JSON string
    where the minions' answers would be, is the master's failure."""
    site = Site(tmp_path)
    site.salt_unreachable = True
    rc, _out, err = site.run()
    assert rc == 4 and "could not be contacted" in err, err


def test_silent_minion_and_stopped_lldpd_are_not_observed(tmp_path: Path) -> None:
    site = Site(tmp_path)
    del site.answers["stor-2"]
    site.answers["stor-1"] = run_all("", 1, "unable to connect to socket /run/lldpd.socket")
    site.answers["gpu-04"] = run_all(lldp_doc())
    rc, out, _ = site.run()
    doc = json.loads(out)
    assert rc == 5 and doc["ok"] is False
    nodes = {v["node"]: v for v in doc["nodes"]}
    assert nodes["stor-2"] == {"node": "stor-2", "status": "unknown", "seconds": None,
                               "problems": ["the minion did not answer"],
                               "verdict": "unknown", "error": "the minion did not answer"}
    assert nodes["stor-1"]["verdict"] == "unknown"
    assert "lldpcli exited 1" in nodes["stor-1"]["error"]
    assert "is lldpd running" in nodes["stor-1"]["error"]
    assert nodes["gpu-04"]["verdict"] == "problems"
    assert nodes["gpu-04"]["problems"] == ["prov: missing"]
    assert doc["counts"] == {"missing": 1, "not_observed": 2, "ok": 4}


def test_hostile_strings_never_reach_the_terminal(tmp_path: Path) -> None:
    site = Site(tmp_path)
    evil = "\x1b]0;pwned\x07\x1b[2J" + "ethernet1/1/9\r\nFAKE ok"
    site.answers["gpu-03"] = run_all(lldp_doc(("prov", "sw1\x1b[31m", evil)))
    site.answers["gpu-04"] = run_all("", 2, "\x1b[2Jboom\nsecond line")
    rc, table, err = site.run(json_out=False)
    assert rc == 5, err
    assert not any(ord(c) < 32 and c != "\n" for c in table + err), repr(table)
    assert "\x7f" not in table
    gpu3 = next(line for line in table.splitlines() if line.startswith("gpu-03"))
    assert "WRONG SWITCH" in gpu3 and "ethernet1/1/9 FAKE ok" in gpu3
    rc, out, _ = site.run()
    doc = json.loads(out)  # JSON carries them as sent, escaped
    found = next(f for f in doc["findings"] if f["node"] == "gpu-03")["found"]
    assert found["port_id"] == evil and "\x1b" not in out
