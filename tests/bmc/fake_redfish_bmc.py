"""A fake Redfish BMC for tests: sushy-tools' emulator with its fake driver (no libvirt),
served by werkzeug, optionally with basic auth (an htpasswd file) and TLS.

sushy-emulator has no ETags. Real BMCs do, and some refuse a PATCH without If-Match, so a
thin WSGI layer in front of the emulator adds what they do: an ``ETag`` on the system,
``428`` for a PATCH without ``If-Match``, ``412`` for a stale one. Test controls (never on a
real BMC) live under ``/_fake/``: ``POST /_fake/conflicts?n=N`` makes the next N PATCHes
meet a concurrent change (a 412), ``GET /_fake/requests`` lists what the client sent,
``GET /_fake/pending`` the power change sushy's fake driver still holds back (it applies
one 1 to 11 s after the request, as hardware takes time; null once applied).

A hostile BMC, for the tests of where the client sends its credentials:
``POST /_fake/redirect?path=P&to=URL[&status=307][&times=1]`` answers the next request(s)
for P with a redirect to URL; ``POST /_fake/links?base=URL&keys=K1,K2`` prefixes every
link value under those keys (``@odata.id``, ``target``...) in JSON answers with URL, so
that absolute links point wherever URL says.

Run: python fake_redfish_bmc.py --port P --state-dir D --system NAME --power On|Off
         [--auth-file F] [--cert C --key K] [--notify URL] [--hardware FILE]

``--hardware FILE`` (JSON: serial, model, dimms, drives, bmc_mac, macs) gives the fake
system the parts sushy-tools does not model, changed later by ``POST /_fake/hardware``
(tests/bmc/fake_redfish_parts.py).

``--notify URL`` turns on the fake driver's external notifier: on every change of the
system (power, pending power, boot device) sushy-tools PUTs the system's JSON to URL,
where a test's stand-in for the hardware (tests/support/fake_bmc_hardware.py) acts on it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from sushy_tools.emulator import main as emulator
from werkzeug.serving import make_server

SYSTEM_UUID = "27946b59-9e44-4fa7-8e91-f3527a1ef094"
StartResponse = Callable[..., Any]
Environ = dict[str, Any]


class EtagLayer:
    def __init__(self, app: Callable[[Environ, StartResponse], Iterable[bytes]]) -> None:
        self.app = app
        self.generation = 1
        self.conflicts = 0
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.redirects: dict[str, list[Any]] = {}  # path -> [status, location, times left]
        self.links: tuple[str, set[str]] | None = None  # (base, keys)
        self.pending: Callable[[], Any] = lambda: None

    def etag(self) -> str:
        return f'W/"{self.generation}"'

    def __call__(self, env: Environ, start: StartResponse) -> Iterable[bytes]:
        path, method = env.get("PATH_INFO", ""), env["REQUEST_METHOD"]
        if path.startswith("/_fake/"):
            return self.control(env, start, path, method)
        body = b""
        if method in ("PATCH", "POST"):
            size = int(env.get("CONTENT_LENGTH") or 0)
            body = env["wsgi.input"].read(size)
            import io
            env["wsgi.input"] = io.BytesIO(body)
        is_system = path.rstrip("/").startswith("/redfish/v1/Systems/") and \
            path.rstrip("/").count("/") == 4
        rule = self.redirects.get(path)
        if rule is not None and rule[2] > 0:
            rule[2] -= 1
            self.log.append({"method": method, "path": path, "redirected_to": rule[1]})
            start(rule[0], [("Location", rule[1]), ("Content-Length", "0")])
            return [b""]
        with self.lock:
            self.log.append({"method": method, "path": path,
                             "if_match": env.get("HTTP_IF_MATCH"),
                             "body": json.loads(body) if body else None})
            if method == "PATCH" and is_system:
                if self.conflicts:
                    self.conflicts -= 1
                    self.generation += 1  # another client changed the system meanwhile
                sent = env.get("HTTP_IF_MATCH")
                if sent is None:
                    return self.reply(start, "428 Precondition Required",
                                      "PATCH needs If-Match")
                if sent != self.etag():
                    return self.reply(start, "412 Precondition Failed",
                                      f"If-Match {sent} is stale; now {self.etag()}")

        def start_with_etag(status: str, headers: list[tuple[str, str]],
                            exc_info: Any = None) -> Any:
            if is_system and method == "GET":
                headers = [*headers, ("ETag", self.etag())]
            if is_system and method == "PATCH" and status.startswith("2"):
                with self.lock:
                    self.generation += 1
            return start(status, headers, exc_info)

        if self.links is None:
            return self.app(env, start_with_etag)
        return self.relinked(env, start_with_etag, *self.links)

    def relinked(self, env: Environ, start: StartResponse, base: str,
                 keys: set[str]) -> Iterable[bytes]:
        from fake_redfish_parts import rewritten

        def change(_status: str, body: bytes) -> bytes:
            with contextlib.suppress(ValueError):  # not JSON: as it is
                return json.dumps(_prefix(json.loads(body), base, keys)).encode()
            return body

        return rewritten(self.app, env, start, change)

    def reply(self, start: StartResponse, status: str, message: str) -> Iterable[bytes]:
        body = json.dumps({"error": {"code": "Base.1.0.GeneralError", "message": message}})
        start(status, [("Content-Type", "application/json")])
        return [body.encode()]

    def control(self, env: Environ, start: StartResponse, path: str,
                method: str) -> Iterable[bytes]:
        if path == "/_fake/conflicts" and method == "POST":
            self.conflicts = int(parse_qs(env.get("QUERY_STRING", ""))["n"][0])
            start("204 No Content", [])
            return [b""]
        query = {k: v[0] for k, v in parse_qs(env.get("QUERY_STRING", "")).items()}
        if path == "/_fake/redirect" and method == "POST":
            status = {"301": "301 Moved Permanently", "302": "302 Found",
                      "307": "307 Temporary Redirect"}[query.get("status", "307")]
            self.redirects[query["path"]] = [status, query["to"], int(query.get("times", 1))]
            start("204 No Content", [])
            return [b""]
        if path == "/_fake/links" and method == "POST":
            self.links = (query["base"], set(query["keys"].split(",")))
            start("204 No Content", [])
            return [b""]
        if path == "/_fake/requests":
            start("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(self.log).encode()]
        if path == "/_fake/pending":
            start("200 OK", [("Content-Type", "application/json")])
            return [json.dumps({"pending_power": self.pending()}).encode()]
        start("404 Not Found", [])
        return [b""]


def _prefix(value: Any, base: str, keys: set[str]) -> Any:
    """``value`` with ``base`` put before every path-valued string under one of ``keys``."""
    if isinstance(value, dict):
        return {k: (base + v if k in keys and isinstance(v, str) and v.startswith("/")
                    else _prefix(v, base, keys)) for k, v in value.items()}
    if isinstance(value, list):
        return [_prefix(v, base, keys) for v in value]
    return value


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--system", default="fake")
    ap.add_argument("--power", default="Off", choices=["On", "Off"])
    ap.add_argument("--auth-file")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--notify", metavar="URL", help="the fake driver's external notifier")
    ap.add_argument("--hardware", metavar="FILE", help="the FAKE hardware's parts (JSON)")
    args = ap.parse_args()
    parts: dict[str, Any] = {}
    if args.hardware:
        parts = json.loads(Path(args.hardware).read_text(encoding="utf-8"))
    config: dict[str, Any] = {
        "SUSHY_EMULATOR_FAKE_DRIVER": True,
        "SUSHY_EMULATOR_STATE_DIR": args.state_dir,
        "SUSHY_EMULATOR_FAKE_SYSTEMS": [{
            "uuid": SYSTEM_UUID, "name": args.system,
            "power_state": args.power, "external_notifier": bool(args.notify),
            "nics": [{"mac": m, "ip": "127.0.0.1"}
                     for m in parts.pop("macs", ["00:5c:52:31:3a:9c"])], **parts}],
    }
    if parts:
        from fake_redfish_parts import storage_config

        config |= storage_config(SYSTEM_UUID, parts.get("drives", {}))
    if args.notify:
        config["EXTERNAL_NOTIFICATION_URL"] = args.notify
    if args.auth_file:
        config["SUSHY_EMULATOR_AUTH_FILE"] = args.auth_file
    emulator.app.configure(extra_config=config)
    layer = EtagLayer(emulator.app.wsgi_app)
    # reading the system applies a pending change that is due, as a GET would
    layer.pending = lambda: emulator.app.systems._get(SYSTEM_UUID).get("pending_power")
    served: Any = layer
    if parts:
        from fake_redfish_parts import HardwareLayer

        served = HardwareLayer(layer, SYSTEM_UUID, lambda: emulator.app.systems)
    ssl_context = (args.cert, args.key) if args.cert else None
    server = make_server("127.0.0.1", args.port, served, threaded=True,
                         ssl_context=ssl_context)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
