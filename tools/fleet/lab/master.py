"""The lab's Salt master: runs on this host (from .venv), listens on the lab network's
gateway, keeps config/pki/cache/logs under .lab/, serves salt/ and the lab render."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import yaml

from fleet.lab.paths import Paths
from fleet.lab.plan import Plan
from fleet.lab.run import LabError, live_pid, run, stop_daemon, wait_for

WRAPPED = ("salt", "salt-key", "salt-run", "salt-cp")


def config(paths: Paths, plan: Plan) -> dict[str, object]:
    m = paths.master_root
    return {
        "root_dir": str(m),
        "pki_dir": str(m / "pki"),
        "cachedir": str(m / "cache"),
        "sock_dir": str(m / "run"),
        "pidfile": str(m / "run" / "salt-master.pid"),
        "log_file": str(m / "log" / "master"),
        "key_logfile": str(m / "log" / "key"),
        "user": "root",
        "interface": str(plan.gateway),
        "file_roots": {"base": [str(paths.repo / "salt")]},
        # the lab render, the lab secrets store, then the lab-only role parameters
        "pillar_roots": {"base": [str(paths.render / "pillar"),
                                  str(paths.secrets / "pillar")],
                         "lab": [str(paths.lab_pillar), str(paths.lab / "pillar-gen")]},
        "state_top_saltenv": "base",
        "auto_accept": False,
        "open_mode": False,
        "file_recv": False,
        "gpg_decrypt_must_succeed": True,
        "hash_type": "sha256",
        "worker_threads": 3,
        "timeout": 30,
        # a minion busy installing packages on a 2-core host answers find_job slowly
        "gather_job_timeout": 30,
    }


def write_config(paths: Paths, plan: Plan) -> None:
    paths.salt_etc.mkdir(parents=True, exist_ok=True)
    text = "# Written by `fleet lab up`. Do not edit.\n" + yaml.safe_dump(
        config(paths, plan), sort_keys=False)
    conf = paths.salt_etc / "master"
    if not conf.exists() or conf.read_text() != text:
        conf.write_text(text)
    # the minion config of the host-side CLI tools (salt-call is never used here)
    for d in ("run", "log", "pki/minions", "cache"):
        (paths.master_root / d).mkdir(parents=True, exist_ok=True)
    paths.bin.mkdir(parents=True, exist_ok=True)
    for tool in WRAPPED:
        w = paths.bin / tool
        body = (f"#!/bin/sh\n# `{tool}` against the lab master (fleet lab)\n"
                f"exec {paths.venv_bin / tool} -c {paths.salt_etc} \"$@\"\n")
        if not w.exists() or w.read_text() != body:
            w.write_text(body)
            w.chmod(0o755)


def pid(paths: Paths) -> int | None:
    return live_pid(paths.master_root / "run" / "salt-master.pid")


def _listening(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((host, port)) == 0


def start(paths: Paths, plan: Plan) -> bool:
    """Start the master unless it runs; returns True if started."""
    if pid(paths) is not None:
        return False
    if _listening(str(plan.gateway), 4506):
        raise LabError(f"another salt-master already listens on {plan.gateway}:4506 (the "
                       "lab of another checkout?): stop it (`make lab-down` there) first")
    run([paths.venv_bin / "salt-master", "-c", paths.salt_etc, "-d"], timeout=120)
    wait_for("the lab salt-master on port 4506",
             lambda: _listening(str(plan.gateway), 4506), timeout=120)
    return True


def stop(paths: Paths) -> None:
    stop_daemon("the lab salt-master", lambda: pid(paths), timeout=60)


def rss_mb(paths: Paths) -> float:
    """Resident memory of the master and all its children, in MB."""
    p = pid(paths)
    if p is None:
        return 0.0
    out = run(["ps", "-e", "-o", "pid=,ppid=,rss="]).stdout.split()
    rows = [(int(out[i]), int(out[i + 1]), int(out[i + 2])) for i in range(0, len(out), 3)]
    tree, total, frontier = {p}, 0, [p]
    while frontier:
        parent = frontier.pop()
        for cp, pp, _ in rows:
            if pp == parent and cp not in tree:
                tree.add(cp)
                frontier.append(cp)
    for cp, _, rss in rows:
        if cp in tree:
            total += rss
    return total / 1024


def write_lab_pillar(paths: Paths, mkv_sha256: str) -> None:
    """The generated part of the lab pillar: the mkv artifact's checksum."""
    d = paths.lab / "pillar-gen"
    d.mkdir(parents=True, exist_ok=True)
    text = ("# Written by `fleet lab up`: the mkv binary put into the head node.\n"
            + yaml.safe_dump({"mkv": {"artifact": {"sha256": mkv_sha256}}}))
    f = d / "lab_mkv.sls"
    if not f.exists() or f.read_text() != text:
        f.write_text(text)


def key_path(paths: Paths) -> Path:
    return paths.master_root / "pki" / "master.pub"


def record_finger(paths: Paths) -> str:
    """The master's key pair made before anything is rendered (salt-master keeps a key it
    finds), and its fingerprint recorded as ``site.salt.master_finger`` in an overlay, as
    `fleet keys finger` prints it: every lab minion, installers' included, pins it."""
    import salt.crypt  # type: ignore[import-untyped]  # heavy; only here

    from fleet.master.keys import master_finger

    pki = key_path(paths).parent
    if not key_path(paths).is_file():
        pki.mkdir(parents=True, exist_ok=True, mode=0o700)
        private, public = salt.crypt.gen_keys(4096)  # what salt-master makes at first start
        pem = pki / "master.pem"
        fd = os.open(pem, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o400)
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(private)
        key_path(paths).write_text(public, encoding="ascii")
    finger = master_finger(pki)
    if finger is None:
        raise LabError(f"no master key in {pki} after salt-key --gen-keys")
    text = ("# Written by `fleet lab up`: the lab master's key, as `fleet keys finger` "
            "prints it.\n" + yaml.safe_dump({"site": {"salt": {"master_finger": finger}}}))
    f = paths.finger_overlay
    if not f.exists() or f.read_text() != text:
        f.write_text(text)
    return finger
