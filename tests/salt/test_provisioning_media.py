"""The provisioning role's installer media (media.sls) and apt cache (aptcache.sls),
rendered for head-01 from the real inventory, then run for real where this host can:

- the ISO, kernel and initrd land where the rendered iPXE/GRUB configs and the kernel
  command line (``url=``) fetch them through nginx's /images/ (read from pxe/, not typed);
- the unpack command and its ``unless`` against a stand-in ISO built here with xorriso
  (casper/vmlinuz, casper/initrd: the live-server layout; not Ubuntu's files): first run
  unpacks, the second changes nothing, a new ISO unpacks again, an ISO without casper's
  initrd fails (needs xorriso);
- the apt-cacher-ng configuration the state writes: its check_cmd (acng's own parser)
  accepts it and refuses a bad one; apt-cacher-ng runs with it in the foreground (on
  127.0.0.1 and a scratch port, scratch cache) and serves the mirror's and the security
  mirror's Release files, and refuses an upstream the inventory does not name (needs the
  apt-cacher-ng package and archive.ubuntu.com).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet import saltrender
from support import harness

NODE = "head-01"
IMAGES = "/srv/fleet/images"  # salt/provisioning/defaults.yaml images_dir
ACNG = Path("/usr/sbin/apt-cacher-ng")
ACNGTOOL = Path("/usr/lib/apt-cacher-ng/acngtool")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> saltrender.Rendered:
    renderer, _ = harness.make_renderer(tmp_path_factory.mktemp("render"))
    res = renderer.render(NODE)
    assert not res.errors, res.errors
    return res


def _state(res: saltrender.Rendered, sid: str) -> dict[str, Any]:
    found = [c for c in res.lowstate if c["__id__"] == sid]
    assert found, f"{sid} not in {NODE}'s highstate"
    return found[0]


def _pillar() -> dict[str, Any]:
    text = (harness.ROOT / "pillar" / "provisioning.sls").read_text()
    return yaml.safe_load(text)["provisioning"]


def _under_images(url: str) -> str:
    """The file nginx serves for a boot URL: /images/X is images_dir/X."""
    path = url.split("/", 3)[3]
    assert path.startswith("images/"), url
    return f"{IMAGES}/{path.removeprefix('images/')}"


def test_the_media_land_where_the_boot_configs_fetch_them(
        rendered: saltrender.Rendered) -> None:
    ipxe = (harness.ROOT / "pxe/http/hosts" / NODE / "install.ipxe").read_text()
    kernel_url = re.search(r"^kernel (\S+)", ipxe, re.M)
    initrd_url = re.search(r"^initrd --name initrd (\S+)", ipxe, re.M)
    iso_url = re.search(r" url=(\S+)", ipxe)
    assert kernel_url and initrd_url and iso_url
    grub = (harness.ROOT / "pxe/http/hosts" / NODE / "grub-install.cfg").read_text()
    grub_kernel = re.search(r"linux \$fleet_src/(\S+)", grub)
    grub_initrd = re.search(r"initrd \$fleet_src/(\S+)", grub)
    assert grub_kernel and grub_initrd
    # GRUB reads images/ over HTTP or TFTP (tftp/images links to images_dir): the same path
    assert kernel_url.group(1).endswith("/" + grub_kernel.group(1))
    assert initrd_url.group(1).endswith("/" + grub_initrd.group(1))

    iso = _state(rendered, "provisioning-media-file-managed-iso")
    pillar = _pillar()
    assert iso["name"] == _under_images(iso_url.group(1))
    assert iso["source"] == pillar["install"]["iso_source"]
    assert iso["source_hash"] == f"sha256={pillar['install']['iso_sha256']}"
    unpack = _state(rendered, "provisioning-media-cmd-run-unpack")
    assert f"-indev {iso['name']} " in unpack["name"]
    assert f"-extract /casper/vmlinuz {_under_images(kernel_url.group(1))}.new" in unpack["name"]
    assert f"-extract /casper/initrd {_under_images(initrd_url.group(1))}.new" in unpack["name"]
    assert {"file": "provisioning-media-file-managed-iso"} in unpack["require"]


def _iso(tmp: Path, name: str, files: dict[str, bytes]) -> tuple[Path, str]:
    """A stand-in ISO with the live-server layout (casper/...), built with xorriso."""
    tree = tmp / f"{name}-tree"
    for rel, data in files.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_bytes(data)
    out = tmp / f"{name}.iso"
    subprocess.run(["xorriso", "-as", "mkisofs", "-quiet", "-R", "-V", "STANDIN", "-o",
                    str(out), str(tree)], check=True, capture_output=True)
    return out, hashlib.sha256(out.read_bytes()).hexdigest()


@pytest.mark.skipif(shutil.which("xorriso") is None, reason="xorriso is not installed")
def test_unpack_runs_once_per_iso(rendered: saltrender.Rendered, tmp_path: Path) -> None:
    unpack = _state(rendered, "provisioning-media-cmd-run-unpack")
    sha = _pillar()["install"]["iso_sha256"]
    images = tmp_path / "images"
    iso_path = _state(rendered, "provisioning-media-file-managed-iso")["name"]

    def cmd(text: str, iso: Path, new_sha: str) -> str:
        text = text.replace(iso_path, str(iso)).replace(sha, new_sha)
        return text.replace(IMAGES, str(images)).replace("/usr/bin/xorriso", "xorriso")

    def sh(text: str) -> int:
        return subprocess.run(["sh", "-c", text], capture_output=True).returncode

    first, sha1 = _iso(tmp_path, "one", {"casper/vmlinuz": b"kernel-1" * 1000,
                                         "casper/initrd": b"initrd-1" * 1000})
    kernel = images / "ubuntu-24.04" / "vmlinuz"
    initrd = images / "ubuntu-24.04" / "initrd"
    assert sh(cmd(unpack["unless"], first, sha1)) != 0     # nothing unpacked yet: runs
    assert sh(cmd(unpack["name"], first, sha1)) == 0
    assert kernel.read_bytes() == b"kernel-1" * 1000
    assert initrd.read_bytes() == b"initrd-1" * 1000
    assert kernel.stat().st_mode & 0o777 == 0o644
    assert sh(cmd(unpack["unless"], first, sha1)) == 0     # second apply: no change

    second, sha2 = _iso(tmp_path, "two", {"casper/vmlinuz": b"kernel-2",
                                          "casper/initrd": b"initrd-2"})
    assert sh(cmd(unpack["unless"], second, sha2)) != 0    # a new ISO: unpacks again
    assert sh(cmd(unpack["name"], second, sha2)) == 0
    assert kernel.read_bytes() == b"kernel-2" and initrd.read_bytes() == b"initrd-2"
    kernel.unlink()
    assert sh(cmd(unpack["unless"], second, sha2)) != 0    # a lost kernel: unpacks again

    broken, sha3 = _iso(tmp_path, "broken", {"casper/vmlinuz": b"kernel-3"})
    assert sh(cmd(unpack["name"], broken, sha3)) != 0      # no casper/initrd: fails
    assert initrd.read_bytes() == b"initrd-2"              # and the old one stays


def _conf(rendered: saltrender.Rendered, part: str = "conf") -> str:
    return rendered.files[f"provisioning-aptcache-file-managed-{part}"]


def test_the_cache_config_follows_the_inventory(rendered: saltrender.Rendered) -> None:
    text = _conf(rendered)
    assert "Port: 3142\n" in text                    # site.apt.mirror's port
    assert "BindAddress: 10.1.0.10\n" in text        # head-01's provisioning address
    assert not re.search(r"^Remap-", text, re.M)
    remaps = re.findall(r"^Remap-\S+: (\S+) ; (\S+)$", _conf(rendered, "remaps"), re.M)
    assert sorted(u for u, _ in remaps) == [
        "http://archive.ubuntu.com/ubuntu", "http://security.ubuntu.com/ubuntu",
        "https://packages.broadcom.com/artifactory/saltproject-deb"]
    service = _state(rendered, "provisioning-aptcache-service-running")
    assert {"file": "provisioning-aptcache-file-managed-conf"} in service["watch"]
    assert {"file": "provisioning-aptcache-file-managed-remaps"} in service["watch"]


def _free_port() -> int:
    """A free port below the ephemeral range (acng 3.7.4 fails to bind 60537: "Error
    resolving address for binding")."""
    for port in range(23142, 24142):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port in 23142-24141")


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, b""


def _check(rendered: saltrender.Rendered, conf_dir: Path, new: Path,
           part: str = "conf") -> int:
    """The state's check_cmd, with the scratch configuration directory."""
    check = _state(rendered, f"provisioning-aptcache-file-managed-{part}")["check_cmd"]
    argv = [*shlex.split(check.replace(" /etc/apt-cacher-ng ", f" {conf_dir} ")), str(new)]
    return subprocess.run(argv, capture_output=True).returncode


@pytest.mark.skipif(not (ACNG.exists() and ACNGTOOL.exists()),
                    reason="apt-cacher-ng is not installed (apt-get install apt-cacher-ng)")
def test_apt_cacher_ng_serves_the_mirrors_with_the_rendered_config(
        rendered: saltrender.Rendered, tmp_path: Path) -> None:
    try:
        urllib.request.urlopen("http://archive.ubuntu.com/ubuntu/dists/noble/Release",
                               timeout=20).close()
    except OSError as exc:
        pytest.skip(f"archive.ubuntu.com does not answer here: {exc}")
    conf_dir = tmp_path / "conf"
    shutil.copytree("/etc/apt-cacher-ng", conf_dir)
    for f in conf_dir.glob("zzz_fleet*.conf"):
        f.unlink()
    port = _free_port()
    text = _conf(rendered).replace("BindAddress: 10.1.0.10", "BindAddress: 127.0.0.1")
    text = text.replace("Port: 3142", f"Port: {port}")
    new = tmp_path / "new.conf"
    new.write_text(text)
    assert _check(rendered, conf_dir, new) == 0
    bad = tmp_path / "bad.conf"
    bad.write_text(text + "NoSuchDirective: 1\n")
    assert _check(rendered, conf_dir, bad) != 0

    (conf_dir / "zzz_fleet.conf").write_text(text)
    # the rendered remaps, and one more in their format: a Debian mirror, which
    # acng.conf's own Debian remap would answer with 503 were ours read after it
    debian = "http://deb.debian.org/debian"
    remaps = (_conf(rendered, "remaps")
              + f"\nRemap-fleet-deb-debian-org-debian: {debian} ; {debian}\n")
    (tmp_path / "remaps.conf").write_text(remaps)
    assert _check(rendered, conf_dir, tmp_path / "remaps.conf", "remaps") == 0
    (conf_dir / "00fleet-remaps.conf").write_text(remaps)
    for d in ("cache", "log"):
        (tmp_path / d).mkdir()
    # scratch state only: read after zzz_fleet.conf (a socket path fits in 108 bytes)
    run = Path(tempfile.mkdtemp(prefix="acng-", dir="/tmp"))
    (conf_dir / "zzzz_scratch.conf").write_text(
        f"CacheDir: {tmp_path}/cache\nLogDir: {tmp_path}/log\n"
        f"SocketPath: {run}/socket\nPidFile: {run}/pid\n")
    proc = subprocess.Popen([str(ACNG), "-c", str(conf_dir), "ForeGround=1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None, proc.communicate()[0].decode()
                if time.monotonic() > deadline:
                    proc.terminate()
                    pytest.fail("apt-cacher-ng did not listen: " + text
                                + proc.communicate(timeout=20)[0].decode())
                time.sleep(0.2)
        status, body = _get(f"{base}/archive.ubuntu.com/ubuntu/dists/noble/Release")
        assert status == 200 and b"Origin: Ubuntu" in body
        status, body = _get(f"{base}/security.ubuntu.com/ubuntu/dists/noble-security/Release")
        assert status == 200 and b"Origin: Ubuntu" in body
        status, body = _get(f"{base}/deb.debian.org/debian/dists/bookworm/Release")
        assert status == 200 and b"Origin: Debian" in body
        # named in no Remap- line: refused (ForceManaged)
        assert _get(f"{base}/example.com/debian/dists/bookworm/Release")[0] == 403
        assert _get(f"{base}/HTTPS///example.com/x/dists/y/Release")[0] == 403
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        shutil.rmtree(run, ignore_errors=True)


def _salt_call(tmp: Path, pillar: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """`salt-call --local state.sls provisioning.media` over this checkout's salt/, with
    only the given pillar; results by state ID."""
    conf = tmp / "conf"
    conf.mkdir(exist_ok=True)
    (tmp / "pillar").mkdir(exist_ok=True)
    (tmp / "pillar" / "top.sls").write_text("base: {}\n")
    (conf / "minion").write_text(yaml.safe_dump({
        "file_client": "local", "file_roots": {"base": [str(harness.ROOT / "salt")]},
        "pillar_roots": {"base": [str(tmp / "pillar")]}, "cachedir": str(tmp / "cache"),
        "pki_dir": str(tmp / "pki"), "log_file": str(tmp / "minion.log"), "id": NODE}))
    salt_call = Path(sys.executable).parent / "salt-call"
    proc = subprocess.run([str(salt_call), "-c", str(conf), "--local", "--out=json",
                           "state.sls", "provisioning.media", f"pillar={json.dumps(pillar)}"],
                          capture_output=True, text=True, timeout=300)
    assert proc.stdout, proc.stderr
    out = json.loads(proc.stdout)["local"]
    assert isinstance(out, dict), out
    return {v["__id__"]: v for v in out.values()}


@pytest.mark.skipif(shutil.which("xorriso") is None or os.geteuid() != 0,
                    reason="needs xorriso and root (the state chowns to root)")
def test_the_media_state_applies_once_and_fails_on_a_wrong_sha256(tmp_path: Path) -> None:
    """The real provisioning.media through Salt, with a stand-in ISO from a local path:
    fetched, unpacked; a second apply changes nothing; a wrong sha256 or a missing source
    fails the ISO's state (naming both sums) and nothing is unpacked."""
    iso, sha = _iso(tmp_path, "standin", {"casper/vmlinuz": b"k" * 4096,
                                          "casper/initrd": b"i" * 4096})
    images = tmp_path / "images"
    media = {"iso": "standin-live-server.iso", "kernel": "ubuntu-24.04/vmlinuz",
             "initrd": "ubuntu-24.04/initrd"}

    def pillar(source: str, digest: str) -> dict[str, Any]:
        return {"provisioning": {"lookup": {"images_dir": str(images)}, "media": media,
                                 "install": {"iso_source": source, "iso_sha256": digest}}}

    ids = ("provisioning-media-file-managed-iso", "provisioning-media-cmd-run-unpack")
    first = _salt_call(tmp_path, pillar(str(iso), sha))
    assert all(first[i]["result"] is True and first[i]["changes"] for i in ids), first
    assert (images / "ubuntu-24.04" / "vmlinuz").read_bytes() == b"k" * 4096
    assert (images / "standin-live-server.iso").read_bytes() == iso.read_bytes()
    again = _salt_call(tmp_path, pillar(str(iso), sha))
    assert all(r["result"] is True and not r["changes"] for r in again.values()), again

    (images / "standin-live-server.iso").unlink()
    wrong = "0" * 64
    bad = _salt_call(tmp_path, pillar(str(iso), wrong))
    state = bad["provisioning-media-file-managed-iso"]
    assert state["result"] is False and wrong in state["comment"] and sha in state["comment"]
    assert bad["provisioning-media-cmd-run-unpack"]["result"] is False
    assert not (images / "standin-live-server.iso").exists()

    gone = _salt_call(tmp_path, pillar(str(tmp_path / "no-such.iso"), sha))
    state = gone["provisioning-media-file-managed-iso"]
    assert state["result"] is False and "no-such.iso" in state["comment"]
