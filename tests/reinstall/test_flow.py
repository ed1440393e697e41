"""The reinstall flow on the real inventory, in-process: a fake BMC (sushy-tools' Redfish
emulator), the real salt-key on a throw-away master pki dir, the real callback endpoint
over HTTP, and this test acting as the installer. Converge, health and Slurm drain/resume
need a master with minions and a Slurm controller: they are covered by the lab (tests/lab),
not here; these runs stop after wait_install or use a node outside Slurm."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fleet.bmc.connect import BmcOptions, client_for
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.master.journal import RunState, latest_run
from fleet.master.keys import MinionKeys
from fleet.master.lock import BusyError
from fleet.master.runner import SubprocessRunner
from fleet.reinstall.context import Context, Options
from fleet.reinstall.flow import (
    Flow,
    FlowError,
    Interrupted,
    Interrupts,
    Report,
    resume_point,
)
from fleet.reinstall.steps import STEP_NAMES
from reinstall.helpers import ROOT, RecordingBootMode, journal, sign_done
from support.bmcfakes import PASSWORD, FakeBmcProcess, start_fake_redfish
from support.httpreq import http
from support.saltkeys import salt_key_bin, salt_master_config

NODE = "stor-001"  # mkv.volume in array "training" (replicas 1); not a Slurm node
NODE_ADDR = "127.0.0.2"  # the node's address as the endpoint knows it, here on lo
ADDRESSES = {NODE: NODE_ADDR}


@pytest.fixture(scope="module")
def inventory() -> Inventory:
    return load_inventory(ROOT / "inventory.yaml")


@dataclass
class Rig:
    tmp: Path
    inv: Inventory
    fake: FakeBmcProcess
    pki: Path
    boot: RecordingBootMode = field(default_factory=RecordingBootMode)
    bmc_opts: dict[str, BmcOptions] = field(default_factory=dict)
    said: list[str] = field(default_factory=list)
    on_say: Callable[[str], None] | None = None

    def ctx(self, node: str = NODE, **options: float) -> Context:
        runner = SubprocessRunner({"salt-key": [salt_key_bin(), "-c",
                                                str(self.pki.parent / "etc")]})
        n = self.inv.nodes[node]

        def say(msg: str) -> None:
            self.said.append(msg)
            if self.on_say:
                self.on_say(msg)

        return Context(
            inventory=self.inv, node=n, state_root=self.tmp / "state", runner=runner,
            boot=self.boot, bmc=lambda: client_for(n, self.bmc_opts["opts"]),
            keys=MinionKeys(runner, self.pki),
            options=Options(poll=0.2, **options), say=say)

    def point_at(self, fake: FakeBmcProcess) -> None:
        self.fake = fake
        self.bmc_opts["opts"] = BmcOptions(secrets_dir=self.tmp / "secrets", scheme="http",
                                           address=f"127.0.0.1:{fake.port}", timeout=3)

    @property
    def node_dir(self) -> Path:
        return self.tmp / "state" / NODE


@pytest.fixture
def rig(tmp_path: Path, inventory: Inventory) -> Iterator[Rig]:
    user = inventory.nodes[NODE].profile.bmc.user
    secret = inventory.nodes[NODE].profile.bmc.password_secret
    (tmp_path / "secrets" / "bmc").mkdir(parents=True, mode=0o700)
    pw = tmp_path / "secrets" / "bmc" / secret
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    (tmp_path / "bmc1").mkdir()
    fake = start_fake_redfish(tmp_path / "bmc1", user=user)
    _conf, pki = salt_master_config(tmp_path)
    r = Rig(tmp_path, inventory, fake, pki)
    r.point_at(fake)
    yield r
    r.fake.stop()


def run_in_thread(flow: Flow, **kw: object) -> tuple[threading.Thread, list[Report]]:
    out: list[Report] = []
    t = threading.Thread(target=lambda: out.append(flow.run(**kw)))  # type: ignore[arg-type]
    t.start()
    return t, out


def wait_for(pred: Callable[[], object], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


def powered_on(rig: Rig, flow: Flow) -> bool:
    """The flow armed the install and powered the node on (recorded with the token)."""
    status = rig.ctx().tokens.status() if (rig.node_dir / "token.json").exists() else None
    return bool(flow.callback_url and rig.boot.modes.get(NODE) == "install" and status
                and status.get("powered_on"))


def act_as_installer(rig: Rig, flow: Flow) -> bytes:
    """What the installer's late-commands do: fetch the key with the token, call back."""
    token_file = rig.node_dir / "install-token"
    wait_for(lambda: powered_on(rig, flow), "the flow to arm the install and power the node")
    token = rig.boot.tokens[NODE]  # published with the install mode, for the installer
    assert token == token_file.read_text().strip()
    status, pem = http("GET", f"{flow.callback_url}/v1/key/{NODE}", token, source=NODE_ADDR)
    assert status == 200, pem
    status, body = http("POST", f"{flow.callback_url}/v1/done/{NODE}", token,
                        sign_done(pem, NODE, token), source=NODE_ADDR)
    assert status == 200, body
    return pem


