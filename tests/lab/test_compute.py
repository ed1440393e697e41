"""The compute layer in the lab: miniray's central Valkey on the head node (HSETEX from a
worker, refused from outside the cluster networks), the code sync's rsync module and its
prune timer, and the worker environment on two GPU containers.

Stand-ins, named: a worker's /code.nfs is a read-only bind mount of the export directory
(the lab's kernel has no NFS client; fleet/lab/nodes.py); "outside the cluster networks"
is this host speaking from an extra address (192.0.2.1, TEST-NET-1) that it puts on the
lab bridge for the test and removes after.
"""

from __future__ import annotations

import shlex
import socket
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from labtools import Lab, node_ids, sh

from fleet.lab import podman as pm
from fleet.lab.paths import NETWORK

WORKERS = node_ids("slurm.compute")[:2]
OUTSIDE = "192.0.2.1"  # TEST-NET-1: in no inventory network

RESP_CLIENT = r"""
import socket, sys
host, port, *words = sys.argv[1:]
s = socket.create_connection((host, int(port)), timeout=10)
s.sendall(f"*{len(words)}\r\n".encode() + b"".join(
    f"${len(w.encode())}\r\n{w}\r\n".encode() for w in words))
print(s.recv(65536).decode().strip())
"""


def compute(lab: Lab) -> Any:
    return lab.pillar("compute")["compute"]


def resp(lab: Lab, node: str, *words: str) -> str:
    """One RESP command from ``node`` to the central Valkey (a raw client: the workers
    have no valkey-cli)."""
    c = compute(lab)
    host = lab.pillar(f"nodes/{node}")["node"]["compute"]["redis_host"]
    r = sh(lab.host(node), "python3 -c " + shlex.quote(RESP_CLIENT) + " "
           + " ".join(shlex.quote(w) for w in (host, str(c["valkey"]["port"]), *words)))
    assert r.rc == 0, r.stderr
    return str(r.stdout.strip())


def test_a_worker_gets_hsetex_answered(lab: Lab) -> None:
    key = f"fleet-lab-{uuid.uuid4().hex}"
    assert "valkey_version:9." in resp(lab, WORKERS[0], "INFO", "server")
    assert resp(lab, WORKERS[0], "HSETEX", key, "EX", "30", "FIELDS", "1", "f", "v") == ":1"
    assert resp(lab, WORKERS[1], "HGET", key, "f") == "$1\r\nv"


@pytest.fixture
def outside(lab: Lab) -> Iterator[str]:
    bridge = pm.inspect(lab.paths, NETWORK)["network_interface"]
    subprocess.run(["ip", "addr", "add", f"{OUTSIDE}/32", "dev", bridge], check=True,
                   timeout=30)
    try:
        yield OUTSIDE
    finally:
        subprocess.run(["ip", "addr", "del", f"{OUTSIDE}/32", "dev", bridge], check=True,
                       timeout=30)


def _connect_from(source: str, host: str, port: int) -> str:
    with socket.socket() as s:
        s.settimeout(20)
        s.bind((source, 0))
        try:
            s.connect((host, port))
        except ConnectionRefusedError:
            return "refused"
        return "connected"


@pytest.mark.parametrize("service", ["valkey", "codesync"])
def test_refused_from_outside_the_cluster_networks(lab: Lab, outside: str,
                                                   service: str) -> None:
    c = compute(lab)[service]
    host = c["bind"][0] if isinstance(c["bind"], list) else c["bind"]
    gateway = str(lab.plan.gateway)  # this host on the lab network: inside
    assert _connect_from(gateway, host, c["port"]) == "connected"
    assert _connect_from(outside, host, c["port"]) == "refused"


def test_a_one_file_change_crosses_the_code_sync_as_one_file(lab: Lab) -> None:
    c = compute(lab)["codesync"]
    url = f"rsync://{c['bind']}:{c['port']}/code_nfs"
    job = f"lab-{uuid.uuid4().hex[:12]}"
    src = f"/tmp/{job}"
    w = lab.host(WORKERS[0])
    make = (f"mkdir -p {src}/pkg && for i in $(seq 1 200); do echo $i > {src}/pkg/f$i.py;"
            f" done && rsync -a --delete {src}/ {url}/xx/")
    assert sh(w, make, timeout=120).rc == 0
    assert sh(w, f"echo changed-{job} > {src}/pkg/f7.py").rc == 0
    # --mkpath: the job directory and its xx/ are both new
    r = sh(w, f"rsync -a --mkpath --stats --copy-dest=/xx {src}/ "
              f"{url}/branches/caches/{job}/xx/",
           timeout=120)
    assert r.rc == 0, r.stderr
    assert "Number of regular files transferred: 1\n" in r.stdout, r.stdout
    other = lab.host(WORKERS[1])  # another worker sees it through /code.nfs (stand-in)
    got = other.file(f"/code.nfs/branches/caches/{job}/xx/pkg/f7.py").content_string
    assert got == f"changed-{job}\n"
    assert other.file("/code.nfs/xx/pkg/f7.py").content_string == "7\n"
    assert other.file(f"/code.nfs/branches/caches/{job}/xx/pkg/f8.py").content_string == "8\n"


def test_the_prune_timer_removes_old_job_copies_only(lab: Lab) -> None:
    c = compute(lab)["codesync"]
    server = lab.host(c["host"])
    caches = f"{c['export']}/branches/caches"
    old, fresh = f"{caches}/old-{uuid.uuid4().hex[:8]}", f"{caches}/new-{uuid.uuid4().hex[:8]}"
    # as the rsync daemon leaves them: owned by its user, which the prune runs as
    assert sh(server, f"mkdir -p {old}/xx {fresh}/xx && chown -R codesync: {old} {fresh}"
                      f" && touch -d '{c['prune_days'] + 1} days ago' {old}").rc == 0
    assert server.service("codesync-prune.timer").is_enabled
    r = sh(server, "systemctl start codesync-prune.service", timeout=120)
    assert r.rc == 0, sh(server, "journalctl -u codesync-prune --no-pager -n 30; "
                                 f"ls -laR {caches} | head -40").stdout
    assert not server.file(old).exists
    assert server.file(fresh).is_directory
    sh(server, f"rm -rf {fresh}")


@pytest.mark.parametrize("node", WORKERS)
def test_the_worker_environment(lab: Lab, node: str) -> None:
    h = lab.host(node)
    c = compute(lab)["worker"]
    cpus = int(sh(h, "nproc").stdout)
    gids = set()
    for i in range(cpus):
        user = h.user(f"proc{i:03d}")
        assert user.exists and user.group == f"proc{i:03d}"
        gids.add(user.gid)
    assert len(gids) == cpus
    assert h.user(c["task_user"]).exists
    env = h.file("/etc/fleet/miniray/worker.env").content_string
    redis = lab.pillar(f"nodes/{node}")["node"]["compute"]["redis_host"]
    assert f"\nREDIS_HOST={redis}\n" in env and f"\nPIPELINE_QUEUE={c['queue']}\n" in env
    assert sh(h, "python3.12 -c 'import sys; assert sys.version_info >= (3, 12)'").rc == 0
    assert sh(h, "uv --version").stdout.startswith("uv 0.")
    r = sh(h, "logrotate -d /etc/logrotate.d/miniray-worker")
    assert r.rc == 0 and "miniray-worker" in r.stdout + r.stderr
