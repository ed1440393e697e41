"""`fleet reinstall` as an operator runs it (a separate process), on the real inventory,
with the rendered pxe/ tree of this repository as the deployed one and the real
fleet.pxe.state links in a temporary state dir."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

import pytest

from fleet.inventory.model import Node
from reinstall.helpers import ROOT, journal
from support.bmcfakes import PASSWORD, FakeBmcProcess, free_port, start_fake_redfish
from support.cli import run_fleet
from support.httpreq import http
from support.saltkeys import salt_key_bin, salt_master_config


def test_unknown_node_is_a_usage_error(tmp_path: Path) -> None:
    r = run_fleet("reinstall", "tbox-999", "--state-dir", str(tmp_path))
    assert r.returncode == 2
    assert "no node 'tbox-999'" in r.stderr


def _base(tmp: Path, node: str) -> list[str]:
    salt_key_bin()
    conf, _pki = salt_master_config(tmp)
    return ["reinstall", node, "--state-dir", str(tmp / "state"), "--salt-config", str(conf),
            "--pxe-root", str(ROOT / "pxe"), "--pxe-state", str(tmp / "pxe-state")]


def test_refused_run_then_unfinished_then_abort(tmp_path: Path) -> None:
    base = [*_base(tmp_path, "head-01"), "--callback", "none"]
    r = run_fleet(*base, "--json")
    assert r.returncode == 5, r.stderr
    report = json.loads(r.stdout)
    assert report["outcome"] == "failed" and report["node"] == "head-01"
    assert [s["step"] for s in report["steps"]] == ["preflight"]
    assert "cannot reinstall itself" in report["message"]
    assert "[1/10] preflight: failed in " in r.stderr  # progress with timings

    r = run_fleet(*base)
    assert r.returncode == 6
    assert "is unfinished (at preflight); use --resume or --abort" in r.stderr

    r = run_fleet(*base, "--abort")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "boot_mode: local" in r.stdout
    journal = (tmp_path / "state" / "head-01" / "journal.jsonl").read_text().splitlines()
    events = [json.loads(ln)["event"] for ln in journal]
    assert events == ["run", "step", "step", "finish", "run", "finish"]
    assert (tmp_path / "state" / "head-01").stat().st_mode & 0o077 == 0


def _node_behind_fake_bmc(tmp_path: Path, node: str) -> tuple[Node, FakeBmcProcess]:
    """The node of the real inventory, its BMC password in tmp_path/secrets and a fake
    Redfish BMC (sushy-tools) with its user and that password."""
    from fleet.inventory.load import load_inventory

    n = load_inventory(ROOT / "inventory.yaml").nodes[node]
    (tmp_path / "secrets" / "bmc").mkdir(parents=True, mode=0o700)
    pw = tmp_path / "secrets" / "bmc" / n.profile.bmc.password_secret
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    (tmp_path / "bmc").mkdir()
    return n, start_fake_redfish(tmp_path / "bmc", user=n.profile.bmc.user)


def test_endpoint_refuses_other_addresses_and_a_timeout_removes_the_key(
        tmp_path: Path) -> None:
    """Through the real CLI: the endpoint enforces the node's inventory address itself
    (this test calls from 127.0.0.1, not stor-001's address: the right token is refused,
    and not spent), and an install that never completes leaves no pre-accepted key on the
    master."""
    node = "stor-001"
    n, fake = _node_behind_fake_bmc(tmp_path, node)
    port = free_port()
    argv = [sys.executable, "-m", "fleet", *_base(tmp_path, node), "--json", "--timeout", "8",
            "--secrets", str(tmp_path / "secrets"),
            "--callback", f"127.0.0.1:{port}", "--bmc-address", f"127.0.0.1:{fake.port}",
            "--bmc-scheme", "http"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "tools")})
    link = tmp_path / "pxe-state" / (n.mac.replace(":", "-") + ".ipxe")
    token_file = tmp_path / "state" / node / "install-token"
    accepted = tmp_path / "salt" / "pki" / "minions" / node
    try:
        deadline = time.monotonic() + 90
        while not (token_file.exists() and link.is_symlink() and any(
                r["method"] == "POST" for r in fake.control("GET", "/_fake/requests"))):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the install was never armed and powered"
            time.sleep(0.2)
        assert link.readlink() == ROOT / "pxe" / "http" / "hosts" / node / "install.ipxe"
        assert accepted.exists()  # pre-accepted while the install is armed
        token = token_file.read_text().strip()
        url = f"http://127.0.0.1:{port}"
        status, body = http("GET", f"{url}/v1/key/{node}", token)
        assert status == 403 and b"not from stor-001's address" in body
        assert http("POST", f"{url}/v1/done/{node}", token)[0] == 403
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        fake.stop()
    assert proc.returncode == 5, err
    report = json.loads(out)
    assert [(s["step"], s["outcome"]) for s in report["steps"]][-1] == \
        ("wait_install", "failed")
    assert "the key was never fetched" in report["message"]
    assert report["left"]["boot_mode"].startswith("local")
    assert "pre-accepted new key removed" in report["left"]["key"]
    assert not accepted.exists()
    assert link.readlink() == ROOT / "pxe" / "http" / "hosts" / node / "local.ipxe"
    refused = [e for e in journal(tmp_path / "state" / node) if e.get("what") ==
               "token-refused"]
    assert [e["use"] for e in refused] == ["key", "done"]
    assert all(e["peer"].startswith("127.0.0.1") for e in refused)


# A job that a non-interactive shell starts in the background (`cmd &`, as some CI runners
# and scripts do) inherits SIGINT *ignored*, and Python then installs no KeyboardInterrupt
# handler: before the fix, the operator's SIGINT did nothing at all and the run went on
# waiting for the callback (the reinstall VM test's 60 s timeout in CI). SIGTERM killed
# the process outright, leaving the node armed for a PXE install.
class _Lines:
    """A pipe read to its end by a thread, so that a test can wait for a line."""

    def __init__(self, pipe: IO[str] | None) -> None:
        assert pipe is not None
        self._lines: list[str] = []
        self._grew = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self._thread.start()

    def _read(self, pipe: IO[str]) -> None:
        for line in pipe:
            with self._grew:
                self._lines.append(line)
                self._grew.notify_all()

    def wait_for(self, text: str, timeout: float) -> bool:
        with self._grew:
            return self._grew.wait_for(lambda: any(text in ln for ln in self._lines), timeout)

    def text(self) -> str:
        self._thread.join(timeout=5)
        with self._grew:
            return "".join(self._lines)


# --pxe-command for the second-signal case: `fleet pxe set` on the test's PXE state, but a
# reset to local waits (at most 60 s) until the test creates RELEASE
_PXE_GATE = """\
if [ "$4" = local ]; then
  touch {held}
  i=0; while [ ! -e {release} ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
fi
exec {python} -m fleet "$@" --pxe-state {state} --pxe-root {root}
"""

_IGNORE_SIGINT_THEN_EXEC = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    "os.execv(sys.executable, [sys.executable, '-m', 'fleet', *sys.argv[1:]])")


@pytest.mark.parametrize(("sig", "inherited", "twice"), [
    (signal.SIGINT, "ignored", True),  # the CI case, and a second Ctrl-C during cleanup
    (signal.SIGINT, "default", False),
    (signal.SIGTERM, "default", False),
], ids=["sigint-inherited-ignored-twice", "sigint", "sigterm"])
def test_a_signal_while_waiting_for_the_callback_ends_the_run_safely(
        tmp_path: Path, sig: signal.Signals, inherited: str, twice: bool) -> None:
    """The second signal is sent once the first one's "stopping" is on stderr (two signals
    that arrive before Python's handler runs are one call of it) and while the cleanup is
    held in its boot-mode reset: the boot mode goes through --pxe-command, a gate that
    holds `local` until the test opens it after the second signal (no race with the
    cleanup, however loaded the host)."""
    node = "stor-001"
    n, fake = _node_behind_fake_bmc(tmp_path, node)
    gate, held, release = tmp_path / "gate.sh", tmp_path / "held", tmp_path / "release"
    gate.write_text(_PXE_GATE.format(python=sys.executable, state=tmp_path / "pxe-state",
                                     root=ROOT / "pxe", held=held, release=release))
    args = [*_base(tmp_path, node), "--json", "--timeout", "600",
            "--secrets", str(tmp_path / "secrets"), "--callback", f"127.0.0.1:{free_port()}",
            "--bmc-address", f"127.0.0.1:{fake.port}", "--bmc-scheme", "http"]
    if twice:
        args += ["--pxe-command", f"sh {gate}"]
    head = [sys.executable, "-c", _IGNORE_SIGINT_THEN_EXEC] if inherited == "ignored" \
        else [sys.executable, "-m", "fleet"]
    proc = subprocess.Popen([*head, *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "tools")})
    stdout, stderr = _Lines(proc.stdout), _Lines(proc.stderr)
    node_dir = tmp_path / "state" / node
    link = tmp_path / "pxe-state" / (n.mac.replace(":", "-") + ".ipxe")

    def waiting() -> bool:
        return any(e.get("step") == "wait_install" and e.get("phase") == "start"
                   for e in journal(node_dir)) if (node_dir / "journal.jsonl").exists() \
            else False

    try:
        deadline = time.monotonic() + 120
        while not waiting():
            assert proc.poll() is None, stderr.text()
            assert time.monotonic() < deadline, "the run never reached wait_install"
            time.sleep(0.2)
        assert link.readlink().name == "install.ipxe"
        time.sleep(0.5)  # well inside wait_install's poll loop
        proc.send_signal(sig)
        if twice:
            assert stderr.wait_for(f"{sig.name}: stopping", 30), stderr.text()
            deadline = time.monotonic() + 30
            while not held.exists():  # the cleanup is in its boot-mode reset, held
                assert proc.poll() is None, stderr.text()
                assert time.monotonic() < deadline, "the cleanup never reset the boot mode"
                time.sleep(0.05)
            proc.send_signal(sig)
            assert stderr.wait_for("already stopping", 30), stderr.text()
            release.touch()
        try:
            proc.wait(timeout=90)  # a hang guard (the run's own timeout is 600 s)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{sig.name} did not end the run within 90 s")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        release.touch()
        fake.stop()
    out, err = stdout.text(), stderr.text()
    assert proc.returncode == 128 + sig, err
    report = json.loads(out)
    assert report["outcome"] == "failed" and report["signal"] == sig.name
    assert report["steps"][-1] == {**report["steps"][-1], "step": "wait_install",
                                   "outcome": "failed", "detail": "interrupted by the operator"}
    assert report["left"]["boot_mode"] == "local (set back after the failure)"
    assert link.readlink().name == "local.ipxe"
    entries = journal(node_dir)
    end = [e for e in entries if e.get("step") == "wait_install" and e.get("phase") == "end"]
    assert len(end) == 1 and end[0]["outcome"] == "failed" and end[0]["signal"] == sig.name
    assert [e["what"] for e in entries if e["event"] == "note"] == ["disarmed", "key-revoked"]
    assert not (tmp_path / "salt" / "pki" / "minions" / node).exists()  # interrupted: gone
    assert [e["outcome"] for e in entries if e["event"] == "finish"] == ["failed"]
    assert "Traceback" not in err
    if twice:
        assert "already stopping" in err