def steps(report: Report) -> list[tuple[str, str]]:
    return [(s.step, s.outcome) for s in report.steps]


def test_reinstall_through_the_install_callback_then_abort(rig: Rig) -> None:
    flow = Flow(rig.ctx(install_timeout=90), callback_bind=("127.0.0.1", 0),
                addresses=ADDRESSES)
    thread, out = run_in_thread(flow, stop_after="wait_install")
    pem = act_as_installer(rig, flow)
    thread.join(timeout=60)
    [report] = out
    assert steps(report) == [("preflight", "ok"), ("drain", "skipped"), ("rotate_key", "ok"),
                             ("power_off", "ok"), ("arm_install", "ok"), ("power_on", "ok"),
                             ("wait_install", "ok")]
    assert report.outcome == "stopped"
    assert any("only replica" in w and "'training'" in w for w in report.warnings)
    # boot mode: install before power, local again from the callback
    assert rig.boot.history == [(NODE, "install"), (NODE, "local")]
    assert NODE not in rig.boot.tokens  # withdrawn by the callback's switch to local
    # the BMC got PXE-once-UEFI, then "On" (it was off)
    sent = [r for r in rig.fake.control("GET", "/_fake/requests")
            if r["method"] in ("PATCH", "POST")]
    assert [r["body"] for r in sent] == [
        {"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once",
                  "BootSourceOverrideMode": "UEFI"}},
        {"ResetType": "On"}]
    # the key the installer got is the private half of the key accepted in advance
    from cryptography.hazmat.primitives import serialization

    accepted = serialization.load_pem_public_key((rig.pki / "minions" / NODE).read_bytes())
    private = serialization.load_pem_private_key(pem, password=None)
    assert private.public_key().public_numbers() == accepted.public_numbers()  # type: ignore[union-attr]
    assert not (rig.node_dir / "keys" / "minion.pem").exists()
    assert not (rig.node_dir / "install-token").exists()
    # the journal has every step with its timing
    ends = [e for e in journal(rig.node_dir) if e["event"] == "step" and e["phase"] == "end"]
    assert [e["step"] for e in ends] == STEP_NAMES[:7]
    assert all(isinstance(e["seconds"], float) for e in ends)
    assert any(m.startswith("[6/10] power_on: ok in ") for m in rig.said)

    aborted = Flow(rig.ctx()).abort()
    assert aborted.outcome == "aborted"
    assert aborted.left["boot_mode"] == "local"
    # the callback alone proves nothing: no minion answered with the key, so it goes
    assert aborted.left["key"] == "no key on the master"
    assert aborted.left["token"] == "none outstanding"
    assert not latest_run([*map(dict, journal(rig.node_dir))]).unfinished


