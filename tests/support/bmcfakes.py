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
                       password: str = PASSWORD) -> FakeBmcProcess:
    pytest.importorskip("sushy_tools", reason="sushy-tools (the fake Redfish BMC) is not "
                        "installed; run `make deps`")
    port = free_port()
    auth = tmp / "htpasswd"
    htpasswd(auth, user, password)
    argv = [sys.executable, str(HERE / "fake_redfish_bmc.py"), "--port", str(port),
            "--state-dir", str(tmp / "sushy-state"), "--system", system, "--power", power,
            "--auth-file", str(auth)]
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
