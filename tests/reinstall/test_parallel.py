"""Several reinstalls at once (fleet.reinstall.parallel): the scheduler with real threads and
real signals, the link bound on the real inventory, and `fleet reinstall A,B,C` as an
operator runs it. Whole parallel reinstalls are in the lab (tests/lab/
test_reinstall_parallel.py)."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from fleet.exitcodes import Exit
from fleet.inventory.load import load_inventory
from fleet.reinstall.flow import Interrupted
from fleet.reinstall.parallel import (
    NodeInterrupts,
    NodeResult,
    SignalHub,
    link_bound,
    run_all,
    summary,
)
from reinstall.helpers import ROOT, journal, run_fleet, salt_key_bin, salt_master_config

NODES = [f"n{i}" for i in range(6)]


class Tracker:
    """Counts the jobs that run at once."""

    def __init__(self) -> None:
        self.now = self.peak = 0
        self.lock = threading.Lock()
        self.started: list[str] = []

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1


def test_at_most_parallel_at_once_and_every_node_runs() -> None:
    t = Tracker()

    def job(node: str, interrupts: NodeInterrupts) -> NodeResult:
        with t:
            t.started.append(node)
            time.sleep(0.3)
        return NodeResult(node, "done", 0)

    run = run_all(NODES, job, 2, SignalHub())
    assert t.peak == 2 == run.peak
    assert sorted(t.started) == NODES and [r.node for r in run.results] == NODES
    assert run.exit == 0
    assert 0.85 < run.wall < 3.0  # three rounds of two, not six in a row nor all at once


def test_one_failure_does_not_stop_the_others_and_sets_the_exit_code() -> None:
    def job(node: str, interrupts: NodeInterrupts) -> NodeResult:
        time.sleep(0.05)
        if node == "n1":
            return NodeResult(node, "failed", int(Exit.FAILED), message="power failed: x")
        if node == "n3":
            raise RuntimeError("a bug")
        return NodeResult(node, "done", 0)

    run = run_all(NODES, job, 3, SignalHub())
    outcome = {r.node: r.outcome for r in run.results}
    assert outcome == {"n0": "done", "n1": "failed", "n2": "done", "n3": "error",
                       "n4": "done", "n5": "done"}
    assert run.exit == Exit.FAILED
    lines = summary(run)
    assert lines[1].startswith("n1") and "power failed: x" in lines[1]
    assert "internal error: RuntimeError: a bug" in lines[3]
    assert lines[-1].startswith("4 of 6 ok in ")


def test_busy_only_exits_busy() -> None:
    def job(node: str, interrupts: NodeInterrupts) -> NodeResult:
        return NodeResult(node, "busy", int(Exit.BUSY)) if node == "n2" \
            else NodeResult(node, "done", 0)

    assert run_all(NODES, job, 6, SignalHub()).exit == Exit.BUSY


def test_sigint_ends_each_running_step_and_starts_no_more_nodes() -> None:
    """A real SIGINT to this process: the main thread's hub hands it to every running
    flow: one in a step (a sleep loop, as wait_install) is interrupted there; one that
    is writing its journal (held) finishes that, and its next step is interrupted at its
    start; the nodes still waiting for a slot are not started."""
    seen: dict[str, str] = {}
    in_step = threading.Event()
    in_held = threading.Event()

    def job(node: str, interrupts: NodeInterrupts) -> NodeResult:
        try:
            if node == "n0":
                with interrupts.live():
                    in_step.set()
                    for _ in range(300):
                        time.sleep(0.05)
            else:
                with interrupts.held():
                    in_held.set()
                    time.sleep(1.0)  # the signal comes meanwhile
                    seen[node] = "held part completed"
                with interrupts.live():
                    seen[node] += "; next step ran"
        except Interrupted as exc:
            seen[node] = seen.get(node, "") + f"; interrupted by {signal.Signals(exc.signum).name}"
            return NodeResult(node, "failed", 128 + exc.signum)
        return NodeResult(node, "done", 0)

    hub = SignalHub().install()
    try:
        threading.Timer(0.1, lambda: (in_step.wait(5), in_held.wait(5),
                                      os.kill(os.getpid(), signal.SIGINT))).start()
        run = run_all(NODES, job, 2, hub)
    finally:
        hub.restore()
    assert seen == {"n0": "; interrupted by SIGINT",
                    "n1": "held part completed; interrupted by SIGINT"}
    assert [r.outcome for r in run.results] == ["failed", "failed"] + ["not-started"] * 4
    assert run.signal == "SIGINT" and run.exit == 130
    assert run.wall < 10


def test_a_step_that_ends_as_the_signal_comes_does_not_take_it_into_its_cleanup() -> None:
    """The signal reaches a flow whose step has just ended: the journal write after it is
    not cut; the next step gets it at once."""
    it = NodeInterrupts()
    it.bind()
    with it.live():
        pass
    with it.held():
        it.deliver(signal.SIGTERM)  # held: nothing raised here
        time.sleep(0.05)
    with pytest.raises(Interrupted) as exc, it.live():
        pytest.fail("the step ran")
    assert exc.value.signum == signal.SIGTERM


def test_the_bound_comes_from_the_provisioning_link_and_the_image(tmp_path: Path) -> None:
    inv = load_inventory(ROOT / "inventory.yaml")
    host = inv.nodes[inv.raw.site.provisioning_host]
    assert host.prov.speed_gbps == 100
    default = link_bound(inv, tmp_path)  # no ISO there: 3 GiB
    assert default.limit == int(100e9 * 0.5 * 60 / (3 * 2**30 * 8)) == 116
    assert "100 Gb/s" in default.why and "3 GiB" in default.why
    from urllib.parse import urlsplit

    iso = tmp_path / urlsplit(str(inv.raw.site.install.iso_url)).path.lstrip("/")
    iso.parent.mkdir(parents=True)
    with iso.open("wb") as fh:  # a sparse 50 GiB "ISO"
        fh.truncate(50 * 2**30)
    assert link_bound(inv, tmp_path).limit == 6


def test_cli_several_nodes_each_its_own_journal_summary_and_abort(tmp_path: Path) -> None:
    """`fleet reinstall head-01,tbox-[001-002]`: head-01 refuses (it is the master), the
    tboxes fail preflight (no BMC secret): each journaled on its own, the summary names
    each, exit 5; --parallel above the bound is said; --abort on the set closes all."""
    salt_key_bin()
    conf, _pki = salt_master_config(tmp_path)
    base = ["reinstall", "head-01,tbox-[001-002]", "--state-dir", str(tmp_path / "state"),
            "--salt-config", str(conf), "--pxe-root", str(ROOT / "pxe"),
            "--pxe-state", str(tmp_path / "pxe-state"), "--secrets", str(tmp_path / "s"),
            "--callback", "127.0.0.1:0"]
    r = run_fleet(*base, "--parallel", "500", "--json")
    assert r.returncode == 5, r.stderr
    assert "--parallel 500 is above what the provisioning link carries (116" in r.stderr
    out = json.loads(r.stdout)
    assert out["parallel"] == 3 and out["bound"]["limit"] == 116 and out["exit"] == 5
    nodes = {n["node"]: n for n in out["nodes"]}
    assert list(nodes) == ["head-01", "tbox-001", "tbox-002"]
    assert all(n["outcome"] == "failed" and n["exit"] == 5 for n in nodes.values())
    assert "cannot reinstall itself" in nodes["head-01"]["message"]
    assert "no such BMC secret" in nodes["tbox-002"]["steps"][0]["detail"]
    for name in nodes:  # one journal, lock and run per node
        entries = journal(tmp_path / "state" / name)
        assert entries[-1]["event"] == "finish" and entries[-1]["step"] == "preflight"
        assert entries[0]["run"] == nodes[name]["run"]
    assert "tbox-001: [1/9] preflight: failed in " in r.stderr  # progress names the node
    # an unfinished run on each: a plain rerun is busy for each, exit 6
    r = run_fleet(*base)
    assert r.returncode == 6, r.stdout + r.stderr
    assert r.stdout.count("refused") == 3 and "use --resume or --abort" in r.stdout
    r = run_fleet(*base, "--abort")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines()[-1].startswith("3 of 3 ok in ")
    r = run_fleet(*base, "--resume")
    assert r.returncode == 6 and r.stdout.count("no unfinished reinstall to resume") == 3, \
        r.stdout  # as for one node


def test_cli_a_target_that_names_no_node_is_a_usage_error(tmp_path: Path) -> None:
    r = run_fleet("reinstall", "tbox-[001-002],nosuch-*", "--state-dir", str(tmp_path))
    assert r.returncode == 2 and "nosuch-*: matches no node" in r.stderr
