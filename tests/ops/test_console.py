"""``fleet console`` against pyghmi's fakebmc, which speaks IPMI serial-over-LAN (a fake
BMC: it echoes what the console sends), through the real ipmitool, in a pseudo-terminal as
an operator's: the escape printed first, the session attached, ``~.`` leaves; the password
in ipmitool's environment and not its command line; one session per node."""

from __future__ import annotations

import argparse
import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from fleet.exitcodes import Exit
from fleet.inventory.load import load_inventory
from fleet.ops import console
from ops.helpers import INVENTORY, secrets
from support.bmcfakes import PASSWORD, USER, FakeBmcProcess, start_fake_ipmi
from support.cli import ROOT, run_fleet


@pytest.fixture
def fake_sol() -> Iterator[FakeBmcProcess]:
    fake = start_fake_ipmi("on")
    yield fake
    fake.stop()


class Terminal:
    """``fleet console ...`` on the slave side of a pty, as from an operator's terminal."""

    def __init__(self, *args: str) -> None:
        self.master, slave = pty.openpty()
        env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
        env.pop("IPMI_PASSWORD", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "fleet", "console", *args],
                                     stdin=slave, stdout=slave, stderr=slave, env=env,
                                     cwd=ROOT, start_new_session=True)
        os.close(slave)
        self.seen = b""

    def read_until(self, want: bytes, timeout: float = 20) -> bool:
        deadline = time.monotonic() + timeout
        while want not in self.seen and time.monotonic() < deadline:
            ready, _, _ = select.select([self.master], [], [], 0.2)
            if ready:
                try:
                    self.seen += os.read(self.master, 4096)
                except OSError:  # the other side is gone
                    break
        return want in self.seen

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=10)
        os.close(self.master)


def _args(tmp: Path, port: int) -> list[str]:
    return ["tbox-001", "-i", str(INVENTORY), "--secrets", str(secrets(tmp)),
            "--bmc-protocol", "ipmi", "--bmc-address", f"127.0.0.1:{port}",
            "--state-dir", str(tmp / "state")]


def test_console_attaches_echoes_and_leaves_on_the_escape(tmp_path: Path,
                                                          fake_sol: FakeBmcProcess) -> None:
    term = Terminal(*_args(tmp_path, fake_sol.port))
    try:
        assert term.read_until(b"SOL Session operational"), term.seen
        banner = term.seen.split(b"[SOL Session")[0].decode()
        assert "fleet console tbox-001" in banner and "~." in banner  # printed first
        # one ipmitool, fleet's own pid (exec'd): the password in its environment only
        pid = term.proc.pid
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert Path(cmdline[0].decode()).name == "ipmitool"
        assert b"sol" in cmdline and b"-E" in cmdline and PASSWORD.encode() not in cmdline
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"IPMI_PASSWORD={PASSWORD}".encode() in environ
        assert f"-U\0{USER}".encode() in b"\0".join(cmdline)
        # the lock is held by ipmitool itself: a second session is refused, naming it
        second = run_fleet("console", *_args(tmp_path, fake_sol.port))
        assert second.returncode == Exit.BUSY
        assert f"fleet console` (pid {pid})" in second.stderr and "one session" in second.stderr
        term.type(b"hello console\r")
        assert term.read_until(b"hello console"), term.seen  # the fake BMC's echo
        term.type(b"\r~.")
        assert term.read_until(b"terminated ipmitool"), term.seen
        assert term.proc.wait(timeout=15) == 0
    finally:
        term.close()
    # the lock went with ipmitool: a new session attaches
    term = Terminal(*_args(tmp_path, fake_sol.port))
    try:
        assert term.read_until(b"SOL Session operational"), term.seen
        term.type(b"\r~.")
        assert term.proc.wait(timeout=15) == 0
    finally:
        term.close()


def test_sol_command_has_no_password_in_argv() -> None:
    argv, env = console.sol_command("/usr/bin/ipmitool", "10.0.1.1", 623, "admin", "s3cret",
                                    {"PATH": "/usr/bin", "IPMI_PASSWORD": "old"})
    assert argv == ["/usr/bin/ipmitool", "-I", "lanplus", "-H", "10.0.1.1", "-p", "623",
                    "-U", "admin", "-E", "sol", "activate"]
    assert env == {"PATH": "/usr/bin", "IPMI_PASSWORD": "s3cret"}


def _ns(tmp: Path, **kw: object) -> argparse.Namespace:
    base: dict[str, object] = {"node": "tbox-001", "secrets": secrets(tmp), "bmc_protocol": None,
                               "bmc_address": None, "state_dir": tmp / "state", "quiet": False}
    base.update(kw)
    return argparse.Namespace(**base)


def test_a_redfish_bmc_is_not_supported_unless_told_it_speaks_ipmi(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inv = load_inventory(INVENTORY)
    assert inv.nodes["tbox-001"].profile.bmc.protocol == "redfish"
    calls: list[tuple[str, list[str], Mapping[str, str]]] = []

    def exec_(path: str, argv: list[str], env: Mapping[str, str]) -> None:
        calls.append((path, argv, env))

    assert console.cmd_console(_ns(tmp_path), inv, exec_) == Exit.USAGE
    err = capsys.readouterr().err
    assert "Redfish" in err and "not supported" in err and "--bmc-protocol ipmi" in err
    assert calls == []
    # told: the inventory's BMC address, port 623, the lock taken, the escape said first
    assert console.cmd_console(_ns(tmp_path, bmc_protocol="ipmi"), inv, exec_) == Exit.OK
    [(_path, argv, env)] = calls
    assert argv[argv.index("-H") + 1] == "10.0.1.1" and argv[argv.index("-p") + 1] == "623"
    assert PASSWORD not in argv and env["IPMI_PASSWORD"] == PASSWORD
    assert "~." in capsys.readouterr().err
    lock = tmp_path / "state" / "tbox-001" / "console.lock"
    assert lock.read_text().split(" ", 1)[1].strip() == "fleet console"


def test_unknown_node_and_missing_secret(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    inv = load_inventory(INVENTORY)
    assert console.cmd_console(_ns(tmp_path, node="nosuch"), inv, os.execve) == Exit.USAGE
    empty = tmp_path / "empty"
    (empty / "bmc").mkdir(parents=True)
    assert console.cmd_console(_ns(tmp_path, secrets=empty, bmc_protocol="ipmi"), inv,
                               os.execve) == Exit.IO
    assert "no such BMC secret" in capsys.readouterr().err
