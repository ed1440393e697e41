"""Burn-in on a lab node (docs/discovery.md, section 4), and the hardware grain there.

- tbox-039 is put in ``burn-in`` (a copy of inventory.yaml, edited like `fleet discover
  accept` edits it) and head-01, the Slurm controller, applied: the node is in the hidden
  burn-in partition alone (fleet.inventory.lifecycle.BURNIN_PARTITION), idle, not drained;
  a job of its training partition naming it is not run, root's job of the burn-in
  partition is, and a user other than root cannot submit to it (RootOnly). `fleet burnin
  run` runs the real stress-ng, memtester and fio (short durations, an extra overlay of
  this test) through the lab's Salt master on the node's installed OS, and keeps the
  results; `fleet burnin status` and `fleet status --live --hardware` show them (stage
  ``burn-in 3/3``). `fleet burnin finish` writes ``active`` into the copy; rendered (the
  same render as the lab's own) and applied, the controller puts the node back into its
  partition.
- The same status call shows the fleet grain (salt/_grains/fleet_hw.py, synced by the
  lab's highstate, never by hand) reaching the drift: the inventory's HCA GUID against the
  GUIDs the node's own grain reports (a container has no HCA), with both values, also in
  `fleet node show --hardware`.
- Re-running burn-in on a node in service (tbox-002, active) is refused without
  ``--drain``; with it, the node is drained (fleet.master.slurm.drain_and_wait, seen in
  Slurm while the check runs) and resumed once it passes.
- A missing GPU (a STAND-IN nvidia-smi) and a baseline outlier (STAND-IN results of the
  profile's other lab nodes) leave tbox-039 in maintenance, the failing check its reason
  in `fleet status`.

Whatever fails, `finally` renders the lab's own inventory and applies head-01 again and
resumes tbox-002, so the lab is left as the first highstate made it. Waits poll.

Run: `FLEET_LAB=1 .venv/bin/pytest -q tests/lab/test_burnin.py` (with the rest: make test-lab).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import yaml
from labtools import ROOT, Lab, podman_exec, poll, sinfo_node

from fleet.burnin.verdict import MIN_BASELINE
from fleet.discover import edit
from fleet.inventory.lifecycle import BURNIN_PARTITION
from fleet.inventory.load import load_inventory
from fleet.inventory.schema.hardware import BURNIN_CHECKS
from fleet.lab import highstate
from fleet.render import render_all, tree
from support.gpustandin import SEVEN_GPUS, SEVEN_GPUS_REASON

HEAD = "head-01"  # the Slurm controller
NODE = "tbox-039"  # the lab's one tbox2 node: burns in
PARTITION = "tbox2"  # its training partition
ACTIVE = "tbox-002"  # in service: re-run with --drain
# the lab's short burn-in of the profile (the site names hours), exactly these checks: an
# overlay merges mappings, so the site's other checks are deleted (null)
SHORT = {"cpu-stress": {"seconds": 6, "tolerance_percent": 10},
         "memtester": {"seconds": 0, "mb": 16},
         "disk-verify": {"seconds": 3, "mb": 16}}
BURNIN = {"profiles": {"tinybox-pro": {"burnin": {**dict.fromkeys(BURNIN_CHECKS), **SHORT}}}}
CHECKS = sorted(SHORT)


def _render(lab: Lab, inventory: Path, *extra: Path) -> None:
    tree.write(lab.paths.render,
               render_all(load_inventory(inventory, [*lab.paths.overlays, *extra])))


def _apply_head(lab: Lab) -> None:
    results, _ = highstate.apply(lab.paths, [HEAD], target=HEAD, timeout=900)
    assert not [r for r in results if r.status.bad], highstate.format_results(results, 0.0)


def _slurm(lab: Lab, node: str) -> str:
    """``STATE|REASON`` of the node in sinfo (each of its partitions says the same)."""
    return sinfo_node(lab, node, "%T|%E")


def _fleet(lab: Lab, inventory: Path, extra: Path, *args: str,
           timeout: float = 600) -> tuple[int, Any, str]:
    """The real CLI against the lab's master and head-01's Slurm client, --json."""
    head = lab.plan.node(HEAD).container
    argv = [sys.executable, "-m", "fleet", *args, "--json", "-i", str(inventory),
            *lab.paths.overlay_args(), "--overlay", str(extra)]
    if args[:2] in (("burnin", "run"), ("status", NODE), ("node", "show")):  # ask the master
        argv += ["--salt-config", str(lab.paths.salt_etc)]
    if args[:2] in (("burnin", "run"), ("status", NODE)):  # and Slurm
        argv += ["--slurm-command", f"podman --runtime runc exec {head}"]
    proc = subprocess.run(argv, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "tools")},
                          capture_output=True, text=True, timeout=timeout, check=False)
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"fleet {' '.join(args)}: no JSON (exit {proc.returncode}): "
                             f"{proc.stdout[-2000:]} {proc.stderr[-3000:]}") from None
    return proc.returncode, doc, proc.stderr


def _passed(doc: Any, node: str) -> None:
    (row,) = [r for r in doc["nodes"] if r["node"] == node]
    assert row["error"] is None and row["not_run"] == [], row
    assert sorted(r["check"] for r in row["ran"]) == CHECKS, row
    for r in row["ran"]:
        assert r["passed"], r
    figures = {r["check"]: r["figures"] for r in row["ran"]}
    assert figures["cpu-stress"]["bogo_ops_s"] > 0, figures  # stress-ng's own figure
    assert all(v > 0 for v in figures["disk-verify"].values()), figures  # fio's MiB/s


def test_burnin_on_a_lab_node_out_of_slurm_until_it_passes(lab: Lab, tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(edit.set_node((ROOT / "inventory.yaml").read_text(), NODE,
                                       {"state": "burn-in"}))
    extra = tmp_path / "burnin-overlay.yaml"
    extra.write_text(yaml.safe_dump(BURNIN))
    results = tmp_path / "results"
    # its user partitions as the lab's inventory places it: its training partition and the
    # workers' preemptible one (miniray's), which it leaves in burn-in and comes back to
    in_service = _partitions(lab, NODE)
    assert PARTITION in in_service and BURNIN_PARTITION not in in_service, in_service
    try:
        _render(lab, inventory, extra)
        _apply_head(lab)
        # slurmctld restarts for the new partitions: the node is `unknown` until its slurmd
        # registers again (the fresh run of 2026-12-06 08:2x read it in between, here too)
        poll(f"{NODE} in the burn-in partition alone, registered",
             lambda: (_partitions(lab, NODE) == [BURNIN_PARTITION]
                      and _slurm(lab, NODE).split("|")[0].rstrip("*") != "unknown") or None,
             timeout=180, interval=2)
        state, reason = _slurm(lab, NODE).split("|", 1)
        assert state.rstrip("*") == "idle" and reason == "none", (state, reason)  # no drain
        _no_user_job(lab)

        rc, doc, err = _fleet(lab, inventory, extra, "burnin", "run", NODE,
                              "--results", str(results))
        assert rc == 0, (doc, err[-3000:])
        _passed(doc, NODE)
        assert _partitions(lab, NODE) == [BURNIN_PARTITION], "in service before finish"

        rc, doc, err = _fleet(lab, inventory, extra, "burnin", "status", NODE,
                              "--results", str(results))
        assert rc == 0, (doc, err[-2000:])
        assert doc["nodes"] == [{"node": NODE, "state": "burn-in", "burnin": "passed",
                                 "done": 3, "total": 3, "failures": [],
                                 "notes": doc["nodes"][0]["notes"]}], doc

        # the operator's view: the stage, and the grain's facts against the inventory
        head = lab.plan.node(HEAD).container
        grains = lab.salt(NODE, "grains.item", "fleet_ib_guids", "fleet_disk_serials")[NODE]
        assert isinstance(grains["fleet_ib_guids"], list), grains  # synced by the highstate
        assert isinstance(grains["fleet_disk_serials"], list), grains
        rc, doc, err = _fleet(lab, inventory, extra, "status", NODE, "--live", "--hardware",
                              "--no-power", "--no-alerts", "--burnin-results", str(results),
                              "--pxe-command", f"podman --runtime runc exec -i {head} fleet-lab",
                              *(f"--{d}-state-dir={tmp_path / d}"
                                for d in ("apply", "health", "reinstall", "rollout", "status")))
        (row,) = doc["nodes"]
        assert row["stage"]["summary"] == "burn-in 3/3 passed", row
        guid = load_inventory(inventory, []).nodes[NODE].ib_guid
        found = ", ".join(sorted(g.lower() for g in grains["fleet_ib_guids"])) or "no HCA"
        drift = {"fact": "ib_guid", "inventory": str(guid), "found": f"not among {found}"}
        assert drift in row["hardware"], row
        assert rc == 5 and f"hardware drift: ib_guid: inventory {guid}" in " ".join(
            row["problems"]), (rc, row)
        rc, shown, err = _fleet(lab, inventory, extra, "node", "show", NODE, "--hardware",
                                "--burnin-results", str(results))
        assert rc == 0, err[-2000:]
        assert drift in shown["nodes"][0]["hardware"], shown

        rc, doc, err = _fleet(lab, inventory, extra, "burnin", "finish", NODE,
                              "--results", str(results))
        assert rc == 0 and doc["outcomes"] == [
            {"node": NODE, "to": "active", "why": "passed"}], (doc, err[-2000:])
        assert load_inventory(inventory, []).nodes[NODE].state == "active"
        # finished, the copy renders as the lab's own inventory does: applied, it resumes
        finished = render_all(load_inventory(inventory, lab.paths.overlays))
        assert finished == render_all(load_inventory(lab.paths.inventory, lab.paths.overlays))
        tree.write(lab.paths.render, finished)
        _apply_head(lab)
        # slurmctld restarts for the new partitions: the node is `unknown` until its slurmd
        # registers again (the fresh run of 2026-12-06 read it in between)
        poll(f"{NODE} back in its partitions {in_service}, idle",
             lambda: (_partitions(lab, NODE) == in_service
                      and _slurm(lab, NODE).split("|")[0].rstrip("*") == "idle") or None,
             timeout=180, interval=2)
    finally:
        _render(lab, lab.paths.inventory)
        if _partitions(lab, NODE) != in_service or "drain" in _slurm(lab, NODE):
            _apply_head(lab)


def _partitions(lab: Lab, node: str) -> list[str]:
    """The partitions Slurm has the node in, hidden ones too (sinfo -a)."""
    out = podman_exec(lab, HEAD, "sinfo", "-a", "-h", "-N", "-n", node, "-o", "%P",
                      timeout=120).stdout
    return sorted({p.strip().rstrip("*") for p in out.split()})


def _no_user_job(lab: Lab) -> None:
    """A node in burn-in takes no user job: its training partition does not have it (a
    job naming it there is not run: sbatch would queue it for ever, srun --immediate
    fails), and the burn-in partition takes root's jobs only, which it runs."""
    refused = podman_exec(lab, HEAD, "srun", "--immediate=30", f"--partition={PARTITION}",
                          f"--nodelist={NODE}", "true", timeout=120)
    assert refused.returncode != 0, refused
    ran = podman_exec(lab, HEAD, "srun", "--immediate=30", f"--partition={BURNIN_PARTITION}",
                      f"--nodelist={NODE}", "hostname", timeout=120)
    assert ran.returncode == 0 and ran.stdout.strip() == NODE, ran
    nobody = podman_exec(lab, HEAD, "runuser", "-u", "nobody", "--", "sbatch",
                         f"--partition={BURNIN_PARTITION}", "--output=/dev/null",
                         "--chdir=/tmp", "--wrap=true", timeout=120)
    assert nobody.returncode != 0 and "denied" in nobody.stderr.lower(), nobody


