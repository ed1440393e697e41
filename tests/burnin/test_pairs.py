"""The burn-in check between two nodes, ib-write-bw: the pairing on the site inventory
(same profile and IB rail, never the node itself, never a node in service unless asked,
no partner a failure); the runner's two sides against a STAND-IN ib_write_bw (no
InfiniBand here) printing perftest 4.5's own report format, over a FAKE sysfs tree; the
master's two Salt calls at once, each answer hostile."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from discover.sites import ROOT
from fleet.burnin import pairs, remote, runner
from fleet.burnin.results import Result as Kept
from fleet.burnin.results import ResultError, parse
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.inventory.schema.hardware import BurninTest
from fleet.master.runner import Result
from fleet.master.salt import Salt

SITE = ROOT / "inventory.yaml"
RUNNER = ROOT / "tools" / "fleet" / "burnin" / "runner.py"
GUID = "0x1070fd0300106355"  # tbox-001's HCA in the site inventory

# perftest 4.5's report (the format strings of the Debian package's ib_write_bw): a
# STAND-IN's, for a run with -D (in duration mode perftest reports no peak: 0.00)
HEADER = """---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : mlx5_1
 Number of qps   : 1\t\tTransport type : IB
 Connection type : RC\t\tUsing SRQ      : OFF
 PCIe relax order: ON
 ibv_wr* API     : ON
 TX depth        : 128
 CQ Moderation   : 1
 Mtu             : 4096[B]
 Link type       : IB
 Max inline data : 0[B]
 rdma_cm QPs\t : OFF
 Data ex. method : Ethernet
---------------------------------------------------------------------------------------
 local address: LID 0x05 QPN 0x0123 PSN 0x3a5b1c RKey 0x1fffbd VAddr 0x007f2c3e5ff000
 remote address: LID 0x06 QPN 0x0124 PSN 0x7c1c2e RKey 0x1ffcbe VAddr 0x007f8a1b5ff000
---------------------------------------------------------------------------------------"""
DASHES = "-" * 87


def report(avg: float, unit: str = "Gb/sec") -> str:
    cols = (f" #bytes     #iterations    BW peak[{unit}]    BW average[{unit}]   "
            "MsgRate[Mpps]")
    # perftest's own printf format, as its binary has it
    line = " %-7d    %-10d       %-7.2f            %-7.2f\t\t   %-7.6f" % (  # noqa: UP031
        65536, 1869586, 0.0, avg, avg * 1e9 / 8 / 65536 / 1e6)
    return f"{HEADER}\n{cols}\n{line}\n{DASHES}"


def _sysfs(root: Path) -> Path:
    """A FAKE /sys: tbox-001's two HCAs as the kernel lays them out."""
    for name, guid in (("mlx5_0", "0x0c42a10300934014"), ("mlx5_1", GUID)):
        d = root / "class" / "infiniband" / name
        (d / "ports" / "1").mkdir(parents=True, exist_ok=True)
        g = guid[2:]
        (d / "node_guid").write_text(":".join(g[i:i + 4] for i in range(0, 16, 4)) + "\n")
        (d / "ports" / "1" / "rate").write_text("200 Gb/sec (4X HDR)\n")
        (d / "ports" / "1" / "state").write_text("4: ACTIVE\n")
    return root


def _standin(tmp: Path, body: str) -> str:
    """A STAND-IN ib_write_bw (Python): its argv appended to ``calls``; ``body`` runs
    with ``n``, the number of this call; the PATH that finds it."""
    fake = tmp / "bin" / "ib_write_bw"
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport sys, json, time\n"
                    f"calls = {str(tmp / 'calls')!r}\n"
                    "with open(calls, 'a') as f: f.write(json.dumps(sys.argv[1:]) + '\\n')\n"
                    "n = len(open(calls).readlines())\n" + body)
    fake.chmod(0o755)
    return f"{fake.parent}:/usr/bin:/bin"


def _calls(tmp: Path) -> list[list[str]]:
    return [json.loads(x) for x in (tmp / "calls").read_text().splitlines()]


def run(tmp: Path, path: str, *argv: str) -> tuple[int, Kept]:
    r = subprocess.run([sys.executable, str(RUNNER), "ib-write-bw", "--sysfs",
                        str(_sysfs(tmp / "sys")), *argv], capture_output=True, text=True,
                       timeout=120, check=False, env={**os.environ, "PATH": path})
    return r.returncode, parse(r.stdout.encode())