def test_bmc_down_at_power_disarms_then_resume_continues(rig: Rig) -> None:
    def bmc_dies(msg: str) -> None:
        if msg == "[6/10] power_on ...":
            rig.fake.stop()

    rig.on_say = bmc_dies
    report = Flow(rig.ctx(install_timeout=90), callback_bind=("127.0.0.1", 0),
                addresses=ADDRESSES).run()
    assert report.outcome == "failed"
    assert steps(report)[-1] == ("power_on", "failed")
    assert "Connection refused" in report.message
    assert rig.boot.history == [(NODE, "install"), (NODE, "local")]
    assert report.left["boot_mode"] == "local (set back after the failure)"
    # the install never completed: no key waits on the master any more
    assert "pre-accepted new key removed" in report.left["key"]
    assert not (rig.pki / "minions" / NODE).exists()
    assert any(e.get("what") == "disarmed" for e in journal(rig.node_dir))

    with pytest.raises(FlowError, match=r"unfinished.*--resume or --abort"):
        Flow(rig.ctx()).run()

    rig.on_say = None
    (rig.tmp / "bmc2").mkdir()
    rig.point_at(start_fake_redfish(rig.tmp / "bmc2", user="root"))
    resumed = Flow(rig.ctx()).run(resume=True, stop_after="power_on")
    # a new key and token first (the failure withdrew them), off again, then re-armed
    assert steps(resumed) == [("rotate_key", "ok"), ("power_off", "ok"), ("arm_install", "ok"),
                              ("power_on", "ok")]
    assert (rig.pki / "minions" / NODE).exists()
    assert rig.boot.history[-1] == (NODE, "install")

    aborted = Flow(rig.ctx()).abort()
    assert rig.boot.history[-1] == (NODE, "local")
    assert aborted.left["token"] == "revoked"
    assert not (rig.node_dir / "keys" / "minion.pem").exists()
    assert not (rig.node_dir / "install-token").exists()


def test_install_timeout_revokes_the_token_and_resume_rotates_again(rig: Rig) -> None:
    report = Flow(rig.ctx(install_timeout=1), callback_bind=("127.0.0.1", 0),
                addresses=ADDRESSES).run()
    assert steps(report)[-1] == ("wait_install", "failed")
    assert "no install callback within 1s (the key was never fetched); token revoked" \
        in report.message
    assert rig.boot.history == [(NODE, "install"), (NODE, "local")]
    state = latest_run(journal(rig.node_dir))  # type: ignore[arg-type]
    assert state.unfinished and state.failed_step == "wait_install"
    assert STEP_NAMES[resume_point(state, rig.ctx().tokens.usable())] == "rotate_key"


def test_wrong_bmc_password_fails_preflight_before_anything_changes(rig: Rig) -> None:
    secret = rig.inv.nodes[NODE].profile.bmc.password_secret
    (rig.tmp / "secrets" / "bmc" / secret).write_text("wrong\n")
    (rig.pki / "minions" / NODE).write_bytes(b"old key")
    report = Flow(rig.ctx()).run()
    assert steps(report) == [("preflight", "failed")]
    assert "HTTP 401: credentials rejected" in report.message
    assert rig.boot.history == []
    assert report.left["boot_mode"] == "local (never armed in this run)"
    assert (rig.pki / "minions" / NODE).read_bytes() == b"old key"


def test_refuses_the_provisioning_host(rig: Rig) -> None:
    report = Flow(rig.ctx("head-01")).run()
    assert steps(report) == [("preflight", "failed")]
    assert "cannot reinstall itself" in report.message


