"""Fake BMCs for the BMC and reinstall tests: existing emulators run as child processes.

- ``fake_redfish``: sushy-tools' Redfish emulator, fake driver (tests/bmc/fake_redfish_bmc.py)
- ``fake_ipmi``: pyghmi's fakebmc (tests/bmc/fake_ipmi_bmc.py), driven by the real ipmitool

Missing emulators skip their tests with the reason (``make deps`` installs them).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import shutil
import socket
import socketserver
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parents[1] / "bmc"  # the fakes' scripts
USER, PASSWORD = "admin", "password"  # the fakes' credentials (pyghmi's fakebmc is fixed)


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class FakeBmcProcess:
    proc: subprocess.Popen[str]
    port: int
    url: str = ""
    ca_file: str | None = None

    def stop(self) -> None:
        stop_process(self.proc)

    def output(self) -> str:
        self.stop()
        assert self.proc.stdout is not None
        return self.proc.stdout.read()

    # Redfish fake only: the test controls of tests/bmc/fake_redfish_bmc.py
    def control(self, method: str, path: str) -> Any:
        req = urllib.request.Request(self.url + path, method=method)
        ctx = None
        if self.ca_file:
            import ssl
            ctx = ssl.create_default_context(cafile=self.ca_file)
        with urllib.request.urlopen(req, timeout=5, context=ctx) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def change_hardware(self, **changes: Any) -> Any:
        """Change the FAKE hardware's parts (tests/bmc/fake_redfish_parts.py): its serial,
        DIMMs, drives, MACs, as a swapped part would under a real BMC."""
        req = urllib.request.Request(self.url + "/_fake/hardware", method="POST",
                                     data=json.dumps(changes).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())

    def redirect(self, path: str, to: str, *, status: int = 307, times: int = 1) -> None:
        """The next ``times`` requests for ``path`` get an HTTP ``status`` redirect to ``to``."""
        query = urllib.parse.urlencode({"path": path, "to": to, "status": status,
                                        "times": times})
        self.control("POST", f"/_fake/redirect?{query}")

    def relink(self, base: str, keys: list[str]) -> None:
        """Links under ``keys`` in every JSON answer become ``base`` + the path."""
        self.control("POST", "/_fake/links?" + urllib.parse.urlencode(
            {"base": base, "keys": ",".join(keys)}))


@dataclass
class Catcher:
    """A web server on another port (another origin) that records every request reaching
    it, with its Authorization header: where a BMC's credentials must never go."""

    server: ThreadingHTTPServer
    requests: list[dict[str, str | None]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @staticmethod
    def start() -> Catcher:
        seen: list[dict[str, str | None]] = []

        class Handler(BaseHTTPRequestHandler):
            def answer(self) -> None:
                seen.append({"method": self.command, "path": self.path,
                             "authorization": self.headers.get("Authorization")})
                body = b'{"Members": [{"@odata.id": "/redfish/v1/Systems/x"}]}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # the names http.server calls
                self.answer()

            def do_POST(self) -> None:
                self.answer()

            def do_PATCH(self) -> None:
                self.answer()

            def log_message(self, *_args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return Catcher(server, seen)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def wait_ready(proc: subprocess.Popen[str], what: str) -> None:
    """The fakes and hardware agents print ``ready`` once their port is bound."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if line.strip() != "ready":
        proc.kill()
        raise RuntimeError(f"{what} did not start: {line}{proc.stdout.read()}")


def stop_process(proc: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL after 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _start(argv: list[str]) -> subprocess.Popen[str]:
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_ready(proc, "fake BMC")
    return proc


def htpasswd(path: Path, user: str, password: str) -> None:
    import bcrypt

    digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()
    path.write_text(f"{user}:{digest}\n", encoding="utf-8")


def self_signed(dirpath: Path) -> tuple[Path, Path]:
    """A CA-less self-signed certificate for 127.0.0.1, as BMCs ship them."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "fake-bmc")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = dirpath / "bmc.crt", dirpath / "bmc.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    key_path.chmod(0o600)
    return cert_path, key_path


def start_fake_redfish(tmp: Path, *, power: str = "Off", tls: bool = False,
                       system: str = "tbox-001", user: str = USER,
                       password: str = PASSWORD, hardware: dict[str, Any] | None = None
                       ) -> FakeBmcProcess:
    pytest.importorskip("sushy_tools", reason="sushy-tools (the fake Redfish BMC) is not "
                        "installed; run `make deps`")
    port = free_port()
    auth = tmp / "htpasswd"
    htpasswd(auth, user, password)
    argv = [sys.executable, str(HERE / "fake_redfish_bmc.py"), "--port", str(port),
            "--state-dir", str(tmp / "sushy-state"), "--system", system, "--power", power,
            "--auth-file", str(auth)]
    if hardware is not None:  # the FAKE hardware's parts (fake_redfish_parts.py)
        (tmp / "hardware.json").write_text(json.dumps(hardware), encoding="utf-8")
        argv += ["--hardware", str(tmp / "hardware.json")]
    ca = None
    if tls:
        cert, key = self_signed(tmp)
        argv += ["--cert", str(cert), "--key", str(key)]
        ca = str(cert)
    fake = FakeBmcProcess(_start(argv), port, f"{'https' if tls else 'http'}://127.0.0.1:{port}",
                          ca)
    return fake


def start_fake_ipmi(power: str = "off") -> FakeBmcProcess:
    pytest.importorskip("pyghmi", reason="pyghmi (its fakebmc is the fake IPMI BMC) is not "
                        "installed; run `make deps`")
    if shutil.which("ipmitool") is None:
        pytest.skip("ipmitool is not installed (apt-get install ipmitool; `make deps` does)")
    port = free_port(socket.SOCK_DGRAM)
    argv = [sys.executable, str(HERE / "fake_ipmi_bmc.py"), "--port", str(port),
            "--power", power]
    return FakeBmcProcess(_start(argv), port)


def wait_until(pred: Any, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.2)
    return False


# --- a hostile BMC ------------------------------------------------------------------------

HOSTILE_SYSTEM = "/redfish/v1/Systems/1"
ESCAPES = "\x1b[2J\x1b]0;owned\x07boom\r\nFAKE: all good\n\x9b31m"  # clear, title, newlines


@dataclass
class FakeHostileBmc:
    """A fake BMC that misbehaves on purpose (no real one can be made to): an HTTP server
    on raw sockets, in a thread, answering every request as ``mode`` says:

    - ``trickle``: good headers, then a body that never ends, one byte every 0.5 s;
    - ``trickle-head``: the status line and headers themselves, one byte every 0.5 s;
    - ``huge``: a 48 MB body with its Content-Length; ``huge-unsized``: the same without
      one, ended by closing the connection;
    - ``escapes``: HTTP 500 with escape sequences and newlines in the Redfish error;
    - ``etag-crlf`` / ``etag-long``: a good minimal Redfish system whose ``@odata.etag``
      holds CR/LF / is 5000 characters long.

    ``sent`` is what it wrote on each connection before the client went away."""

    server: socketserver.ThreadingTCPServer
    mode: str
    stopping: threading.Event
    sent: list[int] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    HUGE = 48 * 1000 * 1000

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @staticmethod
    def start(mode: str) -> FakeHostileBmc:
        fake: list[FakeHostileBmc] = []

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                fake[0].serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        server = Server(("127.0.0.1", 0), Handler)
        fake.append(FakeHostileBmc(server, mode, threading.Event()))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return fake[0]

    def stop(self) -> None:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()

    def _system(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "@odata.id": HOSTILE_SYSTEM, "PowerState": "On",
            "Boot": {"BootSourceOverrideTarget": "Hdd", "BootSourceOverrideEnabled": "Once"},
            "Actions": {"#ComputerSystem.Reset": {
                "target": HOSTILE_SYSTEM + "/Actions/ComputerSystem.Reset",
                "ResetType@Redfish.AllowableValues": ["On", "ForceOff", "ForceRestart"]}}}
        if self.mode == "etag-crlf":
            body["@odata.etag"] = 'W/"1"\r\nX-Injected: yes'
        elif self.mode == "etag-long":
            body["@odata.etag"] = '"' + "a" * 5000 + '"'
        return body

    def serve(self, sock: socket.socket) -> None:
        sock.settimeout(5)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = sock.recv(4096)
            if not chunk:
                return
            head += chunk
        line = head.split(b"\r\n", 1)[0].decode(errors="replace")
        self.requests.append(line)
        path = line.split(" ")[1] if " " in line else "/"
        sent = 0
        try:
            sent = self._answer(sock, path)
        except OSError as exc:  # the client went away: what it took is counted
            sent = getattr(exc, "sent", sent)
        finally:
            self.sent.append(sent)

    def _write(self, sock: socket.socket, data: bytes, sent: int) -> int:
        try:
            sock.sendall(data)
        except OSError as exc:
            exc.sent = sent  # type: ignore[attr-defined]
            raise
        return sent + len(data)

    def _answer(self, sock: socket.socket, path: str) -> int:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536)
        sent = 0
        if self.mode in ("trickle", "trickle-head"):
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" \
                   b"Content-Length: 1000000\r\n\r\n{\"Members\": ["
            if self.mode == "trickle":
                sent = self._write(sock, head, sent)
                head = b""
            data = iter(head)
            while not self.stopping.wait(0.5):
                sent = self._write(sock, bytes([next(data, 0x20)]), sent)
            return sent
        if self.mode.startswith("huge"):
            length = f"Content-Length: {self.HUGE}\r\n" if self.mode == "huge" else ""
            sent = self._write(sock, (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                      f"{length}Connection: close\r\n\r\n").encode(), sent)
            sent = self._write(sock, b'{"Members": "', sent)
            block = b"a" * 65536
            while sent < self.HUGE and not self.stopping.is_set():
                sent = self._write(sock, block, sent)
            return sent
        body: dict[str, Any]
        if self.mode == "escapes":
            status, body = "500 Internal Server Error", {"error": {
                "code": "Base.1.0.GeneralError", "message": ESCAPES,
                "@Message.ExtendedInfo": [{"Message": ESCAPES * 50}]}}
        elif path == "/redfish/v1/Systems":
            status, body = "200 OK", {"Members": [{"@odata.id": HOSTILE_SYSTEM}]}
        elif path == HOSTILE_SYSTEM:
            status, body = "200 OK", self._system()
        else:
            status, body = "204 No Content", {}
        raw = json.dumps(body).encode() if body else b""
        return self._write(sock, (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
                                  f"Content-Length: {len(raw)}\r\nConnection: close\r\n\r\n"
                                  ).encode() + raw, sent)
