"""The standby master in the lab (issue 36, docs/salt.md, A standby master), following
docs/operations.md's "Fail over to the standby master" step by step, in the order written
there (tests/support/runbook.py reads it: each ```yaml block an edit of the inventory, each
`$` line a command, the output lines shown under a command required in its output):
a second real salt-master on this host standing in for head-02, and lab minions in
failover mode. Nothing here restates a step: a step the doc drops, reorders or gets wrong
fails the checks below.

- head-02 is a real salt-master process (the lab master's configuration from
  fleet.lab.master, with its own config, pki, cache and run dirs under .lab/standby),
  listening on head-02's own provisioning address of the lab network (added to the
  lab's bridge on this host for the test, removed after), so the minions' master list
  is the rendered one, byte for byte.
- The lab inventory with head-02 as standby (an overlay: head-02 added to the lab's
  nodes, ``site.salt.standby``, a 5 s alive interval) is rendered into
  .lab/standby/render: head-02's checkout, whose pillar the standby serves.
- fleet decides where it runs by this host's name (fleet.inventory.masters): each fleet
  run here is in its own UTS namespace named after the host the step's comment names
  (``# on head-02``), head-01 otherwise.

The lab form of each step, part by part (head-01 is lost at the start of "When head-01 is
lost": the lab master stopped; it comes back at the start of "When head-01 comes back":
started again):

- ``fleet restore`` on head-02: a STAND-IN: the lab master's master key and accepted
  keys copied into the standby's pki, modes kept (what the restore puts there; the real
  restore onto a fresh head is tests/lab/test_master_restore.py's);
- ``systemctl start salt-master`` on head-02: the standby salt-master started;
- ``salt head-02 state.apply``: NOT RUN (no head-02 container): what provisioning.standby
  makes there is made here: the sync key (ssh-keygen) and the rendered
  fleet-standby-sync script with its recorded line; that line is what the runbook says to
  record, so it goes into the overlay as ``site.salt.standby.sync_key``;
- ``git commit``, ``git pull``: skipped (the lab's render is not a checkout), said so;
- ``fleet render``: the real CLI into the standby's render (before the promotion), into a
  render of its own after it (the standby keeps serving the one before, so the apply
  through it finds the minion config it already has: a minion restarted mid-apply is
  not what the lab tests); each checked for what the runbook says it carries;
- ``fleet apply`` on head-01 while setting up: a STAND-IN for its base.minion on two lab
  nodes (FAILED_OVER): their minion.d/fleet.conf from the standby's render, their minions
  restarted; then they answer head-01 only;
- ``systemctl start fleet-standby-sync`` on head-02: the rendered script itself (real
  rsync, real rrsync -ro as keysource authorizes it); only ssh is a stand-in (this host
  cannot ssh to itself as root): a FAKE ``ssh`` that runs the command keysource forces
  for the sync key (``rrsync -ro PKI``) locally;
- ``systemctl disable --now fleet-standby-sync.timer``: NOT RUN (no timer in the lab: the
  pull ran by hand), said so;
- ``salt '*' test.ping``: the named host's master, ``-L`` the two FAILED_OVER minions (the
  lab's other minions keep the lab's one-master config): on head-02, until they answer;
  on head-01 (back), several alive intervals in which they answer head-02 and not it;
- ``salt head-01 state.apply`` on head-02: NOT RUN (head-01's container is the lab's own,
  applied by the bring-up), said so;
- ``fleet status``, ``fleet apply``: this checkout's CLI through the standby's
  salt-master, ``--json``; status of the FAILED_OVER nodes ``--live`` without power and
  alerts, Slurm and the boot modes through head-01; apply of one node (APPLIED).

What the steps must show: the minions answer the active master only; the active master
stopped, they answer the standby with no key accepted again; on head-02, `fleet status`
through the standby names head-01 active and this host the standby, and sees the minions
answer; `fleet apply` refuses there (exit 6) until head-02 is promoted (the runbook's edit:
the two names swapped), then applies one node through the standby; head-01's master back,
the minions stay with the standby (no failback) and do not answer head-01, and `fleet
apply` on head-01, now the standby, refuses: no node is driven by both.

Restored in ``finally``: the lab master running, FAILED_OVER's lab fleet.conf back and
their minions answering it, APPLIED's highstate again from the lab master (the standby's
render adds head-02 to /etc/hosts), the standby stopped, the address removed,
.lab/standby gone.
Not shown here: the sync's timer and its ssh transport (tests/salt/test_standby.py
renders them), and a master that vanishes without closing its connections (only the
alive-interval check notices that one).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import jinja2
import pytest
import yaml
from labtools import ROOT, Lab, podman_exec, poll
from reinstall_rig import CONTROLLER, PODMAN

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.lab import highstate
from fleet.lab import master as lab_master
from fleet.lab import podman as pm
from fleet.lab.run import live_pid, run, stop_daemon, wait_for
from fleet.render import render_all, tree
from support import runbook

STANDBY = "head-02"
# one node applied through the standby, one more that fails over with it
APPLIED, OTHER = "stor-002", "tbox-039"
FAILED_OVER = (APPLIED, OTHER)
ALIVE_S = 5  # master_alive_interval in the lab (the schema's least; the site's is 30)
FAILOVER_TIMEOUT = 240.0  # random_reauth_delay (20 s) + the reconnect, on a loaded host


@dataclass
class Standby:
    root: Path
    etc: Path
    overlay: Path  # the lab inventory with head-02 as standby
    promoted: Path  # ... and head-02 promoted to the active master
    address: str
    inventory: Inventory

    def pid(self) -> int | None:
        return live_pid(self.root / "run" / "salt-master.pid")

    def salt(self, node: str, timeout: float = 10) -> bool:
        """``salt -L NODE test.ping`` on the standby: True when NODE answers it."""
        out = run([ROOT / ".venv" / "bin" / "salt", "-c", self.etc, "--out=json", "--static",
                   "-t", str(int(timeout)), "-L", node, "test.ping"],
                  check=False, timeout=timeout + 120).stdout
        try:
            return bool(json.loads(out or "{}").get(node) is True)
        except ValueError:
            return False


def _bridge(gateway: str) -> str:
    """The host interface that holds the lab network's gateway (the podman bridge)."""
    for link in json.loads(run(["ip", "-j", "-4", "addr"]).stdout):
        if any(a.get("local") == gateway for a in link.get("addr_info", [])):
            return str(link["ifname"])
    raise AssertionError(f"no host interface holds the lab gateway {gateway}")


