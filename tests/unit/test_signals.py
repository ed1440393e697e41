"""SIGINT and SIGTERM end every long verb the one way (fleet.signals): 128 + the signal
(fleet.exitcodes), one line saying what is left, the JSON document with it; never a
traceback, never a bare death by the signal.

Each verb runs as a real ``python -m fleet`` process. Its long work is stood in for by a
wait where every verb starts it (its inventory is read, under the catcher): a stand-in
named here, as the verbs' work needs a master, BMCs or restic that cannot wait here on
demand. ``fleet power`` is also stopped in its real wait on a hung BMC
(tests/ops/test_power_cli.py), as ``fleet endpoint`` is in its serve loop
(tests/unit/test_output_contract.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fleet.commands import LONG
from fleet.exitcodes import Exit, for_signal
from fleet.signals import SignalCatcher, Stopped, long_verb
from support.cli import ROOT, SMALL

# the verbs wrapped by fleet.signals.long_verb (the others stop their own way, tested
# with them: reinstall, rollout, endpoint, status --collect)
WRAPPED = sorted(v for v in LONG if hasattr(
    __import__(f"fleet.commands.{v}", fromlist=["run"]).run, "long_verb"))
ARGV = {"apply": ["apply", "tbox-001"], "health": ["health", "tbox-001"],
        "power": ["power", "off", "tbox-001"], "cabling": ["cabling"],
        "burnin": ["burnin", "run", "tbox-001"], "mkv": ["mkv", "show", "data"],
        "repo": ["repo", "list"], "backup": ["backup"], "restore": ["restore"]}

# STAND-IN for the long work: the inventory's read says "ready" and waits for the signal
STANDIN = """
import sys, time
import fleet.context
from fleet.cli import main

def waits(self):
    print("ready", file=sys.stderr, flush=True)
    time.sleep(120)
    raise SystemExit("no signal came")

fleet.context.Context.inventory = waits
sys.exit(main(sys.argv[1:]))
"""


def test_the_wrapped_verbs_are_the_long_ones_without_a_stop_of_their_own() -> None:
    assert set(WRAPPED) == set(ARGV), "a long verb without an ARGV here (add it)"


def _stopped(argv: list[str], sig: signal.Signals) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    proc = subprocess.Popen([sys.executable, "-c", STANDIN, *argv, "-i", str(SMALL)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)
    assert proc.stderr is not None
    said, deadline = "", time.monotonic() + 60
    while "ready" not in said and time.monotonic() < deadline and proc.poll() is None:
        said += proc.stderr.readline()
    assert "ready" in said, said + proc.stderr.read()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, out, said + err


@pytest.mark.parametrize("verb", WRAPPED)
def test_sigterm_ends_a_long_verb_with_143_and_what_is_left(verb: str) -> None:
    rc, _out, err = _stopped(ARGV[verb], signal.SIGTERM)
    assert rc == Exit.TERMINATED == 143, err
    assert f"fleet {verb}: stopped by SIGTERM; " in err
    assert "Traceback" not in err


@pytest.mark.parametrize("verb", ["apply", "health"])
def test_sigint_ends_it_with_130_and_the_json_document_says_so(verb: str) -> None:
    rc, out, err = _stopped([*ARGV[verb], "--json"], signal.SIGINT)
    assert rc == Exit.INTERRUPTED == 130, err
    doc = json.loads(out)
    assert doc["exit"] == 130 and not doc["ok"]
    assert "stopped by SIGINT" in doc["errors"][0]["message"]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_the_catcher_raises_once_and_only_reports_a_second_signal() -> None:
    """In process: the first signal raises Stopped with what is left; one more while the
    verb unwinds is said, not raised; the handlers are back as they were after."""
    said: list[str] = []
    before = signal.getsignal(signal.SIGTERM)

    @long_verb("the stand-in is left")
    def run() -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except Stopped:
            os.kill(os.getpid(), signal.SIGINT)  # a second one: said, not raised
            raise
        return 0

    with pytest.raises(Stopped) as caught:
        run()
    assert caught.value.name == "SIGTERM" and caught.value.left == "the stand-in is left"
    assert for_signal(caught.value.signum) == Exit.TERMINATED
    assert signal.getsignal(signal.SIGTERM) is before
    with SignalCatcher(said.append, lambda s: None, again="busy") as c:
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
    assert c.name == "SIGINT" and said == ["SIGTERM again: already stopping; busy"]


def test_docs_output_lists_the_long_verbs() -> None:
    """docs/output.md names the verbs that install the catcher: fleet.commands.LONG's."""
    text = " ".join((ROOT / "docs" / "output.md").read_text().split())
    listed = text.split("(`fleet.commands.LONG`: ", 1)[1].split(")", 1)[0]
    assert sorted(v.strip() for v in listed.split(",")) == sorted(LONG)


def test_a_verb_run_off_the_main_thread_runs_without_the_catcher() -> None:
    """Python sets handlers only from the main thread: an in-process run on another
    thread (a test rig's) runs the verb as it is, the process's handlers untouched."""
    import threading

    before = signal.getsignal(signal.SIGTERM)
    got: list[object] = []

    @long_verb("x")
    def run() -> int:
        got.append(signal.getsignal(signal.SIGTERM))
        return 7

    t = threading.Thread(target=lambda: got.append(run()))
    t.start()
    t.join()
    assert got == [before, 7]
