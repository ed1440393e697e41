"""The runbook followed on the lab: docs/operations.md's "Add a node" and "Retire a node",
step by step, in the order written there (tests/support/runbook.py reads them: each
```yaml block an edit of the inventory, each `$` line a command, the output lines shown
under a command required in its output). Nothing here restates a step: a step the doc
drops, reorders or gets wrong fails the checks below.

The lab form of each step (the lab's inventory is inventory.yaml + the lab overlays; an
edit goes into one more overlay, .lab/test-runbook-overlay.yaml, which also names the
added node in the lab's `only_nodes`):

- ``fleet validate|diff|render``: the real CLI on the lab's inventory and its render,
  ``-o .lab/render`` (what the lab master serves);
- ``fleet apply|health|status|keys``: the real CLI against the lab's Salt master, Slurm
  through head-01 (``--slurm-command``), ``--json`` where the test reads the result;
  status without power and alerts (no BMC or Prometheus for a new node here: both have
  their own lab tests) and without the PXE boot mode (head-01's ``fleet-lab`` knows the
  lab's own inventory, not this edit), so those columns are unknown;
- ``fleet reinstall NODE``: a STAND-IN for the PXE install, which tests/lab/
  test_reinstall.py, ``make test-pxe`` and ``make test-vm`` prove: a new container from the
  lab nodes' image with the inventory's MAC and address (fleet.lab.nodes.add), its key
  generated on the master side and accepted before its minion starts (what the
  reinstall's rotate_key does), then the reinstall's converge, a highstate of that node
  (``fleet apply NODE``); no drain or resume (it never ran a job);
- ``fleet power off NODE``: its drain (scontrol on the controller: reason ``fleet power
  off``, then ``drained`` in sinfo), then a STAND-IN for its BMC: ``podman stop`` of its
  container;
- ``salt-key``: the lab master's (``-c .lab/etc/salt``), answering its prompt ``y``;
- ``scontrol``, ``sinfo``: on head-01, the controller;
- ``git commit``: skipped (the lab render is not a checkout), said so.

Only the new node and the controller are converged. Afterwards the lab is as before: the
node's container and key removed, the overlay deleted, the lab's own render back (equal
to the retired one, so head-01 is applied again only when the test stopped half-way).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from labtools import ROOT, Lab, deep_merge, podman_exec, poll, sinfo_row

from fleet.lab import highstate
from fleet.lab import nodes as lab_nodes
from fleet.lab import plan as lab_plan
from fleet.lab import podman as pm
from support import runbook
from support.lifecycle import site_lists

GPU_TWIN = "tbox-001"  # a lab node of the new node's profile
HEAD = "head-01"  # the provisioning host, Slurm controller and monitoring host
PODMAN = "podman --runtime runc exec"
# what following the two procedures must have shown: a step the runbook drops leaves one
# of these unseen
OUTCOMES = {"diff planned", "head-01 applied planned", "future in slurm",
            "diff active", "head-01 applied active", "installed", "key accepted", "healthy",
            "status active", "idle in slurm",
            "drained", "powered off", "diff retired", "head-01 applied retired",
            "gone from slurm", "key flagged", "key removed", "status leaves it out"}


def _node_files(node: str, path: str) -> bool:
    return path in (f"pillar/nodes/{node}.sls", f"pxe/dnsmasq/hosts/{node}") or \
        path.startswith(f"pxe/http/hosts/{node}/")


@dataclass
class Follower:
    """Runs the runbook's steps on the lab and checks each; keeps what the lab holds."""
    lab: Lab
    work: Path
    node: str = ""  # the node the procedure adds and retires
    patch: dict[str, Any] = field(default_factory=dict)
    container: str = ""
    key: bool = False  # its key accepted on the master
    completed: bool = False  # every step ran and passed its check
    seen: set[str] = field(default_factory=set)  # OUTCOMES shown so far
    log: list[str] = field(default_factory=list)

    @property
    def overlay(self) -> Path:
        return self.lab.paths.lab / "test-runbook-overlay.yaml"

    @property
    def state(self) -> str:
        return str(((self.patch.get("nodes") or {}).get(self.node) or {}).get("state",
                                                                               "active"))

    # --- edits --------------------------------------------------------------------------
    def edit(self, edit: dict[str, Any]) -> None:
        self.patch = deep_merge(self.patch, edit)
        added = [n for n in self.patch.get("nodes") or {} if n not in self._lab_nodes()]
        assert len(added) == 1, f"the runbook's edits add one node, not {added}"
        self.node = added[0]
        lab_only = {"only_nodes": [*self._lab_nodes(), self.node]}
        self.overlay.write_text("# tests/lab/test_runbook.py: the runbook's edits\n"
                                + yaml.safe_dump({**self.patch, **lab_only}, sort_keys=False))

    def _lab_nodes(self) -> list[str]:
        return [n.hostname for n in self.lab.plan.nodes]

    # --- commands -----------------------------------------------------------------------
    def fleet(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "fleet", *args, "-i", str(ROOT / "inventory.yaml"),
                *self.lab.paths.overlay_args(), "--overlay", str(self.overlay)]
        env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        self.log.append(f"$ {' '.join(args)}  -> {proc.returncode}\n{proc.stderr[-1500:]}")
        return proc

    def lab_flags(self, verb: str) -> list[str]:
        salt = ["--salt-config", str(self.lab.paths.salt_etc)]
        slurm = ["--slurm-command", f"{PODMAN} {self.lab.plan.node(HEAD).container}"]
        state = {v: str(self.work / v) for v in ("apply", "health", "reinstall", "rollout")}
        return {
            "diff": ["-o", str(self.lab.paths.render)],
            "render": ["-o", str(self.lab.paths.render)],
            "apply": [*salt, "--state-dir", state["apply"], "--json"],
            "keys": salt,
            "health": [*salt, *slurm, "--state-dir", state["health"], "--json"],
            "status": [*salt, *slurm, "--json", "--live", "--no-power", "--no-alerts",
                       *[a for v, d in state.items() for a in (f"--{v}-state-dir", d)]],
        }.get(verb, [])

    def head(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return podman_exec(self.lab, HEAD, *argv, timeout=120)

    def salt_key(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.lab.paths.venv_bin / "salt-key"), "-c",
                               str(self.lab.paths.salt_etc), *args], input="y\n",
                              capture_output=True, text=True, timeout=120, check=False)

    # --- the steps ----------------------------------------------------------------------
    def step(self, step: runbook.Step) -> None:
        if step.edit is not None:
            self.edit(step.edit)
            return
        prog, args = step.argv[0], step.argv[1:]
        if prog == "git":
            print(f"{step.text}: skipped, the lab's render (.lab/render) is not a checkout")
            return
        if prog == "salt-key":
            proc = self.salt_key(*args)
            self.check_salt_key(step, proc)
        elif prog in ("scontrol", "sinfo"):
            proc = self.head(*step.argv)
            self.check_slurm(step, proc)
        else:
            proc = self.fleet_step(step, args)
        out = proc.stdout + proc.stderr
        for line in step.shown:  # the output the runbook shows is the output
            assert " ".join(line.split()) in " ".join(out.split()), (step.text, line, out)

    def fleet_step(self, step: runbook.Step, args: list[str]) -> subprocess.CompletedProcess[str]:
        verb = args[0]
        if verb == "reinstall":
            return self.install(step, args[1])
        if verb == "power":
            assert args[1:] == ["off", self.node], step.text
            self.drain_as_power_does(step)
            pm.podman(self.lab.paths, "stop", "-t", "20", self.container)
            running = pm.inspect(self.lab.paths, self.container)["State"]["Running"]
            assert not running, f"{step.text}: {self.container} still running"
            self.seen.add("powered off")
            return subprocess.CompletedProcess(step.argv, 0, "", "")
        proc = self.fleet(*args, *self.lab_flags(verb))
        check = getattr(self, f"check_{verb}", None)
        assert check is not None, f"{step.text}: no check for fleet {verb}"
        check(step, proc)
        return proc

    def drain_as_power_does(self, step: runbook.Step) -> None:
        """What `fleet power off` does before its BMC call (fleet.ops.powerdrain, through
        the one drain): the node drained with its reason, then no job left on it; here by
        scontrol on the controller, as the drain's own commands are (STAND-IN: the real
        verb needs the node's BMC, which a lab node has not)."""
        proc = self.head("scontrol", "update", f"NodeName={self.node}", "State=DRAIN",
                         "Reason=fleet power off")
        assert proc.returncode == 0, (step.text, proc.stdout, proc.stderr)
        def drained() -> str | None:
            state = self.head("sinfo", "-h", "-N", "-n", self.node, "-o", "%T").stdout.strip()
            return state if state.startswith("drained") else None

        poll(f"{self.node} drained (no job left)", drained, 120)
        self.seen.add("drained")

    def install(self, step: runbook.Step, node: str) -> subprocess.CompletedProcess[str]:
        """STAND-IN for `fleet reinstall NODE`'s PXE install (module docstring)."""
        assert node == self.node and self.state == "active", (step.text, self.state)
        print(f"{step.text}: STAND-IN for the PXE install: a new container from the lab "
              f"image, its key accepted in advance; then its converge (fleet apply {node})")
        plan = lab_plan.load(self.lab.paths, [self.overlay])
        # a lab GPU node's image (the bring-up's, with the GPU nodes' packages in it)
        image = pm.inspect(self.lab.paths, self.lab.plan.node(GPU_TWIN).container)["ImageName"]
        self.container = plan.node(node).container
        self.key = True  # keys.ensure accepts it on the master before the minion starts
        lab_nodes.add(self.lab.paths, plan, plan.node(node), image)
        proc = self.fleet("apply", node, *self.lab_flags("apply"), timeout=1800)
        self.check_apply(step, proc)
        self.seen.add("installed")
        return proc

    # --- what each step must show ---------------------------------------------------------
    def check_validate(self, step: runbook.Step, proc: subprocess.CompletedProcess[str]) -> None:
        assert proc.returncode == 0, (step.text, proc.stdout, proc.stderr)

    def check_render(self, step: runbook.Step, proc: subprocess.CompletedProcess[str]) -> None:
        assert proc.returncode == 0, (step.text, proc.stdout, proc.stderr)
        # the render is the one the lab master serves: nothing left to write
        again = self.fleet("render", "--check", *self.lab_flags("render"))
        assert again.returncode == 0, (step.text, again.stdout, again.stderr)

    def check_diff(self, step: runbook.Step, proc: subprocess.CompletedProcess[str]) -> None:
        """Exit 3 (a change); only the node's own files and the site lists change."""
        assert proc.returncode == 3, (step.text, proc.stdout[-2000:], proc.stderr)
        files = {line[6:] for line in proc.stdout.splitlines() if line.startswith("+++ b/")}
        other = {f for f in files if not _node_files(self.node, f)} - site_lists(files)
        assert files and not other, (step.text, sorted(other))
        assert any(_node_files(self.node, f) for f in files) == (self.state != "active"), \
            (step.text, self.state, sorted(files))
        self.seen.add(f"diff {self.state}")

    def check_apply(self, step: runbook.Step, proc: subprocess.CompletedProcess[str]) -> None:
        assert proc.returncode == 0, (step.text, proc.stdout[-3000:], proc.stderr[-3000:])
        report = json.loads(proc.stdout)
        assert {n["status"] for n in report["nodes"]} <= {"ok", "changed"}, report["nodes"]
        if [n["node"] for n in report["nodes"]] == [HEAD]:
            self.seen.add(f"{HEAD} applied {self.state}")

    def check_keys(self, step: runbook.Step, proc: subprocess.CompletedProcess[str]) -> None:
        out = proc.stdout + proc.stderr
        if self.state == "retired" and self.key:
            assert proc.returncode == 3, (step.text, out)
            assert f"retired: {self.node}:" in out and f"salt-key -d {self.node}" in out, out
            self.seen.add("key flagged")
        else:
            assert proc.returncode == 0, (step.text, out)
            if self.key and self.state == "active":
                self.seen.add("key accepted")

    def check_health(self, step: runbook.Step, proc: subprocess.CompletedProcess[str]) -> None:
        # a node just installed: its chrony synchronises within a few polls, and the
        # runbook's step is to see it healthy, so it is asked again until then
        def healthy() -> subprocess.CompletedProcess[str] | None:
            again = self.fleet(*step.argv[1:], *self.lab_flags("health"), timeout=300)
            return again if again.returncode == 0 else None

        if proc.returncode != 0:
            proc = poll(f"{self.node} healthy (last: {proc.stdout[-1500:]})", healthy,
                        timeout=240, interval=10)
        (row,) = json.loads(proc.stdout)["nodes"]
        assert row["node"] == self.node, row
        self.seen.add("healthy")

    def check_status(self, step: runbook.Step, proc: subprocess.CompletedProcess[str]) -> None:
        doc = json.loads(proc.stdout)
        rows = {n["node"]: n for n in doc["nodes"]}
        if self.state == "retired":  # the default target leaves it out, and says so
            assert self.node not in rows, rows.keys()
            assert doc["left_out"].get("retired") == [self.node], doc["left_out"]
            assert f"1 retired ({self.node})" in proc.stderr, proc.stderr
            self.seen.add("status leaves it out")
            return
        row = rows[self.node]
        assert (row["state"], row["key"], row["minion"]) == ("active", "accepted", "connected"), \
            row
        assert row["slurm"]["state"] == "IDLE", row
        assert row["status"] != "problem", row
        self.seen.add("status active")

    def check_salt_key(self, step: runbook.Step, proc: subprocess.CompletedProcess[str]) -> None:
        assert proc.returncode == 0, (step.text, proc.stdout, proc.stderr)
        listed = json.loads(self.salt_key("-L", "--out=json").stdout)
        if "-d" in step.argv:
            assert self.node not in listed.get("minions", []), listed
            self.key = False
            self.seen.add("key removed")

    def check_slurm(self, step: runbook.Step, proc: subprocess.CompletedProcess[str]) -> None:
        # sinfo may refuse a node name slurmctld no longer knows: that is the retired case
        assert proc.returncode == 0 or self.state == "retired", (step.text, proc.stderr)
        if step.argv[0] == "scontrol":
            state = self.head("sinfo", "-h", "-N", "-n", self.node, "-o", "%T").stdout
            if "State=DRAIN" in step.argv and "drain" in state:
                self.seen.add("drained")
            return
        listed = [line for line in proc.stdout.splitlines()[1:] if self.node in line.split()]
        if self.state == "planned":  # in slurm.conf, FUTURE: only --future shows it
            assert not listed, proc.stdout
            future = self.head("sinfo", "--future", "-h", "-N", "-n", self.node, "-o", "%T")
            assert sinfo_row(future.stdout) == "future", future.stdout + future.stderr
            self.seen.add("future in slurm")
        elif self.state == "retired":
            assert not listed, proc.stdout
            conf = self.head("cat", "/etc/slurm/slurm.conf").stdout
            assert self.node not in conf, conf
            self.seen.add("gone from slurm")
        else:  # slurmd registers after its highstate
            poll(f"{self.node} idle in Slurm", lambda: self.idle(step), timeout=180,
                 interval=3)
            self.seen.add("idle in slurm")

    def idle(self, step: runbook.Step) -> bool:
        out = self.head(*step.argv).stdout.splitlines()[1:]
        return any(line.split()[:1] == [self.node] and "idle" in line.split() for line in out)

    # --- afterwards -----------------------------------------------------------------------
    def restore(self) -> None:
        """The lab as before: no container, no key, the lab's own render (and head-01
        applied with it unless the procedure ended retired: the same render)."""
        if self.container:
            lab_nodes.remove(self.lab.paths, [self.container])
        if self.node:
            if self.key:
                self.salt_key("-y", "-d", self.node)
            for suffix in ("pem", "pub"):
                (self.lab.paths.keys / f"{self.node}.{suffix}").unlink(missing_ok=True)
        self.overlay.unlink(missing_ok=True)
        changed = lab_plan.render(self.lab.paths, lab_plan.load(self.lab.paths))
        if changed or not self.completed:
            results, _ = highstate.apply(self.lab.paths, [HEAD], target=HEAD, timeout=900)
            assert not any(r.status.bad for r in results), highstate.format_results(results, 0.0)


@pytest.fixture
def follower(lab: Lab, tmp_path: Path) -> Iterator[Follower]:
    f = Follower(lab, tmp_path)
    try:
        yield f
    finally:
        print("\n".join(f.log[-12:]))
        t0 = time.monotonic()
        f.restore()
        print(f"[runbook] lab restored: {time.monotonic() - t0:.1f}s")


def test_the_runbook_adds_a_node_and_retires_it(follower: Follower) -> None:
    for name in runbook.SECTIONS:
        for step in runbook.steps(name):
            assert runbook.unrunnable(step) is None, runbook.unrunnable(step)
            t0 = time.monotonic()
            follower.step(step)
            print(f"[runbook] {step.text}: ok, {time.monotonic() - t0:.1f}s")
    assert follower.state == "retired" and not follower.key
    assert sorted(OUTCOMES - follower.seen) == [], "the runbook's steps never showed these"
    follower.completed = True