CLIENT = ("--role", "client", "--peer", "10.2.0.2", "--ib-guid", GUID, "--seconds", "3",
          "--expect-gbps", "200", "--tolerance-percent", "10")


def test_the_client_keeps_bw_average_and_runs_on_the_planned_hca(tmp_path: Path) -> None:
    path = _standin(tmp_path, f"print({report(196.02)!r})\n")
    rc, r = run(tmp_path, path, *CLIENT)
    assert rc == 0 and r.passed and r.figures == {"bw_gb_s": 196.02}
    assert _calls(tmp_path) == [["-d", "mlx5_1", "-i", "1", "-F", "--report_gbits", "-D", "3",
                                 "-p", "18515", "10.2.0.2"]]


def test_a_slow_pair_fails_against_the_ib_rate(tmp_path: Path) -> None:
    path = _standin(tmp_path, f"print({report(96.5)!r})\n")
    rc, r = run(tmp_path, path, *CLIENT)
    assert rc == 1 and r.figures == {"bw_gb_s": 96.5}
    assert r.reason == ("mlx5_1/1 to 10.2.0.2: 96.5 Gb/s, planned 200 Gb/s less "
                        "10%")


@pytest.mark.parametrize("out", [
    report(196.02, unit="MB/sec"),  # not the unit asked for: no figure is guessed
    report(196.02).replace("196.02", "1e999 "),  # an overflow
    report(196.02).replace("196.02", "nan   "),
    HEADER,  # no report at all
    "\x1b]0;pwned\x07 #bytes BW average[Gb/sec]\n 65536 1 0.00 196.02 0.3\x1b[2J",
])
def test_a_hostile_or_odd_report_fails_and_its_words_are_cleaned(tmp_path: Path,
                                                                  out: str) -> None:
    path = _standin(tmp_path, f"print({out!r})\n")
    rc, r = run(tmp_path, path, *CLIENT)
    assert rc == 1 and not r.passed and r.figures == {}
    assert r.reason.startswith("ib_write_bw (exit 0) to 10.2.0.2")
    assert all(" " <= c <= "~" for c in r.reason)


def test_the_client_waits_for_the_partners_server(tmp_path: Path) -> None:
    """perftest's client gives up at once when nothing listens: the runner retries."""
    body = (f"if n < 3:\n    print(\"Couldn't connect to 10.2.0.2:18515\")\n"
            f"    print(' Unable to init the socket connection'); sys.exit(1)\n"
            f"print({report(197.1)!r})\n")
    rc, r = run(tmp_path, _standin(tmp_path, body), *CLIENT)
    assert rc == 0 and r.figures == {"bw_gb_s": 197.1} and len(_calls(tmp_path)) == 3


def test_the_client_gives_up_when_no_server_comes(tmp_path: Path) -> None:
    body = "print(\"Couldn't connect to 10.2.0.2:18515\"); sys.exit(1)\n"
    rc, r = run(tmp_path, _standin(tmp_path, body), *CLIENT, "--connect-seconds", "3")
    assert rc == 1 and "Couldn't connect to 10.2.0.2:18515" in r.reason
    assert 1 <= len(_calls(tmp_path)) <= 3


