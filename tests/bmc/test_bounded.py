"""Every BMC call is bounded (fleet.bmc.limits): a BMC that trickles or sends a huge
answer, or ipmitool printing for ever, ends the call within its deadline with a named
BmcError, having read at most MAX_ANSWER bytes; what a BMC says reaches a message only
cleaned; an ETag that is not one is a BmcProtocolError naming the BMC. The BMCs are
fakes (tests/support/bmcfakes.py: FakeHostileBmc), ipmitool a stub script; the reinstall
runs its real flow (fleet.reinstall.flow) against them, up to its preflight."""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleet.bmc import BmcError, BmcProtocolError, BmcTimeoutError
from fleet.bmc.base import MESSAGE_LIMIT, bmc_text
from fleet.bmc.ipmi import IpmiClient
from fleet.bmc.limits import MAX_ANSWER
from fleet.bmc.redfish import RedfishClient
from support.bmcfakes import ESCAPES, PASSWORD, USER, FakeHostileBmc, wait_until

SLACK = 3.0  # seconds past a deadline that a loaded 2-core test host may need


@pytest.fixture
def hostile(request: pytest.FixtureRequest) -> Iterator[FakeHostileBmc]:
    fake = FakeHostileBmc.start(request.param)
    yield fake
    fake.stop()


def ends_within(seconds: float, fn: Callable[[], object]) -> BaseException | None:
    """What ``fn`` raised, asserting it ended within ``seconds`` (in a thread, so that a
    client that does not end fails the test instead of hanging it)."""
    got: list[BaseException | None] = []

    def run() -> None:
        try:
            fn()
            got.append(None)
        except BaseException as exc:
            got.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds:g}s"
    return got[0]


def redfish(fake: FakeHostileBmc, *, timeout: float, call_timeout: float = 60
            ) -> RedfishClient:
    return RedfishClient(fake.url, USER, PASSWORD, timeout=timeout, call_timeout=call_timeout)


def printable_line(text: str) -> bool:
    return all(" " <= c <= "~" for c in text)


@pytest.mark.parametrize("hostile", ["trickle", "trickle-head"], indirect=True)
def test_a_trickling_bmc_is_cut_at_the_request_deadline(hostile: FakeHostileBmc) -> None:
    """A byte every 0.5 s (in the body, or in the status line and headers) never lets a
    per-read timeout expire; the request's deadline does."""
    c = redfish(hostile, timeout=2, call_timeout=30)
    t0 = time.monotonic()
    exc = ends_within(2 + SLACK, c.power_state)
    assert isinstance(exc, BmcTimeoutError), exc
    assert time.monotonic() - t0 >= 1.9  # the deadline, not an early give-up
    assert re.fullmatch(rf"redfish {hostile.url}: GET /redfish/v1/Systems: no answer \(or not "
                        r"all of it\) within 2s \(deadlines: 2s a request, 30s a call\)",
                        str(exc)), exc


@pytest.mark.parametrize("hostile", ["trickle"], indirect=True)
def test_the_call_deadline_bounds_a_call_with_a_longer_request_deadline(
        hostile: FakeHostileBmc) -> None:
    c = redfish(hostile, timeout=30, call_timeout=2)
    exc = ends_within(2 + SLACK, c.pxe_boot_now)
    assert isinstance(exc, BmcTimeoutError) and "2s a call" in str(exc), exc


@pytest.mark.parametrize("hostile", ["huge", "huge-unsized"], indirect=True)
def test_a_huge_answer_is_refused_after_the_cap(hostile: FakeHostileBmc) -> None:
    """48 MB, with or without a Content-Length: refused unread or after MAX_ANSWER + 1
    bytes; the fake could send no more than that and what the kernel buffers hold."""
    c = redfish(hostile, timeout=20, call_timeout=20)
    exc = ends_within(20, c.power_state)
    assert isinstance(exc, BmcProtocolError), exc
    assert re.search(rf"^redfish {hostile.url}: GET /redfish/v1/Systems: an answer of "
                     rf"(more than {MAX_ANSWER}|{hostile.HUGE}) bytes", str(exc)), exc
    assert wait_until(lambda: hostile.sent, timeout=15)
    assert hostile.sent[0] < MAX_ANSWER + 16 * 2**20 < hostile.HUGE


