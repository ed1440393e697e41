"""The code sync export's file system and per-job copies (compute.codesync.fs, device,
job_copy) as codesync.server renders them from the small inventory with
tests/fixtures/compute.yaml: the fs check, the blank-device guard before mkfs (run for real
against loop devices), the lab's stand-in, and the rsync options the daemon refuses (run
for real against the rendered rsyncd.conf)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet import saltrender
from support import harness
from support.compute_fixture import render_ready_pillar

NODE = "stor-1"  # the code sync host of the fixture
DEVICE = "/dev/disk/by-id/nvme-code-export"


@pytest.fixture(scope="module")
def pillar_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return render_ready_pillar(tmp_path_factory.mktemp("codesync"))


def _render(base: Path, tmp: Path, sync: dict[str, Any], lab: bool = False,
            ok: bool = True) -> saltrender.Rendered:
    """``NODE`` rendered with ``sync`` merged into pillar compute:codesync (and, with
    ``lab``, lab/pillar/lab.sls: fleet:container true); ``ok``: without errors."""
    shutil.copytree(base / "pillar", tmp / "pillar")
    path = tmp / "pillar" / "compute.sls"
    data = yaml.safe_load(path.read_text())
    data["compute"]["codesync"].update(sync)
    path.write_text(yaml.safe_dump(data))
    if lab:
        (tmp / "pillar" / "lab.sls").write_text(
            (harness.ROOT / "lab" / "pillar" / "lab.sls").read_text())
        top = yaml.safe_load((tmp / "pillar" / "top.sls").read_text())
        top["base"][NODE].append("lab")
        (tmp / "pillar" / "top.sls").write_text(yaml.safe_dump(top))
    res = saltrender.Renderer(harness.ROOT / "salt", tmp / "pillar", base / "secrets",
                              tmp / "cache").render(NODE)
    assert not ok or not res.errors, res.errors
    return res


def _ids(res: saltrender.Rendered) -> dict[str, dict[str, Any]]:
    return {c["__id__"]: c for c in res.lowstate}


def _refused(res: saltrender.Rendered) -> list[str]:
    conf = res.files["codesync-server-file-managed-conf"]
    (line,) = [ln.strip() for ln in conf.splitlines() if "refuse options" in ln]
    return line.split(" = ", 1)[1].split()


def test_full_copies_refuse_in_place_writes_and_link_dest(pillar_dir: Path,
                                                          tmp_path: Path) -> None:
    """The fixture's defaults (fs null, job_copy full): no fs check, no disk touched."""
    res = _render(pillar_dir, tmp_path, {})
    assert _refused(res) == ["inplace", "append", "append-verify", "link-dest"]
    ids = _ids(res)
    for sid in ("codesync-server-cmd-run-export-fs", "codesync-server-cmd-run-mkfs-export",
                "codesync-server-mount-mounted-export",
                "codesync-server-test-show-notification-fs-standin"):
        assert sid not in ids, sid


def test_hardlink_copies_on_xfs_are_checked_on_every_apply(pillar_dir: Path,
                                                           tmp_path: Path) -> None:
    res = _render(pillar_dir, tmp_path, {"fs": "xfs", "job_copy": "hardlink"})
    assert _refused(res) == ["inplace", "append", "append-verify"]
    ids = _ids(res)
    check = ids["codesync-server-cmd-run-export-fs"]
    assert check["unless"] == \
        'test "$(/usr/bin/findmnt -n -o FSTYPE --target /srv/code)" = xfs'
    assert "exit 1" in check["name"] and "compute.codesync.fs is xfs" in check["name"]
    # the daemon takes no push before the check passed
    rsyncd = ids["codesync-server-service-running-rsyncd"]
    assert {"cmd": "codesync-server-cmd-run-export-fs"} in rsyncd["require"]
    assert "codesync-server-cmd-run-mkfs-export" not in ids  # no device named
    assert "xfsprogs" not in ids["codesync-server-pkg-installed"]["pkgs"]