def test_a_hung_tool_is_killed_at_its_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The server waits for its client at most --connect-seconds plus the run's
    seconds and a slack (SLACK_S, made 1 s here): a partner never left waiting."""
    monkeypatch.setenv("PATH", _standin(tmp_path, "time.sleep(60)\n"))
    monkeypatch.setattr(runner, "SLACK_S", 1)
    rc = runner.main(["ib-write-bw", "--role", "server", "--sysfs",
                      str(_sysfs(tmp_path / "sys")), "--seconds", "1",
                      "--connect-seconds", "1"])
    r = parse(capsys.readouterr().out.encode())
    assert rc == 1 and not r.passed and "timed out after 3" in (r.reason or "")


def test_the_server_side_and_the_missing_tool_and_hca(tmp_path: Path) -> None:
    path = _standin(tmp_path, f"print({HEADER!r})\n")
    rc, r = run(tmp_path, path, "--role", "server", "--ib-guid", "0x0c42a10300934014")
    assert rc == 0 and r.passed and _calls(tmp_path)[0][:4] == ["-d", "mlx5_0", "-i", "1"]
    rc, r = run(tmp_path, path, *CLIENT[:4], "--ib-guid", "0x00000000000000ff")
    assert rc == 1 and r.reason == "no InfiniBand port with 0x00000000000000ff"
    rc, r = run(tmp_path, str(tmp_path / "empty"), *CLIENT)
    assert rc == 1 and r.reason == "not run: ib_write_bw not installed"
    rc, r = run(tmp_path, path, "--role", "client", "--peer", "10.2.0.2;reboot")
    assert rc == 1 and r.reason == "no partner address (10.2.0.2;reboot)"


# the pairing, on the site inventory (tbox1: tbox-[001-038] on ib1/ib-tbox1, tbox2 on ib2)

def _site(**states: str) -> Inventory:
    inv = load_inventory(SITE)
    for h, state in states.items():
        inv.nodes[h].state = state
    return inv


def test_partners_are_a_ring_of_the_rail_never_the_node_itself() -> None:
    inv = _site(**{"tbox-001": "burn-in", "tbox-002": "burn-in", "tbox-003": "burn-in",
                   "tbox-039": "burn-in"})
    got = {h: [p.host for p in pairs.partners(inv, h)]
           for h in ("tbox-001", "tbox-002", "tbox-003")}
    assert got == {"tbox-001": ["tbox-002", "tbox-003"], "tbox-002": ["tbox-003", "tbox-001"],
                   "tbox-003": ["tbox-001", "tbox-002"]}
    first = pairs.partners(inv, "tbox-001")[0]
    assert str(first.address) == str(inv.nodes["tbox-002"].interfaces["ib"].address)
    assert first.address in inv.nodes["tbox-002"].interfaces["ib"].cidr
    assert first.ib_guid == inv.nodes["tbox-002"].ib_guid
    assert pairs.rail(inv.nodes["tbox-039"]) == pairs.Rail("ib2", "ib-tbox2")
    assert pairs.partners(inv, "tbox-039") == []  # alone on its rail: tbox2 in service


def test_a_node_in_service_is_a_partner_only_when_asked_maintenance_never() -> None:
    inv = _site(**{"tbox-001": "burn-in", "tbox-002": "maintenance"})
    assert pairs.partners(inv, "tbox-001") == []
    assert pairs.why_none(inv, "tbox-001") == (
        "not run: no partner of profile tinybox-pro on rail ib1/ib-tbox1 (another node "
        "in burn-in on it)")
    assert [p.host for p in pairs.partners(inv, "tbox-001", in_service=True)] == [
        "tbox-003", "tbox-004"]
    # the nodes under test in this run (drained for it) are partners whatever their state
    assert [p.host for p in pairs.partners(inv, "tbox-001", testing=["tbox-001", "tbox-038"])
            ] == ["tbox-038"]
    assert pairs.why_none(inv, "head-01").endswith("has no InfiniBand NIC")


# the master's side: two Salt calls at once, through a fake salt CLI

class _Minions:
    """What the salt CLI prints, per node: each answer hostile."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.answers = answers
        self.argv: dict[str, list[str]] = {}

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        node = argv[argv.index("-L") + 1]
        self.argv[node] = json.loads(argv[argv.index("cmd.run_all") + 1])
        answer = self.answers[node]
        if isinstance(answer, list):  # one per call, in turn
            answer = answer.pop(0)
        if answer is None:  # the salt CLI failed outright
            return Result(tuple(argv), 2, "", "Salt request timed out")
        return Result(tuple(argv), 0, json.dumps({node: answer}), "")


def _answer(passed: bool, reason: str | None = None, **figures: float) -> dict[str, object]:
    doc = {"check": "ib-write-bw", "passed": passed, "figures": figures, "started": 1,
           "seconds": 3, **({"reason": reason} if reason else {})}
    return {"retcode": 0 if passed else 1, "stdout": json.dumps(doc), "stderr": ""}


def _planned() -> tuple[remote.Planned, remote.Planned]:
    inv = _site(**{"tbox-001": "burn-in", "tbox-002": "burn-in"})
    profile = inv.raw.profiles["tinybox-pro"].model_copy(
        update={"burnin": {"ib-write-bw": BurninTest(seconds=10, tolerance_percent=15)}})
    partner = pairs.partners(inv, "tbox-001")[0]
    return remote.pair_plan(profile, inv.nodes["tbox-001"], partner)