@pytest.mark.parametrize("hostile", ["escapes"], indirect=True)
def test_bmc_error_text_is_one_printable_bounded_line(hostile: FakeHostileBmc) -> None:
    exc = ends_within(10, redfish(hostile, timeout=5).power_state)
    assert isinstance(exc, BmcProtocolError), exc
    msg = str(exc)
    assert msg.startswith(f"redfish {hostile.url}: GET /redfish/v1/Systems: HTTP 500: ")
    assert "boom FAKE: all good" in msg
    assert printable_line(msg) and len(msg) <= MESSAGE_LIMIT, repr(msg)


@pytest.mark.parametrize("hostile", ["etag-crlf", "etag-long"], indirect=True)
def test_a_malformed_etag_is_a_protocol_error_naming_the_bmc(hostile: FakeHostileBmc) -> None:
    exc = ends_within(10, redfish(hostile, timeout=5).set_pxe_once)
    assert isinstance(exc, BmcProtocolError), exc  # not a ValueError from http.client
    assert re.match(rf"redfish {hostile.url}: /redfish/v1/Systems/1: the ETag .{{1,80}} is not "
                    "an entity tag", str(exc)), exc
    assert printable_line(str(exc))
    assert not [r for r in hostile.requests if r.startswith("PATCH")]  # never sent


def test_bmc_text_cleans_bytes_and_text() -> None:
    assert bmc_text(ESCAPES) == "[2J ]0;owned boom FAKE: all good 31m"
    assert bmc_text(b"\xff\x1b[1mok\r\n" + b"x" * 5000, 20) == "[1mok xxxxxxxxxxx..."
    assert str(BmcError("a\nb\x1b[0m")) == "a b [0m"


# --- ipmitool ------------------------------------------------------------------------------

STUB = """#!/bin/sh
# a stub ipmitool: what a hostile BMC could make the real one print
echo $$ >> "{pids}"
case "{mode}" in
  huge) yes 'Chassis Power is on' | head -c 48000000 ;;
  hostile) printf 'Error: boom\\033[2J\\033]0;owned\\007\\r\\n\\033[31mreally\\n' >&2; exit 1 ;;
  trickle) while :; do printf x; sleep 0.5; done ;;
esac
"""


def stub_ipmitool(tmp: Path, mode: str) -> tuple[IpmiClient, Path]:
    pids = tmp / "pids"
    stub = tmp / "ipmitool-stub"
    stub.write_text(STUB.format(pids=pids, mode=mode))
    stub.chmod(0o755)
    return IpmiClient("127.0.0.1", USER, PASSWORD, port=1, timeout=1, retries=1,
                      ipmitool=str(stub), call_timeout=2), pids


def gone(pids: Path) -> bool:
    for pid in pids.read_text().split():
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            continue
        return False
    return True


def test_ipmitool_printing_too_much_is_killed_and_refused(tmp_path: Path) -> None:
    c, pids = stub_ipmitool(tmp_path, "huge")
    exc = ends_within(2 + SLACK, c.power_state)
    assert isinstance(exc, BmcProtocolError), exc
    assert f"printed more than {MAX_ANSWER} bytes" in str(exc)
    assert gone(pids)


def test_ipmitool_that_never_ends_is_killed_at_the_call_deadline(tmp_path: Path) -> None:
    c, pids = stub_ipmitool(tmp_path, "trickle")
    exc = ends_within(2 + SLACK, c.power_state)
    assert isinstance(exc, BmcTimeoutError), exc
    assert re.search(r"ipmitool chassis power status: no answer within 2s \(killed\)",
                     str(exc)), exc
    assert gone(pids)


def test_ipmitool_error_output_is_cleaned(tmp_path: Path) -> None:
    c, _pids = stub_ipmitool(tmp_path, "hostile")
    exc = ends_within(2 + SLACK, c.power_state)
    assert isinstance(exc, BmcProtocolError), exc
    assert str(exc).endswith("ipmitool chassis power status: [31mreally"), exc
    assert printable_line(str(exc))


# --- the reinstall's preflight, through its real flow ------------------------------------