def test_burnin_of_a_node_in_service_drains_it_first(lab: Lab, tmp_path: Path) -> None:
    inventory = ROOT / "inventory.yaml"  # read only: run neither edits it
    extra = tmp_path / "burnin-overlay.yaml"
    extra.write_text(yaml.safe_dump(BURNIN))
    results = tmp_path / "results"
    poll(f"{ACTIVE} idle", lambda: _slurm(lab, ACTIVE).split("|")[0] == "idle" or None,
         timeout=120, interval=2)
    rc, _doc, err = _fleet(lab, inventory, extra, "burnin", "run", ACTIVE,
                           "--results", str(results))
    assert rc == 2 and f"{ACTIVE} in service: --drain" in err, (rc, err[-2000:])
    assert _slurm(lab, ACTIVE).split("|")[0] == "idle"

    seen: list[str] = []
    done = threading.Event()

    def watch() -> None:  # Slurm's view of the node while the check runs
        while not done.is_set():
            seen.append(_slurm(lab, ACTIVE))
            done.wait(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        rc, doc, err = _fleet(lab, inventory, extra, "burnin", "run", ACTIVE, "--drain", "-v",
                              "--drain-timeout", "60", "--results", str(results))
        done.set()
        watcher.join(timeout=120)
        assert rc == 0, (doc, err[-3000:])
        _passed(doc, ACTIVE)
        assert f"{ACTIVE}: draining" in err, err[-2000:]
        assert any(s.split("|")[0] in ("drained", "draining")
                   and s.split("|", 1)[1] == "fleet burnin run" for s in seen), seen
        state = _slurm(lab, ACTIVE).split("|")[0]
        # resumed: idle, not drained. A trailing * is Slurm's "not responding": the stress on
        # this 2-core host can make slurmd miss the controller's ping; it must answer again.
        assert state.rstrip("*") == "idle", f"passed, but not resumed: {state}"
        poll(f"{ACTIVE} idle and answering Slurm's ping",
             lambda: _slurm(lab, ACTIVE).split("|")[0] == "idle" or None, timeout=300,
             interval=3)
    finally:
        done.set()
        if "drain" in _slurm(lab, ACTIVE):
            podman_exec(lab, HEAD, "scontrol", "update", f"NodeName={ACTIVE}",
                        "State=RESUME")


# --- nccl-pair: the real Slurm job of two lab nodes, with STAND-IN MPI and nccl-tests ------

PAIR = ("tbox-001", "tbox-002")  # tinybox-pro on rail ib1/ib-tbox1
# the pair's check at no duration; tolerance 100%: the STAND-IN's figures are no bandwidth,
# so the rail's rate is not judged here (tests/burnin/test_pairjob.py judges it); a STAND-IN
# pin of nccl-tests (never fetched: no node is applied with it), so the check is sent
PAIR_OVERLAY = {
    "profiles": {"tinybox-pro": {"burnin": {
        "nccl-pair": {"seconds": 0, "tolerance_percent": 100}}}},
    "site": {"burnin_tools": {"nccl_tests": {
        "source": "/srv/fleet/artifacts/nccl-tests-STAND-IN.tar", "sha256": "0" * 64}}}}
FAKE_SYS = "/var/tmp/fleet-standin-sys"
# STAND-IN mpirun: the lab's nodes have no OpenMPI (their archive is the lab's own
# repository). It runs each app context (-np N -H HOST:N PROGRAM..., ':' between them)
# through Slurm's srun inside the job, as mpirun's daemons are started, the rank's sysfs
# root replaced by a FAKE tree (a container has no HCA), then prints the data lines of an
# nccl-tests report; the rank lines are the ranks' own.
STANDIN_MPIRUN = f'''#!/usr/bin/python3
"""STAND-IN mpirun of tests/lab/test_burnin.py (no OpenMPI in the lab)."""
import subprocess, sys
args = sys.argv[1:]
while args[0].startswith("--"):
    args = args[2:] if args[0] == "--bind-to" else args[1:]
contexts, cur = [], []
for a in args + [":"]:
    if a == ":":
        contexts.append(cur)
        cur = []
    else:
        cur.append(a)
base, rc = 0, 0
for ctx in contexts:
    assert ctx[0] == "-np" and ctx[2] == "-H", ctx
    prog = ctx[4:]
    prog[prog.index("fleet-nccl-pair") + 1] = "{FAKE_SYS}"
    r = subprocess.run(["srun", "--overlap", "--overcommit", "--nodes=1",
                        "--ntasks=" + ctx[1], "--nodelist=" + ctx[3].split(":")[0],
                        "--export=ALL,FLEET_STANDIN_BASE=%d" % base, *prog])
    rc, base = rc or r.returncode, base + int(ctx[1])
size = 8388608
while size <= 1073741824:
    print("%12d %13d     float     sum      -1   1000.0    1.00    1.88      0"
          "   1000.0    1.00    1.88      0" % (size, size // 4))
    size *= 2
print("# Out of bounds values : 0 OK")
print("# Avg bus bandwidth    : 1.875 ")
sys.exit(rc)
'''
# STAND-IN all_reduce_perf: one rank, printing its rank line (host, its NCCL_IB_HCA)
STANDIN_PERF = '''#!/usr/bin/python3
"""STAND-IN all_reduce_perf of tests/lab/test_burnin.py (no GPU in the lab)."""
import os, socket, sys
hca = os.environ.get("NCCL_IB_HCA", "")
rank = int(os.environ["FLEET_STANDIN_BASE"]) + int(os.environ["SLURM_PROCID"])
print("#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x00] STAND-IN %s"
      % (rank, os.getpid(), socket.gethostname(), int(os.environ["SLURM_LOCALID"]), hca))
sys.exit(0 if hca.startswith("=mlx5_") else 4)
'''
WRITE = ("import os, sys; os.makedirs(os.path.dirname(sys.argv[1]), exist_ok=True); "
         "open(sys.argv[1], 'w').write(sys.argv[2]); os.chmod(sys.argv[1], 0o755)")
STANDINS = ("/usr/local/bin/mpirun", "/opt/fleet/burnin/nccl-tests", FAKE_SYS)


def _put_standins(lab: Lab, node: str, guid: str) -> None:
    from fleet.inventory.burnintools import TOOLS

    g = guid[2:]
    for path, body in (("/usr/local/bin/mpirun", STANDIN_MPIRUN),
                       (TOOLS["nccl-pair"].path, STANDIN_PERF),
                       (f"{FAKE_SYS}/class/infiniband/mlx5_0/node_guid",
                        ":".join(g[i:i + 4] for i in range(0, 16, 4)) + "\n")):
        put = podman_exec(lab, node, "python3", "-c", WRITE, path, body)
        assert put.returncode == 0, put


def test_nccl_pair_is_one_slurm_job_of_two_lab_nodes(lab: Lab, tmp_path: Path) -> None:
    """tbox-001 and tbox-002 in burn-in: `fleet burnin run tbox-001 --checks nccl-pair`
    submits the real sbatch through head-01 on the burn-in partition; the real Slurm runs
    its script on the two nodes, the STAND-IN mpirun starts the ranks through srun, each
    through the job's own HCA snippet (NCCL_IB_HCA from its node's planned GUID, on a
    FAKE sysfs); the output is read back from the batch host and judged."""
    inventory = tmp_path / "inventory.yaml"
    text = (ROOT / "inventory.yaml").read_text()
    for node in PAIR:
        text = edit.set_node(text, node, {"state": "burn-in"})
    inventory.write_text(text)
    extra = tmp_path / "pair-overlay.yaml"
    extra.write_text(yaml.safe_dump(PAIR_OVERLAY))
    results = tmp_path / "results"
    inv = load_inventory(inventory, [*lab.paths.overlays, extra])
    busy = podman_exec(lab, HEAD, "squeue", "-h", "-w", ",".join(PAIR), timeout=120)
    assert busy.stdout.strip() == "", f"jobs on the pair: {busy.stdout}"
    try:
        _render(lab, inventory, extra)
        _apply_head(lab)
        for node in PAIR:
            poll(f"{node} in the burn-in partition alone",
                 lambda n=node: _partitions(lab, n) == [BURNIN_PARTITION] or None,
                 timeout=120, interval=2)
            _put_standins(lab, node, str(inv.nodes[node].ib_guid))
        rc, doc, err = _fleet(lab, inventory, extra, "burnin", "run", PAIR[0], "--checks",
                              "nccl-pair", "-v", "--results", str(results), timeout=900)
        (row,) = doc["nodes"]
        assert row["error"] is None and len(row["ran"]) == 1, (row, err[-3000:])
        (r,) = row["ran"]
        assert r["check"] == "nccl-pair" and r["passed"], (r, err[-3000:])
        assert r["figures"] == {"busbw_gb_s": 1.875, "busbw_peak_gb_s": 1.88}, r
        assert rc == 0, (doc, err[-3000:])
        assert f"{PAIR[0]}: nccl-pair with {PAIR[1]} (Slurm job, {BURNIN_PARTITION})" in err
        left = [podman_exec(lab, n, "sh", "-c", "ls /var/tmp/fleet-burnin-nccl-pair-*",
                            timeout=60).stdout for n in PAIR]
        assert left == ["", ""], left  # the output read back, then removed
    finally:
        for node in PAIR:
            podman_exec(lab, node, "rm", "-rf", *STANDINS)
        _render(lab, lab.paths.inventory)
        if any(_partitions(lab, n) != ["tbox1"] for n in PAIR):
            _apply_head(lab)




def test_a_missing_gpu_and_an_outlier_leave_a_lab_node_in_maintenance(
        lab: Lab, tmp_path: Path) -> None:
    """The real runner through the lab's master on tbox-039 in burn-in: gpu-present against
    the STAND-IN nvidia-smi above, in /usr/local/bin of the container (the minion's PATH);
    the real stress-ng, judged against a baseline of the profile's other lab nodes (in
    burn-in in the copy) whose results are STAND-INS (kept through `fleet burnin record` at
    a rate no machine reaches), so that the node's own figure is the outlier.
    Both fail the node; `fleet burnin finish` moves it to maintenance with the first failing
    check as its reason, and `fleet status` shows that stage and reason."""
    inventory = tmp_path / "inventory.yaml"
    inv = load_inventory(ROOT / "inventory.yaml", lab.paths.overlays)  # the lab's nodes
    peers = [h for h, n in inv.nodes.items()
             if n.profile_name == inv.nodes[NODE].profile_name and h != NODE]
    # the baseline is the median of every passing result of the profile, the node's own too
    assert len(peers) + 1 >= MIN_BASELINE and 2 * len(peers) > len(peers) + 1, peers
    text = (ROOT / "inventory.yaml").read_text()
    for h in (NODE, *peers):
        text = edit.set_node(text, h, {"state": "burn-in"})
    inventory.write_text(text)
    extra = tmp_path / "short.yaml"
    extra.write_text(yaml.safe_dump({"profiles": {"tinybox-pro": {"burnin": {
        **dict.fromkeys(BURNIN_CHECKS), "cpu-stress": {"seconds": 3, "tolerance_percent": 10},
        "gpu-present": {"seconds": 0}}}}}))
    results = tmp_path / "results"
    for h in peers:
        stand_in = tmp_path / f"{h}.json"
        stand_in.write_text(json.dumps({"check": "cpu-stress", "passed": True,
                                        "figures": {"bogo_ops_s": 1e9}, "started": 1.0,
                                        "seconds": 3.0}))
        rc, _doc, err = _fleet(lab, inventory, extra, "burnin", "record", h, "--result",
                               str(stand_in), "--results", str(results))
        assert rc == 0, err[-2000:]
    shim = "/usr/local/bin/nvidia-smi"
    put = podman_exec(lab, NODE, "sh", "-c",
                      f"printf %s {shlex.quote(SEVEN_GPUS)} > {shim} && chmod 0755 {shim}")
    assert put.returncode == 0, put
    try:
        rc, doc, err = _fleet(lab, inventory, extra, "burnin", "run", NODE,
                              "--results", str(results))
    finally:
        podman_exec(lab, NODE, "rm", "-f", shim)
    assert rc == 5, (doc, err[-3000:])
    (row,) = doc["nodes"]
    ran = {r["check"]: r for r in row["ran"]}
    assert ran["gpu-present"]["passed"] is False, ran
    assert SEVEN_GPUS_REASON in ran["gpu-present"]["reason"], ran
    assert ran["cpu-stress"]["passed"] is True, ran  # stress-ng verified its own work

    rc, doc, err = _fleet(lab, inventory, extra, "burnin", "status", NODE,
                          "--results", str(results))
    (st,) = doc["nodes"]
    assert rc == 5 and st["burnin"] == "failed", (st, err[-2000:])
    failures = " | ".join(st["failures"])
    assert "gpu-present" in failures, failures
    assert "cpu-stress: bogo_ops_s" in failures and "against the baseline 1e+09" in failures, \
        failures

    rc, doc, err = _fleet(lab, inventory, extra, "burnin", "finish", NODE,
                          "--results", str(results))
    ((h, to, why),) = [(o["node"], o["to"], o["why"]) for o in doc["outcomes"]]
    assert (h, to) == (NODE, "maintenance"), (doc, err[-2000:])
    assert load_inventory(inventory, []).nodes[NODE].state == "maintenance"

    head = lab.plan.node(HEAD).container
    rc, doc, err = _fleet(lab, inventory, extra, "status", NODE, "--live", "--no-power",
                          "--no-alerts", "--burnin-results", str(results),
                          "--pxe-command", f"podman --runtime runc exec -i {head} fleet-lab",
                          *(f"--{d}-state-dir={tmp_path / d}"
                            for d in ("apply", "health", "reinstall", "rollout", "status")))
    (shown,) = doc["nodes"]
    check = why.removeprefix("burn-in ").split(":", 1)[0]
    assert (shown["state"], shown["stage"]["stage"], shown["stage"]["summary"]) == (
        "maintenance", "failed", f"failed: {check}"), shown
    assert shown["stage"]["reason"] == why.removeprefix("burn-in "), shown
    assert check == st["failures"][0].split(":", 1)[0], (check, st)