def test_the_pair_plan_and_both_sides_run() -> None:
    server, client = _planned()
    assert server.argv[3:] == ["ib-write-bw", "--seconds", "10", "--connect-seconds", "60",
                               "--role", "server", "--ib-guid", "0x1070fd030052d240"]
    assert client.argv[10:] == ["--peer", "10.2.0.2", "--ib-guid", GUID, "--expect-gbps",
                                "200", "--tolerance-percent", "15"]
    assert server.timeout == client.timeout == 60 + 10 + remote.MARGIN_S
    salt = _Minions({"tbox-002": _answer(True), "tbox-001": _answer(True, bw_gb_s=195.0)})
    r = remote.run_pair(Salt(salt), "tbox-001", "tbox-002", server, client)
    assert r.passed and r.figures == {"bw_gb_s": 195.0} and r.reason is None
    assert salt.argv == {"tbox-002": server.argv, "tbox-001": client.argv}


def test_a_failed_pair_names_the_partner_and_its_hostile_words_are_cleaned() -> None:
    server, client = _planned()
    salt = _Minions({"tbox-002": {"retcode": 1, "stdout": "", "stderr": "\x1b]0;pwned\x07"},
                     "tbox-001": _answer(False, "ib_write_bw (exit 1) to 10.2.0.2: x")})
    r = remote.run_pair(Salt(salt), "tbox-001", "tbox-002", server, client)
    assert not r.passed and r.reason is not None
    assert r.reason.startswith("with tbox-002: ib_write_bw (exit 1) to 10.2.0.2: x; partner "
                               "tbox-002: ib-write-bw: tbox-002 printed no result (exit 1): ")
    assert "\x1b" not in r.reason and "?]0;pwned?" in r.reason


def test_the_partners_salt_call_failing_leaves_the_clients_outcome() -> None:
    server, client = _planned()
    salt = _Minions({"tbox-002": None, "tbox-001": _answer(False, "no server")})
    r = remote.run_pair(Salt(salt), "tbox-001", "tbox-002", server, client)
    assert r.reason == ("with tbox-002: no server; partner tbox-002: `salt` exited 2: Salt "
                        "request timed out")


def test_a_wrong_or_missing_client_answer_is_refused() -> None:
    server, client = _planned()
    wrong = _answer(True)
    wrong["stdout"] = str(wrong["stdout"]).replace("ib-write-bw", "smart")
    for answer in (wrong, "Minion did not return. [No response]"):
        salt = _Minions({"tbox-002": _answer(True), "tbox-001": answer})
        with pytest.raises(ResultError):
            remote.run_pair(Salt(salt), "tbox-001", "tbox-002", server, client)


def test_a_failed_pair_is_tried_again_with_the_next_partner() -> None:
    inv = _site(**{"tbox-001": "burn-in", "tbox-002": "burn-in", "tbox-003": "burn-in"})
    profile = inv.raw.profiles["tinybox-pro"].model_copy(
        update={"burnin": {"ib-write-bw": BurninTest(seconds=10)}})
    found = pairs.partners(inv, "tbox-001")
    salt = _Minions({"tbox-002": _answer(True), "tbox-003": _answer(True),
                     "tbox-001": [_answer(False, "slow"), _answer(True, bw_gb_s=196.0)]})
    said: list[str] = []
    r = remote.pair_check(Salt(salt), profile, inv.nodes["tbox-001"], found, "ib-write-bw",
                          "none", said.append)
    assert r.passed and r.figures == {"bw_gb_s": 196.0}
    assert said == ["tbox-001: ib-write-bw with tbox-002 ...",
                    "tbox-001: ib-write-bw with tbox-003 ..."]
    salt = _Minions({"tbox-002": _answer(True), "tbox-003": _answer(True),
                     "tbox-001": [_answer(False, "slow"), _answer(False, "slow")]})
    r = remote.pair_check(Salt(salt), profile, inv.nodes["tbox-001"], found, "ib-write-bw",
                          "none", said.append)
    assert not r.passed and r.reason == "with tbox-003: slow"  # both partners: the node


def test_no_partner_is_kept_as_a_failure() -> None:
    r = remote.not_run("ib-write-bw", "not run: no partner of profile p on rail r")
    assert not r.passed and r.reason == "not run: no partner of profile p on rail r"


def test_run_keeps_no_partner_as_a_failure_without_asking_salt(tmp_path: Path) -> None:
    """tbox-039 alone in burn-in on its rail (tbox2's others in service): `fleet burnin
    run` records the failure and exits 5; no Salt is reached (its config does not
    exist)."""
    from burnin.sitecase import run_without_salt

    code, kept_all = run_without_salt(tmp_path, "      ib-write-bw: {seconds: 10}\n")
    assert code == 5
    kept = kept_all["ib-write-bw"]
    assert not kept.passed and kept.reason == (
        "not run: no partner of profile tinybox-pro on rail ib2/ib-tbox2 (another node in "
        "burn-in on it)")
