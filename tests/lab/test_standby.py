"""The standby master in the lab (issue 36, docs/salt.md, A standby master): a second real
salt-master on this host standing in for head-02, and lab minions in failover mode.

- head-02 is a real salt-master process (the lab master's configuration from
  fleet.lab.master, with its own config, pki, cache and run dirs under .lab/standby),
  listening on head-02's own provisioning address of the lab network (added to the
  lab's bridge on this host for the test, removed after), so the minions' master list
  is the rendered one, byte for byte.
- Its pki directory is filled by the site's key pull, the rendered
  fleet-standby-sync script itself (real rsync, real rrsync -ro as keysource authorizes
  it); only ssh is a stand-in (this host cannot ssh to itself as root): a FAKE ``ssh``
  that runs the command keysource forces for the sync key (``rrsync -ro PKI``) locally.
- The lab inventory with head-02 as standby (an overlay: head-02 added to the lab's
  nodes, ``site.salt.standby``, a 5 s alive interval) is rendered into
  .lab/standby/render: the standby serves that pillar, and FAILED_OVER's minions get
  that render's own minion.d/fleet.conf (pillar node:salt, what base.minion keeps), so an
  apply through the standby finds it unchanged.
- fleet decides where it runs by this host's name (fleet.inventory.masters): each fleet
  run here is in its own UTS namespace named head-01 or head-02.

The steps: the minions answer the active master only; the active master stopped, they
answer the standby with no key accepted again; on head-02, `fleet status` through the
standby names head-01 active and this host the standby, and sees the minions answer;
`fleet apply` refuses there (exit 6) until head-02 is promoted (the inventory's two
names swapped), then applies one node through the standby; head-01's master back, the
minions stay with the standby (no failback) and do not answer head-01, and `fleet apply`
on head-01, now the standby, refuses: no node is driven by both.

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
from dataclasses import dataclass
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


def _overlays(lab: Lab, tmp: Path) -> tuple[Path, Path]:
    """The standby overlay (the lab's nodes plus head-02, a standby) and the
    promotion on top of it (the two names swapped, as docs/operations.md says)."""
    standby = tmp / "standby.yaml"
    standby.write_text(yaml.safe_dump({
        "only_nodes": [*(n.hostname for n in lab.nodes), STANDBY],
        "site": {"salt": {"standby": {"host": STANDBY, "alive_interval_s": ALIVE_S}}}}))
    promoted = tmp / "promoted.yaml"
    active = lab.plan.inventory.raw.site.salt.master
    promoted.write_text(yaml.safe_dump(
        {"site": {"salt": {"master": STANDBY, "standby": {"host": active}}}}))
    return standby, promoted


def _sync(lab: Lab, sb: Standby) -> str:
    """Fill the standby's pki dir with the rendered fleet-standby-sync script."""
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
    fake = sb.root / "fake-bin"
    fake.mkdir()
    # FAKE ssh: drop the options and the host; run what keysource's authorized_keys
    # line forces for the sync key, with the client's command as sshd passes it
    (fake / "ssh").write_text(
        "#!/bin/sh\n# FAKE ssh (tests/lab/test_standby.py): keysource's forced command, "
        "locally\nwhile [ $# -gt 0 ]; do case $1 in -i|-o|-l|-p) shift 2;; -*) shift;; "
        "*) shift; break;; esac; done\n"
        f"SSH_ORIGINAL_COMMAND=\"$*\" exec /usr/bin/rrsync -ro {lab.paths.master_root / 'pki'}\n")
    (fake / "ssh").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"}
    out = run([str(script)], env=env, timeout=120)
    return out.stdout.strip()


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
    overlay, promoted = _overlays(lab, root)
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


def test_the_minions_fail_over_and_one_master_drives_them(lab: Lab, standby: Standby
                                                          ) -> None:
    sb, paths = standby, lab.paths
    pulled = _sync(lab, sb)
    print(f"[standby] {pulled}")
    pki = sb.root / "pki"
    for name in ("master.pem", "master.pub"):
        assert (pki / name).read_bytes() == (paths.master_root / "pki" / name).read_bytes()
    assert oct((pki / "master.pem").stat().st_mode & 0o777) == "0o400"
    for node in FAILED_OVER:
        assert (pki / "minions" / node).is_file(), f"{node}'s key was not pulled"
    run([str(ROOT / ".venv" / "bin" / "salt-master"), "-c", str(sb.etc), "-d"], timeout=120)
    wait_for("the standby salt-master", lambda: sb.pid() is not None, timeout=120)

    t0 = time.monotonic()
    for node in FAILED_OVER:
        conf = _minion_conf(sb.root / "render", node)
        assert yaml.safe_load(conf)["master"] == [str(lab.plan.gateway), sb.address], conf
        _put_conf(lab, node, conf)
    for node in FAILED_OVER:
        poll(f"{node} to answer head-01", partial(_answers_lab, lab, node), timeout=300)
        assert not sb.salt(node, timeout=5), f"{node} answers both masters"
    print(f"[standby] failover config in place, minions on head-01: "
          f"{time.monotonic() - t0:.1f}s")

    t0 = time.monotonic()
    lab_master.stop(paths)
    for node in FAILED_OVER:
        poll(f"{node} to answer the standby", partial(sb.salt, node), timeout=FAILOVER_TIMEOUT)
    print(f"[standby] head-01 stopped: both answer head-02 after {time.monotonic() - t0:.1f}s")
    assert not list((pki / "minions_pre").glob("*")), "a key waits to be accepted again"

    rc, doc, err = _fleet(lab, sb, STANDBY, "status", ",".join(FAILED_OVER), "--live",
                          "--no-power", "--no-alerts",
                          *(f"--{kind}-state-dir={sb.root / kind}"
                            for kind in ("apply", "health", "reinstall", "rollout", "status")),
                          "--slurm-command",
                          f"{PODMAN} {lab.plan.node(CONTROLLER).container}",
                          "--pxe-command",
                          f"{PODMAN} -i {lab.plan.node(CONTROLLER).container} fleet-lab",
                          timeout=600)
    assert doc.get("master") == {"active": "head-01", "standby": STANDBY, "here": STANDBY,
                                 "role_here": "standby"}, (rc, err[-3000:])
    rows = {r["node"]: r for r in doc["nodes"]}
    for node in FAILED_OVER:
        assert (rows[node]["key"], rows[node]["minion"]) == ("accepted", "answers"), rows[node]

    state = sb.root / "apply-state"
    rc, doc, err = _fleet(lab, sb, STANDBY, "apply", APPLIED, "--state-dir", str(state))
    assert rc == 6, (rc, doc, err[-2000:])  # not promoted: the standby drives no node
    assert "standby Salt master" in err and not state.exists(), err[-2000:]

    t0 = time.monotonic()
    rc, doc, err = _fleet(lab, sb, STANDBY, "apply", APPLIED, "--state-dir", str(state),
                          promoted=True)
    assert rc == 0, (rc, doc, err[-3000:])
    (only,) = doc["nodes"]
    assert only["node"] == APPLIED and only["status"] in ("ok", "changed"), only
    print(f"[standby] promoted head-02 applied {APPLIED} ({only['status']}, "
          f"{only['states']} states) in {time.monotonic() - t0:.1f}s")

    lab_master.start(paths, lab.plan)
    # the minions' own check of their master, several times over: a failback would show
    deadline = time.monotonic() + 4 * ALIVE_S + 10
    while time.monotonic() < deadline:
        for node in FAILED_OVER:
            assert sb.salt(node), f"{node} left the standby once head-01 came back"
            assert not _answers_lab(lab, node), f"{node} answers head-01 too"
    rc, doc, err = _fleet(lab, sb, "head-01", "apply", APPLIED, "--state-dir",
                          str(sb.root / "apply-head-01"), promoted=True)
    assert rc == 6 and "head-02 is the active one" in err, (rc, err[-2000:])
