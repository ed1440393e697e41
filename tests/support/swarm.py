"""A minion swarm on one host: one real salt-master and one real salt-minion process per
node id, each minion with its own config, pki, cache and socket dirs and its own
pre-accepted key (as in Salt's own tests/minionswarm.py and its swarm scenario tests).

For ``make bench-fanout`` (benchmarks/bench_fanout.py) and tests/swarm. The master's
``master.d/fleet.conf`` and each minion's ``minion.d/fleet.conf`` are given as text (the
callers render them from the provisioning and base roles); this module adds only what a
swarm needs on one host: its own address and ports, its own directories, the user.

No systemd: the processes are children of the caller, in their own process group, and
:meth:`Swarm.stop` ends them by pid."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

APT_SHIM = """#!/bin/sh
# fleet swarm: the minions share this host; `apt-get update` is not theirs to run
for a in "$@"; do [ "$a" = update ] && exit 0; done
exec /usr/bin/apt-get "$@"
"""


def free_port_pair(host: str = "127.0.0.1") -> tuple[int, int]:
    """Two free TCP ports (publish, ret) on ``host``: several swarms (and the lab's
    master) can run side by side."""
    socks = []
    try:
        for _ in range(2):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
        return socks[0].getsockname()[1], socks[1].getsockname()[1]
    finally:
        for s in socks:
            s.close()


def gen_key_pair(keysize: int = 2048) -> tuple[bytes, bytes]:
    """An RSA key pair in the formats ``salt-key --gen-keys`` writes (PKCS#1 private,
    SubjectPublicKeyInfo public)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=keysize)
    priv = key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.TraditionalOpenSSL,
                             serialization.NoEncryption())
    pub = key.public_key().public_bytes(serialization.Encoding.PEM,
                                        serialization.PublicFormat.SubjectPublicKeyInfo)
    return priv, pub