def test_a_named_device_is_formatted_only_while_blank_then_mounted(pillar_dir: Path,
                                                                   tmp_path: Path) -> None:
    res = _render(pillar_dir, tmp_path,
                  {"fs": "xfs", "job_copy": "hardlink", "device": DEVICE})
    ids = _ids(res)
    mkfs = ids["codesync-server-cmd-run-mkfs-export"]
    assert mkfs["name"] == f"/usr/sbin/mkfs.xfs {DEVICE}"  # never -f
    assert mkfs["onlyif"] == (f"test -b {DEVICE} && {{ /usr/sbin/blkid -p {DEVICE} "
                              ">/dev/null; test $? -eq 2; }")
    mount = ids["codesync-server-mount-mounted-export"]
    assert (mount["name"], mount["device"], mount["fstype"], mount["persist"]) == \
        ("/srv/code", DEVICE, "xfs", True)
    assert {"cmd": "codesync-server-cmd-run-mkfs-export"} in mount["require"]
    dirs = [sid for sid in ids if sid.startswith("codesync-server-file-directory-export")]
    assert len(dirs) == 4
    for sid in dirs:  # nothing is created under the mount point before the mount
        assert {"mount": "codesync-server-mount-mounted-export"} in ids[sid]["require"], sid
    assert "xfsprogs" in ids["codesync-server-pkg-installed"]["pkgs"]


def test_in_the_lab_the_fs_and_device_are_a_named_stand_in(pillar_dir: Path,
                                                           tmp_path: Path) -> None:
    res = _render(pillar_dir, tmp_path,
                  {"fs": "xfs", "job_copy": "hardlink", "device": DEVICE}, lab=True)
    ids = _ids(res)
    for sid in ("codesync-server-cmd-run-export-fs", "codesync-server-cmd-run-mkfs-export",
                "codesync-server-mount-mounted-export"):
        assert sid not in ids, sid
    note = ids["codesync-server-test-show-notification-fs-standin"]["text"]
    assert "stand-in" in note and "xfs" in note and DEVICE in note


# --- the blank-device guard, run for real ------------------------------------------------

