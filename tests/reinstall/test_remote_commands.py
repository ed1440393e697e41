"""`--slurm-command` / `--pxe-command` through ssh: no value fleet adds is re-parsed by the
remote shell. The stand-in `ssh` does what ssh does with its command words:
joins them with spaces and hands the line to the remote user's shell (`sh -c`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fleet.master import slurm
from fleet.master.runner import SubprocessRunner, through
from fleet.pxe.bootmode import CommandBootMode


@pytest.fixture
def remote(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    ssh = bin_dir / "ssh"
    ssh.write_text('#!/bin/sh\nshift\nexec sh -c "$*"\n')  # host, then the command words
    record = tmp_path / "argv.jsonl"
    for tool in ("scontrol", "fleet"):
        t = bin_dir / tool
        t.write_text(f"#!{sys.executable}\nimport json, sys\n"
                     f"open({str(record)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n")
        t.chmod(0o755)
    ssh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{__import__('os').environ['PATH']}")
    return record


def _calls(record: Path) -> list[list[str]]:
    return [json.loads(ln) for ln in record.read_text().splitlines()]


def test_the_default_drain_reason_and_node_text_survive_ssh(remote: Path,
                                                            tmp_path: Path) -> None:
    runner = SubprocessRunner({"scontrol": ["ssh", "head-01", "scontrol"]})
    slurm.drain(runner, "tbox-002", "fleet reinstall (20261201T101500Z-abc123)")
    pwned = tmp_path / "pwned"
    hostile = f"health check failed: GPU $(touch {pwned}); `touch {pwned}` 'x\"\n\x1b[2J"
    slurm.drain(runner, "tbox-002", hostile)
    first, second = _calls(remote)
    assert first == ["update", "NodeName=tbox-002", "State=DRAIN",
                     "Reason=fleet reinstall (20261201T101500Z-abc123)"]
    assert not pwned.exists()  # the node's text was never executed
    assert second[:3] == ["update", "NodeName=tbox-002", "State=DRAIN"] and len(second) == 4
    assert second[3].startswith(f"Reason=health check failed: GPU $(touch {pwned}); `touch")
    assert "\n" not in second[3] and "\x1b" not in second[3]  # control characters gone


def test_pxe_command_through_ssh_gets_one_argument_per_value(remote: Path) -> None:
    CommandBootMode(["ssh", "head-01", "fleet"]).set_mode("tbox-002", "install", token="t")
    assert _calls(remote) == [["pxe", "set", "tbox-002", "install", "--quiet",
                               "--token-stdin"]]


def test_a_local_command_gets_an_argument_list_unquoted() -> None:
    assert through(["podman", "exec", "-i", "head"], ["Reason=a (b)"]) == \
        ["podman", "exec", "-i", "head", "Reason=a (b)"]
    assert through(["/usr/bin/ssh", "-o", "BatchMode=yes", "h"], ["Reason=a (b)"]) == \
        ["/usr/bin/ssh", "-o", "BatchMode=yes", "h", "'Reason=a (b)'"]