def _overlay(lab: Lab, tmp: Path) -> Path:
    """The standby overlay: the lab's nodes plus head-02, a standby (the runbook's
    ``sync_key`` is added by its step)."""
    standby = tmp / "standby.yaml"
    standby.write_text(yaml.safe_dump({
        "only_nodes": [*(n.hostname for n in lab.nodes), STANDBY],
        "site": {"salt": {"standby": {"host": STANDBY, "alive_interval_s": ALIVE_S}}}}))
    return standby


def _fake_ssh(lab: Lab, sb: Standby) -> dict[str, str]:
    """The environment the sync runs in: a FAKE ssh first on its PATH."""
    fake = sb.root / "fake-bin"
    fake.mkdir(exist_ok=True)
    # FAKE ssh: drop the options and the host; run what keysource's authorized_keys
    # line forces for the sync key, with the client's command as sshd passes it
    (fake / "ssh").write_text(
        "#!/bin/sh\n# FAKE ssh (tests/lab/test_standby.py): keysource's forced command, "
        "locally\nwhile [ $# -gt 0 ]; do case $1 in -i|-o|-l|-p) shift 2;; -*) shift;; "
        "*) shift; break;; esac; done\n"
        f"SSH_ORIGINAL_COMMAND=\"$*\" exec /usr/bin/rrsync -ro {lab.paths.master_root / 'pki'}\n")
    (fake / "ssh").chmod(0o755)
    return {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}


def _fleet(lab: Lab, sb: Standby, host: str, *args: str, promoted: bool = False,
           timeout: float = 900) -> tuple[int, dict[str, Any], str]:
    """`fleet ARGS --json` (this checkout's CLI) as host ``host`` would run it: in a UTS
    namespace of that name, through the standby's salt-master."""
    overlays = [*lab.paths.overlay_args(), "--overlay", str(sb.overlay),
                *(["--overlay", str(sb.promoted)] if promoted else [])]
    argv = [sys.executable, "-m", "fleet", *args, "--json", "-i", str(ROOT / "inventory.yaml"),
            *overlays, "--salt-config", str(sb.etc)]
    inner = f"hostname {host} && exec \"$@\""
    proc = subprocess.run(["unshare", "--uts", "sh", "-c", inner, "fleet", *argv],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT / "tools")},
                          capture_output=True, text=True, timeout=timeout, check=False)
    doc = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return proc.returncode, doc, proc.stderr


