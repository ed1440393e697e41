"""The lab's head node lost and brought back by `fleet restore`, following docs/operations.md's
"Set up and run the backup" and "Restore head-01 onto a fresh install" step by step, in
the order written there (tests/support/runbook.py reads them: each `$` line a command,
the output lines shown under a command required in its output), with the real restic and
the real minions of the lab. Nothing here restates a step: a step the doc drops, reorders
or gets wrong fails the checks below.

The lab's master runs on this host (fleet.lab.master): its keys under .lab/master/pki,
its secrets store .lab/secrets. head-01 is a container (dnsmasq, nginx, Slurm's
controller...) whose /etc/salt/pki, its own minion key, is a host directory
(.lab/head-pki, fleet.lab.paths): on a real head both sit on the one disk that dies.
Before the first step, a real `fleet reinstall` of a node (NODE: tbox-001) is left
interrupted: its preflight fails (its BMC, a FAKE one's address with nobody there, does
not answer), which leaves the run unfinished in the journal, as the flow writes it.

The lab form of each step (every fleet run is this checkout's CLI on the lab's inventory
with one more overlay naming the backup's destination: the site's sftp one, on the lab's
storage node TARGET (stor-002) instead of stor-050; fleet's state directories in the
test's directory, the reinstall's the Rig's; `fleet backup` and `restore` reach TARGET
with ``--ssh-config`` naming its address, where a head has head-01's DNS):

- ``install -m 0600 /dev/stdin /etc/fleet/backup.key``: the real install, the operator's
  passphrase on its stdin, into the test's operator directory, which stands for the key's
  place on the master but is not lost with it (the restore's stop step runs `fleet
  restore` once before its own key step); the step writes it again, same passphrase;
- ``install -m 0600 /dev/stdin /etc/fleet/backup-ssh.key`` (the restore's): the real
  install, the operator's copy of the backup ssh key on its stdin, into the test's head
  directory (``head/backup-ssh.key``: the fresh head's place, RUNBOOK_PLACES); the
  restore's ``--ssh-key`` must name that place, and runs with that file;
- ``git commit``: skipped (the lab render is not a checkout), said so;
- ``fleet render``: into the lab's render, which the lab master serves (TARGET's pillar
  gets role backup.target and its login); put back as the bring-up wrote it, byte for
  byte, right after TARGET's apply;
- ``fleet secrets init``: on the lab's store (.lab/secrets), which makes the backup ssh
  key; its copy kept in the operator's directory (the runbook: with the restic key), for
  ``fleet restore --ssh-key`` on the fresh head; after the restore it must change
  nothing there;
- ``salt stor-050 state.apply``: the lab master's highstate of TARGET, twice: the first
  changes only backup.target's login (user, repository directory, key), the second
  nothing; the login then shown: shell nologin, repository 0700 the login's; after the
  backup, sftp from this host lists the repository, a command over the key runs nothing,
  the same key from another node (stor-001) is refused, every file in the repository is
  the login's and another user (nobody) cannot read its config; at the end the login
  and the key are removed from TARGET and the lab's store (they were not there before);
- ``salt head-01 state.apply`` while setting up: NOT RUN (the lab's head-01 is applied by
  the bring-up; its backup timer would back up the container, not the lab master on
  this host), said so;
- ``fleet backup [list|check]``, ``fleet restore``, ``fleet keys ...``: the real CLI with
  the lab master's paths (``--pki-dir``, ``--minion-pki-dir`` head-01's volume,
  ``--secrets``, ``--salt-config``); ``fleet status``: without ``--live`` (the lab has no
  collector: the node columns are unknown; what the steps read, the last backup and the
  reinstall's journal, is the master's own files);
- ``fleet reinstall NODE ...``: NODE is the node left interrupted, run by the Rig
  (reinstall_rig.py: the lab's PXE state through head-01, a BMC address with nobody
  listening), after Slurm's controller on the new head-01 has every node back (the
  abort's report reads it);
- ``systemctl stop|start salt-master``: the lab master on this host (fleet.lab.master);
  the stop is first shown to be needed: `fleet restore` with the fresh master running is
  refused (exit 6);
- ``systemctl restart salt-minion``: in head-01's container, stopped (gone when
  systemctl returns), then started without waiting;
- ``salt head-01 state.apply`` after the restore: the lab master's highstate of head-01
  once its minion answers (fleet.lab.highstate); ``salt '*' test.ping``: the lab master's,
  until every lab minion answers.

Between the two procedures the disk dies (the restore's premise): the master is stopped,
its keys, its secrets and fleet's state are deleted; head-01's
container and its volume (.lab/head-pki) are removed and head-01 is created again from its
image as a fresh install (the restore's step 1, before its command): its minion config in
place, no key (its salt-minion makes a new one, which the restored master would refuse);
the "freshly installed" master starts once and makes a new key of its own.

What the steps must show: the restore restores the backup's fingerprint, head-01's
minion key and the secrets store, the keys and the journal identical, modes and owners
included, the fresh master's own key kept aside; head-01's highstate converges it again;
every minion answers test.ping with no key accepted again (the accepted keys are the same
files, none pending or denied); `fleet keys finger --check` holds; `fleet status` shows
the interrupted reinstall; it is the restored master's to end: `--resume` continues the
same run (at preflight, which fails again: the BMC still does not answer), and `--abort`
ends it, the node left as reported (boot mode local, its key accepted, Slurm not
drained)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from labtools import ROOT, Lab, podman_exec, poll
from reinstall_rig import Rig

from fleet.backup.options import KEY_DEFAULT
from fleet.inventory.load import load_inventory
from fleet.lab import headtools, highstate
from fleet.lab import lab as lab_mod
from fleet.lab import master as lab_master
from fleet.lab import nodes as lab_nodes
from fleet.lab import podman as pm
from fleet.lab.plan import render_all
from fleet.master.highstate import Status
from fleet.render import bootstrap, tree
from support import runbook
from support.bmcfakes import free_port

NODE = "tbox-001"  # its reinstall is left interrupted before the backup
# where the runbook's key steps put the restic key (fleet's default --password-file) and
# the copy of the backup ssh key (the restore's --ssh-key names it)
RUNBOOK_PLACES = {"backup.key": KEY_DEFAULT, "backup-ssh.key": "/etc/fleet/backup-ssh.key"}
HEAD = "head-01"
# the lab's stand-in for the site's backup storage server (a storage node, mkv.volume, as
# stor-050 is): the destination is the site's, on this host
TARGET, OTHER = "stor-002", "stor-001"
LOGIN_CHANGES = {"backup-target-user-present", "backup-target-file-directory-repository",
                 "backup-target-ssh_auth-present"}  # openssh-server: base's already
PASSPHRASE = "the lab operator's passphrase\n"
# what following the two procedures must have shown: a step the runbook drops leaves one
# of these unseen
OUTCOMES = {"key installed", "secrets made", "backed up", "status: last backup",
            "listed", "checked", "target applied", "target unchanged", "login restricted",
            "repository private", "restore refused over a running master", "master stopped",
            "key back", "ssh key back", "restored", "head minion restarted", "master started",
            "head-01 converged", "finger holds", "every minion answers", "no key missing",
            "status: journal", "resumed", "aborted", "secrets unchanged"}


def _tree(root: Path) -> dict[str, tuple[int, int, int, bytes]]:
    out = {}
    for p in sorted([root, *root.rglob("*")]):
        st = p.lstat()
        body = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
        out[str(p)] = (st.st_mode, st.st_uid, st.st_gid, body)
    return out


def _files(root: Path) -> dict[str, tuple[int, str]]:
    """Every file and directory under ``root``: mode and content digest."""
    return {str(p.relative_to(root)): (p.lstat().st_mode, hashlib.sha256(
        p.read_bytes() if p.is_file() else b"").hexdigest()) for p in root.rglob("*")}


def _rendered(root: Path) -> dict[str, tuple[int, str]]:
    """:func:`_files` of a render but the CLI's record of its inputs (``.render.inputs``:
    file identities, which a rewrite changes, not what the master serves)."""
    return {k: v for k, v in _files(root).items() if k != ".render.inputs"}


def _keys(lab: Lab) -> dict[str, Any]:
    out = subprocess.run([str(lab.paths.bin / "salt-key"), "-L", "--out=json"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    keys: dict[str, Any] = json.loads(out)
    return keys


@dataclass
class Restorer:
    """Runs the runbook's steps on the lab and checks each; keeps what it saw."""
    lab: Lab
    tmp: Path
    rig: Rig
    seen: set[str] = field(default_factory=set)
    before: dict[str, Any] = field(default_factory=dict)  # as the backup found them
    restored: dict[str, Any] = field(default_factory=dict)  # as the restore left them

    def __post_init__(self) -> None:
        self.key = self.tmp / "operator" / "backup.key"
        self.key.parent.mkdir()
        self.overlay = self.tmp / "backup-overlay.yaml"
        site = load_inventory(ROOT / "inventory.yaml").raw.site.backup
        assert site is not None and site.destination.type == "sftp", site
        self.site_host = str(site.destination.host)  # the runbook's `salt HOST state.apply`
        self.user, self.repo = str(site.destination.user), Path(str(site.destination.path))
        dest = {**site.destination.model_dump(mode="json", exclude_none=True), "host": TARGET}
        self.overlay.write_text(yaml.safe_dump({"site": {"backup": {"destination": dest}}}))
        # what the state makes on the storage node: the test removes it at the end
        self.made = next((p for p in [*reversed(self.repo.parents), self.repo]
                          if podman_exec(self.lab, TARGET, "test", "-e", str(p)).returncode),
                         None)
        # how this host reaches the storage node (a head resolves it through head-01's DNS)
        self.ssh_config = self.tmp / "ssh_config"
        self.ssh_config.write_text(f"Host {TARGET}\n  HostName "
                                   f"{self.lab.plan.node(TARGET).address}\n")
        self.ssh_key = self.tmp / "operator" / "backup_ssh"  # the operator's copy
        # where the restore's key step puts that copy on the fresh head (RUNBOOK_PLACES)
        self.head_ssh_key = self.tmp / "head" / "backup-ssh.key"
        # put back after the target's apply (but the CLI's record of its inputs)
        self.lab_render = _rendered(self.lab.paths.render)
        self.lab_secrets = set(_files(self.lab.paths.secrets))
        (self.tmp / "pxe-state").mkdir()
        self.env = {**os.environ, "PYTHONPATH": str(ROOT / "tools"),
                    "FLEET_REINSTALL_STATE": str(self.rig.state),
                    **{env: str(self.tmp / sub) for env, sub in (
                        ("FLEET_ROLLOUT_STATE", "state/rollout"),
                        ("FLEET_HEALTH_STATE", "state/health"),
                        ("FLEET_APPLY_STATE", "state/apply"),
                        ("FLEET_STATUS_STATE", "state/status"),
                        ("FLEET_BACKUP_STATE", "state/backup"),
                        ("FLEET_ALERTMANAGER_STATE", "am"),
                        ("FLEET_AUDIT_LOG", "log/audit.jsonl"))}}
        self.run_id = self.rig.journal(NODE)[0]["run"]
        self.minions = [n.hostname for n in self.lab.nodes]
        self.keys_before = _keys(self.lab)
        assert sorted(self.keys_before["minions"]) == sorted(self.minions)
        self.head_key = _tree(self.head_pki)
        assert str(self.head_pki / "minion.pem") in self.head_key

    @property
    def pki(self) -> Path:
        return self.lab.paths.master_root / "pki"

    @property
    def head_pki(self) -> Path:
        return self.lab.paths.head_pki / "minion"

    def trees(self) -> dict[str, Any]:
        return {"pki": _tree(self.pki), "secrets": _tree(self.lab.paths.secrets),
                "state": _tree(self.rig.state)}

    # --- commands -----------------------------------------------------------------------
    def fleet(self, verb: str, *args: str, json_out: bool = True
              ) -> tuple[int, dict[str, Any], subprocess.CompletedProcess[str]]:
        paths = self.lab.paths
        argv = [sys.executable, "-m", "fleet", verb, *args, *(["--json"] * json_out),
                "-i", str(ROOT / "inventory.yaml"), *paths.overlay_args(),
                "--overlay", str(self.overlay)]
        kept = ["--password-file", str(self.key), "--secrets", str(paths.secrets),
                "--pxe-state", str(self.tmp / "pxe-state"), "--pki-dir", str(self.pki),
                "--minion-pki-dir", str(self.head_pki), "--salt-config", str(paths.salt_etc),
                "--ssh-config", str(self.ssh_config)]
        argv += {
            "backup": kept, "restore": kept,
            "secrets": ["--secrets", str(paths.secrets)],
            "render": ["-o", str(paths.render)],  # what the lab master serves
            "status": ["--no-power", "--no-alerts", "--salt-config", str(paths.salt_etc)],
        }.get(verb, ["--salt-config", str(paths.salt_etc)])
        proc = subprocess.run(argv, cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=900, check=False)
        if not json_out:
            return proc.returncode, {}, proc
        assert proc.stdout.strip().startswith("{"), (verb, proc.returncode,
                                                      proc.stderr[-3000:])
        return proc.returncode, json.loads(proc.stdout), proc

    # --- the steps ----------------------------------------------------------------------
    def step(self, section: str, step: runbook.Step) -> subprocess.CompletedProcess[str]:
        prog, args = step.argv[0], step.argv[1:]
        if prog == "git":
            print(f"{step.text}: skipped, the lab's render is not a checkout")
            return subprocess.CompletedProcess(step.argv, 0, "", "")
        if prog == "install":
            return self.install_key(step)
        if prog == "systemctl":
            return self.systemctl(step)
        if prog == "salt":
            return self.salt(section, step)
        if args[0] == "reinstall":
            return self.reinstall(step)
        check = getattr(self, f"check_{args[0]}")
        return check(step)  # type: ignore[no-any-return]

    def install_key(self, step: runbook.Step) -> subprocess.CompletedProcess[str]:
        assert step.argv[1:3] == ["-m", "0600"] and step.argv[3] == "/dev/stdin", step.text
        assert step.argv[4] in RUNBOOK_PLACES.values(), step.text
        if step.argv[4] == RUNBOOK_PLACES["backup.key"]:
            dest, text = self.key, PASSPHRASE  # the operator's directory in the lab
            seen = "key back" if "master stopped" in self.seen else "key installed"
        else:  # the restore's: the operator's copy of the backup ssh key, onto the head
            assert "master stopped" in self.seen, step.text
            dest, text, seen = self.head_ssh_key, self.ssh_key.read_text(), "ssh key back"
            dest.parent.mkdir(exist_ok=True)
        proc = subprocess.run([*step.argv[:-1], str(dest)], input=text, capture_output=True,
                              text=True, timeout=60, check=False)
        assert proc.returncode == 0, (step.text, proc.stderr)
        assert dest.stat().st_mode & 0o777 == 0o600 and dest.read_text() == text
        self.seen.add(seen)
        return proc

    def systemctl(self, step: runbook.Step) -> subprocess.CompletedProcess[str]:
        paths = self.lab.paths
        action, unit = step.argv[1:]
        if (action, unit) == ("stop", "salt-master"):
            # the step is needed: over the fresh install's running master, refused
            code, doc, _ = self.fleet("restore", "--ssh-key", str(self.ssh_key))
            assert code == 6, doc
            self.seen.add("restore refused over a running master")
            lab_master.stop(paths)
            self.seen.add("master stopped")
        elif (action, unit) == ("start", "salt-master"):
            lab_master.start(paths, self.lab.plan)
            self.seen.add("master started")
        elif (action, unit) == ("restart", "salt-minion"):
            # head-01's minion loads its restored key before the master is back: stopped
            # (gone when systemctl returns), then started
            head = self.lab.plan.node(HEAD).container
            pm.exec_(paths, head, "systemctl", "stop", "salt-minion", timeout=120)
            pm.exec_(paths, head, "systemctl", "start", "--no-block", "salt-minion")
            self.seen.add("head minion restarted")
        else:
            raise AssertionError(f"{step.text}: no lab form for this systemctl step")
        return subprocess.CompletedProcess(step.argv, 0, "", "")

    def salt(self, section: str, step: runbook.Step) -> subprocess.CompletedProcess[str]:
        paths = self.lab.paths
        target, fun = step.argv[1:]
        setting_up = section == runbook.BACKUP_SECTIONS[0]
        if fun == "state.apply" and setting_up and target == self.site_host:
            self.apply_target(step)
        elif fun == "state.apply" and setting_up:
            print(f"{step.text}: NOT RUN in the lab (head-01 is applied by the bring-up; its "
                  "backup timer would back up the container, not the lab master)")
        elif fun == "state.apply":
            highstate.ping(paths, [HEAD], timeout=300)
            results, took = highstate.apply(paths, [HEAD])
            assert [(r.node, r.status) for r in results] == [(HEAD, Status.CHANGED)], \
                highstate.format_results(results, took)
            lab_mod.settle(paths, self.lab.plan)  # base.minion's restart of a changed config
            self.seen.add("head-01 converged")
        elif (target, fun) == ("*", "test.ping"):
            highstate.ping(paths, self.minions, timeout=300)
            # every key accepted as before, none pending or denied
            assert _keys(self.lab) == self.keys_before
            self.seen.add("every minion answers")
        else:
            raise AssertionError(f"{step.text}: no lab form for this salt step")
        return subprocess.CompletedProcess(step.argv, 0, "", "")

    def apply_target(self, step: runbook.Step) -> None:
        """The highstate of the storage node with the destination rendered: backup.target
        makes the login, and changes nothing the second time; the lab's render is then put
        back as the bring-up left it."""
        paths = self.lab.paths
        print(f"{step.text}: run as salt {TARGET} state.apply")
        for seen, status in (("target applied", Status.CHANGED),
                             ("target unchanged", Status.OK)):
            highstate.ping(paths, [TARGET], timeout=120)
            (res,), took = highstate.apply(paths, [TARGET])
            assert res.status == status, highstate.format_results([res], took)
            assert set(res.changes) == (LOGIN_CHANGES if status == Status.CHANGED else set()), \
                res.changes
            self.seen.add(seen)
        self.put_back_render()
        passwd = podman_exec(self.lab, TARGET, "getent", "passwd", self.user).stdout
        assert passwd.strip().endswith(":/var/lib/fleet-backup:/usr/sbin/nologin"), passwd
        mode = podman_exec(self.lab, TARGET, "stat", "-c", "%a %U %G", str(self.repo)).stdout
        assert mode.split() == ["700", self.user, self.user], mode

    def put_back_render(self) -> None:
        """The lab's render as the bring-up wrote it (fleet.lab.plan.render), byte for byte."""
        paths = self.lab.paths
        tree.write(paths.render, render_all(self.lab.plan.inventory))
        # The CLI's record of its inputs (file identities, the context's hash) now names
        # the destination's render: gone, the next `fleet render` is a full one.
        (paths.render / ".render.inputs").unlink(missing_ok=True)
        assert _rendered(paths.render) == self.lab_render, \
            sorted(set(_rendered(paths.render).items()) ^ set(self.lab_render.items()))

    def check_login(self) -> None:
        """What the login allows: sftp from the master, never a command, never from
        another node; the repository is the login's alone."""
        key, user = self.lab.paths.secrets / "backup" / "ssh_ed25519", self.user
        ssh = ["ssh", "-F", str(self.ssh_config), "-i", str(key), "-o", "IdentitiesOnly=yes",
               "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
               "-o", f"UserKnownHostsFile={self.tmp / 'known_hosts'}", f"{user}@{TARGET}"]
        listed = subprocess.run(["sftp", "-b", "-", *ssh[1:]], input=f"ls {self.repo}\n",
                                capture_output=True, text=True, timeout=60, check=False)
        assert listed.returncode == 0 and "config" in listed.stdout, listed
        shell = subprocess.run([*ssh, "echo shell-$((6*7))"], stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=60, check=False)
        assert "shell-42" not in shell.stdout and "denied" not in shell.stderr, shell
        # the same key from another node (not a master's address): refused
        container = self.lab.plan.node(OTHER).container
        pm.podman(self.lab.paths, "cp", str(key), f"{container}:/root/backup-key")
        try:
            other = podman_exec(self.lab, OTHER, "ssh", "-i", "/root/backup-key", "-o",
                                "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
                                "-o", "UserKnownHostsFile=/dev/null",
                                f"{user}@{self.lab.plan.node(TARGET).address}", "true")
        finally:
            podman_exec(self.lab, OTHER, "rm", "-f", "/root/backup-key")
        assert other.returncode == 255 and "Permission denied" in other.stderr, other
        self.seen.add("login restricted")
        # the repository is the login's: every file its own, its directory 0700 (restic's
        # files inside keep sftp's umask: the directory is what keeps others out)
        found = podman_exec(self.lab, TARGET, "find", str(self.repo), "!", "-user", user)
        assert found.returncode == 0 and found.stdout == "", found
        mode = podman_exec(self.lab, TARGET, "stat", "-c", "%a %U", str(self.repo)).stdout
        assert mode.split() == ["700", user], mode
        other = podman_exec(self.lab, TARGET, "runuser", "-u", "nobody", "--", "cat",
                            str(self.repo / "config"))
        assert other.returncode != 0 and "Permission denied" in other.stderr, other
        self.seen.add("repository private")

    def put_back_target(self) -> None:
        """The storage node and the lab's secrets store without the login the test made."""
        if podman_exec(self.lab, TARGET, "getent", "passwd", self.user).returncode == 0:
            podman_exec(self.lab, TARGET, "userdel", "-r", self.user)
        if self.made is not None:
            podman_exec(self.lab, TARGET, "rm", "-rf", str(self.made))
        for made in ("backup", "pillar/secrets/backupkey.sls"):
            if made not in self.lab_secrets:
                shutil.rmtree(self.lab.paths.secrets / made, ignore_errors=True)
                (self.lab.paths.secrets / made).unlink(missing_ok=True)

    def check_render(self, step: runbook.Step) -> subprocess.CompletedProcess[str]:
        code, _, proc = self.fleet(*step.argv[1:], json_out=False)
        assert code == 0, (step.text, proc.stderr[-3000:])
        return proc

    def check_secrets(self, step: runbook.Step) -> subprocess.CompletedProcess[str]:
        code, doc, proc = self.fleet(*step.argv[1:])
        assert code == 0, (step.text, doc)
        if self.restored:  # the secrets are back: it changes nothing
            assert _tree(self.lab.paths.secrets) == self.restored["secrets"], \
                _differ({"s": self.restored["secrets"]}, {"s": _tree(self.lab.paths.secrets)})
            self.seen.add("secrets unchanged")
        else:
            self.seen.add("secrets made")
            # the copy of the backup ssh key the runbook keeps with the operator's restic
            # key (a fresh head has no secrets store: the restore reaches the backup with it)
            shutil.copy2(self.lab.paths.secrets / "backup" / "ssh_ed25519", self.ssh_key)
        return proc

    def check_backup(self, step: runbook.Step) -> subprocess.CompletedProcess[str]:
        action = step.argv[2:]
        if not action:
            self.before = self.trees()
        code, doc, proc = self.fleet(*step.argv[1:])
        assert code == 0, (step.text, doc)
        if not action:
            assert doc["verified"] is True, doc
            self.seen.add("backed up")
            self.check_login()
        elif action == ["list"]:
            assert len(doc["snapshots"]) == 1, doc
            self.seen.add("listed")
        else:
            assert action == ["check"] and doc["ok"] is True, doc
            self.seen.add("checked")
        return proc

    def check_status(self, step: runbook.Step) -> subprocess.CompletedProcess[str]:
        if not self.restored:  # the last good backup, in the human report
            code, _, proc = self.fleet(*step.argv[1:], json_out=False)
            assert code in (0, 5), (step.text, code, proc.stderr[-3000:])
            (line,) = [x for x in proc.stdout.splitlines() if x.startswith("master backup:")]
            assert line.startswith("master backup: last good ") and ", verified" in line, line
            self.seen.add("status: last backup")
            return proc
        code, doc, proc = self.fleet(*step.argv[1:])
        assert code in (0, 5), (step.text, code, proc.stderr[-3000:])
        (row,) = [r for r in doc["nodes"] if r["node"] == NODE]
        unfinished = row["work"]["unfinished"] or ""
        assert f"reinstall {self.run_id} unfinished at preflight" in unfinished, row["work"]
        self.seen.add("status: journal")
        return proc

    def check_restore(self, step: runbook.Step) -> subprocess.CompletedProcess[str]:
        # the site's destination is sftp: the runbook names the head's copy of the ssh key
        args = step.argv[1:]
        assert "--ssh-key" in args, step.text
        assert args[args.index("--ssh-key") + 1] == RUNBOOK_PLACES["backup-ssh.key"], step.text
        assert "ssh key back" in self.seen, step.text  # the key step put it there
        code, doc, proc = self.fleet(*[str(self.head_ssh_key)
                                       if a == RUNBOOK_PLACES["backup-ssh.key"] else a
                                       for a in args])
        assert code == 0 and doc["finger_holds"] is True, doc
        assert "salt-minion-pki" in doc["items"], doc
        assert _tree(self.head_pki) == self.head_key
        self.restored = self.trees()
        assert self.restored == self.before, _differ(self.before, self.restored)
        # the fresh master's own key is kept aside, not deleted
        assert [p.name.split("-", 2)[:2] for p in self.pki.parent.glob(
            "pki.before-restore-*")] == [["pki.before", "restore"]]
        self.seen.add("restored")
        return proc

    def check_keys(self, step: runbook.Step) -> subprocess.CompletedProcess[str]:
        code, doc, proc = self.fleet(*step.argv[1:])
        assert code == 0, (step.text, doc)
        if step.argv[2:] == ["finger", "--check"]:
            assert doc["finger"] == doc["recorded"], doc
            self.seen.add("finger holds")
        else:
            assert step.argv[2:] == ["check"], step.text
            self.seen.add("no key missing")
        return proc

    def reinstall(self, step: runbook.Step) -> subprocess.CompletedProcess[str]:
        node, mode = step.argv[2:]
        assert node == "NODE", step.text  # the node fleet status names: NODE here
        if mode == "--resume":
            poll("every Slurm node idle on the new head-01", lambda: _slurm_idle(self.lab),
                 timeout=300)
            rc, report = self.rig.run(NODE, "--resume", "--timeout", "60",
                                      bmc_port=free_port(), timeout=300)
            assert rc == 5 and report["mode"] == "resume" and report["run"] == self.run_id, \
                (rc, report, self.rig.stderr(NODE))
            assert [s["step"] for s in report["steps"]] == ["preflight"], report
            self.seen.add("resumed")
            return subprocess.CompletedProcess(step.argv, rc, "", "")
        assert mode == "--abort", step.text
        rc, report = self.rig.run(NODE, "--abort", bmc_port=free_port(), timeout=300)
        assert rc == 0 and report["outcome"] == "aborted" and report["run"] == self.run_id, \
            (rc, report, self.rig.stderr(NODE))
        left = report["left"]
        assert left["boot_mode"] == "local" and left["token"] == "none outstanding", report
        assert left["key"] == "accepted" and left["slurm"].startswith("idle"), report
        end = self.rig.journal(NODE)[-1]
        assert (end["event"], end["outcome"], end["run"]) == ("finish", "aborted",
                                                              self.run_id), end
        self.seen.add("aborted")
        return subprocess.CompletedProcess(step.argv, rc, "", "")

    # --- the disk dies --------------------------------------------------------------------
    def lose_the_head(self) -> None:
        """The master's and head-01's disk dies; head-01 is installed again, its master
        started once (a new key)."""
        paths = self.lab.paths
        lab_master.stop(paths)
        image = pm.inspect(paths, self.lab.plan.node(HEAD).container)["ImageName"]
        lab_nodes.remove(paths, [self.lab.plan.node(HEAD).container])
        for gone in (self.pki, paths.secrets, self.rig.state, paths.head_pki):
            shutil.rmtree(gone)
        shutil.rmtree(self.tmp / "state", ignore_errors=True)  # the other state roots
        fresh_head(self.lab, image)
        (self.pki / "minions").mkdir(parents=True)
        lab_master.start(paths, self.lab.plan)
        assert (self.pki / "master.pub").read_bytes() != \
            self.before["pki"][str(self.pki / "master.pub")][3]


