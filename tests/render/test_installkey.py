"""The reinstall key fetch and callback in the rendered install data (both images): the
late-commands are taken from the rendered user-data and preseed and run by a real ``sh``
against the real installer endpoint (fleet.reinstall.server) and a token file served over
HTTP, with only the addresses, the retry window and the ``/target`` root moved into a
temp dir. The endpoint listens on 127.0.0.9 and the nodes call from 127.0.0.1, so its door
(fleet.reinstall.door) applies. A FAKE endpoint that gives no answer (an empty reply, a
reset, silence) stands in for one that is flooded or cut off."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import socket
import stat
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory, Node
from fleet.master.journal import Journal
from fleet.reinstall.server import CallbackServer
from fleet.reinstall.tokens import TokenStore
from fleet.render import installkey, render_all
from render.helpers import preseed_writes, render_debian_part_a

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "fixtures" / "small.yaml"
IMAGE = {"type": "debian-preseed", "kernel": "images/debian-12/linux",
         "initrd": "images/debian-12/initrd.gz", "mirror": "http://deb.example/debian"}
UBUNTU, DEBIAN = "gpu-03", "gpu-01"  # part-b stays Ubuntu; part-a gets the Debian image
ENDPOINT_HOST = "127.0.0.9"
# the installer's retry window and each attempt's limit here: the window fits two attempts
# even on a loaded host (the unit tests on both cores and the lab beside them)
RETRY_S, ATTEMPT_S = 4, 1


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Inventory, dict[str, str]]:
    return render_debian_part_a(tmp_path_factory.mktemp("ov"), IMAGE)


def _sh_scripts(words: list[str]) -> list[str]:
    """The ``sh -c`` scripts that are whole late-commands (not ``in-target sh -c``)."""
    return [words[i + 2] for i in range(len(words) - 2) if words[i:i + 2] == ["sh", "-c"]
            and (i == 0 or words[i - 1] == ";")]


def late_scripts(inv: Inventory, files: dict[str, str], node: Node) -> list[str]:
    """The ``sh -c`` scripts of the node's late-commands, in order, as rendered."""
    base = f"pxe/http/hosts/{node.hostname}/"
    if base + "user-data" in files:
        cmds = yaml.safe_load(files[base + "user-data"])["autoinstall"]["late-commands"]
        return [s for c in cmds for s in _sh_scripts(shlex.split(c))]
    line = next(ln for ln in files[base + "preseed.cfg"].splitlines()
                if ln.startswith("d-i preseed/late_command string "))
    lex = shlex.shlex(line.split(" string ", 1)[1], posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    return _sh_scripts(list(lex))


@dataclass
class Boot:
    modes: dict[str, str] = field(default_factory=dict)

    def set_mode(self, node: str, mode: str, token: str | None = None) -> None:
        self.modes[node] = mode


@dataclass
class Rig:
    inv: Inventory
    files: dict[str, str]
    tmp: Path
    state_root: Path  # the reinstall's
    pxe_state: Path  # served as /state/
    target: Path
    endpoint: str
    web: str
    boot: Boot
    revoked: list[str]

    def run(self, node: Node, script: str,
            endpoint: str | None = None) -> subprocess.CompletedProcess[str]:
        s = script.replace(installkey.endpoint(self.inv), endpoint or self.endpoint)
        s = s.replace(installkey.token_url(self.inv, node),
                      f"{self.web}/{installkey.token_name(node)}")
        s = s.replace(installkey.TOKEN_COPY, str(self.tmp / "token-copy"))
        s = s.replace("/target", str(self.target))
        s = s.replace("/tmp/fleet-", f"{self.tmp}/fleet-")
        # a retry window of seconds, not minutes
        s = s.replace(f"w={installkey.RETRY_SECONDS};", f"w={RETRY_S};")
        s = s.replace(f"mt={installkey.ATTEMPT_SECONDS};", f"mt={ATTEMPT_S};")
        assert "10.1.0." not in s, s  # nothing left pointing at the site
        (self.target / str(self.tmp).lstrip("/")).mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PATH": f"{self.tmp / 'bin'}:{os.environ['PATH']}"}
        return subprocess.run(["sh", "-c", s], env=env, text=True, capture_output=True,
                              timeout=60)

    def arm(self, node: Node) -> str:
        """What `fleet reinstall` leaves for the installer: a key, a token, its copy."""
        d = self.state_root / node.hostname
        (d / "keys").mkdir(parents=True)
        subprocess.run(["openssl", "genrsa", "-out", str(d / "keys" / "minion.pem"), "2048"],
                       check=True, capture_output=True)
        self.original_pem = (d / "keys" / "minion.pem").read_bytes()
        subprocess.run(["openssl", "rsa", "-in", str(d / "keys" / "minion.pem"), "-pubout",
                        "-out", str(d / "keys" / "minion.pub")], check=True,
                       capture_output=True)
        store = TokenStore(d)
        token = store.issue(600)
        (self.pxe_state / installkey.token_name(node)).write_text(token)
        store.power_on(time.time())  # the installer runs after the power-on
        return token


@pytest.fixture
def rig(rendered: tuple[Inventory, dict[str, str]], tmp_path: Path) -> Iterator[Rig]:
    inv, files = rendered
    (tmp_path / "bin").mkdir()
    # stands in for chroot(8), which needs a real root file system: runs the command with
    # its absolute paths (and curl's @file) moved under the given root
    fake_chroot = tmp_path / "bin" / "chroot"
    fake_chroot.write_text('#!/bin/sh\nr=$1; shift\nfor a; do case $a in /dev/*) '
                           'set -- "$@" "$a";; /*) set -- "$@" "$r$a";; @/*) '
                           'set -- "$@" "@$r${a#@}";; *) set -- "$@" "$a";; esac; shift; '
                           'done\nexec "$@"\n')
    fake_chroot.chmod(0o755)
    pxe_state = tmp_path / "pxe-state"
    pxe_state.mkdir()
    boot = Boot()
    revoked: list[str] = []
    # every node's address is this host's here (the scripts' curl calls from 127.0.0.1);
    # the endpoint's own is another (127.0.0.9), so that its door applies to them
    api = CallbackServer((ENDPOINT_HOST, 0), tmp_path / "reinstall", boot,
                         dict.fromkeys(inv.nodes, "127.0.0.1"), revoke_key=revoked.append,
                         timeout=1.0)
    web = ThreadingHTTPServer(("127.0.0.1", 0),
                              partial(_Quiet, directory=str(pxe_state)))
    threading.Thread(target=web.serve_forever, daemon=True).start()
    api.start()
    target = tmp_path / "target"
    (target / "etc").mkdir(parents=True)
    try:
        yield Rig(inv, files, tmp_path, tmp_path / "reinstall", pxe_state, target, api.url,
                  f"http://127.0.0.1:{web.server_address[1]}", boot, revoked)
    finally:
        api.stop()
        web.shutdown()
        web.server_close()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.mark.parametrize("host", [UBUNTU, DEBIAN])
def test_both_images_fetch_the_key_first_and_call_back_last(
        rendered: tuple[Inventory, dict[str, str]], host: str) -> None:
    inv, files = rendered
    node = inv.nodes[host]
    scripts = late_scripts(inv, files, node)
    assert len(scripts) == 2, scripts
    fetch, done = scripts
    curl = "curl" if host == UBUNTU else "chroot /target curl"
    assert f"t=$({curl} -fsS --max-time 30 http://10.1.0.10/state/" \
           f"{node.mac.replace(':', '-')}.token)" in fetch
    assert f"ep=http://10.1.0.10:8470; n={host}; " in fetch and '"$ep/v1/key/$n"' in fetch
    assert f"ep=http://10.1.0.10:8470; n={host}; " in done
    # the callback carries the signature by the node's key, never the token alone
    assert "openssl dgst -sha256 -sign /etc/salt/pki/minion/minion.pem" in done
    sig = "/tmp/fleet-done.sig" if host == UBUNTU else "$r/tmp/fleet-done.sig"
    assert f"-sign /etc/salt/pki/minion/minion.pem > {sig} ||" in done
    assert 'ask "$ep/v1/done/$n" -X POST' in done and "--data-binary @/tmp/fleet-done.sig" in done
    key = files[f"pxe/http/hosts/{host}/" + ("user-data" if host == UBUNTU else "preseed.cfg")]
    # the key is in place before salt-minion is installed; the callback is the very end
    assert key.index("/v1/key/") < key.index("apt-get install -y salt-minion") \
        < key.index("systemctl enable salt-minion") < key.index("/v1/done/")


@pytest.mark.parametrize("host", [UBUNTU, DEBIAN])
def test_armed_install_gets_the_rotated_key_and_calls_back(rig: Rig, host: str) -> None:
    node = rig.inv.nodes[host]
    rig.arm(node)
    fetch, done = late_scripts(rig.inv, rig.files, node)
    r = rig.run(node, fetch)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "minion key installed" in r.stdout
    pki = rig.target / "etc/salt/pki/minion"
    assert (pki / "minion.pem").read_bytes() == rig.original_pem
    assert stat.S_IMODE((pki / "minion.pem").stat().st_mode) == 0o400
    expected_pub = subprocess.run(["openssl", "rsa", "-pubout"], input=rig.original_pem,
                                  capture_output=True, check=True).stdout
    assert (pki / "minion.pub").read_bytes() == expected_pub
    assert not (rig.state_root / host / "keys" / "minion.pem").exists()  # served once
    assert rig.boot.modes == {}
    r = rig.run(node, done)
    assert r.returncode == 0, r.stdout + r.stderr
    assert rig.boot.modes == {host: "local"}
    notes = [e.get("what") for e in Journal(rig.state_root / host).entries()]
    assert notes == ["key-fetched", "install-finished"]
    assert not (rig.tmp / "token-copy").exists()


@pytest.mark.parametrize("host", [UBUNTU, DEBIAN])
def test_plain_install_without_token_keeps_its_own_key(rig: Rig, host: str) -> None:
    node = rig.inv.nodes[host]
    fetch, done = late_scripts(rig.inv, rig.files, node)
    r = rig.run(node, fetch)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no install token" in r.stdout
    assert not (rig.target / "etc/salt/pki").exists()
    r = rig.run(node, done)
    assert r.returncode == 0 and "no callback" in r.stdout, r.stdout + r.stderr
    assert rig.boot.modes == {}


def test_a_refused_key_fails_the_install(rig: Rig) -> None:
    node = rig.inv.nodes[DEBIAN]
    rig.arm(node)
    (rig.pxe_state / installkey.token_name(node)).write_text("forged-token")
    fetch, done = late_scripts(rig.inv, rig.files, node)
    r = rig.run(node, fetch)
    assert r.returncode == 1 and "refused the key" in r.stderr, r.stdout + r.stderr
    assert not list((rig.target / "etc/salt/pki/minion").iterdir())
    r = rig.run(node, done)  # the copy of the forged token is refused too: install stops
    assert r.returncode == 1 and "could not sign the install-finished callback" in r.stderr, \
        r.stdout + r.stderr
    assert rig.boot.modes == {}


@pytest.mark.parametrize("host", [UBUNTU, DEBIAN])
def test_a_key_taken_first_fails_the_real_installer_loudly(rig: Rig, host: str) -> None:
    """Someone used the token first (fetched the key from the node's address): the real
    installer fails (exit 1, the reason on stderr) and reports it; the master then has
    the reinstall stopped, boot mode local, the key revoked, the claimant journaled."""
    node = rig.inv.nodes[host]
    token = rig.arm(node)
    from support.httpreq import http

    assert http("GET", f"{rig.endpoint}/v1/key/{host}", token)[0] == 200  # the thief
    fetch, _done = late_scripts(rig.inv, rig.files, node)
    r = rig.run(node, fetch)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "refused the key" in r.stderr and "already used for key fetched by" in r.stderr
    assert rig.boot.modes == {host: "local"} and rig.revoked == [host]
    error = [e for e in Journal(rig.state_root / host).entries()
             if e.get("what") == "install-error"]
    assert len(error) == 1 and error[0]["claimant"].startswith("127.0.0.1")


@pytest.mark.parametrize("host", [UBUNTU, DEBIAN])
def test_a_token_taken_away_fails_the_real_installer_loudly(rig: Rig, host: str) -> None:
    """The token is gone from the provisioning host (someone finished with it, or it was
    never delivered) while the master has a reinstall in progress: not a plain install,
    so no exit 0 (it was before: "no reinstall in progress"). Without the token its error
    report is refused: the run ends at its timeout (no token-less way to stop it)."""
    node = rig.inv.nodes[host]
    rig.arm(node)
    (rig.pxe_state / installkey.token_name(node)).unlink()
    fetch, _done = late_scripts(rig.inv, rig.files, node)
    r = rig.run(node, fetch)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "the master has a reinstall in progress" in r.stderr
    assert "the error report to the master failed too" in r.stderr
    assert rig.revoked == [] and rig.boot.modes == {}


def test_nginx_rules_give_each_token_to_its_node_only(
        rendered: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = rendered
    rules = files["pxe/nginx/tokens.conf"].splitlines()
    state = inv.raw.site.pxe_state
    for node in inv.nodes.values():
        name = installkey.token_name(node)
        # from the tokens directory, never the TFTP-served state directory
        assert f"location = /state/{name} {{ alias {state}-tokens/{name}; " \
               f"allow {node.address}; deny all; expires epoch; }}" in rules
    site = (ROOT / "salt/provisioning/files/pxe-nginx.conf.jinja").read_text()
    assert "location ~ \\.token$ {\n    deny all;" in site
    assert "include {{ root }}/../nginx/tokens.conf;" in site


def test_master_address_override_reaches_every_output(tmp_path: Path) -> None:
    """``site.salt.master_address`` (a VIP, or the lab's host) replaces the master node's
    own address in the minion config of both installers, the key/callback endpoint and
    the pillar's ``site:salt:master_address``."""
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(json.dumps({"site": {"images": {"debian-12": IMAGE},
                                            "salt": {"master_address": "10.1.0.250"}},
                                   "node_groups": {"part-a": {"image": "debian-12"}}}))
    inv = load_inventory(SMALL, overlay)
    files = render_all(inv)
    master_node = str(inv.nodes[inv.raw.site.salt.master].address)
    assert installkey.endpoint(inv).startswith("http://10.1.0.250:")
    site = yaml.safe_load(files["pillar/site.sls"])
    assert site["site"]["salt"]["master_address"] == "10.1.0.250"
    for node in (UBUNTU, DEBIAN):
        text = "\n".join(v for k, v in files.items()
                         if k.startswith("pxe/") and node in k and k.endswith(
                             ("user-data", ".cfg", "preseed")))
        text += "\n".join(preseed_writes(text).values())
        assert "master: 10.1.0.250" in text, node
        assert f"master: {master_node}" not in text, node


def test_a_recorded_master_finger_pins_both_installers_minions(tmp_path: Path) -> None:
    """``site.salt.master_finger`` (recorded with `fleet keys finger`) is in the minion
    config each installer writes, Ubuntu and Debian."""
    finger = ":".join(["ab"] * 32)
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(json.dumps({"site": {"images": {"debian-12": IMAGE},
                                            "salt": {"master_finger": finger}},
                                   "node_groups": {"part-a": {"image": "debian-12"}}}))
    inv = load_inventory(SMALL, overlay)
    files = render_all(inv)
    want = f"master_finger: '{finger}'"
    cmds = yaml.safe_load(files[f"pxe/http/hosts/{UBUNTU}/user-data"])["autoinstall"][
        "late-commands"]
    assert want in [w for c in cmds for w in shlex.split(c)]  # one printf line of fleet.conf
    written = preseed_writes(files[f"pxe/http/hosts/{DEBIAN}/preseed.cfg"])
    assert any(want in text.splitlines() for text in written.values()), written


@dataclass
class Misbehaving:
    """A FAKE endpoint on 127.0.0.9 that answers by path prefix as ``rules`` say:
    ``empty`` (reads the request, closes without a word: curl's empty reply), ``reset``
    (an RST), ``silent`` (never answers: a timeout), or ``(code, body)``. Records every
    request line it gets."""

    rules: dict[str, object]
    seen: list[str] = field(default_factory=list)
    sock: socket.socket = field(default_factory=socket.socket)
    held: list[socket.socket] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.sock.bind((ENDPOINT_HOST, 0))
        self.sock.listen(64)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://{ENDPOINT_HOST}:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        line = data.split(b"\r\n", 1)[0].decode(errors="replace")
        self.seen.append(line)
        path = line.split(" ")[1] if " " in line else ""
        rule = next((v for k, v in self.rules.items() if path.startswith(k)), "empty")
        if rule == "silent":
            self.held.append(conn)
            return
        if rule == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif isinstance(rule, tuple):
            code, body = rule
            conn.sendall(f"HTTP/1.1 {code} X\r\nContent-Length: {len(body)}\r\n"
                         "Connection: close\r\n\r\n".encode() + body)
        conn.close()

    def asked(self, path: str) -> int:
        return sum(f" {path}" in line for line in self.seen)

    def stop(self) -> None:
        self.sock.close()
        for c in self.held:
            c.close()


@pytest.fixture
def misbehaving() -> Iterator[Callable[[dict[str, object]], Misbehaving]]:
    made: list[Misbehaving] = []

    def make(rules: dict[str, object]) -> Misbehaving:
        made.append(Misbehaving(rules))
        return made[-1]

    yield make
    for m in made:
        m.stop()


@pytest.mark.parametrize("host", [UBUNTU, DEBIAN])
@pytest.mark.parametrize("silence", ["empty", "reset", "silent"])
def test_an_endpoint_that_gives_no_answer_never_makes_a_plain_install(
        rig: Rig, misbehaving: Callable[[dict[str, object]], Misbehaving], host: str,
        silence: str) -> None:
    """No token, and the endpoint gives no answer (a flood, a cut): that is not "no
    reinstall" (curl 000 was read so): asked again for the retry window, then the
    install fails loudly; only a refused connection means no endpoint."""
    node = rig.inv.nodes[host]
    ep = misbehaving({"/v1/": silence})
    fetch, _done = late_scripts(rig.inv, rig.files, node)
    # bounded: rig.run's own timeout fails a run that hangs (no timing assertion: a
    # loaded host, e.g. the unit tests on both cores, stretches every attempt)
    r = rig.run(node, fetch, endpoint=ep.url)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"the master's endpoint gave no answer within {RETRY_S}s" in r.stderr
    assert ep.asked(f"/v1/status/{host}") >= 2  # retried
    assert not (rig.target / "etc/salt/pki").exists()


@pytest.mark.parametrize("host", [UBUNTU, DEBIAN])
@pytest.mark.parametrize("silence", ["empty", "reset", "silent"])
def test_an_armed_install_never_exits_0_without_its_key(
        rig: Rig, misbehaving: Callable[[dict[str, object]], Misbehaving], host: str,
        silence: str) -> None:
    node = rig.inv.nodes[host]
    rig.arm(node)
    ep = misbehaving({"/v1/key/": silence})
    fetch, _done = late_scripts(rig.inv, rig.files, node)
    r = rig.run(node, fetch, endpoint=ep.url)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"the master's endpoint gave no key within {RETRY_S}s" in r.stderr
    assert ep.asked(f"/v1/key/{host}") >= 2
    assert ep.asked(f"/v1/error/{host}") == 1  # reported, with the token
    assert not list((rig.target / "etc/salt/pki/minion").iterdir())


@pytest.mark.parametrize("host", [UBUNTU, DEBIAN])
def test_no_endpoint_at_all_is_a_plain_install_only_without_a_token(
        rig: Rig, host: str) -> None:
    """Connection refused (curl exit 7): without a token a plain install; with one (the
    reinstall is armed) a loud failure."""
    node = rig.inv.nodes[host]
    with socket.socket() as s:  # a port nothing listens on
        s.bind((ENDPOINT_HOST, 0))
        closed = f"http://{ENDPOINT_HOST}:{s.getsockname()[1]}"
    fetch, _done = late_scripts(rig.inv, rig.files, node)
    r = rig.run(node, fetch, endpoint=closed)
    assert r.returncode == 0 and "no endpoint on the master" in r.stdout, r.stdout + r.stderr
    rig.arm(node)
    r = rig.run(node, fetch, endpoint=closed)
    assert r.returncode == 1 and "refused the connection while the reinstall is armed" \
        in r.stderr, r.stdout + r.stderr


@pytest.mark.parametrize("host", [UBUNTU, DEBIAN])
def test_the_minion_is_never_left_unpinned_because_finger_did_not_answer(
        rig: Rig, misbehaving: Callable[[dict[str, object]], Misbehaving],
        host: str) -> None:
    node = rig.inv.nodes[host]
    rig.arm(node)
    ep = misbehaving({"/v1/key/": (200, rig.original_pem), "/v1/finger/": "reset"})
    fetch, _done = late_scripts(rig.inv, rig.files, node)
    r = rig.run(node, fetch, endpoint=ep.url)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "the minion would be left unpinned" in r.stderr
    assert ep.asked(f"/v1/finger/{host}") >= 2 and ep.asked(f"/v1/error/{host}") == 1
    assert not (rig.target / "etc/salt/minion.d/fleet-master-finger.conf").exists()


@pytest.mark.parametrize("host", [UBUNTU, DEBIAN])
def test_a_callback_without_an_answer_fails_loudly(
        rig: Rig, misbehaving: Callable[[dict[str, object]], Misbehaving],
        host: str) -> None:
    node = rig.inv.nodes[host]
    rig.arm(node)
    fetch, done = late_scripts(rig.inv, rig.files, node)
    assert rig.run(node, fetch).returncode == 0
    ep = misbehaving({"/v1/done/": "empty"})
    r = rig.run(node, done, endpoint=ep.url)
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"did not answer the install-finished callback within {RETRY_S}s" in r.stderr
    assert ep.asked(f"/v1/done/{host}") >= 2


def test_a_flood_of_the_endpoint_does_not_keep_the_installer_from_its_key(
        rig: Rig) -> None:
    """64 idle connections from other addresses (the old limit was 32, all of them): the
    real installer still gets its key, pins the master and calls back."""
    node = rig.inv.nodes[UBUNTU]
    rig.arm(node)
    host, port = rig.endpoint.removeprefix("http://").split(":")
    flood = [socket.create_connection((host, int(port)), timeout=10,
                                      source_address=(f"127.0.2.{1 + i % 50}", 0))
             for i in range(64)]
    try:
        fetch, done = late_scripts(rig.inv, rig.files, node)
        r = rig.run(node, fetch)
        assert r.returncode == 0 and "minion key installed" in r.stdout, r.stdout + r.stderr
        assert (rig.target / "etc/salt/pki/minion/minion.pem").read_bytes() == rig.original_pem
        r = rig.run(node, done)
        assert r.returncode == 0, r.stdout + r.stderr
        assert rig.boot.modes == {UBUNTU: "local"}
    finally:
        for s in flood:
            s.close()


def test_an_address_over_its_quota_is_told_busy_and_the_installer_waits(rig: Rig) -> None:
    """The node's own address holds its quota with idle connections (someone at its
    address): a quick 503, which the installer retries; once they time out (1 s here) it
    gets its key."""
    node = rig.inv.nodes[DEBIAN]
    rig.arm(node)
    host, port = rig.endpoint.removeprefix("http://").split(":")
    idle = [socket.create_connection((host, int(port)), timeout=10) for _ in range(4)]
    try:
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b"GET /v1/health HTTP/1.1\r\n\r\n")
            assert s.recv(100).startswith(b"HTTP/1.1 503")
        fetch, _done = late_scripts(rig.inv, rig.files, node)
        r = rig.run(node, fetch)
        assert r.returncode == 0 and "minion key installed" in r.stdout, r.stdout + r.stderr
    finally:
        for s in idle:
            with contextlib.suppress(OSError):
                s.close()
