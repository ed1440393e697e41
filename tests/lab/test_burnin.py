"""Burn-in on a lab node (docs/discovery.md, section 4), and the hardware grain there.

- tbox-039 is put in ``burn-in`` (a copy of inventory.yaml, edited like `fleet discover
  accept` edits it) and head-01, the Slurm controller, applied: the node is in the hidden
  burn-in partition alone (fleet.inventory.lifecycle.BURNIN_PARTITION), idle, not
  drained; a job of its training partition cannot name it, and a user other than root
  cannot submit to the burn-in partition (RootOnly). `fleet burnin run` runs the real
  stress-ng, memtester and fio (short durations, an extra overlay of this test) through
  the lab's Salt master on the node's installed OS, and keeps the results; `fleet burnin
  status` and `fleet status --live --hardware` show them (stage ``burn-in 3/3``). `fleet
  burnin finish` writes ``active`` into the copy; rendered (the same render as the lab's
  own) and applied, the controller puts the node back into its partition.
- The same status call shows the fleet grain (salt/_grains/fleet_hw.py, synced by the
  lab's highstate, never by hand) reaching the drift: the inventory's HCA GUID against the
  GUIDs the node's own grain reports (a container has no HCA), with both values, also in
  `fleet node show --hardware`.
- Re-running burn-in on a node in service (tbox-002, active) is refused without
  ``--drain``; with it, the node is drained (fleet.master.slurm.drain_and_wait, seen in
  Slurm while the check runs) and resumed once it passes.

Whatever fails, `finally` renders the lab's own inventory and applies head-01 again and
resumes tbox-002, so the lab is left as the first highstate made it. Waits poll.

Run: `FLEET_LAB=1 .venv/bin/pytest -q tests/lab/test_burnin.py` (with the rest: make test-lab).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import yaml
from labtools import ROOT, Lab, podman_exec, poll, sinfo_node

from fleet.discover import edit
from fleet.inventory.lifecycle import BURNIN_PARTITION
from fleet.inventory.load import load_inventory
from fleet.lab import highstate
from fleet.render import render_all, tree

HEAD = "head-01"  # the Slurm controller
NODE = "tbox-039"  # the lab's one tbox2 node: burns in
PARTITION = "tbox2"  # its training partition
ACTIVE = "tbox-002"  # in service: re-run with --drain
# the lab's short burn-in of the profile (the site names hours)
BURNIN = {"profiles": {"tinybox-pro": {"burnin": {
    "cpu-stress": {"seconds": 6, "tolerance_percent": 10},
    "memtester": {"seconds": 0, "mb": 16},
    "disk-verify": {"seconds": 3, "mb": 16}}}}}
CHECKS = sorted(BURNIN["profiles"]["tinybox-pro"]["burnin"])


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
    try:
        _render(lab, inventory, extra)
        _apply_head(lab)
        poll(f"{NODE} in the burn-in partition alone",
             lambda: _partitions(lab, NODE) == [BURNIN_PARTITION] or None, timeout=120,
             interval=2)
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
        poll(f"{NODE} back in its partition",
             lambda: _partitions(lab, NODE) == [PARTITION] or None, timeout=120, interval=2)
        assert _slurm(lab, NODE).split("|")[0].rstrip("*") == "idle"
    finally:
        _render(lab, lab.paths.inventory)
        if _partitions(lab, NODE) != [PARTITION] or "drain" in _slurm(lab, NODE):
            _apply_head(lab)


def _partitions(lab: Lab, node: str) -> list[str]:
    """The partitions Slurm has the node in, hidden ones too (sinfo -a)."""
    out = podman_exec(lab, HEAD, "sinfo", "-a", "-h", "-N", "-n", node, "-o", "%P",
                      timeout=120).stdout
    return sorted({p.strip().rstrip("*") for p in out.split()})


def _no_user_job(lab: Lab) -> None:
    """A node in burn-in takes no user job: its training partition does not have it, and
    the burn-in partition takes root's jobs only."""
    refused = podman_exec(lab, HEAD, "sbatch", f"--partition={PARTITION}", f"--nodelist={NODE}",
                          "--output=/dev/null", "--wrap=true", timeout=120)
    assert refused.returncode != 0, refused
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
