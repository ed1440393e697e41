"""converge's boot guard (fleet.reinstall.bootguard): a node whose minion is still silent
the boot grace after the installer's callback (hung in its firmware after the installer's
reboot) is power-cycled once through its BMC, and only then. The BMC is the FAKE Redfish
BMC (sushy-tools' emulator, the node on, as after its install); the Salt master is a
STAND-IN (this runner answers ``salt ... test.ping``, ``salt --async ... state.apply`` and
``salt-run jobs.lookup_jid`` as the real CLI prints them), whose minion answers as each
test says: at once, only once the fake BMC was sent a reset, or never."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from fleet.bmc.connect import BmcOptions, client_for
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.master.keys import MinionKeys
from fleet.master.runner import Result
from fleet.reinstall import bootguard
from fleet.reinstall.context import Context, Options, StepFailedError
from fleet.reinstall.steps import converge
from reinstall.helpers import ROOT, RecordingBootMode, journal
from support.bmcfakes import PASSWORD, FakeBmcProcess, free_port, start_fake_redfish

NODE = "stor-001"  # not a Slurm node
JID = "20261205231500123456"
RUN = "20261205T231500Z-abcdef"
CYCLED = "power-cycled once through the BMC"


@dataclass
class StandInMaster:
    """Answers the salt CLI for NODE; its minion answers while ``answers()`` is true."""

    answers: Callable[[], bool]
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        a = tuple(argv)
        self.calls.append(a)
        if a[:4] == ("salt", "-L", NODE, "test.ping"):
            up = self.answers()
            ret = True if up else "Minion did not return. [No response]"
            return Result(a, 0 if up else 1, json.dumps({NODE: ret}), "")
        if a[:5] == ("salt", "--async", "-L", NODE, "state.apply"):
            return Result(a, 0, f"Executed command with job ID: {JID}\n", "")
        if a[:3] == ("salt-run", "jobs.lookup_jid", JID):
            state = {"file_|-converged_|-/etc/converged_|-managed": {
                "result": True, "changes": {}, "comment": "", "__run_num__": 0,
                "duration": 1.0}}
            return Result(a, 0, json.dumps({NODE: state}), "")
        raise AssertionError(f"unexpected command {a}")


@dataclass
class Rig:
    tmp: Path
    inv: Inventory
    fake: FakeBmcProcess
    said: list[str] = field(default_factory=list)
    bmc_address: str = ""

    def ctx(self, master: StandInMaster, **options: Any) -> Context:
        node = self.inv.nodes[NODE]
        opts = BmcOptions(secrets_dir=self.tmp / "secrets", scheme="http",
                          address=self.bmc_address or f"127.0.0.1:{self.fake.port}",
                          timeout=3, call_timeout=8)
        ctx = Context(inventory=self.inv, node=node, state_root=self.tmp / "state",
                      runner=master, boot=RecordingBootMode(),
                      bmc=lambda: client_for(node, opts),
                      keys=MinionKeys(master, self.tmp / "pki"),
                      options=Options(poll=0.05, **options), say=self.said.append,
                      run_id=RUN)
        return ctx

    def resets(self) -> list[object]:
        return [r["body"] for r in self.fake.control("GET", "/_fake/requests")
                if r["method"] == "POST"]

    def patches(self) -> list[object]:
        return [r for r in self.fake.control("GET", "/_fake/requests")
                if r["method"] == "PATCH"]

    def reset_sent(self) -> bool:
        return bool(self.resets())


@pytest.fixture(scope="module")
def inventory() -> Inventory:
    return load_inventory(ROOT / "inventory.yaml")


@pytest.fixture
def rig(tmp_path: Path, inventory: Inventory) -> Iterator[Rig]:
    node = inventory.nodes[NODE]
    (tmp_path / "secrets" / "bmc").mkdir(parents=True, mode=0o700)
    pw = tmp_path / "secrets" / "bmc" / node.profile.bmc.password_secret
    pw.write_text(PASSWORD + "\n")
    pw.chmod(0o600)
    (tmp_path / "bmc").mkdir()
    fake = start_fake_redfish(tmp_path / "bmc", power="On", user=node.profile.bmc.user)
    rig = Rig(tmp_path, inventory, fake)
    yield rig
    fake.stop()
    rig.fake.stop()  # a test may have put another fake BMC in its place


def called_back(ctx: Context) -> None:
    """The run so far, as the journal and the token store hold it after wait_install."""
    ctx.journal.append("run", run=RUN, mode="new", start_at="preflight")
    ctx.tokens.issue(600)
    data = json.loads(ctx.tokens.path.read_text())
    data.update(powered_on=time.time() - 300, key_fetched=time.time() - 1, done=time.time())
    ctx.tokens.path.write_text(json.dumps(data))


def notes(ctx: Context) -> list[dict[str, object]]:
    return [e for e in journal(ctx.node_dir)
            if e["event"] == "note" and e.get("what") == bootguard.NOTE]


def test_a_node_that_answers_within_the_grace_is_never_cycled(rig: Rig) -> None:
    pings = iter(range(1000))
    master = StandInMaster(lambda: next(pings) >= 3)  # silent for its first three pings
    ctx = rig.ctx(master, converge_timeout=600, boot_grace=300)
    called_back(ctx)
    assert converge(ctx) == "highstate ok: 1 states, 0 changed"
    assert rig.resets() == [] and notes(ctx) == []
    assert not [m for m in rig.said if CYCLED in m]


def test_a_silent_node_is_cycled_exactly_once_then_answers(rig: Rig) -> None:
    master = StandInMaster(rig.reset_sent)  # boots only once reset (hung in its firmware)
    ctx = rig.ctx(master, converge_timeout=60, boot_grace=0.3)
    called_back(ctx)
    detail = converge(ctx)
    assert detail.startswith("highstate ok: 1 states, 0 changed; no answer ")
    assert detail.endswith(f"s after the callback: {CYCLED} (redfish "
                           f"http://127.0.0.1:{rig.fake.port}: ForceRestart)")
    # a reset, nothing else: no PXE override again (the boot mode is local: its disk)
    assert rig.resets() == [{"ResetType": "ForceRestart"}]
    assert rig.patches() == []
    [note] = notes(ctx)
    assert note["outcome"] == "cycled" and note["run"] == RUN
    [line] = [m for m in rig.said if CYCLED in m]
    assert line == f"  {note['detail']}" and detail.endswith(str(note["detail"]))
    assert any(e.get("what") == "minion-answered" for e in journal(ctx.node_dir))


def test_a_node_that_never_answers_is_cycled_once_and_the_failure_names_it(rig: Rig) -> None:
    master = StandInMaster(lambda: False)
    ctx = rig.ctx(master, converge_timeout=2, boot_grace=0.3)
    called_back(ctx)
    with pytest.raises(StepFailedError) as exc:
        converge(ctx)
    msg = str(exc.value)
    assert msg.startswith("the minion did not answer within 2s (key accepted in advance")
    assert f": {CYCLED} (redfish " in msg
    assert rig.resets() == [{"ResetType": "ForceRestart"}]  # once, however many polls after
    assert len(notes(ctx)) == 1
    pings = [c for c in master.calls if c[3] == "test.ping"]
    assert len(pings) > 3  # it went on asking after the cycle


def test_a_resumed_converge_does_not_cycle_again_in_the_same_run(rig: Rig) -> None:
    master = StandInMaster(lambda: False)
    ctx = rig.ctx(master, converge_timeout=1, boot_grace=0.2)
    called_back(ctx)
    with pytest.raises(StepFailedError, match=CYCLED):
        converge(ctx)
    # --resume repeats converge in the same run: the journal says it was cycled already
    ctx.journal.append("run", run=RUN, mode="resume", start_at="converge")
    with pytest.raises(StepFailedError, match=r"\(earlier in this run: not again\)$"):
        converge(ctx)
    assert rig.resets() == [{"ResetType": "ForceRestart"}]
    assert len(notes(ctx)) == 1


def test_a_bmc_that_cannot_cycle_is_said_and_the_wait_goes_on(rig: Rig) -> None:
    rig.bmc_address = f"127.0.0.1:{free_port()}"  # nothing listens there
    master = StandInMaster(lambda: False)
    ctx = rig.ctx(master, converge_timeout=3, boot_grace=0.2)
    called_back(ctx)
    with pytest.raises(StepFailedError) as exc:
        converge(ctx)
    assert "s after the callback: the BMC could not power-cycle it (redfish " in str(exc.value)
    assert str(exc.value).endswith("; still waiting")
    [note] = notes(ctx)  # asked once, not at every poll
    assert note["outcome"] == "failed"
    assert len([m for m in rig.said if "could not power-cycle" in m]) == 1
    assert rig.resets() == []


def test_a_node_the_bmc_reports_off_is_not_powered(rig: Rig) -> None:
    rig.fake.stop()
    (rig.tmp / "bmc-off").mkdir()
    rig.fake = start_fake_redfish(rig.tmp / "bmc-off", power="Off",
                                  user=rig.inv.nodes[NODE].profile.bmc.user)
    master = StandInMaster(lambda: False)
    ctx = rig.ctx(master, converge_timeout=1, boot_grace=0.2)
    called_back(ctx)
    with pytest.raises(StepFailedError, match=r"reports the node off: not power-cycled$"):
        converge(ctx)
    assert rig.resets() == []
    assert [n["outcome"] for n in notes(ctx)] == ["not-on"]


def test_a_grace_of_zero_never_cycles(rig: Rig) -> None:
    master = StandInMaster(lambda: False)
    ctx = rig.ctx(master, converge_timeout=1, boot_grace=0)
    called_back(ctx)
    with pytest.raises(StepFailedError) as exc:
        converge(ctx)
    assert "callback" not in str(exc.value)
    assert rig.resets() == [] and notes(ctx) == []


def test_the_grace_defaults_to_a_share_of_the_converge_timeout() -> None:
    assert bootguard.grace(Options(converge_timeout=900)) == 900 * bootguard.GRACE_SHARE
    assert bootguard.grace(Options(converge_timeout=900, boot_grace=60)) == 60
    assert 0 < bootguard.GRACE_SHARE < 1  # it acts before the timeout, and leaves a boot


def test_the_cli_passes_boot_grace_to_the_flow(tmp_path: Path, inventory: Inventory) -> None:
    from fleet.cli import build_parser
    from fleet.commands import reinstall
    from fleet.context import Context as CliContext

    def options(*extra: str) -> Options:
        argv = ["reinstall", NODE, "--salt-config", str(tmp_path), *extra]
        args = build_parser(argv).parse_args(argv)
        return reinstall._context(args, CliContext.of(args), inventory, NODE,
                                  lambda _m: None).options

    assert options("--boot-grace", "240").boot_grace == 240
    assert options().boot_grace is None


def test_the_operations_doc_states_the_default_grace_the_code_has() -> None:
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    assert f"`--boot-grace` (default {bootguard.GRACE_SHARE:g} × `--converge-timeout`" in text
