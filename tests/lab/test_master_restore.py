"""The lab's head node lost and brought back by `fleet restore` (docs/operations.md,
Backup and restore), with the real restic and the real minions of the lab.

The lab's master runs on this host (fleet.lab.master): its keys under .lab/master/pki,
its secrets store .lab/secrets. head-01 is a container (dnsmasq, nginx, Slurm's
controller...) whose /etc/salt/pki, its own minion key, is a host directory
(.lab/head-pki, fleet.lab.paths): on a real head both sit on the one disk that dies.
Before the backup, a real `fleet reinstall` of a node is left interrupted: its preflight
fails (its BMC, a FAKE one's address with nobody there, does not answer), which leaves the
run unfinished in the journal, as the flow writes it.

The disk dies: the master is stopped and its keys, its secrets and fleet's state are
deleted; head-01's container and its volume (.lab/head-pki) are removed and head-01 is
created again from its image as a fresh install: its minion config in place, no key
(its salt-minion makes a new one, which the restored master would refuse). The
"freshly installed" master starts once and makes a new key of its own. Then:

- `fleet restore` refuses while that master runs (exit 6), and restores once it is
  stopped (exit 0, the restored key's fingerprint is the backup's); head-01's minion key
  is back too: its minion restarted, then the master;
- a highstate of head-01 converges it again;
- every minion answers test.ping, head-01's included, with no key accepted again (the
  accepted keys are the same files, none pending or denied);
- `fleet keys finger --check` holds (the minions' pinned master_finger);
- the secrets store and the journal are identical, modes and owners included;
- the interrupted reinstall is the restored master's to end: `fleet reinstall --resume`
  continues the same run (at preflight, which fails again: the BMC still does not
  answer), and `--abort` ends it, the node left as reported (boot mode local, its key
  accepted, Slurm not drained)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from labtools import ROOT, Lab, podman_exec, poll
from reinstall_rig import Rig

from fleet.lab import headtools, highstate
from fleet.lab import lab as lab_mod
from fleet.lab import master as lab_master
from fleet.lab import nodes as lab_nodes
from fleet.lab import podman as pm
from fleet.master.highstate import Status
from fleet.render import bootstrap
from support.bmcfakes import free_port

NODE = "tbox-001"  # its reinstall is left interrupted before the backup
HEAD = "head-01"


def _tree(root: Path) -> dict[str, tuple[int, int, int, bytes]]:
    out = {}
    for p in sorted([root, *root.rglob("*")]):
        st = p.lstat()
        body = p.read_bytes() if p.is_file() and not p.is_symlink() else b""
        out[str(p)] = (st.st_mode, st.st_uid, st.st_gid, body)
    return out


def _keys(lab: Lab) -> dict[str, Any]:
    out = subprocess.run([str(lab.paths.bin / "salt-key"), "-L", "--out=json"],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    keys: dict[str, Any] = json.loads(out)
    return keys


class Backup:
    def __init__(self, lab: Lab, tmp: Path, reinstall_state: Path) -> None:
        self.lab, self.tmp = lab, tmp
        self.key = tmp / "operator" / "backup.key"
        self.key.parent.mkdir()
        self.key.write_text("the lab operator's passphrase\n")
        self.key.chmod(0o600)
        self.overlay = tmp / "backup-overlay.yaml"
        self.overlay.write_text(yaml.safe_dump({"site": {"backup": {"destination": {
            "type": "path", "path": str(tmp / "repo")}}}}))
        (tmp / "pxe-state").mkdir()
        self.env = {**os.environ, "PYTHONPATH": str(ROOT / "tools"),
                    "FLEET_REINSTALL_STATE": str(reinstall_state),
                    **{env: str(tmp / sub) for env, sub in (
                        ("FLEET_ROLLOUT_STATE", "state/rollout"),
                        ("FLEET_HEALTH_STATE", "state/health"),
                        ("FLEET_APPLY_STATE", "state/apply"),
                        ("FLEET_BACKUP_STATE", "state/backup"),
                        ("FLEET_ALERTMANAGER_STATE", "am"),
                        ("FLEET_AUDIT_LOG", "log/audit.jsonl"))}}

    def fleet(self, verb: str, *args: str) -> tuple[int, dict[str, Any]]:
        argv = [sys.executable, "-m", "fleet", verb, *args, "--json",
                "-i", str(ROOT / "inventory.yaml"), *self.lab.paths.overlay_args()]
        if verb in ("backup", "restore"):
            argv += ["--overlay", str(self.overlay), "--password-file", str(self.key),
                     "--secrets", str(self.lab.paths.secrets),
                     "--pxe-state", str(self.tmp / "pxe-state"),
                     "--pki-dir", str(self.lab.paths.master_root / "pki"),
                     "--minion-pki-dir", str(self.lab.paths.head_pki / "minion")]
        argv += ["--salt-config", str(self.lab.paths.salt_etc)]
        proc = subprocess.run(argv, cwd=ROOT, env=self.env, capture_output=True, text=True,
                              timeout=900, check=False)
        assert proc.stdout.strip().startswith("{"), (proc.returncode, proc.stderr[-3000:])
        return proc.returncode, json.loads(proc.stdout)


def test_the_master_comes_back_from_its_backup(lab: Lab, tmp_path: Path) -> None:
    paths = lab.paths
    pki = paths.master_root / "pki"
    minions = [n.hostname for n in lab.nodes]
    rig = interrupted_reinstall(lab, tmp_path / "reinstall")
    b = Backup(lab, tmp_path, rig.state)
    run_id = rig.journal(NODE)[0]["run"]
    keys_before = _keys(lab)
    assert sorted(keys_before["minions"]) == sorted(minions)
    before = {"pki": _tree(pki), "secrets": _tree(paths.secrets),
              "state": _tree(rig.state)}
    head_key = _tree(paths.head_pki / "minion")
    assert str(paths.head_pki / "minion" / "minion.pem") in head_key

    code, doc = b.fleet("backup")
    assert code == 0, doc
    # the disk dies: the master's and head-01's; the head node is installed again
    lab_master.stop(paths)
    image = pm.inspect(paths, lab.plan.node(HEAD).container)["ImageName"]
    lab_nodes.remove(paths, [lab.plan.node(HEAD).container])
    for gone in (pki, paths.secrets, rig.state, paths.head_pki):
        shutil.rmtree(gone)
    shutil.rmtree(tmp_path / "state", ignore_errors=True)  # the other state roots, if made
    fresh_head(lab, image)
    (pki / "minions").mkdir(parents=True)
    try:
        lab_master.start(paths, lab.plan)
        assert (pki / "master.pub").read_bytes() != before["pki"][str(pki / "master.pub")][3]
        code, doc = b.fleet("restore")
        assert code == 6, doc  # a running master of this config: refused
    finally:
        lab_master.stop(paths)
    code, doc = b.fleet("restore")
    assert code == 0 and doc["finger_holds"] is True, doc
    assert "salt-minion-pki" in doc["items"], doc
    assert _tree(paths.head_pki / "minion") == head_key
    after = {"pki": _tree(pki), "secrets": _tree(paths.secrets),
             "state": _tree(rig.state)}
    assert after == before, _differ(before, after)
    # head-01's minion loads its restored key before the master is back: with the fresh
    # key it would meet the restored master, which denies a changed key: stopped (gone when
    # systemctl returns), then started
    head = lab.plan.node(HEAD).container
    pm.exec_(paths, head, "systemctl", "stop", "salt-minion", timeout=120)
    pm.exec_(paths, head, "systemctl", "start", "--no-block", "salt-minion")
    lab_master.start(paths, lab.plan)
    highstate.ping(paths, [HEAD], timeout=300)
    results, took = highstate.apply(paths, [HEAD])
    assert [(r.node, r.status) for r in results] == [(HEAD, Status.CHANGED)], \
        highstate.format_results(results, took)
    lab_mod.settle(paths, lab.plan)  # base.minion's restart of a changed minion config

    # the fresh master's own key is kept aside, not deleted
    assert [p.name.split("-", 2)[:2] for p in pki.parent.glob("pki.before-restore-*")] == \
        [["pki.before", "restore"]]
    highstate.ping(paths, minions, timeout=300)
    keys_after = _keys(lab)
    assert keys_after == keys_before  # every key accepted as before, none pending or denied
    code, doc = b.fleet("keys", "finger", "--check")
    assert code == 0 and doc["finger"] == doc["recorded"], doc

    # Slurm's controller on the new head-01 has every node back (the later tests and the
    # abort's report read it)
    poll("every Slurm node idle on the new head-01", lambda: _slurm_idle(lab), timeout=300)

    # the interrupted reinstall, resumed then aborted by the restored master
    rc, report = rig.run(NODE, "--resume", "--timeout", "60", bmc_port=free_port(),
                         timeout=300)
    assert rc == 5 and report["mode"] == "resume" and report["run"] == run_id, \
        (rc, report, rig.stderr(NODE))
    assert [s["step"] for s in report["steps"]] == ["preflight"], report
    rc, report = rig.run(NODE, "--abort", bmc_port=free_port(), timeout=300)
    assert rc == 0 and report["outcome"] == "aborted" and report["run"] == run_id, \
        (rc, report, rig.stderr(NODE))
    left = report["left"]
    assert left["boot_mode"] == "local" and left["token"] == "none outstanding", report
    assert left["key"] == "accepted" and left["slurm"].startswith("idle"), report
    end = rig.journal(NODE)[-1]
    assert (end["event"], end["outcome"], end["run"]) == ("finish", "aborted", run_id), end


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
