"""Several `fleet reinstall`s at once in the lab: one CLI run, one flow
per node in threads, ONE installer endpoint for all of them, each node's own journal, lock
and token; the same FAKE BMCs and FAKE hardware as tests/lab/test_reinstall.py
(reinstall_rig.py). Runs after the read-only lab tests (conftest.py orders it); each run
leaves its nodes reinstalled, converged and resumed.

``FLEET_BENCH_REINSTALL=1,2,3`` adds the benchmark runs (benchmarks/reinstall_parallel.py):
one parallel reinstall of that many GPU nodes each, timings to
``.lab/reinstall-parallel-bench.json``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any

import pytest
from labtools import Lab
from reinstall_rig import Rig, finish, rig_up

PAIR = ("tbox-001", "tbox-039")
GPU_NODES = ("tbox-001", "tbox-002", "tbox-039")
BENCH = [int(n) for n in os.environ.get("FLEET_BENCH_REINSTALL", "").split(",") if n]


@pytest.fixture(scope="module")
def rig(lab: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    with rig_up(lab, tmp_path_factory.mktemp("reinstall-parallel")) as r:
        yield r


def _ended(rig: Rig, node: str, step: str) -> float:
    return next(e["ts"] for e in rig.journal(node)
                if e["event"] == "step" and e["step"] == step and e["phase"] == "end")


def _started(rig: Rig, node: str, step: str) -> float:
    return next(e["ts"] for e in rig.journal(node)
                if e["event"] == "step" and e["step"] == step and e["phase"] == "start")


def _reinstall(rig: Rig, nodes: tuple[str, ...], parallel: int
               ) -> tuple[int, dict[str, Any], float]:
    t0 = time.monotonic()
    proc = rig.start(",".join(nodes), "--parallel", str(parallel), "--timeout", "1200")
    rc, out = finish(proc, 3600)
    return rc, out, time.monotonic() - t0


def test_two_nodes_reinstall_in_parallel(rig: Rig, lab: Lab) -> None:
    keys = {n: (lab.paths.master_root / "pki" / "minions" / n).read_text() for n in PAIR}
    rc, out, wall = _reinstall(rig, PAIR, 2)
    name = ",".join(PAIR)
    assert rc == 0, f"{json.dumps(out, indent=1)[-3000:]}\n{rig.stderr(name)}"
    assert out["ok"] and out["parallel"] == 2 and out["peak"] == 2
    nodes = {n["node"]: n for n in out["nodes"]}
    assert list(nodes) == list(PAIR)
    for node in PAIR:
        report = nodes[node]
        assert report["outcome"] == "done" and report["exit"] == 0, report
        assert [s["step"] for s in report["steps"]] == [
            "preflight", "drain", "rotate_key", "power_off", "arm_install", "power_on",
            "wait_install",
            "converge", "health", "resume"]
        assert all(s["outcome"] == "ok" for s in report["steps"]), report["steps"]
        # its own run, journal and token; a new key on the master, in use
        journal = rig.journal(node)
        assert journal[0]["run"] == report["run"] and journal[-1]["outcome"] == "done"
        assert (lab.paths.master_root / "pki" / "minions" / node).read_text() != keys[node]
        hw = [e["event"] for e in rig.hardware(node)]
        assert hw.count("install-start") == 1 and "booted-disk" in hw, hw
        assert rig.boot_mode(node) == "local" and rig.slurm_state(node) == "idle"
    # ONE endpoint served both installers; each node was installed while the other was
    # being installed or converged (the fake install itself takes 5 s, and a power-off
    # through the fake BMC 2 to 11 s under load: the two 5-s windows need not overlap)
    stderr = rig.stderr(name, tail=None)  # the endpoint line is near its start
    assert stderr.count("installer endpoint: ") == 1, stderr
    a, b = PAIR
    assert _started(rig, a, "wait_install") < _ended(rig, b, "converge")
    assert _started(rig, b, "wait_install") < _ended(rig, a, "converge")
    _record(lab, "test", 2, PAIR, out, wall)


def _record(lab: Lab, run: str, n: int, nodes: tuple[str, ...], out: dict[str, Any],
            wall: float) -> None:
    f = lab.paths.lab / "reinstall-parallel-bench.json"
    data = json.loads(f.read_text()) if f.exists() else []
    reports = out.get("nodes", [out])  # one node: its own report
    data.append({"run": run, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                 "nodes": list(nodes), "parallel": n, "wall": round(wall, 1),
                 "load": os.getloadavg(),
                 "steps": {r["node"]: {s["step"]: s["seconds"] for s in r["steps"]}
                           for r in reports}})
    f.write_text(json.dumps(data, indent=2))


@pytest.mark.parametrize("n", BENCH or [pytest.param(0, marks=pytest.mark.skip(
    reason="benchmark: FLEET_BENCH_REINSTALL=1,2,3 (benchmarks/reinstall_parallel.py)"))])
def test_bench_parallel_reinstall(rig: Rig, lab: Lab, n: int) -> None:
    # FLEET_BENCH_UNTIL=EPOCH: no run that would not end by then (the lab is shared)
    until = float(os.environ.get("FLEET_BENCH_UNTIL") or "inf")
    if time.time() + 240 + 120 * n > until:
        pytest.skip("benchmark: not enough time left before FLEET_BENCH_UNTIL")
    nodes = GPU_NODES[:n]
    rc, out, wall = _reinstall(rig, nodes, n)
    assert rc == 0, f"{json.dumps(out, indent=1)[-3000:]}\n{rig.stderr(','.join(nodes))}"
    _record(lab, "bench", n, nodes, out, wall)