@pytest.mark.parametrize("hostile", ["trickle", "huge-unsized"], indirect=True)
def test_reinstall_preflight_against_a_hostile_bmc_ends_named_and_unlocked(
        hostile: FakeHostileBmc, tmp_path: Path) -> None:
    """The flow's preflight asks the BMC for the power state: it fails within the call
    deadline (BmcOptions.call_timeout) naming the BMC, journaled, the node never armed,
    its lock released."""
    from fleet.bmc.connect import BmcOptions, client_for
    from fleet.inventory.load import load_inventory
    from fleet.master.journal import latest_run
    from fleet.master.keys import MinionKeys
    from fleet.master.lock import NodeLock
    from fleet.master.runner import SubprocessRunner
    from fleet.reinstall.context import Context, Options
    from fleet.reinstall.flow import Flow, Report
    from reinstall.helpers import ROOT, RecordingBootMode, journal

    inv = load_inventory(ROOT / "inventory.yaml")
    node = inv.nodes["stor-001"]  # outside Slurm: the flow's first BMC call is preflight's
    (tmp_path / "secrets" / "bmc").mkdir(parents=True, mode=0o700)
    pw = tmp_path / "secrets" / "bmc" / node.profile.bmc.password_secret
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    opts = BmcOptions(secrets_dir=tmp_path / "secrets", scheme="http",
                      address=f"127.0.0.1:{hostile.port}", timeout=2, call_timeout=4)
    boot = RecordingBootMode()
    ctx = Context(inventory=inv, node=node, state_root=tmp_path / "state",
                  runner=SubprocessRunner(), boot=boot,
                  bmc=lambda: client_for(node, opts),
                  keys=MinionKeys(SubprocessRunner(), tmp_path / "pki"),
                  options=Options(poll=0.2), say=lambda _m: None)
    reports: list[Report] = []
    assert ends_within(4 + 20, lambda: reports.append(Flow(ctx).run())) is None
    [report] = reports
    [step] = report.steps
    assert (step.step, step.outcome) == ("preflight", "failed")
    assert step.seconds < 4 + SLACK
    assert report.message.startswith(f"preflight failed: redfish {hostile.url}: GET "
                                     "/redfish/v1/Systems: ")
    assert ("no answer (or not all of it) within 2s" if hostile.mode == "trickle"
            else f"an answer of more than {MAX_ANSWER} bytes") in report.message
    assert boot.history == []  # never armed
    state = latest_run(journal(ctx.node_dir))
    assert state.failed_step == "preflight"
    with NodeLock(ctx.node_dir):  # released
        pass


@pytest.mark.parametrize("hostile", ["escapes"], indirect=True)
def test_bmc_escape_sequences_never_reach_the_terminal(hostile: FakeHostileBmc,
                                                       tmp_path: Path) -> None:
    """`fleet reinstall` as an operator runs it, against a BMC whose error holds escape
    sequences and newlines: its preflight fails naming the BMC, and neither its report
    nor its progress (stdout, stderr) carries a control character."""
    from fleet.inventory.load import load_inventory
    from reinstall.helpers import ROOT
    from support.cli import run_fleet
    from support.saltkeys import salt_master_config

    node = load_inventory(ROOT / "inventory.yaml").nodes["stor-001"]
    (tmp_path / "secrets" / "bmc").mkdir(parents=True, mode=0o700)
    pw = tmp_path / "secrets" / "bmc" / node.profile.bmc.password_secret
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    conf, _pki = salt_master_config(tmp_path)
    for extra in ([], ["--json"]):
        r = run_fleet("reinstall", "stor-001", "--state-dir", str(tmp_path / "state"),
                      "--salt-config", str(conf), "--pxe-root", str(ROOT / "pxe"),
                      "--pxe-state", str(tmp_path / "pxe-state"), "--callback", "none",
                      "--secrets", str(tmp_path / "secrets"), "--bmc-scheme", "http",
                      "--bmc-address", f"127.0.0.1:{hostile.port}", *extra, timeout=120)
        assert r.returncode == 5, r.stderr
        assert f"redfish {hostile.url}: GET /redfish/v1/Systems: HTTP 500: " in r.stdout + \
            r.stderr
        assert "boom FAKE: all good" in r.stdout + r.stderr
        for text in (r.stdout, r.stderr):
            assert all(c == "\n" or " " <= c <= "~" for c in text), repr(text)
        run_fleet("reinstall", "stor-001", "--state-dir", str(tmp_path / "state"),
                  "--abort", "--pxe-root", str(ROOT / "pxe"),
                  "--pxe-state", str(tmp_path / "pxe-state"), timeout=120)
