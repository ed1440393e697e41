"""``fleet rollout`` (fleet.rollout) on the small inventory: the waves, and the flow
against a fake slurmctld (scontrol/sinfo as they print) with fake apply and health parts:
a busy node waits for its job while the others proceed, the first failure stops the
rollout with the node drained, --resume finishes, --abort leaves the drains, a node an
operator drained is never resumed."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.master import layout
from fleet.master.journal import Journal
from fleet.master.lock import BusyError, NodeLock
from fleet.master.rolloutlog import latest
from fleet.master.runner import Result
from fleet.master.salt import Salt
from fleet.pxe.bootmode import BootMode, BootModeUnavailableError
from fleet.rollout import plan
from fleet.rollout.flow import (
    Options,
    Parts,
    Rebooter,
    Rollout,
    RolloutError,
    StepFailedError,
)
from health.fakesite import scontrol_line

SMALL = Path(__file__).resolve().parents[1] / "fixtures" / "small.yaml"
GPUS = ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load_inventory(SMALL)


def test_waves_take_k_per_partition(inv: Inventory) -> None:
    nodes = [inv.nodes[n] for n in [*GPUS, "stor-1", "stor-2"]]
    w1 = plan.waves(nodes, 1)
    assert w1 == [["gpu-01", "gpu-03", "stor-1"], ["gpu-02", "gpu-04", "stor-2"]]
    assert plan.max_out(w1, inv) == {"tbox1": 1, "tbox2": 1, "-": 1}
    w2 = plan.waves(nodes, 2)
    assert w2 == [["gpu-01", "gpu-02", "gpu-03", "gpu-04", "stor-1", "stor-2"]]
    assert max(plan.max_out(plan.waves(nodes, 3), inv).values()) <= 3
    with pytest.raises(ValueError):
        plan.waves(nodes, 0)


def test_reboot_refused_for_the_head(inv: Inventory) -> None:
    assert plan.reboot_refused(inv, [inv.nodes["head-01"], inv.nodes["gpu-01"]]) == [
        "head-01 (salt master, provisioning, slurm.controller, mkv.master)"]


@dataclass
class FakeSlurm:
    """slurmctld as scontrol, sinfo, squeue and scancel show it; ``jobs[node]`` polls until
    a job ends (one job a node, its id ``job_id``)."""

    jobs: dict[str, int] = field(default_factory=dict)
    drain: dict[str, str] = field(default_factory=dict)  # node -> reason
    log: list[tuple[str, str]] = field(default_factory=list)  # (node, what), in order
    lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        a = tuple(argv)
        with self.lock:
            if a[:4] == ("scontrol", "show", "node", "-o"):
                n = a[4]
                base = "MIXED" if self.jobs.get(n) else "IDLE"
                state = base + ("+DRAIN" if n in self.drain else "")
                return Result(a, 0, scontrol_line(n, state, reason=self.drain.get(n, "")), "")
            if a[:2] == ("scontrol", "update"):
                f = dict(w.split("=", 1) for w in a[2:])
                n = f["NodeName"]
                if f["State"] == "DRAIN":
                    self.drain[n] = f["Reason"]
                    self.log.append((n, "drain"))
                else:
                    self.drain.pop(n, None)
                    self.log.append((n, "resume"))
                return Result(a, 0, "", "")
            if a[0] == "squeue":  # the node's job, by id; none in a preemptible partition
                n = a[a.index("-w") + 1]
                mine = self.jobs.get(n) and "-p" not in a
                return Result(a, 0, f"{self.job_id(n)}\n" if mine else "", "")
            if a[0] == "scancel":
                for n in [n for n in self.jobs if self.job_id(n) in a[1:]]:
                    self.jobs[n] = 0
                    self.log.append((n, "cancelled"))
                return Result(a, 0, "", "")
            if a[0] == "sinfo":
                n = a[a.index("-n") + 1]
                if self.jobs.get(n):
                    self.jobs[n] -= 1
                    if not self.jobs[n]:
                        self.log.append((n, "job ended"))
                    return Result(a, 0, "draining\n" if n in self.drain else "mixed\n", "")
                return Result(a, 0, "drained\n" if n in self.drain else "idle\n", "")
        raise AssertionError(f"unexpected {a}")

    def job_id(self, node: str) -> str:
        return str(100 + sorted(self.jobs).index(node))


@dataclass
class Rig:
    inv: Inventory
    state: Path
    slurm: FakeSlurm = field(default_factory=FakeSlurm)
    failing_apply: set[str] = field(default_factory=set)
    sick: set[str] = field(default_factory=set)
    # the nodes' PXE boot modes as the PXE side would read them; a node not here: unreadable
    modes: dict[str, BootMode] = field(default_factory=lambda: dict.fromkeys(GPUS, "local"))

    def apply(self, node: str, states: tuple[str, ...], timeout: float) -> str:
        with self.slurm.lock:
            self.slurm.log.append((node, "apply"))
        if node in self.failing_apply:
            raise StepFailedError("1 of 5 state(s) failed: base-time (chrony.conf: boom)")
        return "5 states ok, 1 changed"

    def reboot(self, node: str, timeout: float) -> str:
        with self.slurm.lock:
            self.slurm.log.append((node, "reboot"))
        return "power reset; back after 1s"

    def health(self, node: str) -> list[str]:
        return ["slurmd.service: inactive (dead)"] if node in self.sick else []

    def get_mode(self, node: str) -> BootMode:
        if node not in self.modes:
            raise BootModeUnavailableError("ssh: connect to host head-01: No route to host")
        return self.modes[node]

    def rollout(self, reboot: Rebooter | None = None) -> Rollout:
        parts = Parts(self.slurm, self.apply, reboot or self.reboot, self.health, self)
        return Rollout(self.inv, parts, self.state, self.state / "reinstall",
                       say=lambda _m: None)


def opts(**kw: object) -> Options:
    return Options(target="gpu-*", states=("base.time",), poll=0.01, health_timeout=0.05,
                   **kw)  # type: ignore[arg-type]


def test_busy_node_waits_for_its_job_while_the_others_proceed(inv: Inventory,
                                                              tmp_path: Path) -> None:
    rig = Rig(inv, tmp_path)
    rig.slurm.jobs["gpu-01"] = 40  # polls until its job ends
    report = rig.rollout().start(GPUS, opts(wave=2))
    assert report.outcome == "done", report.message
    log = rig.slurm.log
    assert log.index(("gpu-01", "job ended")) < log.index(("gpu-01", "apply"))
    for other in ("gpu-02", "gpu-03", "gpu-04"):  # done before gpu-01's job ended
        assert log.index((other, "resume")) < log.index(("gpu-01", "job ended"))
    assert rig.slurm.drain == {}
    assert "after waiting" in report.nodes["gpu-01"].detail["drain"]
    assert set(report.nodes["gpu-01"].steps) == {"lock", "drain", "apply", "reboot",
                                                  "health", "resume"}


def test_never_more_than_k_of_a_partition_out(inv: Inventory, tmp_path: Path) -> None:
    rig = Rig(inv, tmp_path)
    out: dict[str, set[str]] = {"tbox1": set(), "tbox2": set()}
    most = {"tbox1": 0, "tbox2": 0}
    real = rig.slurm.run

    def watch(argv: Sequence[str], *, timeout: float = 120) -> Result:
        res = real(argv, timeout=timeout)
        with rig.slurm.lock:
            for n in GPUS:
                p = inv.nodes[n].partition
                assert p is not None
                (out[p].add if n in rig.slurm.drain else out[p].discard)(n)
                most[p] = max(most[p], len(out[p]))
        return res

    rig.slurm.run = watch  # type: ignore[method-assign]
    assert rig.rollout().start(GPUS, opts(wave=1)).outcome == "done"
    assert most == {"tbox1": 1, "tbox2": 1}


def test_first_failure_stops_the_rollout_drained_then_resume(inv: Inventory,
                                                             tmp_path: Path) -> None:
    rig = Rig(inv, tmp_path)
    rig.failing_apply.add("gpu-03")
    report = rig.rollout().start(GPUS, opts(wave=1))
    assert report.outcome == "failed"
    assert report.nodes["gpu-03"].failed_step == "apply"
    assert report.nodes["gpu-01"].outcome == "done"  # same wave, finished
    assert "gpu-02" not in report.nodes and "gpu-04" not in report.nodes  # not started
    reason = rig.slurm.drain["gpu-03"]
    assert reason.startswith(f"fleet rollout ({report.run_id}) failed at apply: 1 of 5")
    assert set(report.left) == {"gpu-03"} and "fleet rollout" in report.left["gpu-03"]
    assert ("gpu-02", "drain") not in rig.slurm.log
    with pytest.raises(RolloutError, match="unfinished"):
        rig.rollout().start(GPUS, opts(wave=1))
    rig.failing_apply.clear()
    report = rig.rollout().start([], opts(), resume=True)  # its own target and options
    assert report.outcome == "done"
    assert set(report.nodes) == {"gpu-02", "gpu-03", "gpu-04"}
    assert rig.slurm.drain == {}
    st = latest(Journal(tmp_path).entries())
    assert st.finished == "done" and sorted(st.done) == GPUS


def test_health_failure_drains_with_the_problems_and_abort_leaves_it(
        inv: Inventory, tmp_path: Path) -> None:
    rig = Rig(inv, tmp_path)
    rig.sick.add("gpu-01")
    report = rig.rollout().start(["gpu-01", "gpu-02"], opts(wave=1))
    assert report.outcome == "failed" and report.nodes["gpu-01"].failed_step == "health"
    assert "health: slurmd.service: inactive (dead)" in rig.slurm.drain["gpu-01"]
    report = rig.rollout().abort()
    assert report.outcome == "aborted" and set(report.left) == {"gpu-01"}
    assert "gpu-01" in rig.slurm.drain  # stays drained: the operator resumes it
    with pytest.raises(RolloutError, match="nothing to resume"):
        rig.rollout().start([], opts(), resume=True)


def test_a_node_drained_by_an_operator_is_rolled_out_but_never_resumed(
        inv: Inventory, tmp_path: Path) -> None:
    rig = Rig(inv, tmp_path)
    rig.slurm.drain["gpu-02"] = "replace PSU [ops@2026-12-01T08:00:00]"
    report = rig.rollout().start(GPUS, opts(wave=2))
    assert report.outcome == "done"
    assert report.nodes["gpu-02"].detail["drain"].startswith("already drained by someone")
    assert rig.slurm.drain == {"gpu-02": "replace PSU [ops@2026-12-01T08:00:00]"}
    assert ("gpu-02", "apply") in rig.slurm.log


def test_drain_timeout_fails_and_leaves_it_drained(inv: Inventory, tmp_path: Path) -> None:
    rig = Rig(inv, tmp_path)
    rig.slurm.jobs["gpu-01"] = 10_000
    report = rig.rollout().start(["gpu-01"], opts(drain_timeout=0.1))
    assert report.outcome == "failed" and report.nodes["gpu-01"].failed_step == "drain"
    assert "still draining" in report.nodes["gpu-01"].message
    assert rig.slurm.drain["gpu-01"].startswith("fleet rollout (")
    assert ("gpu-01", "apply") not in rig.slurm.log


def test_force_cancels_the_jobs_by_id_then_reboot_runs(inv: Inventory, tmp_path: Path) -> None:
    """--force means at rollout's drain what it means at reinstall's (the one drain,
    fleet.master.slurm.drain_and_wait): the jobs are cancelled, named, never run over."""
    rig = Rig(inv, tmp_path)
    rig.slurm.jobs["gpu-01"] = 10_000
    report = rig.rollout().start(["gpu-01"], opts(force=True, reboot=True))
    assert report.outcome == "done"
    assert rig.slurm.log[:4] == [("gpu-01", "drain"), ("gpu-01", "cancelled"),
                                 ("gpu-01", "apply"), ("gpu-01", "reboot")]
    assert report.nodes["gpu-01"].detail["drain"] == "drained, --force cancelled job(s) 100"


def test_force_fails_the_drain_when_a_job_survives_its_cancel(inv: Inventory,
                                                               tmp_path: Path) -> None:
    rig = Rig(inv, tmp_path)
    rig.slurm.jobs["gpu-01"] = 10_000
    run = rig.slurm.run

    def deaf(argv: Sequence[str], *, timeout: float = 120) -> Result:  # scancel ignored
        return Result(tuple(argv), 0, "", "") if argv[0] == "scancel" else run(argv)

    rig.slurm.run = deaf  # type: ignore[method-assign]
    report = rig.rollout().start(["gpu-01"], opts(force=True, drain_timeout=0.1))
    assert report.outcome == "failed" and report.nodes["gpu-01"].failed_step == "drain"
    assert "job(s) 100 still on it" in report.nodes["gpu-01"].message
    assert ("gpu-01", "apply") not in rig.slurm.log


def test_apply_verdict_on_state_returns() -> None:
    from fleet.rollout.steps import verdict

    ok = {"file_|-base-time_|-/etc/chrony/chrony.conf_|-managed": {"result": True,
                                                                    "changes": {"diff": "x"}},
          "service_|-chrony_|-chrony_|-running": {"result": True, "changes": {}}}
    assert verdict("n", ok) == "2 states ok, 1 changed"
    bad = {**ok, "pkg_|-nvidia_|-nvidia-driver_|-installed": {
        "result": False, "comment": "E: Unable to locate package\nnvidia-driver-580"}}
    with pytest.raises(StepFailedError, match=r"1 of 3 state\(s\) failed: nvidia \(E: "
                                              r"Unable to locate package nvidia-driver-580\)"):
        verdict("n", bad)
    with pytest.raises(StepFailedError, match="no state results"):
        verdict("n", ["Rendering SLS 'base:nvidia' failed: Jinja error"])


@dataclass
class DroppingMaster:
    """STAND-IN for the salt and salt-run CLIs of a master whose minion dropped the job
    (a minion restart): the publish gets a job id, the job cache never holds a return,
    and the minion answers find_job with {} (not running it). ``lookups_allowed``: a
    rollout that waited out its --apply-timeout instead would look the job up forever."""

    lookups_allowed: int = 50
    calls: list[tuple[str, ...]] = field(default_factory=list)

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        a = tuple(argv)
        self.calls.append(a)
        if a[:2] == ("salt", "--async"):
            return Result(a, 0, "Executed command with job ID: 20261204061500123456\n", "")
        if a[:2] == ("salt-run", "jobs.lookup_jid"):
            assert sum(c[0] == "salt-run" for c in self.calls) <= self.lookups_allowed, \
                "still waiting for a job the minion said it no longer runs"
            return Result(a, 0, "{}", "")
        if a[0] == "salt" and "saltutil.find_job" in a:
            return Result(a, 0, '{"gpu-01": {}}', "")
        raise AssertionError(f"unexpected command {a}")


def test_apply_gives_up_a_dropped_job_as_lost() -> None:
    """The minion twice says it no longer runs the job and the job cache has no return:
    the apply step fails at once, naming the job lost, long before --apply-timeout."""
    from fleet.rollout.steps import SaltApply

    master = DroppingMaster()
    apply = SaltApply(Salt(master, poll=0.0, find_job_every=0.0))
    with pytest.raises(StepFailedError, match=r"job 20261204061500123456 ended on gpu-01 "
                                              "without a return"):
        apply("gpu-01", (), timeout=3600.0)
    asked = [c for c in master.calls if "saltutil.find_job" in c]
    assert len(asked) == 2 and asked[0][1:3] == ("-L", "gpu-01")


def test_reboot_waits_for_a_new_boot_id() -> None:
    import json as _json

    from fleet.rollout.steps import BmcReboot

    ids = iter(["1c2f1d6e-0000-4000-8000-000000000001\n5\n"] * 3
               + ["not an answer", "1c2f1d6e-0000-4000-8000-000000000002\n5\n"])
    resets: list[str] = []

    class Runner:
        def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
            return Result(tuple(argv), 0, _json.dumps({"gpu-01": next(ids)}), "")

    class Bmc:
        name = "redfish https://10.0.0.100"

        def power_on_or_reset(self) -> str:
            resets.append("reset")
            return "reset"

    reboot = BmcReboot(Salt(Runner()), lambda _n: Bmc(), poll=0.0)  # type: ignore[arg-type,return-value]
    assert reboot("gpu-01", 10).startswith("redfish https://10.0.0.100: power reset; back")
    assert resets == ["reset"]


def test_a_container_restart_is_a_new_boot() -> None:
    """The lab's nodes share the host's kernel (one boot_id): a new PID 1 start time is a
    new boot; the same identity until the deadline fails the step, naming the BMC."""
    import json as _json

    from fleet.rollout.steps import BmcReboot

    host = "1c2f1d6e-0000-4000-8000-000000000001"
    answers = {"new": iter([f"{host}\n100\n", f"{host}\n100\n", f"{host}\n98765\n"]),
               "same": itertools.repeat(f"{host}\n100\n")}

    class Bmc:
        name = "redfish http://127.0.0.1:1"

        def power_on_or_reset(self) -> str:
            return "reset"

    for case, it in answers.items():
        class Runner:
            def run(self, argv: Sequence[str], *, timeout: float = 120,
                    it: Iterator[str] = it) -> Result:
                return Result(tuple(argv), 0, _json.dumps({"gpu-01": next(it)}), "")

        reboot = BmcReboot(Salt(Runner()), lambda _n: Bmc(), poll=0.0)  # type: ignore[arg-type,return-value]
        if case == "new":
            assert "power reset; back" in reboot("gpu-01", 10)
        else:
            with pytest.raises(StepFailedError, match=r"redfish http://127.0.0.1:1: power reset, "
                                                      "but the minion did not answer from a "
                                                      "new boot"):
                reboot("gpu-01", 0.05)


def test_a_node_a_reinstall_holds_fails_at_its_lock_untouched(inv: Inventory,
                                                              tmp_path: Path) -> None:
    """fleet reinstall holds gpu-02's lock (another process, as in production): the
    rollout leaves gpu-02 alone (no drain, no apply), names the holder and stops after
    the wave; the other nodes of the wave finish."""
    rig = Rig(inv, tmp_path)
    node_dir = layout.node_dir(tmp_path / "reinstall", "gpu-02")
    node_dir.mkdir(parents=True, mode=0o700)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from fleet.master.lock import NodeLock\n"
         "with NodeLock(Path(sys.argv[1])):\n print('held', flush=True); time.sleep(30)",
         str(node_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        report = rig.rollout().start(GPUS, opts(wave=2))
    finally:
        holder.kill()
        holder.wait()
    assert report.outcome == "failed"
    r = report.nodes["gpu-02"]
    assert r.failed_step == "lock"
    assert re.search(rf"another `fleet reinstall` \(pid {holder.pid}\) is running for "
                     "gpu-02", r.message), r.message
    assert not [w for n, w in rig.slurm.log if n == "gpu-02"]  # not drained, not applied
    assert "gpu-02" not in rig.slurm.drain and "gpu-02" not in report.left
    assert {report.nodes[n].outcome for n in ("gpu-01", "gpu-03", "gpu-04")} == {"done"}


def test_a_reinstall_is_refused_while_the_rollout_works_on_the_node(
        inv: Inventory, tmp_path: Path) -> None:
    """While the rollout waits for gpu-01's job, the reinstall's own lock of gpu-01 is
    refused, naming the rollout; once the rollout is done it is free again."""
    rig = Rig(inv, tmp_path)
    rig.slurm.jobs["gpu-01"] = 10_000
    node_dir = layout.node_dir(tmp_path / "reinstall", "gpu-01")
    seen: list[str] = []
    real = rig.slurm.run

    def sinfo(argv: Sequence[str], *, timeout: float = 120) -> Result:
        if argv[0] == "sinfo" and not seen:
            try:
                with NodeLock(node_dir):
                    seen.append("taken")
            except BusyError as exc:
                seen.append(str(exc))
            rig.slurm.jobs["gpu-01"] = 1
        return real(argv, timeout=timeout)

    rig.slurm.run = sinfo  # type: ignore[method-assign]
    report = rig.rollout().start(["gpu-01"], opts())
    assert report.outcome == "done", report.message
    assert len(seen) == 1 and re.match(
        rf"another `fleet rollout {report.run_id}` \(pid {os.getpid()}\) is running for "
        "gpu-01", seen[0]), seen
    with NodeLock(node_dir):  # released
        pass


# --- no routine reboot reinstalls a node (fleet.pxe.powerguard) ----------------------------


def test_reboot_refuses_a_node_in_install_mode_or_of_unknown_mode(inv: Inventory,
                                                                 tmp_path: Path) -> None:
    """gpu-01 is armed for an install, gpu-03's mode cannot be read: each fails at its
    reboot naming it and why, never power-cycled, left drained with the reason; gpu-02
    and gpu-04 (local) are rebooted."""
    rig = Rig(inv, tmp_path)
    rig.modes["gpu-01"] = "install"
    del rig.modes["gpu-03"]
    report = rig.rollout().start(GPUS, opts(wave=2, reboot=True))
    assert report.outcome == "failed"
    for node, why in (("gpu-01", "gpu-01: PXE boot mode install: a power action would boot "
                                 "it into the installer, wiping its disk; refused"),
                      ("gpu-03", "gpu-03: its PXE boot mode cannot be read (ssh: connect to "
                                 "host head-01: No route to host)")):
        r = report.nodes[node]
        assert (r.failed_step, r.message[:len(why)]) == ("reboot", why), r.message
        assert "--ignore-boot-mode" in r.message
        assert (node, "reboot") not in rig.slurm.log
        assert rig.slurm.drain[node].startswith(f"fleet rollout ({report.run_id}) failed at "
                                                f"reboot: {node}: ")
    assert f"gpu-01: reboot: {report.nodes['gpu-01'].message}" in report.message
    assert {report.nodes[n].outcome for n in ("gpu-02", "gpu-04")} == {"done"}
    assert ("gpu-02", "reboot") in rig.slurm.log


def test_ignore_boot_mode_reboots_a_node_in_install_mode(inv: Inventory,
                                                         tmp_path: Path) -> None:
    rig = Rig(inv, tmp_path)
    rig.modes["gpu-01"] = "install"
    report = rig.rollout().start(["gpu-01"], opts(reboot=True, ignore_boot_mode=True))
    assert report.outcome == "done", report.message
    assert ("gpu-01", "reboot") in rig.slurm.log
    assert "(--ignore-boot-mode: gpu-01: PXE boot mode install" in \
        report.nodes["gpu-01"].detail["reboot"]


def test_rollout_cli_refuses_reboot_of_a_node_in_install_mode(tmp_path: Path) -> None:
    """The real CLI, before anything starts: gpu-01's links (fleet.pxe.state's, as `fleet
    pxe set` leaves them) point at its install scripts; a state directory that does not
    exist here is no answer."""
    from fleet.pxe import state
    from support.cli import run_fleet

    t = state.target(load_inventory(SMALL), "gpu-01", tmp_path / "pxe")
    pxe_state = tmp_path / "pxe-state"
    pxe_state.mkdir()
    (pxe_state / t.ipxe_link).symlink_to(t.script("install", "ipxe"))
    (pxe_state / t.grub_link).symlink_to(t.script("install", "grub"))
    base = ["rollout", "gpu-01,gpu-02", "-i", str(SMALL), "--reboot", "--state-dir",
            str(tmp_path / "rollout"), "--reinstall-state-dir", str(tmp_path / "reinstall")]
    r = run_fleet(*base, "--pxe-state", str(pxe_state))
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [
        "fleet: --reboot refused for gpu-01: PXE boot mode install: a power action would "
        "boot it into the installer, wiping its disk; refused (`fleet pxe set gpu-01 "
        "local` when no install is meant, `fleet reinstall gpu-01` when one is, or "
        "--ignore-boot-mode)"]
    r = run_fleet(*base, "--pxe-state", str(tmp_path / "elsewhere"))
    assert r.returncode == 2, r.stderr
    assert [ln.split(":", 2)[1].strip() for ln in r.stderr.splitlines()] == [
        "--reboot refused for gpu-01", "--reboot refused for gpu-02"]
    assert "no PXE state directory on this host" in r.stderr
    assert not (tmp_path / "rollout" / "journal.jsonl").exists()  # nothing started


# --- the reboot against a hostile BMC (fleet.bmc.limits) -----------------------------------


@pytest.mark.parametrize("mode", ["trickle", "huge-unsized"])
def test_reboot_against_a_hostile_bmc_ends_within_the_call_deadline(
        inv: Inventory, tmp_path: Path, mode: str) -> None:
    """A BMC that trickles or answers 48 MB: the real reboot step (fleet.rollout.steps)
    with the real Redfish client fails within the call deadline naming the BMC; the node
    is left drained with the reason, journaled, its lock released."""
    import json as _json

    from fleet.bmc.redfish import RedfishClient
    from fleet.rollout.steps import BmcReboot
    from support.bmcfakes import PASSWORD, USER, FakeHostileBmc

    fake = FakeHostileBmc.start(mode)
    rig = Rig(inv, tmp_path)

    class Runner:  # slurmctld as FakeSlurm shows it; the minion's boot identity
        def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
            if argv[0] == "salt":
                return Result(tuple(argv), 0, _json.dumps(
                    {"gpu-01": "1c2f1d6e-0000-4000-8000-000000000001\n5\n"}), "")
            return rig.slurm.run(argv, timeout=timeout)

    reboot = BmcReboot(Salt(Runner()), lambda _n: RedfishClient(fake.url, USER, PASSWORD, timeout=2,
                                                          call_timeout=4), poll=0.0)
    try:
        report = rig.rollout(reboot).start(["gpu-01"], opts(reboot=True))
    finally:
        fake.stop()
    r = report.nodes["gpu-01"]
    assert report.outcome == "failed" and r.failed_step == "reboot"
    assert r.steps["reboot"] < 4 + 3.0  # the call deadline, and slack for a loaded host
    assert r.message.startswith(f"BMC: redfish {fake.url}: GET /redfish/v1/Systems: ")
    assert ("no answer (or not all of it) within 2s" if mode == "trickle"
            else "an answer of more than 1048576 bytes") in r.message
    assert f"gpu-01: reboot: {r.message}" in report.message
    assert rig.slurm.drain["gpu-01"].startswith(f"fleet rollout ({report.run_id}) failed at "
                                                f"reboot: BMC: redfish {fake.url}")
    assert set(report.left) == {"gpu-01"}
    ends = [e for e in Journal(tmp_path).entries()
            if e.get("step") == "reboot" and e.get("phase") == "end"]
    assert [(e["outcome"], e["detail"]) for e in ends] == [("failed", r.message)]
    with NodeLock(layout.node_dir(tmp_path / "reinstall", "gpu-01")):  # released
        pass


def test_boot_modes_read_through_a_pxe_command(tmp_path: Path) -> None:
    """--pxe-command: the mode as `CMD pxe status NODE --json` answers it (here the real
    fleet CLI behind a wrapper script, as `ssh head-01 fleet` would run it there)."""
    from fleet.pxe import state
    from fleet.pxe.bootmode import CommandBootMode
    from fleet.pxe.powerguard import power_refusal
    from support.cli import ROOT

    t = state.target(load_inventory(SMALL), "gpu-01", tmp_path / "pxe")
    pxe_state = tmp_path / "pxe-state"
    pxe_state.mkdir()
    (pxe_state / t.ipxe_link).symlink_to(t.script("install", "ipxe"))
    wrapper = tmp_path / "remote-fleet"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH={ROOT / "tools"} exec {sys.executable} -m fleet '
                       f'"$@" -i {SMALL} --pxe-state {pxe_state}\n')
    wrapper.chmod(0o755)
    modes = CommandBootMode([str(wrapper)])
    assert (modes.get_mode("gpu-01"), modes.get_mode("gpu-02")) == ("install", "local")
    assert power_refusal("gpu-02", modes) is None
    why = power_refusal("gpu-999", modes)
    assert why is not None and why.startswith("gpu-999: its PXE boot mode cannot be read "
                                              f"(cannot read gpu-999's boot mode: `{wrapper} "
                                              "pxe status gpu-999 --json` exited 2: ")
