"""The audit log (fleet.audit): every run of a changing verb leaves one record, with the
user, the sudo user, the arguments, the target and the outcome; reading verbs leave none;
no record holds a value of the secrets store, not even one passed as an argument; the
journal gets the record with structured fields, and its absence is said, never fatal.

The journal here is a Unix datagram socket this test binds (no journald runs on this host),
read back and parsed as journald parses its native protocol."""

from __future__ import annotations

import json
import socket
import stat
import struct
from pathlib import Path

import pytest

from fleet import secrets as store
from fleet.audit import redact
from fleet.cli import main
from fleet.exitcodes import Exit
from support.cli import SMALL


@pytest.fixture
def master(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A master's layout in tmp: the log's directory, a secrets store in ./secrets with a
    BMC password, no journal."""
    (tmp_path / "log").mkdir()
    monkeypatch.setenv("FLEET_AUDIT_LOG", str(tmp_path / "log" / "audit.jsonl"))
    monkeypatch.setenv("FLEET_JOURNAL_SOCKET", str(tmp_path / "no-journal"))
    monkeypatch.setenv("SUDO_USER", "alice")
    monkeypatch.chdir(tmp_path)
    store.init(tmp_path / "secrets")
    (tmp_path / "secrets" / "bmc" / "bmc-gpu").write_text("Sup3r-S3cret-BMC\n")
    return tmp_path


def records(master: Path) -> list[dict[str, object]]:
    path = master / "log" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() \
        else []


def fleet(*argv: str) -> int:
    return main([*argv, "-i", str(SMALL)])


def test_a_changing_verb_leaves_one_record_with_who_what_and_how(
        master: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["render", "-i", str(SMALL), "-o", str(master / "out"), "-q"])
    assert code == Exit.OK
    (r,) = records(master)
    assert r["verb"] == "render" and r["outcome"] == "ok" and r["exit"] == 0
    assert r["sudo_user"] == "alice" and r["user"] and r["time"]
    assert r["argv"] == ["render", "-i", str(SMALL), "-o", str(master / "out"), "-q"]
    log = master / "log" / "audit.jsonl"
    assert stat.S_IMODE(log.stat().st_mode) == 0o640


def test_a_failed_run_is_recorded_with_its_targets_and_outcome(master: Path) -> None:
    code = fleet("power", "off", "gpu-[01-02]", "--json", "--bmc-address", "127.0.0.1:9")
    assert code != Exit.OK
    (r,) = records(master)
    assert r["verb"] == "power" and r["action"] == "off" and r["target"] == "gpu-[01-02]"
    assert r["exit"] == code and r["outcome"] != "ok"
    assert set(r["nodes"]) == {"gpu-01", "gpu-02"}  # from the run's document


def test_reading_verbs_leave_no_record(master: Path) -> None:
    assert fleet("validate", "-q") == Exit.OK
    fleet("power", "status", "gpu-01", "-q", "--bmc-address", "127.0.0.1:9")
    fleet("keys", "check", "-q", "--salt-config", str(master / "nosalt"))
    assert records(master) == []


def test_records_append_and_no_journal_is_said_not_fatal(
        master: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert fleet("render", "-o", str(master / "out")) == Exit.OK
    assert "no systemd journal here" in capsys.readouterr().err
    assert fleet("render", "-o", str(master / "out")) == Exit.OK
    assert len(records(master)) == 2


def test_no_log_directory_is_no_master_and_the_run_is_its_own(
        master: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("FLEET_AUDIT_LOG", str(master / "absent" / "audit.jsonl"))
    assert fleet("render", "-o", str(master / "out"), "-v") == Exit.OK
    assert "not recorded" in capsys.readouterr().err
    assert not (master / "absent").exists()


def _store_values(root: Path) -> set[str]:
    """The store's values as a person would list them, independently of fleet.audit:
    every file whole, every line, and the keys inside the .sls files."""
    out = set()
    for path in root.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", errors="replace")
            out.add(text.strip())
            out.update(line.strip() for line in text.splitlines() if len(line.strip()) >= 12)
    munge = (root / store.MUNGE_SLS).read_text().split("munge_key: ")[1].strip()
    apt = (root / store.APTCACHE_SLS).read_text().rsplit(":", 1)[1].strip(" '\n")
    return {v for v in out | {munge, apt} if v}


def test_no_record_holds_a_secret_even_one_passed_as_an_argument(master: Path) -> None:
    secrets_dir = master / "secrets"
    values = _store_values(secrets_dir)
    apt = (secrets_dir / store.APTCACHE_SLS).read_text().rsplit(":", 1)[1].strip(" '\n")
    munge = (secrets_dir / store.MUNGE_SLS).read_text().split("munge_key: ")[1].strip()
    # an operator pastes secrets where they do not belong: each run is recorded
    # (a random secret may start with "-": given as "--opt=value" or after "--", argparse
    # takes it as a value, not an option, and the run is recorded, not a usage error)
    fleet("power", "off", "Sup3r-S3cret-BMC", "--json")
    main(["apply", "--json", "-i", str(SMALL), "--", apt])
    fleet("render", "-o", str(master / apt[:20]), "-q")
    fleet("power", "on", "gpu-01", f"--bmc-address={munge[:40]}", "--json",
          "--secrets", str(secrets_dir))
    fleet("reinstall", f"gpu-01,{munge}", "--state-dir", str(master / "state"), "--json")
    text = (master / "log" / "audit.jsonl").read_text()
    assert len(text.splitlines()) == 5
    leaked = [v[:16] for v in values if v in text]
    assert not leaked, f"secret values in the audit log: {leaked}"
    for part in ("Sup3r-S3cret-BMC", apt, apt[:20], munge[:40]):
        assert part not in text
    assert redact.HIDDEN in text


def test_password_and_token_options_are_hidden() -> None:
    assert redact.argv(["x", "--bmc-password", "hunter2hunter2", "--token=abc", "-q"]) == \
        ["x", "--bmc-password", redact.HIDDEN, f"--token={redact.HIDDEN}", "-q"]


def _journal_fields(data: bytes) -> dict[str, str]:
    out = {}
    while data:
        name, data = data.split(b"\n", 1)
        (size,) = struct.unpack("<Q", data[:8])
        out[name.decode()] = data[8:8 + size].decode()
        data = data[8 + size + 1:]
    return out


def test_the_journal_gets_the_record_with_structured_fields(
        master: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    path = master / "journal.socket"
    monkeypatch.setenv("FLEET_JOURNAL_SOCKET", str(path))
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(path))
        assert fleet("render", "-o", str(master / "out"), "-q") == Exit.OK
        sock.settimeout(5)
        fields = _journal_fields(sock.recv(1 << 20))
    assert "no systemd journal" not in capsys.readouterr().err
    assert fields["SYSLOG_IDENTIFIER"] == "fleet" and fields["FLEET_VERB"] == "render"
    assert fields["FLEET_SUDO_USER"] == "alice" and fields["FLEET_EXIT"] == "0"
    assert json.loads(fields["FLEET_RECORD"]) == records(master)[0]
    assert "fleet render" in fields["MESSAGE"]


def test_fleet_log_filters_by_node_and_time(master: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    fleet("power", "off", "gpu-01", "--json", "--bmc-address", "127.0.0.1:9")
    fleet("power", "off", "stor-*", "--json", "--bmc-address", "127.0.0.1:9")
    capsys.readouterr()
    assert fleet("log", "--node", "gpu-01", "--json") == Exit.OK
    doc = json.loads(capsys.readouterr().out)
    assert [r["target"] for r in doc["records"]] == ["gpu-01"]
    assert fleet("log", "--since", "1h", "--json") == Exit.OK
    assert len(json.loads(capsys.readouterr().out)["records"]) == 2
    assert fleet("log", "--since", "2999-01-01", "--json") == Exit.OK
    assert json.loads(capsys.readouterr().out)["records"] == []
    assert fleet("log", "--node", "no-such-node") == Exit.USAGE
    assert fleet("log") == Exit.OK
    out = capsys.readouterr().out
    assert "fleet power off gpu-01" in out and "alice" in out


def test_fleet_log_refuses_a_line_that_is_no_record(master: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (master / "log" / "audit.jsonl").write_text('{"v": 1, "time": "x"}\nnot json\n')
    assert fleet("log") == Exit.IO
    assert "audit.jsonl:2" in capsys.readouterr().err


# every changing verb as an operator runs it (here each fails early or changes a temp
# dir: no master, BMC or Slurm answers), with the target its record must name
EVERY_CHANGE: list[tuple[list[str], str, str | None, str | None]] = [
    (["apply", "gpu-01", "--salt-config", "{tmp}/nosalt"], "apply", None, "gpu-01"),
    (["rollout", "gpu-02", "--state-dir", "{tmp}/rollout", "--salt-config", "{tmp}/nosalt"],
     "rollout", None, "gpu-02"),
    (["reinstall", "gpu-03", "--state-dir", "{tmp}/reinstall", "--salt-config",
      "{tmp}/nosalt"], "reinstall", None, "gpu-03"),
    (["render", "-o", "{tmp}/out"], "render", None, None),
    (["power", "cycle", "gpu-04", "--bmc-address", "127.0.0.1:9"], "power", "cycle", "gpu-04"),
    (["pxe", "set", "gpu-01", "local", "--pxe-state", "{tmp}/pxe"], "pxe", "set", "gpu-01"),
    (["keys", "check", "--remove", "--salt-config", "{tmp}/nosalt"], "keys", "check", None),
    (["mkv", "rebuild", "data", "--salt-config", "{tmp}/nosalt"], "mkv", "rebuild", "data"),
    (["mkv", "rebalance", "data", "--salt-config", "{tmp}/nosalt"], "mkv", "rebalance",
     "data"),
    (["secrets", "init", "--secrets", "{tmp}/store2"], "secrets", "init", None),
    (["discover", "accept", "gpu-01", "--reports", "{tmp}/reports", "--dry-run"], "discover",
     "accept", "gpu-01"),
    (["burnin", "finish", "gpu-01", "--results", "{tmp}/results", "--dry-run"], "burnin",
     "finish", "gpu-01"),
    (["backup", "--password-file", "{tmp}/key"], "backup", "create", None),
    (["restore", "--password-file", "{tmp}/key", "--root", "{tmp}/root"], "restore", None,
     None),
]


@pytest.mark.parametrize(("argv", "verb", "action", "target"), EVERY_CHANGE,
                         ids=[" ".join(a[:2]) for a, *_ in EVERY_CHANGE])
def test_each_changing_verb_leaves_its_record(master: Path, argv: list[str], verb: str,
                                              action: str | None,
                                              target: str | None) -> None:
    code = fleet(*[a.replace("{tmp}", str(master)) for a in argv], "-q")
    (r,) = records(master)
    assert (r["verb"], r["action"], r["target"], r["exit"]) == (verb, action, target, code)
    assert r["sudo_user"] == "alice" and r["user"]


def test_every_changing_verb_of_the_registry_is_tested_here() -> None:
    from fleet.audit.record import CHANGING
    from fleet.commands import VERBS

    tested = {verb for _, verb, _, _ in EVERY_CHANGE}
    assert {v for v in CHANGING if v in VERBS} == tested