def _loop(tmp_path: Path, name: str, mkfs: list[str] | None) -> Iterator[str]:
    image = tmp_path / f"{name}.img"
    subprocess.run(["truncate", "-s", "64M", str(image)], check=True)
    if mkfs is not None:
        subprocess.run([*mkfs, str(image)], check=True, capture_output=True)
    dev = subprocess.run(["losetup", "-f", "--show", str(image)], check=True,
                         capture_output=True, text=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


@pytest.fixture
def loops(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Loop devices: one blank, one with an ext4, one with a DOS partition table."""
    if os.geteuid() != 0 or shutil.which("losetup") is None or not Path(
            "/dev/loop-control").exists():
        pytest.skip("NOT RUN: the blank-device guard needs root and loop devices "
                    "(losetup, /dev/loop-control) to run against real devices")
    gens = {"blank": _loop(tmp_path, "blank", None),
            "ext4": _loop(tmp_path, "ext4", ["mkfs.ext4", "-q", "-F"]),
            "table": _loop(tmp_path, "table", None)}
    devs = {k: next(g) for k, g in gens.items()}
    subprocess.run(["sfdisk", "-q", devs["table"]], input="label: dos\n,32M\n", text=True,
                   check=True, capture_output=True)
    try:
        yield devs
    finally:
        for g in gens.values():
            next(g, None)


def test_the_guard_lets_mkfs_run_on_a_blank_device_only(pillar_dir: Path, tmp_path: Path,
                                                        loops: dict[str, str]) -> None:
    """The rendered onlyif, run by sh as Salt runs it, with the device of each loop
    substituted: true for the blank device only; false for a file system, a partition
    table and a path that is no block device."""
    res = _render(pillar_dir, tmp_path, {"fs": "xfs", "device": DEVICE})
    guard = _ids(res)["codesync-server-cmd-run-mkfs-export"]["onlyif"]
    verdict = {}
    for what, dev in {**loops, "missing": str(tmp_path / "no-such-device")}.items():
        rc = subprocess.run(["sh", "-c", guard.replace(DEVICE, dev)],
                            capture_output=True, check=False).returncode
        verdict[what] = rc == 0
    assert verdict == {"blank": True, "ext4": False, "table": False, "missing": False}


# --- the daemon's refused options, run for real ------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _daemon(rsync_bin: str, conf: str, local: dict[str, str], tmp_path: Path,
            indent: str = "") -> tuple[subprocess.Popen[bytes], str]:
    """The rendered rsyncd.conf with ``local``'s keys replaced, run as a daemon on loopback;
    the daemon and its code_nfs URL, once it answers."""
    lines = []
    for ln in conf.splitlines():
        key = ln.strip().split(" = ", 1)[0]
        lines.append(f"{indent}{key} = {local[key]}" if key in local else ln)
    (tmp_path / "rsyncd.conf").write_text("\n".join(lines) + "\n")
    daemon = subprocess.Popen([rsync_bin, "--daemon", "--no-detach",
                               f"--config={tmp_path / 'rsyncd.conf'}"])
    url = f"rsync://127.0.0.1:{local['port']}/code_nfs"
    for _ in range(100):
        if subprocess.run([rsync_bin, f"{url}/"], capture_output=True,
                          check=False).returncode == 0:
            break
        time.sleep(0.05)
    return daemon, url


@pytest.fixture
def rsync_bin() -> str:
    found = shutil.which("rsync")
    if found is None:
        pytest.skip("NOT RUN: no rsync on this host (apt-get install rsync) to run the "
                    "rendered rsyncd.conf")
    return found


@pytest.mark.parametrize("job_copy", ["full", "hardlink"])
def test_the_rendered_daemon_refuses_what_it_says(pillar_dir: Path, tmp_path: Path,
                                                  rsync_bin: str, job_copy: str) -> None:
    """The rendered rsyncd.conf under the real rsync daemon (its address, port, paths and
    uid made local): --inplace and --append refused; --copy-dest taken; --link-dest taken
    with job_copy hardlink, and then unchanged files are hard links to xx/'s."""
    res = _render(pillar_dir, tmp_path,
                  {"fs": "xfs", "job_copy": job_copy} if job_copy == "hardlink" else {})
    export, src = tmp_path / "export", tmp_path / "src"
    (export / "xx").mkdir(parents=True)
    src.mkdir()
    for name in ("a.py", "b.py"):
        (src / name).write_text(f"{name}\n")
    subprocess.run([rsync_bin, "-a", f"{src}/", f"{export}/xx/"], check=True)
    (src / "b.py").write_text("changed\n")
    port = _free_port()
    local = {"port": str(port), "address": "127.0.0.1", "path": str(export),
             "uid": "root", "gid": "root", "pid file": str(tmp_path / "pid"),
             "use chroot": "no", "hosts allow": "127.0.0.1"}
    daemon, url = _daemon(rsync_bin, res.files["codesync-server-file-managed-conf"], local,
                          tmp_path)
    try:

        def push(job: str, *opts: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([rsync_bin, "-a", "--mkpath", *opts, f"{src}/",
                                   f"{url}/branches/caches/{job}/xx/"],
                                  capture_output=True, text=True, check=False)

        for opt in ("--inplace", "--append", "--append-verify"):
            p = push("refused", opt)
            assert p.returncode == 4 and "refuse" in p.stderr, (opt, p.stderr)
        assert push("copy", "--copy-dest=/xx").returncode == 0
        copy = export / "branches/caches/copy/xx"
        assert (copy / "a.py").stat().st_nlink == 1
        link = push("link", "--link-dest=/xx")
        if job_copy == "full":
            assert link.returncode == 4 and "--link-dest" in link.stderr, link.stderr
        else:
            assert link.returncode == 0, link.stderr
            linked = export / "branches/caches/link/xx"
            assert (linked / "a.py").stat().st_ino == (export / "xx/a.py").stat().st_ino
            assert (linked / "b.py").read_text() == "changed\n"
            assert (linked / "b.py").stat().st_nlink == 1
            assert (export / "xx/b.py").read_text() == "b.py\n"
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)


@pytest.mark.parametrize("sync, says", [
    ({"fs": "xfs", "device": "/dev/disk/by-id/x; reboot"}, "is not a /dev/disk/by-*/ name"),
    ({"fs": "xfs", "device": "/dev/sda"}, "is not a /dev/disk/by-*/ name"),
    ({"fs": "zfs"}, "is not one of xfs, btrfs, ext4"),
])
def test_a_hostile_device_or_fs_fails_the_render(pillar_dir: Path, tmp_path: Path,
                                                 sync: dict[str, Any], says: str) -> None:
    """Past `fleet validate` (the pillar edited by hand), the state refuses to render."""
    res = _render(pillar_dir, tmp_path, sync, ok=False)
    assert any(says in e for e in res.errors), res.errors


# --- job_copy snapshot: the per-job copy is a btrfs snapshot of xx/ ----------------------

HOOK = "/usr/local/libexec/fleet/codesync-snapshot"


def test_snapshot_copies_make_xx_a_subvolume_and_hook_the_daemon(pillar_dir: Path,
                                                                  tmp_path: Path) -> None:
    res = _render(pillar_dir, tmp_path, {"fs": "btrfs", "job_copy": "snapshot"})
    assert _refused(res) == ["inplace", "append", "append-verify", "link-dest"]
    conf = res.files["codesync-server-file-managed-conf"]
    assert f"pre-xfer exec = {HOOK} codesync branches/caches" in conf
    ids = _ids(res)
    sub = ids["codesync-server-cmd-run-subvolume-xx"]
    assert sub["unless"] == "/usr/bin/btrfs subvolume show /srv/code/xx"
    assert "exit 1" in sub["name"] and "is not a btrfs subvolume" in sub["name"]
    assert {"cmd": "codesync-server-cmd-run-export-fs"} in sub["require"]
    assert {"cmd": "codesync-server-cmd-run-subvolume-xx"} in \
        ids["codesync-server-file-directory-export-xx"]["require"]
    hook = ids["codesync-server-file-managed-snapshot-hook"]
    assert (hook["name"], hook["mode"], hook["user"]) == (HOOK, "0755", "root")
    assert "btrfs-progs" in ids["codesync-server-pkg-installed"]["pkgs"]
    assert {"file": "codesync-server-file-managed-snapshot-hook"} in \
        ids["codesync-server-service-running-rsyncd"]["watch"]


def test_without_snapshot_copies_there_is_no_hook(pillar_dir: Path, tmp_path: Path) -> None:
    res = _render(pillar_dir, tmp_path, {"fs": "xfs", "job_copy": "hardlink"})
    assert "pre-xfer exec" not in res.files["codesync-server-file-managed-conf"]
    ids = _ids(res)
    assert "codesync-server-file-managed-snapshot-hook" not in ids
    assert "codesync-server-cmd-run-subvolume-xx" not in ids


def test_snapshot_copies_on_another_fs_fail_the_render(pillar_dir: Path,
                                                       tmp_path: Path) -> None:
    """Past `fleet validate` (the pillar edited by hand), the state refuses to render."""
    res = _render(pillar_dir, tmp_path, {"fs": "xfs", "job_copy": "snapshot"}, ok=False)
    assert any("snapshot needs fs btrfs" in e for e in res.errors), res.errors


@pytest.fixture
def btrfs_export(tmp_path: Path) -> Iterator[Path]:
    """A fresh btrfs of a sparse loop file, mounted (the export of job_copy snapshot)."""
    missing = [t for t in ("mkfs.btrfs", "btrfs", "losetup", "setpriv") if not shutil.which(t)]
    if os.geteuid() != 0 or missing or "btrfs" not in Path("/proc/filesystems").read_text():
        pytest.skip("NOT RUN: the snapshot hook needs root, a kernel with btrfs and "
                    f"btrfs-progs, util-linux (missing: {', '.join(missing) or 'none'})")
    image, mnt = tmp_path / "btrfs.img", tmp_path / "export"
    subprocess.run(["truncate", "-s", "256M", str(image)], check=True)
    subprocess.run(["mkfs.btrfs", "-q", str(image)], check=True, capture_output=True)
    mnt.mkdir()
    subprocess.run(["mount", "-o", "loop,noatime", str(image), str(mnt)], check=True)
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_the_hook_snapshots_xx_for_a_push_and_refuses_hostile_paths(
        pillar_dir: Path, tmp_path: Path, rsync_bin: str, btrfs_export: Path) -> None:
    """The rendered rsyncd.conf with its pre-xfer exec, under the real rsync daemon (root,
    chroot, uid nobody: its address, port, path and hook made local) on a real btrfs: a
    push with miniray's --copy-dest=/xx lands in a snapshot of xx/ owned by the module's
    user and sends only the changed file; a push elsewhere is plain rsync; a job name
    with a shell or path character is no snapshot; a symbolic link on the way is refused;
    the prune's rm -rf as the module's user removes a snapshot copy."""
    res = _render(pillar_dir, tmp_path, {"fs": "btrfs", "job_copy": "snapshot"})
    export, src = btrfs_export, tmp_path / "src"
    subprocess.run(["btrfs", "subvolume", "create", str(export / "xx")], check=True,
                   capture_output=True)
    (export / "branches/caches").mkdir(parents=True)
    src.mkdir()
    for i in range(20):
        (src / f"m{i}.py").write_text(f"{i}\n")
    subprocess.run([rsync_bin, "-a", f"{src}/", f"{export}/xx/"], check=True)
    subprocess.run(["chown", "-R", "nobody:nogroup", str(export)], check=True)
    (src / "m3.py").write_text("changed\n")
    port = _free_port()
    hook = harness.ROOT / "salt/codesync/files/snapshot-hook.sh"
    local = {"port": str(port), "address": "127.0.0.1", "path": str(export),
             "uid": "nobody", "gid": "nogroup", "pid file": str(tmp_path / "pid"),
             "hosts allow": "127.0.0.1",
             "pre-xfer exec": f"{hook} nobody branches/caches"}
    daemon, url = _daemon(rsync_bin, res.files["codesync-server-file-managed-conf"], local,
                          tmp_path, indent="    ")
    try:

        def push(dest: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([rsync_bin, "-a", "--mkpath", "--stats", "--copy-dest=/xx",
                                   f"{src}/", f"{url}/{dest}"],
                                  capture_output=True, text=True, check=False)

        p = push("branches/caches/job-1/xx/")
        assert p.returncode == 0, p.stderr
        assert "Number of regular files transferred: 1" in p.stdout, p.stdout
        job = export / "branches/caches/job-1/xx"
        show = subprocess.run(["btrfs", "subvolume", "show", str(job)], capture_output=True,
                              text=True, check=False)
        assert show.returncode == 0, show.stderr  # a subvolume: the snapshot
        assert (job / "m3.py").read_text() == "changed\n"
        assert (export / "xx/m3.py").read_text() == "3\n"  # xx/ untouched
        assert sorted(p.name for p in job.iterdir()) == sorted(p.name for p in src.iterdir())
        assert {(p.stat().st_uid, p.stat().st_nlink) for p in job.iterdir()} == \
            {(export.stat().st_uid, 1)}
        # a second push to the same job: no new snapshot, rsync's own way
        assert push("branches/caches/job-1/xx/").returncode == 0
        # elsewhere (not <caches>/<job>/xx): plain rsync, no snapshot
        assert push("branches/caches/job-2/other/").returncode == 0
        assert subprocess.run(["btrfs", "subvolume", "show",
                               str(export / "branches/caches/job-2/other")],
                              capture_output=True, check=False).returncode != 0
        # a job name rsync takes but the hook does not: a plain copy, never a snapshot
        assert push("branches/caches/j$x/xx/").returncode == 0
        assert subprocess.run(["btrfs", "subvolume", "show",
                               str(export / "branches/caches/j$x/xx")],
                              capture_output=True, check=False).returncode != 0
        # a symbolic link where the job's directory goes: refused, nothing made outside
        outside = tmp_path / "outside"
        outside.mkdir()
        (export / "branches/caches/evil").symlink_to(outside)
        p = push("branches/caches/evil/xx/")
        assert p.returncode != 0 and "symbolic link" in p.stderr, p.stderr
        assert not list(outside.iterdir())
        # the prune's `rm -rf`, as the module's user, removes a snapshot copy whole
        prune = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup",
                                "--clear-groups", "rm", "-rf", "--", "job-1"],
                               cwd=export / "branches/caches", capture_output=True,
                               text=True, check=False)
        assert prune.returncode == 0, prune.stderr
        assert not (export / "branches/caches/job-1").exists()
    finally:
        daemon.terminate()
        daemon.wait(timeout=10)
        subprocess.run(["rm", "-rf", str(export / "branches")], check=False)