def _minion_conf(render: Path, node: str) -> str:
    """minion.d/fleet.conf as that render's pillar gives it to base.minion."""
    pillar = yaml.safe_load((render / "pillar" / "nodes" / f"{node}.sls").read_text())
    return str(pillar["node"]["salt"]["minion_conf"]["contents"])


def _put_conf(lab: Lab, node: str, text: str) -> None:
    with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
        f.write(text)
        f.flush()
        # the temporary file's 0600 would go with it: base.minion keeps 0644, and an apply
        # that puts the mode back restarts the minion under the next test's job
        Path(f.name).chmod(0o644)
        pm.podman(lab.paths, "cp", f.name,
                  f"{lab.plan.node(node).container}:/etc/salt/minion.d/fleet.conf")
    podman_exec(lab, node, "systemctl", "restart", "salt-minion", timeout=120)


def _answers_lab(lab: Lab, node: str) -> bool:
    return bool(lab.salt(node, "test.ping", "-t", "10", timeout=120).get(node) is True)


@pytest.fixture
def standby(lab: Lab) -> Iterator[Standby]:
    paths = lab.paths
    root = paths.lab / "standby"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    overlay, promoted = _overlay(lab, root), root / "promoted.yaml"
    inv = load_inventory(paths.inventory, [*paths.overlays, overlay])
    address = str(inv.standby_address)
    assert address not in {str(n.address) for n in lab.nodes}, address
    render = root / "render"
    tree.write(render, render_all(inv))
    etc = root / "etc" / "salt"
    etc.mkdir(parents=True)
    conf = lab_master.config(paths, lab.plan)
    conf.update({
        "root_dir": str(root), "pki_dir": str(root / "pki"),
        "cachedir": str(root / "cache"), "sock_dir": str(root / "run"),
        "pidfile": str(root / "run" / "salt-master.pid"),
        "log_file": str(root / "log" / "master"), "key_logfile": str(root / "log" / "key"),
        "interface": address})
    conf["pillar_roots"]["base"][0] = str(render / "pillar")  # type: ignore[index]
    (etc / "master").write_text(yaml.safe_dump(conf, sort_keys=False))
    for d in ("run", "log", "cache", "pki"):
        (root / d).mkdir(exist_ok=True, mode=0o700)
    bridge = _bridge(str(lab.plan.gateway))
    sb = Standby(root, etc, overlay, promoted, address, inv)
    # the bytes base.minion wrote (the render's contents plus the master_finger it appends):
    # put back as they were, the next apply finds nothing to change and restarts no minion
    # under a later test's job
    read = {node: podman_exec(lab, node, "cat", "/etc/salt/minion.d/fleet.conf")
            for node in FAILED_OVER}
    assert all(r.returncode == 0 and r.stdout for r in read.values()), read
    own_conf = {node: r.stdout for node, r in read.items()}
    run(["ip", "addr", "add", f"{address}/32", "dev", bridge])
    try:
        yield sb
    finally:
        problems = []
        if lab_master.pid(paths) is None:
            lab_master.start(paths, lab.plan)
        for node in FAILED_OVER:
            _put_conf(lab, node, own_conf[node])
        stop_daemon("the standby salt-master", sb.pid, timeout=60)
        run(["ip", "addr", "del", f"{address}/32", "dev", bridge], check=False)
        for node in FAILED_OVER:
            try:
                poll(f"{node} to answer the lab master again",
                     partial(_answers_lab, lab, node), timeout=300)
            except BaseException as e:  # report every node, then fail
                problems.append(str(e))
        if not problems:  # APPLIED back as the lab's render has it (/etc/hosts: head-02)
            (back,), took = highstate.apply(paths, [APPLIED])
            print(f"[standby] {APPLIED} re-applied by the lab master in {took:.1f}s")
            problems += [f"{APPLIED}: {p}" for p in back.problems()]
        shutil.rmtree(root, ignore_errors=True)
        assert not problems, problems