def test_the_master_comes_back_from_its_backup(lab: Lab, tmp_path: Path) -> None:
    rig = interrupted_reinstall(lab, tmp_path / "reinstall")
    r = Restorer(lab, tmp_path, rig)
    setup, restore = runbook.BACKUP_SECTIONS
    try:
        for name in (setup, restore):
            if name == restore:
                t0 = time.monotonic()
                r.lose_the_head()
                print(f"[restore] head-01 lost and installed again: "
                      f"{time.monotonic() - t0:.1f}s")
            for step in runbook.steps(name):
                why = runbook.unrunnable(step, runbook.MASTER_PROGRAMS, runbook.MASTER_VERBS)
                assert why is None, why
                t0 = time.monotonic()
                proc = r.step(name, step)
                out = proc.stdout + proc.stderr
                for line in step.shown:  # the output the runbook shows is the output
                    assert " ".join(line.split()) in " ".join(out.split()), \
                        (step.text, line, out)
                print(f"[restore] {step.text}: ok, {time.monotonic() - t0:.1f}s")
    finally:
        if lab_master.pid(lab.paths) is None:  # a step failed with the master stopped
            lab_master.start(lab.paths, lab.plan)
        if _rendered(lab.paths.render) != r.lab_render:  # a step failed before the put-back
            r.put_back_render()
        r.put_back_target()
    assert sorted(OUTCOMES - r.seen) == [], "the runbook's steps never showed these"


