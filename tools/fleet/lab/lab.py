"""`fleet lab up|images|down|status|apply`: the steps, in order, each idempotent."""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import time
from dataclasses import dataclass, field

from fleet.lab import (
    artifacts,
    headtools,
    highstate,
    image,
    master,
    net,
    nodes,
    ntp,
    plan,
    preinstall,
    siterepo,
    ubuntu_image,
)
from fleet.lab import podman as pm
from fleet.lab.paths import IMAGE, Paths
from fleet.lab.plan import Plan
from fleet.lab.run import LabError, wait_for
from fleet.master.highstate import NodeResult

log = logging.getLogger("fleet.lab")

MKV_STUB = """#!/bin/sh
# fleet lab: NOT minikeyvalue. No MKV_BINARY was given when the lab came up, so the
# mkv-<array> units run this stand-in that serves nothing (tests/lab report it).
echo "fleet lab: stub mkv (set MKV_BINARY to a minikeyvalue binary): $*" >&2
# the verb is the last argument: a maintenance run (fleet mkv) ends, the server never does
for verb; do :; done
case "$verb" in rebuild|rebalance) echo "stub mkv ran: $*"; exit 0 ;; esac
exec sleep infinity
"""


@dataclass
class Timings:
    steps: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str, since: float) -> float:
        self.steps[name] = time.monotonic() - since
        log.info("%s: %.1fs", name, self.steps[name])
        return time.monotonic()


def mkv_artifact(paths: Paths) -> str:
    """Put MKV_BINARY (or the stub) where the head node's mkv.master expects it."""
    d = paths.lab / "artifacts"
    d.mkdir(parents=True, exist_ok=True)
    dst = d / "mkv"
    binary = os.environ.get("MKV_BINARY")
    if binary:
        shutil.copyfile(binary, dst)
    else:
        log.warning("MKV_BINARY is not set: the lab's mkv masters run a stub that serves "
                    "nothing")
        dst.write_text(MKV_STUB)
    dst.chmod(0o755)
    sha = hashlib.sha256(dst.read_bytes()).hexdigest()
    (d / "KIND").write_text("binary\n" if binary else "stub\n")
    return sha


def build_image(paths: Paths) -> image.ImageResult:
    """The minion image of the lab's OS (built once, cached by its inputs' hash)."""
    if paths.os == ubuntu_image.OS_NAME:
        return ubuntu_image.build(paths, ubuntu_image.work_dir(paths))
    return image.build(paths)


def node_images(paths: Paths, p: Plan, base: str) -> dict[str, str]:
    """hostname -> its image: ``base`` with the packages its states install
    (fleet.lab.preinstall), or ``base`` itself with FLEET_LAB_BARE=1 (every package
    then comes from the first highstate, as before; docs/lab.md). Either way the lab's
    site package repository is filled first (fleet.lab.siterepo): head-01 serves it."""
    sets = preinstall.node_sets(paths, p)
    siterepo.ensure(paths, p, {host: nset.facts for host, nset in sets.items()})
    if os.environ.get("FLEET_LAB_BARE") == "1":
        return {n.hostname: base for n in p.nodes}
    return preinstall.images(paths, p, base, sets)


def provisioning_hosts(p: Plan) -> list[str]:
    return [n.hostname for n in p.nodes if "provisioning" in n.roles]


def running_os(paths: Paths) -> str | None:
    """The OS of the lab that is up (what `fleet lab up` recorded), if any."""
    return paths.os_marker.read_text().strip() if paths.os_marker.exists() else None


def check_os(paths: Paths) -> None:
    """One lab at a time: a lab that is up keeps its OS until `make lab-down`."""
    have = running_os(paths)
    if have is None and nodes.all_lab_containers(paths):
        have = "debian-12"  # a lab brought up before LAB_OS existed
    if have is not None and have != paths.os:
        raise LabError(f"the lab that is up runs {have}, not LAB_OS={paths.os}: "
                       f"`make lab-down` first, or keep LAB_OS={have}")


def prepare(paths: Paths, t: Timings) -> tuple[Plan, dict[str, str]]:
    """What `up` needs before a container starts: the image, the render, the master's
    config and every node's image. No container, network or master runs yet, so this can
    run beside other work (`fleet lab images`, make test)."""
    t0 = time.monotonic()
    check_os(paths)
    log.info("lab OS: %s", paths.os)
    img = build_image(paths)
    paths.os_marker.parent.mkdir(parents=True, exist_ok=True)
    paths.os_marker.write_text(paths.os + "\n")
    t0 = t.mark("image " + ("built" if img.built else "cached"), t0)
    master.record_finger(paths)
    p = plan.load(paths)
    plan.render(paths, p)
    master.write_lab_pillar(paths, mkv_artifact(paths))
    artifacts.fetch(paths, p.inventory)
    master.write_config(paths, p)
    t0 = t.mark("render", t0)
    images = node_images(paths, p, img.tag)
    t.mark("images with the states' packages", t0)
    return p, images


