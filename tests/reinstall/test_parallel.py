"""Several reinstalls at once (fleet.reinstall.parallel): the scheduler with real threads and
real signals, the link bound on the real inventory, and `fleet reinstall A,B,C` as an
operator runs it. Whole parallel reinstalls are in the lab (tests/lab/
test_reinstall_parallel.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
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
from reinstall.helpers import ROOT, journal
from support.cli import run_fleet
from support.httpreq import http
from support.saltkeys import salt_key_bin, salt_master_config

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
    assert "tbox-001: [1/10] preflight: failed in " in r.stderr  # progress names the node
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


def test_cli_two_nodes_one_endpoint_and_sigterm_leaves_both_safe(tmp_path: Path) -> None:
    """`fleet reinstall stor-001,stor-002` with a fake Redfish BMC each: both armed and
    powered, both waiting on ONE endpoint (it knows both nodes: each refused from this
    test's address as not its own, not as unknown); SIGTERM then ends both waits at once:
    each journals wait_install failed 'interrupted by the operator', boot mode local,
    pre-accepted key removed; exit 143."""
    from support.bmcfakes import PASSWORD, free_port, start_fake_redfish

    salt_key_bin()
    conf, pki = salt_master_config(tmp_path)
    inv = load_inventory(ROOT / "inventory.yaml")
    nodes = ["stor-001", "stor-002"]
    (tmp_path / "secrets" / "bmc").mkdir(parents=True, mode=0o700)
    fakes = {}
    for name in nodes:
        spec = inv.nodes[name].profile.bmc
        pw = tmp_path / "secrets" / "bmc" / spec.password_secret
        pw.write_text(PASSWORD + "\n")
        pw.chmod(0o600)
        (tmp_path / f"bmc-{name}").mkdir()
        fakes[name] = start_fake_redfish(tmp_path / f"bmc-{name}", user=spec.user)
    port = free_port()
    argv = [sys.executable, "-m", "fleet", "reinstall", ",".join(nodes), "--json",
            "--state-dir", str(tmp_path / "state"), "--salt-config", str(conf),
            "--pxe-root", str(ROOT / "pxe"), "--pxe-state", str(tmp_path / "pxe-state"),
            "--secrets", str(tmp_path / "secrets"), "--callback", f"127.0.0.1:{port}",
            "--bmc-address", ",".join(f"{n}=127.0.0.1:{f.port}" for n, f in fakes.items()),
            "--bmc-scheme", "http", "--timeout", "600", "--parallel", "2"]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": str(ROOT / "tools")})

    def waiting(name: str) -> bool:
        f = tmp_path / "state" / name / "journal.jsonl"
        return f.exists() and any(e.get("step") == "wait_install" and e.get("phase") ==
                                  "start" for e in journal(f.parent))

    try:
        deadline = time.monotonic() + 120
        while not all(waiting(n) for n in nodes):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the nodes never both reached wait_install"
            time.sleep(0.2)
        url = f"http://127.0.0.1:{port}"
        for name in nodes:
            token = (tmp_path / "state" / name / "install-token").read_text().strip()
            status, body = http("GET", f"{url}/v1/key/{name}", token)
            assert status == 403 and f"not from {name}'s address".encode() in body, body
        time.sleep(0.5)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        for f in fakes.values():
            f.stop()
    assert proc.returncode == 143, err
    assert took < 15, f"{took:.1f}s from SIGTERM to exit"
    assert err.count("installer endpoint: ") == 1, err
    run = json.loads(out)
    assert run["signal"] == "SIGTERM" and run["exit"] == 143 and run["peak"] == 2
    for report in run["nodes"]:
        name = report["node"]
        assert report["outcome"] == "failed" and report["signal"] == "SIGTERM", report
        assert report["steps"][-1]["step"] == "wait_install"
        assert report["steps"][-1]["detail"] == "interrupted by the operator"
        assert report["left"]["boot_mode"] == "local (set back after the failure)"
        link = tmp_path / "pxe-state" / (inv.nodes[name].mac.replace(":", "-") + ".ipxe")
        assert link.readlink().name == "local.ipxe"
        assert not (pki / "minions" / name).exists()
        entries = journal(tmp_path / "state" / name)
        end = [e for e in entries if e.get("step") == "wait_install" and e.get("phase") ==
               "end"]
        assert len(end) == 1 and end[0]["signal"] == "SIGTERM"
        assert [e["outcome"] for e in entries if e["event"] == "finish"] == ["failed"]
    assert "Traceback" not in err