def interrupted_reinstall(lab: Lab, work: Path) -> Rig:
    """A reinstall of NODE left unfinished by the real flow: its preflight fails (the
    address given for its BMC, a FAKE one's, has nobody listening), which leaves the run
    failed at preflight: unfinished until resumed or aborted. The Rig (reinstall_rig.py)
    runs the CLI against the lab; no BMC of it is started."""
    rig = Rig(lab, work, {})
    bmc = lab.plan.inventory.nodes[NODE].profile.bmc
    secret = work / "secrets" / "bmc" / bmc.password_secret
    secret.parent.mkdir(parents=True, mode=0o700)
    secret.write_text("lab-bmc-password\n")
    secret.chmod(0o600)
    rc, report = rig.run(NODE, "--timeout", "60", bmc_port=free_port(), timeout=300)
    assert rc == 5 and report["outcome"] == "failed", (rc, report, rig.stderr(NODE))
    assert report["message"].startswith("preflight failed"), report
    assert report["left"]["boot_mode"].startswith("local"), report
    finish = rig.journal(NODE)[-1]
    assert finish["event"] == "finish" and finish["outcome"] == "failed", finish
    return rig


def fresh_head(lab: Lab, image: str) -> None:
    """head-01 as a fresh install leaves it: its container created again from its image
    (fleet.lab.nodes, without the key the lab seeds), its minion config in place (as the
    install writes it), no minion key: its salt-minion makes a new one at start."""
    node = lab.plan.node(HEAD)
    lab_nodes.create(lab.paths, lab.plan, node, image, identity=False)
    conf = lab.paths.head_pki.parent / "head-fleet.conf"
    inv = lab.plan.inventory
    conf.write_text(bootstrap.minion_conf(inv, inv.nodes[HEAD]))
    pm.podman(lab.paths, "cp", str(conf), f"{node.container}:/etc/salt/minion.d/fleet.conf")
    conf.unlink()
    pm.podman(lab.paths, "start", node.container)
    poll(f"a new minion key on {HEAD}",
         lambda: (lab.paths.head_pki / "minion" / "minion.pub").exists(), timeout=180)
    headtools.install(lab.paths, node)  # fleet on the head (`fleet-lab pxe`), as make deps


def _slurm_idle(lab: Lab) -> bool:
    res = podman_exec(lab, HEAD, "sinfo", "-h", "-N", "-o", "%N %T")
    states = {line.split()[1] for line in res.stdout.splitlines()
              if len(line.split()) == 2}
    return res.returncode == 0 and bool(states) and states <= {"idle"}


def _differ(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]
            ) -> list[str]:
    """The paths whose mode, owner or content differ (or that are only on one side)."""
    return sorted(p for item in before for p in set(before[item]) | set(after[item])
                  if before[item].get(p) != after[item].get(p))