def up(paths: Paths, *, apply: bool = True) -> tuple[Timings, list[NodeResult]]:
    t = Timings()
    start = time.monotonic()
    p, images = prepare(paths, t)
    t0 = time.monotonic()
    net.ensure(paths, p)
    # the bridge (and the gateway address the master binds) exists once a container
    # is attached; the minions retry until the master answers
    nodes.ensure(paths, p, images)
    t0 = t.mark("containers", t0)
    for head in p.nodes:
        if "provisioning" in head.roles:
            headtools.install(paths, head)
    t0 = t.mark("fleet on the head node", t0)
    master.start(paths, p)
    ntp.start(paths, p)  # the overlay's NTP server: the gateway, like the master
    t0 = t.mark("master", t0)
    highstate.ping(paths, [n.hostname for n in p.nodes])
    t0 = t.mark("minions answer", t0)
    t.steps["bring-up"] = time.monotonic() - start
    results: list[NodeResult] = []
    if apply:
        results, took = highstate.converge(paths, [n.hostname for n in p.nodes],
                                           first=provisioning_hosts(p))
        t.steps["highstate"] = took
        print(highstate.format_results(results, took), flush=True)
        t0 = time.monotonic()
        settle(paths, p)
        t.mark("minions answer again", t0)
    t.steps["total"] = time.monotonic() - start
    return t, results


# what `down` keeps unless asked (`down --all`, make lab-clean): the image and its
# inputs' cache are rebuilt only when their inputs change, so a second `make lab` after
# `make lab-down` starts from the cached image (docs/lab.md)
KEEP = ("wheelhouse", ".deps")


def settle(paths: Paths, p: Plan) -> None:
    """base.minion restarts a minion whose config changed, in the background after its
    run: wait for those restarts, then for every minion to answer, so that the next
    `salt '*' ...` reaches all of them."""
    def no_restart_pending() -> bool:
        return all(pm.exec_(paths, n.container, "pgrep", "-f", "systemctl restart salt-minion",
                            check=False, timeout=30).returncode != 0 for n in p.nodes)

    wait_for("pending salt-minion restarts", no_restart_pending, timeout=120, interval=2)
    highstate.ping(paths, [n.hostname for n in p.nodes])


def down(paths: Paths, *, everything: bool = False) -> None:
    """Remove the containers, the network, the master and the lab's state; the image and
    the wheelhouse too with ``everything``."""
    nodes.remove(paths, nodes.all_lab_containers(paths))
    master.stop(paths)
    ntp.stop(paths)
    net.remove(paths)
    if everything:
        for ref in (IMAGE, ubuntu_image.TAG, f"{IMAGE}-pkgs", f"{ubuntu_image.TAG}-pkgs"):
            out = pm.podman(paths, "images", "--format", "{{.Repository}}:{{.Tag}}",
                            "--filter", f"reference={ref}", check=False).stdout
            for tag in out.split():
                pm.podman(paths, "rmi", "-f", tag, check=False)
        for d in (paths.lab, ubuntu_image.work_dir(paths)):
            if d.exists():
                shutil.rmtree(d)
        return
    if paths.lab.exists():
        for entry in paths.lab.iterdir():
            if entry.name in KEEP:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()


def status(paths: Paths) -> str:
    pid = master.pid(paths)
    lines = [f"os: {running_os(paths) or '-'}",
             f"master: {f'running, pid {pid}' if pid else 'stopped'}"]
    npid = ntp.pid(paths)
    lines.append(f"ntp: {f'running, pid {npid}' if npid else 'stopped'}")
    for name, why in siterepo.stand_ins(paths).items():
        lines.append(f"stand-in: {name} ({why})")
    for name in nodes.all_lab_containers(paths):
        st = pm.inspect(paths, name)["State"]
        lines.append(f"{name}: {st.get('Status')}")
    return "\n".join(lines)


def apply_all(paths: Paths) -> list[NodeResult]:
    p = plan.load(paths)
    plan.render(paths, p)
    results, took = highstate.converge(paths, [n.hostname for n in p.nodes],
                                       first=provisioning_hosts(p))
    print(highstate.format_results(results, took), flush=True)
    settle(paths, p)
    if any(r.status.bad for r in results):
        raise LabError("highstate failed on " + ", ".join(r.node for r in results
                                                          if r.status.bad))
    return results