OUTCOMES = {"keys restored", "standby started", "sync key made", "rendered with the sync key",
            "failover config in place", "keys pulled", "both answer head-02",
            "status through head-02", "apply refused on the standby", "promoted",
            "promoted render", "promoted head-02 applied", "no failback",
            "apply refused on head-01"}


@dataclass
class Follower:
    """Runs the runbook's failover steps on the lab and checks each."""
    lab: Lab
    sb: Standby
    part: str = ""
    patch: dict[str, Any] = field(default_factory=dict)  # the runbook's edit
    sync_key: str = ""  # the line recorded for the sync key
    seen: set[str] = field(default_factory=set)
    t0: float = 0.0

    @property
    def pki(self) -> Path:
        return self.sb.root / "pki"

    # --- the parts: head-01 lost, head-01 back ---------------------------------------------
    def enter(self, part: str) -> None:
        if part == self.part:
            return
        self.part, self.t0 = part, time.monotonic()
        if part == "When head-01 is lost":
            lab_master.stop(self.lab.paths)
        elif part == "When head-01 comes back":
            lab_master.start(self.lab.paths, self.lab.plan)
        print(f"[standby] part: {part or '(the start)'}")

    # --- the steps ------------------------------------------------------------------------
    def step(self, step: runbook.Step) -> None:
        self.enter(step.part)
        if step.edit is not None:
            self.promote(step)
            return
        host = STANDBY if step.note.startswith(f"on {STANDBY}") else "head-01"
        prog, args = step.argv[0], step.argv[1:]
        if prog == "git":
            print(f"{step.text}: skipped, the lab's render is not a checkout")
        elif prog == "systemctl":
            self.systemctl(step, host)
        elif prog == "salt":
            self.salt(step, host)
        elif args[0] == "restore":
            self.restore(step, host)
        elif args[0] == "render":
            self.render(step)
        elif args[0] == "status":
            self.status(step, host)
        else:
            assert args[0] == "apply", step.text
            self.apply(step, host)

    def restore(self, step: runbook.Step, host: str) -> None:
        """STAND-IN for the restore on head-02: the master key and accepted keys."""
        assert host == STANDBY, step.text
        src = self.lab.paths.master_root / "pki"
        for name in ("master.pem", "master.pub"):
            shutil.copy2(src / name, self.pki / name)
        shutil.copytree(src / "minions", self.pki / "minions", dirs_exist_ok=True)
        print(f"{step.text}: STAND-IN: the lab master's keys copied into {self.pki}")
        self.seen.add("keys restored")

    def systemctl(self, step: runbook.Step, host: str) -> None:
        action, unit = step.argv[1], step.argv[-1]
        assert host == STANDBY, step.text
        if (action, unit) == ("start", "salt-master"):
            run([str(ROOT / ".venv" / "bin" / "salt-master"), "-c", str(self.sb.etc), "-d"],
                timeout=120)
            wait_for("the standby salt-master", lambda: self.sb.pid() is not None,
                     timeout=120)
            self.seen.add("standby started")
        elif (action, unit) == ("start", "fleet-standby-sync"):
            self.pull(step)
        elif action == "disable":
            print(f"{step.text}: NOT RUN, no timer in the lab (the pull ran by hand)")
        else:
            raise AssertionError(f"{step.text}: no lab form for this systemctl step")

    def salt(self, step: runbook.Step, host: str) -> None:
        target, fun = step.argv[1:]
        if fun == "state.apply" and target == STANDBY:
            self.sync_key = _standby_state(self.lab, self.sb)
            self.seen.add("sync key made")
        elif fun == "state.apply":
            print(f"{step.text}: NOT RUN, head-01's container is the lab's own, applied by "
                  "the bring-up")
        elif (target, fun, host) == ("*", "test.ping", STANDBY):
            for node in FAILED_OVER:
                poll(f"{node} to answer the standby", partial(self.sb.salt, node),
                     timeout=FAILOVER_TIMEOUT)
            print(f"[standby] head-01 stopped: both answer head-02 after "
                  f"{time.monotonic() - self.t0:.1f}s")
            assert not list((self.pki / "minions_pre").glob("*")), \
                "a key waits to be accepted again"
            self.seen.add("both answer head-02")
        elif (target, fun) == ("*", "test.ping"):
            # the minions' own check of their master, several times over: a failback
            # would show
            deadline = time.monotonic() + 4 * ALIVE_S + 10
            while time.monotonic() < deadline:
                for node in FAILED_OVER:
                    assert self.sb.salt(node), f"{node} left the standby once head-01 came back"
                    assert not _answers_lab(self.lab, node), f"{node} answers head-01 too"
            self.seen.add("no failback")
        else:
            raise AssertionError(f"{step.text}: no lab form for this salt step")

    def pull(self, step: runbook.Step) -> None:
        """The rendered fleet-standby-sync, its ssh the FAKE one."""
        paths = self.lab.paths
        out = run([str(self.sb.root / "sync" / "fleet-standby-sync")],
                  env=_fake_ssh(self.lab, self.sb), timeout=120).stdout.strip()
        print(f"[standby] {out}")
        assert "accepted keys" in out, out
        for name in ("master.pem", "master.pub"):
            assert (self.pki / name).read_bytes() == \
                (paths.master_root / "pki" / name).read_bytes()
        assert oct((self.pki / "master.pem").stat().st_mode & 0o777) == "0o400"
        for node in FAILED_OVER:
            assert (self.pki / "minions" / node).is_file(), f"{node}'s key was not pulled"
        self.seen.add("keys pulled")

    def render(self, step: runbook.Step) -> None:
        promoted = bool(self.patch)
        out = self.sb.root / ("render-promoted" if promoted else "render")
        overlays = [*self.lab.paths.overlay_args(), "--overlay", str(self.sb.overlay),
                    *(["--overlay", str(self.sb.promoted)] if promoted else [])]
        proc = subprocess.run(
            [sys.executable, "-m", "fleet", *step.argv[1:], "-i", str(ROOT / "inventory.yaml"),
             *overlays, "-o", str(out)], cwd=ROOT, capture_output=True, text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT / "tools")}, timeout=300, check=False)
        assert proc.returncode == 0, (step.text, proc.stdout[-2000:], proc.stderr[-2000:])
        if promoted:  # every minion's list: the active master first, head-01 the standby
            paths = self.lab.paths
            inv = load_inventory(paths.inventory, [*paths.overlays, self.sb.overlay,
                                                   self.sb.promoted])
            conf = yaml.safe_load(_minion_conf(out, APPLIED))
            assert inv.standby_address == inv.nodes["head-01"].address
            # (the lab's site.salt.master_address, the host, stays first; at the site,
            # with none, head-02's address is)
            assert conf["master"] == [str(inv.master_address), str(inv.standby_address)], conf
            self.seen.add("promoted render")
        else:  # the sync key recorded reaches head-01's keysource
            assert self.sync_key and any(
                self.sync_key in f.read_text() for f in (out / "pillar").rglob("*.sls")), \
                "the recorded sync key is in no pillar"
            self.seen.add("rendered with the sync key")

    def promote(self, step: runbook.Step) -> None:
        """The runbook's edit: the two names swapped, into the promotion overlay."""
        active = self.lab.plan.inventory.raw.site.salt.master
        assert step.edit == {"site": {"salt": {"master": STANDBY,
                                               "standby": {"host": active}}}}, step.edit
        self.patch = step.edit
        self.sb.promoted.write_text(yaml.safe_dump(self.patch))
        self.seen.add("promoted")

    def status(self, step: runbook.Step, host: str) -> None:
        head = self.lab.plan.node(CONTROLLER).container
        # --ping: the lab's standby master did not see these minions as its connected peers
        # (`manage.alived` said `not connected` in the fresh run of 2026-12-06 while each
        # answered test.ping through it); a test.ping job through it is what this step proves
        rc, doc, err = _fleet(
            self.lab, self.sb, host, *step.argv[1:], ",".join(FAILED_OVER), "--live", "--ping",
            "--no-power", "--no-alerts",
            *(f"--{kind}-state-dir={self.sb.root / kind}"
              for kind in ("apply", "health", "reinstall", "rollout", "status")),
            "--slurm-command", f"{PODMAN} {head}",
            "--pxe-command", f"{PODMAN} -i {head} fleet-lab", promoted=bool(self.patch),
            timeout=600)
        assert doc.get("master") == {"active": "head-01", "standby": STANDBY, "here": STANDBY,
                                     "role_here": "standby"}, (rc, err[-3000:])
        rows = {r["node"]: r for r in doc["nodes"]}
        for node in FAILED_OVER:
            assert (rows[node]["key"], rows[node]["minion"]) == ("accepted", "answers"), \
                rows[node]
        self.seen.add("status through head-02")

    def apply(self, step: runbook.Step, host: str) -> None:
        if self.part == "Set up the standby once":
            self.minion_configs(step)
            return
        t0, promoted = time.monotonic(), bool(self.patch)
        state = self.sb.root / f"apply-{host}"
        rc, doc, err = _fleet(self.lab, self.sb, host, *step.argv[1:], APPLIED,
                              "--state-dir", str(state), promoted=promoted)
        if host == STANDBY and not promoted:  # the standby drives no node
            assert rc == 6, (rc, doc, err[-2000:])
            assert "standby Salt master" in err and not state.exists(), err[-2000:]
            self.seen.add("apply refused on the standby")
        elif host == STANDBY:
            assert rc == 0, (rc, doc, err[-3000:])
            (only,) = doc["nodes"]
            assert only["node"] == APPLIED and only["status"] in ("ok", "changed"), only
            print(f"[standby] promoted head-02 applied {APPLIED} ({only['status']}, "
                  f"{only['states']} states) in {time.monotonic() - t0:.1f}s")
            self.seen.add("promoted head-02 applied")
        else:  # head-01 back, the standby now
            assert promoted and rc == 6 and "head-02 is the active one" in err, \
                (rc, err[-2000:])
            self.seen.add("apply refused on head-01")

    def minion_configs(self, step: runbook.Step) -> None:
        """STAND-IN for the apply's base.minion on FAILED_OVER: the standby render's
        fleet.conf, the minion restarted; they answer head-01 only."""
        t0 = time.monotonic()
        for node in FAILED_OVER:
            conf = _minion_conf(self.sb.root / "render", node)
            assert yaml.safe_load(conf)["master"] == [str(self.lab.plan.gateway),
                                                      self.sb.address], conf
            _put_conf(self.lab, node, conf)
        for node in FAILED_OVER:
            poll(f"{node} to answer head-01", partial(_answers_lab, self.lab, node),
                 timeout=300)
            assert not self.sb.salt(node, timeout=5), f"{node} answers both masters"
        print(f"{step.text}: STAND-IN for base.minion on {', '.join(FAILED_OVER)}; "
              f"on head-01 after {time.monotonic() - t0:.1f}s")
        self.seen.add("failover config in place")