def test_second_run_on_the_same_node_is_refused(rig: Rig) -> None:
    rig.node_dir.mkdir(parents=True, mode=0o700)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from fleet.master.lock import NodeLock\n"
         "with NodeLock(Path(sys.argv[1])):\n print('held', flush=True); time.sleep(30)",
         str(rig.node_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(BusyError, match=rf"pid {holder.pid}\b.*{NODE}"):
            Flow(rig.ctx()).run()
    finally:
        holder.kill()
        holder.wait()
    with pytest.raises(FlowError, match="no unfinished reinstall"):
        Flow(rig.ctx()).run(resume=True)  # the lock is free again once the holder died


def test_slurm_node_without_slurm_tools_fails_at_drain_clearly(rig: Rig) -> None:
    """tbox-001 is a Slurm compute node; this machine has no Slurm (the lab has)."""
    import shutil

    if shutil.which("scontrol"):
        pytest.skip("a real scontrol is installed here: drain is tested in the lab only")
    rig.fake.stop()
    pw = rig.tmp / "secrets" / "bmc" / rig.inv.nodes["tbox-001"].profile.bmc.password_secret
    pw.write_text(PASSWORD)
    pw.chmod(0o600)
    (rig.tmp / "bmc-tbox").mkdir()
    rig.point_at(start_fake_redfish(rig.tmp / "bmc-tbox", user="admin"))
    report = Flow(rig.ctx("tbox-001")).run()
    assert steps(report) == [("preflight", "ok"), ("drain", "failed")]
    assert "scontrol: command not found" in report.message
    assert report.left["slurm"] == "drain not confirmed (see the drain step)"
    assert rig.boot.history == []


def test_a_signal_is_held_outside_a_step_and_a_second_one_only_reported() -> None:
    """Interrupts as the CLI installs them: while the flow writes the journal or leaves the
    node safe (held), a signal waits for the next step to begin; a second one is reported,
    never raised; restore() puts the previous handlers back."""
    said: list[str] = []

    def deliver(sig: int) -> None:
        n = len(said)
        os.kill(os.getpid(), sig)
        wait_for(lambda: len(said) > n, f"the handler of {sig}", timeout=5)

    before = signal.getsignal(signal.SIGTERM)
    intr = Interrupts(said.append).install()
    try:
        with intr.held():
            deliver(signal.SIGTERM)
            assert intr.received == signal.SIGTERM and not intr.raised
            deliver(signal.SIGINT)
            with pytest.raises(Interrupted) as exc, intr.live():
                pytest.fail("a held signal is raised as the step begins")
            with intr.live():  # raised once only
                deliver(signal.SIGINT)
        assert exc.value.signum == signal.SIGTERM and isinstance(exc.value, KeyboardInterrupt)
        assert said == ["SIGTERM: stopping",
                        "SIGINT again: already stopping; the node is being left safe first",
                        "SIGINT again: already stopping; the node is being left safe first"]
    finally:
        intr.restore()
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_claimed_key_stops_the_run_naming_the_claimant(rig: Rig) -> None:
    """Someone at the node's address fetched the key first; the real installer reports
    it: wait_install fails naming the claimant, the key is gone from the master (the real
    salt-key), the token is spent, boot mode local."""
    flow = Flow(rig.ctx(install_timeout=90), callback_bind=("127.0.0.1", 0),
                addresses=ADDRESSES)
    thread, out = run_in_thread(flow)
    wait_for(lambda: powered_on(rig, flow), "the flow to arm the install and power the node")
    token = rig.boot.tokens[NODE]
    assert (rig.pki / "minions" / NODE).exists()
    key_url = f"{flow.callback_url}/v1/key/{NODE}"
    assert http("GET", key_url, token, source=NODE_ADDR)[0] == 200  # the claimant
    status, body = http("GET", key_url, token, source=NODE_ADDR)  # the real installer
    assert status == 409 and f"fetched by {NODE_ADDR}".encode() in body
    assert http("POST", f"{flow.callback_url}/v1/error/{NODE}", token,
                b"the master refused the key", source=NODE_ADDR)[0] == 200
    thread.join(timeout=60)
    [report] = out
    assert report.outcome == "failed" and steps(report)[-1] == ("wait_install", "failed")
    assert f"the node's key had been fetched by {NODE_ADDR}" in report.message
    assert "the key is revoked on the master" in report.message
    assert not (rig.pki / "minions" / NODE).exists()
    assert rig.boot.modes[NODE] == "local"
    assert not rig.ctx().tokens.usable()


def test_a_hostile_lock_file_never_reaches_the_terminal(rig: Rig) -> None:
    """The busy message quotes the lock's holder: only a pid's digits and printable text."""
    rig.node_dir.mkdir(parents=True, mode=0o700)
    (rig.node_dir / "lock").write_text("12x \x1b]0;owned\x07fleet \x1b[2Jrollout\n")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\n"
         "f = open(sys.argv[1], 'r+'); fcntl.flock(f, fcntl.LOCK_EX)\n"
         "print('held', flush=True); time.sleep(30)", str(rig.node_dir / "lock")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(BusyError) as info:
            Flow(rig.ctx()).run()
    finally:
        holder.kill()
    msg = str(info.value)
    assert "\x1b" not in msg and "\x07" not in msg, repr(msg)
    assert msg.startswith("another `]0;ownedfleet [2Jrollout` (pid ?) is running for "), msg


@dataclass
class ArmingWatch(RecordingBootMode):
    """Boot modes as RecordingBootMode, and what the node's BMC reports each time the
    flow arms the install (a FAKE BMC: sushy-tools' emulator)."""

    rig: Rig | None = None
    power_when_armed: list[str] = field(default_factory=list)

    def set_mode(self, node: str, mode: str, token: str | None = None) -> None:  # type: ignore[override]
        if mode == "install" and self.rig is not None:
            self.power_when_armed.append(self.rig.ctx().bmc().power_state())
        super().set_mode(node, mode, token)  # type: ignore[arg-type]


def test_the_node_is_confirmed_off_before_the_token_is_published(
        rig: Rig, tmp_path: Path) -> None:
    """A node that runs its old OS: powered off through its BMC, polled until the BMC says
    off, only then armed; then PXE once and On, and the power-on time recorded with the
    token. Nothing from its address counted before that."""
    rig.fake.stop()
    (tmp_path / "bmc-on").mkdir()
    rig.point_at(start_fake_redfish(tmp_path / "bmc-on", power="On",
                                    user=rig.inv.nodes[NODE].profile.bmc.user))
    watch = ArmingWatch(rig=rig)
    rig.boot = watch
    before = time.time()
    report = Flow(rig.ctx(), callback_bind=("127.0.0.1", 0),
                  addresses=ADDRESSES).run(stop_after="power_on")
    assert steps(report)[-4:] == [("rotate_key", "ok"), ("power_off", "ok"),
                                  ("arm_install", "ok"), ("power_on", "ok")], report.message
    assert watch.power_when_armed == ["off"]
    assert "confirmed off" in report.steps[3].detail
    sent = [r for r in rig.fake.control("GET", "/_fake/requests")
            if r["method"] in ("PATCH", "POST")]
    assert [r["body"] for r in sent] == [
        {"ResetType": "ForceOff"},
        {"Boot": {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once",
                  "BootSourceOverrideMode": "UEFI"}},
        {"ResetType": "On"}]
    status = rig.ctx().tokens.status()
    assert status is not None and status["powered_on"] >= before
    Flow(rig.ctx()).abort()


def test_a_callback_recorded_before_the_power_on_fails_wait_install(rig: Rig) -> None:
    """A done (or a key fetch) the token store holds from before the node's power-on (an
    endpoint of another process, an old one): not the installer's; wait_install refuses
    it and the failure withdraws the key."""
    import json

    from fleet.reinstall.context import StepFailedError
    from fleet.reinstall.steps import wait_install

    ctx = rig.ctx(install_timeout=5)
    store = ctx.tokens
    store.issue(60)
    data = json.loads(store.path.read_text())
    data.update(done=time.time() - 10, powered_on=time.time())
    store.path.write_text(json.dumps(data))
    with pytest.raises(StepFailedError, match="before the node was powered on for its install"):
        wait_install(ctx)
    data.update(done=None, key_fetched=time.time(), powered_on=None)
    store.path.write_text(json.dumps(data))
    with pytest.raises(StepFailedError, match="the key was fetched before the node was powered"):
        wait_install(ctx)


def test_a_failure_after_the_callback_withdraws_the_key_unless_the_minion_answered(
        rig: Rig) -> None:
    """The installer called back, then converge fails before the minion answered (here
    no master answers `salt`): the callback proved nothing about who holds the key, so it
    is removed from the master (the real salt-key) and a resume starts over at
    rotate_key. Once the minion answered with the key, a failure keeps it."""
    flow = Flow(rig.ctx(install_timeout=90), callback_bind=("127.0.0.1", 0),
                addresses=ADDRESSES)
    thread, out = run_in_thread(flow, stop_after="wait_install")
    act_as_installer(rig, flow)
    thread.join(timeout=60)
    assert (rig.pki / "minions" / NODE).exists()
    report = Flow(rig.ctx(converge_timeout=1)).run(resume=True)
    assert steps(report) == [("converge", "failed")]
    assert report.left["key"].startswith("old key deleted; the pre-accepted new key removed "
                                         "(the minion never answered with it)")
    assert not (rig.pki / "minions" / NODE).exists()
    state = latest_run(journal(rig.node_dir))  # type: ignore[arg-type]
    assert state.key_withdrawn
    assert STEP_NAMES[resume_point(state, rig.ctx().tokens.usable())] == "rotate_key"
    Flow(rig.ctx()).abort()

    # the same, but the minion had answered (converge's note): the key stays
    flow = Flow(rig.ctx(install_timeout=90), callback_bind=("127.0.0.1", 0),
                addresses=ADDRESSES)
    thread, out = run_in_thread(flow, stop_after="wait_install")
    act_as_installer(rig, flow)
    thread.join(timeout=60)
    ctx = rig.ctx()
    ctx.journal.append("note", run=out[0].run_id, what="minion-answered")
    report = Flow(rig.ctx(converge_timeout=1)).run(resume=True)
    assert steps(report) == [("converge", "failed")]
    assert report.left["key"] == "new key accepted and in use by the node's minion"
    assert (rig.pki / "minions" / NODE).exists()


def _state(completed: list[str], **kw: bool) -> RunState:
    return RunState(run_id="r", finished=None, completed=completed, **kw)


@pytest.mark.parametrize(("completed", "usable", "extra", "at"), [
    # ended in arm_install (a SIGKILL): the node may have been powered on meanwhile
    (["preflight", "drain", "rotate_key", "power_off"], True, {}, "power_off"),
    # ended in power_on: off again before it is powered on
    (["preflight", "drain", "rotate_key", "power_off", "arm_install"], True, {}, "power_off"),
    # ended while its installer ran: keep waiting for it
    (["preflight", "drain", "rotate_key", "power_off", "arm_install", "power_on"], True, {},
     "wait_install"),
    # disarmed by a failure: off first
    (["preflight", "drain", "rotate_key", "power_off", "arm_install", "power_on"], True,
     {"disarmed": True}, "power_off"),
    # the token spent: a new key and token
    (["preflight", "drain", "rotate_key", "power_off", "arm_install", "power_on"], False, {},
     "rotate_key"),
    # the key withdrawn after the callback: a new install
    (["preflight", "drain", "rotate_key", "power_off", "arm_install", "power_on",
      "wait_install"], False, {"key_withdrawn": True}, "rotate_key"),
    (["preflight", "drain", "rotate_key", "power_off", "arm_install", "power_on",
      "wait_install"], False, {}, "converge"),
])
def test_a_resume_never_arms_or_powers_on_without_a_power_off_first(
        completed: list[str], usable: bool, extra: dict[str, bool], at: str) -> None:
    assert STEP_NAMES[resume_point(_state(completed, **extra), usable)] == at


def test_a_step_run_again_drops_what_completed_after_it() -> None:
    """A resume that goes back to rotate_key runs wait_install again: until then the run
    is armed and not past its callback (a failure disarms it and withdraws the key)."""
    entries: list[dict[str, object]] = [{"event": "run", "mode": "new", "run": "r"}]
    for step in STEP_NAMES[:8]:
        entries += [{"event": "step", "run": "r", "step": step, "phase": "start"},
                    {"event": "step", "run": "r", "step": step, "phase": "end",
                     "outcome": "ok"}]
    entries += [{"event": "note", "run": "r", "what": "key-revoked"},
                {"event": "run", "run": "r", "mode": "resume"}]
    for step in ("rotate_key", "power_off", "arm_install"):
        entries += [{"event": "step", "run": "r", "step": step, "phase": "start"},
                    {"event": "step", "run": "r", "step": step, "phase": "end",
                     "outcome": "ok"}]
    state = latest_run(entries)
    assert state.completed == ["preflight", "drain", "rotate_key", "power_off", "arm_install"]
    assert state.armed and not state.key_withdrawn and not state.minion_answered