@dataclass
class Swarm:
    root: Path                       # everything lives under here (keep the path short:
                                     # unix sockets are limited to 107 bytes)
    ids: list[str]
    master_conf: str                 # master.d/fleet.conf, as the provisioning role renders it
    minion_conf: Callable[[str], str]  # minion.d/fleet.conf for an id, as base renders it
    bin_dir: Path                    # where salt-master, salt-minion live (.venv/bin)
    key_store: Path | None = None    # reuse key pairs across runs (generating 500 takes a while)
    host: str = "127.0.0.1"
    ports: tuple[int, int] = field(default_factory=free_port_pair)
    # on one host the minions share the master's CPUs, which real nodes do not: a nice
    # value above 0 keeps the master's own work from queueing behind theirs
    minion_nice: int = 0
    # and/or pinned to these CPUs (taskset -c LIST, e.g. "1"), the rest left to the master
    minion_cpus: str | None = None
    # minion options a caller sets for the swarm's sake, on top of the role's file (a
    # benchmark states them: e.g. multiprocessing False, a job a thread and not a fork,
    # when a hundred minions share one CPU)
    minion_opts: dict[str, object] = field(default_factory=dict)
    master_proc: subprocess.Popen[bytes] | None = None
    minions: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    # --- layout -------------------------------------------------------------------------
    @property
    def master_dir(self) -> Path:
        return self.root / "master"

    def minion_dir(self, mid: str) -> Path:
        return self.root / "m" / mid

    @property
    def config_dir(self) -> Path:
        """``salt -c`` / ``fleet apply --salt-config`` for this swarm's master."""
        return self.master_dir / "etc"

    def write(self) -> None:
        """Master and minion configs, keys (pre-accepted on the master)."""
        user = _user()
        m = self.master_dir
        pub, ret = self.ports
        for sub in ("etc/master.d", "pki/minions", "cache", "run", "log"):
            (m / sub).mkdir(parents=True, exist_ok=True)
        _write(self.config_dir / "master", "# fleet swarm: this host's part\n" + yaml.safe_dump({
            "root_dir": str(m), "pki_dir": str(m / "pki"), "cachedir": str(m / "cache"),
            "sock_dir": str(m / "run"), "pidfile": str(m / "run" / "master.pid"),
            "log_file": str(m / "log" / "master"), "key_logfile": str(m / "log" / "key"),
            "log_level_logfile": "warning", "user": user}, sort_keys=False))
        # the role's file verbatim; then (read after it) only the address and ports
        _write(self.config_dir / "master.d" / "fleet.conf", self.master_conf)
        _write(self.config_dir / "master.d" / "zz-swarm.conf", yaml.safe_dump(
            {"interface": self.host, "publish_port": pub, "ret_port": ret}))
        # All minions share this host's package database: none may refresh it (the first
        # pkg state of a run does `apt-get update`, even under test=True), or they would
        # rewrite this host's lists and queue on its apt lock one after another.
        _write(self.root / "shim" / "apt-get", APT_SHIM, 0o755)
        store = self.key_store or self.root / "keys"
        store.mkdir(parents=True, exist_ok=True)
        for mid in self.ids:
            d = self.minion_dir(mid)
            for sub in ("etc/minion.d", "pki", "cache", "run"):
                (d / sub).mkdir(parents=True, exist_ok=True)
            _write(d / "etc" / "minion", "# fleet swarm: this host's part\n" + yaml.safe_dump({
                "root_dir": str(d), "pki_dir": str(d / "pki"), "cachedir": str(d / "cache"),
                "sock_dir": str(d / "run"), "pidfile": str(d / "run" / "minion.pid"),
                "log_file": str(d / "log"), "log_level_logfile": "warning", "user": user},
                sort_keys=False))
            # the base role's file verbatim; then the swarm master's address and ports
            _write(d / "etc" / "minion.d" / "fleet.conf", self.minion_conf(mid))
            _write(d / "etc" / "minion.d" / "zz-swarm.conf", yaml.safe_dump(
                {**self.minion_opts, "master": self.host, "master_port": ret,
                 "publish_port": pub}))
            priv_f, pub_f = store / f"{mid}.pem", store / f"{mid}.pub"
            if not (priv_f.exists() and pub_f.exists()):
                priv, pubk = gen_key_pair()
                _write(priv_f, priv.decode(), 0o600)
                _write(pub_f, pubk.decode())
            _write(d / "pki" / "minion.pem", priv_f.read_text(), 0o600)
            _write(d / "pki" / "minion.pub", pub_f.read_text())
            _write(m / "pki" / "minions" / mid, pub_f.read_text())

    # --- processes ----------------------------------------------------------------------
    def start_master(self, timeout: float = 120) -> None:
        with (self.master_dir / "log" / "stderr").open("ab") as err:
            self.master_proc = subprocess.Popen(
                [os.fspath(self.bin_dir / "salt-master"), "-c", os.fspath(self.config_dir),
                 "-l", "quiet"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=err, start_new_session=True)
        deadline = time.monotonic() + timeout
        ipc = self.master_dir / "run" / "publish_pull.ipc"
        while not (_listening(self.host, self.ports[1]) and ipc.exists()):
            if self.master_proc.poll() is not None:
                raise RuntimeError(f"salt-master exited {self.master_proc.returncode}; see "
                                   f"{self.master_dir / 'log'}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"salt-master not listening on {self.host}:"
                                   f"{self.ports[1]} after {timeout:g}s")
            time.sleep(0.1)
        self._wait_serving(deadline)

    def _wait_serving(self, deadline: float) -> None:
        """Listening is not serving: publish to no minion until a worker answers."""
        import salt.client  # type: ignore[import-untyped]
        import salt.config  # type: ignore[import-untyped]
        import salt.exceptions  # type: ignore[import-untyped]

        opts = salt.config.client_config(os.fspath(self.config_dir / "master"))
        client = salt.client.LocalClient(mopts=opts)
        try:
            while True:
                try:
                    client.run_job(["fleet-swarm-probe"], "test.ping", tgt_type="list",
                                   timeout=5)
                    return
                except salt.exceptions.SaltClientError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("salt-master listens but does not answer a "
                                           "publish") from None
                    time.sleep(0.5)
        finally:
            client.destroy()

    def stop_master(self, timeout: float = 60) -> None:
        if self.master_proc is not None:
            _terminate(self.master_proc, timeout)
            self.master_proc = None

    def start_minions(self, ids: Iterable[str] | None = None) -> None:
        """Start the minions (all of them by default) as fast as they can be spawned."""
        env = {**os.environ, "PATH": f"{self.root / 'shim'}:{os.environ.get('PATH', '')}"}
        for mid in list(ids or self.ids):
            d = self.minion_dir(mid)
            nice = ["nice", "-n", str(self.minion_nice)] if self.minion_nice else []
            if self.minion_cpus:
                nice = ["taskset", "-c", self.minion_cpus, *nice]
            self.minions[mid] = subprocess.Popen(
                [*nice, os.fspath(self.bin_dir / "salt-minion"), "-c", os.fspath(d / "etc"),
                 "--disable-keepalive", "-l", "quiet"], stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                env=env)

    def stop_minions(self, ids: Iterable[str] | None = None, timeout: float = 15) -> None:
        """SIGTERM, then SIGKILL after ``timeout`` (a minion whose master is gone may not
        finish its SIGTERM handling at all)."""
        chosen = list(ids or list(self.minions))
        procs = [self.minions.pop(m) for m in chosen if m in self.minions]
        for p in procs:
            _signal_group(p, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _signal_group(p, signal.SIGKILL)
                p.wait()

    def stop(self) -> None:
        self.stop_minions()
        self.stop_master()

    def __enter__(self) -> Swarm:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- measurement ------------------------------------------------------------------
    def master_pids(self) -> list[int]:
        return _tree(self.master_proc.pid) if self.master_proc else []

    def minion_pids(self, mid: str) -> list[int]:
        p = self.minions.get(mid)
        return _tree(p.pid) if p else []


def cpu_list(text: str) -> set[int]:
    """A CPU list as taskset -c takes it ("1", "0,2-3") as a set."""
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def pin(pid: int, cpus: str | None, nice: int = 0) -> None:
    """An already running process, every thread of it, pinned to ``cpus`` (taskset -c
    LIST) and niced by ``nice`` (what :class:`Swarm` does to its minions at their start,
    for another emulated machine part, e.g. a fake BMC)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        tid = int(task.name)
        with contextlib.suppress(ProcessLookupError):
            if cpus:
                os.sched_setaffinity(tid, cpu_list(cpus))
            if nice:
                os.setpriority(os.PRIO_PROCESS, tid, nice)


def rss_kb(pids: Iterable[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except (OSError, ValueError):
            continue
    return total


def cpu_ticks(pids: Iterable[int]) -> int:
    """utime + stime of the processes (and their reaped children), in clock ticks."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(f) for f in fields[11:15])
        except (OSError, ValueError, IndexError):
            continue
    return total


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _user() -> str:
    import pwd

    return pwd.getpwuid(os.getuid()).pw_name


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)


def _listening(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((host, port)) == 0


def _signal_group(p: subprocess.Popen[bytes], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(p.pid, sig)  # its own session: the group is the process and its forks


def _terminate(p: subprocess.Popen[bytes], timeout: float) -> None:
    _signal_group(p, signal.SIGTERM)
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        _signal_group(p, signal.SIGKILL)
        p.wait()