def _standby_state(lab: Lab, sb: Standby) -> str:
    """What provisioning.standby makes on head-02: the sync key and the rendered
    fleet-standby-sync; returns the line to record (the public key, no comment)."""
    d = sb.root / "sync"
    d.mkdir(mode=0o700)
    run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "fleet-standby-sync",
         "-f", str(d / "sync_ed25519")])
    recorded = " ".join((d / "sync_ed25519.pub").read_text().split()[:2])
    template = (ROOT / "salt" / "provisioning" / "files" / "fleet-standby-sync.jinja")
    script = d / "fleet-standby-sync"
    script.write_text(jinja2.Template(template.read_text(), keep_trailing_newline=True).render(
        dir=str(d), pki=str(sb.root / "pki"), master=str(lab.plan.gateway),
        sync_key=recorded))
    script.chmod(0o750)
    # the runbook: record that line as site.salt.standby.sync_key
    doc = yaml.safe_load(sb.overlay.read_text())
    doc["site"]["salt"]["standby"]["sync_key"] = recorded
    sb.overlay.write_text(yaml.safe_dump(doc))
    return recorded


def test_the_minions_fail_over_and_one_master_drives_them(lab: Lab, standby: Standby
                                                          ) -> None:
    f = Follower(lab, standby)
    for step in runbook.steps(runbook.FAILOVER_SECTION):
        why = runbook.unrunnable(step, runbook.MASTER_PROGRAMS, runbook.MASTER_VERBS)
        assert why is None, why
        t0 = time.monotonic()
        f.step(step)
        print(f"[standby] {step.text}: ok, {time.monotonic() - t0:.1f}s")
    assert sorted(OUTCOMES - f.seen) == [], "the runbook's steps never showed these"
