"""A Redfish BMC client on the standard library only (urllib).

Request shapes as sushy sends them (DMTF ComputerSystem): discover the system from
``/redfish/v1/Systems``; PATCH ``Boot`` with ``If-Match`` when the BMC gives an ETag (a
412 means the resource changed under us: read it again and retry once); POST
``ComputerSystem.Reset`` with a ResetType the BMC allows.

The BMC is not trusted with anything but its own credentials: every request, with them,
goes to the scheme, host and port of ``base_url`` only. A link the BMC returns
(``@odata.id``, an action ``target``, ``@Redfish.ActionInfo``, a settings object) that is
absolute and names another origin is refused, and so is a redirect to another origin
(https to http included); no proxy from the environment is used. The client never
follows ``Location`` headers or task monitors.

Nor is it trusted with time or memory (fleet.bmc.limits): a request ends within its
deadline however slowly the BMC sends (the connection's socket gets what is left of it
before every read, and the TLS handshake as a whole), a call within the call's, and a
body over MAX_ANSWER bytes is refused after reading MAX_ANSWER + 1. What the BMC says in
an error reaches a message only through bmc_text; an ETag that is not one (control
characters, white space, longer than ETAG_LIMIT) is refused before it can go into a
header.
"""

from __future__ import annotations

import base64
import http.client
import io
import json
import re
import socket
import ssl
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from http.client import HTTPException, HTTPMessage
from typing import IO, Any

from fleet.bmc.base import (
    BmcAuthError,
    BmcError,
    BmcProtocolError,
    BmcTimeoutError,
    BmcUnreachableError,
    ClientBase,
    PowerState,
    bmc_text,
)
from fleet.bmc.limits import CALL_TIMEOUT, MAX_ANSWER, REQUEST_TIMEOUT, bounded

JSON = dict[str, Any]

# Preference order among the values a BMC allows.
RESET_WHEN_ON = ("ForceRestart", "PowerCycle", "GracefulRestart")
RESET_WHEN_OFF = ("On", "ForceOn")
POWER_OFF = ("ForceOff",)
POWER_CYCLE = ("PowerCycle", "ForceRestart")

ETAG_LIMIT = 256  # characters; an entity tag is an opaque quoted string, a hash or a number
_ETAG = re.compile(rf"[\x21-\x7e]{{1,{ETAG_LIMIT}}}")  # visible ASCII: RFC 9110 etagc


class PreconditionFailedError(BmcProtocolError):
    """HTTP 412: the ETag sent in If-Match is no longer the resource's."""


@dataclass(frozen=True)
class TlsOptions:
    """BMCs mostly present self-signed certificates: trust a CA file, or say insecure."""

    ca_file: str | None = None
    insecure: bool = False

    def context(self) -> ssl.SSLContext:
        if self.insecure:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            return ctx
        return ssl.create_default_context(cafile=self.ca_file)


@dataclass
class _Response:
    status: int
    headers: dict[str, str]
    body: JSON


Origin = tuple[str, str, int]
_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: str) -> Origin | None:
    """``(scheme, host, port)`` of an absolute http(s) URL without user info, whitespace or
    control characters, else None."""
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        return None
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname or "@" in parts.netloc:
        return None
    return scheme, parts.hostname.lower(), port or _DEFAULT_PORTS[scheme]


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect (and so sends the credentials again) only to the BMC itself."""

    def __init__(self, name: str, home: Origin) -> None:
        self.name, self.home = name, home

    def redirect_request(self, req: urllib.request.Request, fp: IO[bytes], code: int,
                         msg: str, headers: HTTPMessage, newurl: str
                         ) -> urllib.request.Request | None:
        if origin(newurl) != self.home:
            fp.close()
            raise BmcProtocolError(
                f"{self.name}: {req.get_method()} {bmc_text(req.selector, 120)}: HTTP {code} "
                f"redirect to {bmc_text(repr(newurl), 120)} refused: the credentials go only "
                "to the BMC's own scheme, host "
                "and port (fix the BMC's address or scheme in the inventory)")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _Clock(threading.local):
    """The deadline (time.monotonic) of the request in progress on this thread; the
    redirects it follows are part of it."""

    at: float = 0.0

    def left(self) -> float:
        left = self.at - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline has passed")
        return left


class _DeadlineReader(io.RawIOBase):
    """The response's socket file, each read given only what is left of the deadline."""

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, clock: _Clock) -> None:
        super().__init__()
        self._raw, self._sock, self._clock = raw, sock, clock

    def readable(self) -> bool:
        return True

    def readinto(self, buf: Any) -> int | None:
        self._sock.settimeout(self._clock.left())
        return self._raw.readinto(buf)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineResponse(http.client.HTTPResponse):
    clock: _Clock  # set on the subclass each connection makes

    def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        # the buffered socket file http.client made, its raw part behind the deadline
        self.fp = io.BufferedReader(_DeadlineReader(self.fp.detach(), sock, self.clock))


def _connection_class(base: type[http.client.HTTPConnection], clock: _Clock
                      ) -> type[http.client.HTTPConnection]:
    """``base`` whose connect (TCP and TLS handshake) gets what is left of the deadline,
    and whose response reads under it."""

    class Response(_DeadlineResponse):
        pass

    Response.clock = clock

    class Connection(base):  # type: ignore[valid-type, misc]
        response_class = Response

        def connect(self) -> None:
            self.timeout = clock.left()  # the socket's: connect, then the whole handshake
            super().connect()

    return Connection


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, clock: _Clock) -> None:
        super().__init__()
        self._conn = _connection_class(http.client.HTTPConnection, clock)

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._conn, req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, clock: _Clock, context: ssl.SSLContext) -> None:
        super().__init__(context=context)
        self._ctx = context
        self._conn = _connection_class(http.client.HTTPSConnection, clock)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(self._conn, req, context=self._ctx)


def _read_body(name: str, what: str, fp: Any, headers: dict[str, str]) -> bytes:
    """At most MAX_ANSWER bytes of the body; a larger one is refused."""
    declared = next((v for k, v in headers.items() if k.lower() == "content-length"), "")
    if declared.strip().isdigit() and int(declared) > MAX_ANSWER:
        raise BmcProtocolError(f"{name}: {what}: an answer of {int(declared)} bytes "
                               f"(a Redfish answer has at most {MAX_ANSWER}): refused unread")
    raw: bytes = fp.read(MAX_ANSWER + 1)
    if len(raw) > MAX_ANSWER:
        raise BmcProtocolError(f"{name}: {what}: an answer of more than {MAX_ANSWER} bytes "
                               "(the most a Redfish answer may have): refused")
    return raw


class RedfishClient(ClientBase):
    def __init__(self, base_url: str, user: str, password: str, *,
                 tls: TlsOptions | None = None, timeout: float = REQUEST_TIMEOUT,
                 call_timeout: float = CALL_TIMEOUT, system_path: str | None = None) -> None:
        """``timeout``: one request's deadline, connect to last byte; ``call_timeout``:
        one method's, all its requests (fleet.bmc.limits)."""
        super().__init__(call_timeout)
        self.base_url = base_url.rstrip("/")
        home = origin(self.base_url)
        if home is None or urllib.parse.urlsplit(self.base_url).path:
            raise BmcError(f"not a BMC address: {base_url!r} (expected http(s)://HOST[:PORT] "
                           "and nothing else; check the node's bmc address)")
        self._home = home
        self._auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self._timeout = timeout
        self._system_path = system_path
        self._clock = _Clock()
        handlers: list[urllib.request.BaseHandler] = [
            urllib.request.ProxyHandler({}),  # no $https_proxy: straight to the BMC
            _SameOriginRedirects(self.name, home), _DeadlineHTTPHandler(self._clock)]
        if home[0] == "https":
            handlers.append(_DeadlineHTTPSHandler(self._clock,
                                                  (tls or TlsOptions()).context()))
        self._opener = urllib.request.build_opener(*handlers)

    @property
    def name(self) -> str:
        return f"redfish {self.base_url}"

    # --- HTTP -----------------------------------------------------------------------

    def _request(self, method: str, path: str, body: JSON | None = None,
                 headers: dict[str, str] | None = None, ok: tuple[int, ...] = (200,)
                 ) -> _Response:
        """One exchange with the BMC, bounded by the request's and the call's deadlines;
        every failure mapped to a BmcError naming the BMC and the request."""
        what = f"{method} {bmc_text(path, 120)}"
        budget = min(self._timeout, self._deadline.left())
        if budget <= 0:
            raise BmcTimeoutError(f"{self.name}: {what}: not sent: the call's "
                                  f"{self._deadline.seconds:g}s deadline has passed")
        req = self._build(method, self._url(path), body, headers)
        status, hdrs, raw = self._exchange(req, what, budget)
        return self._answer(what, status, hdrs, raw, ok)

    def _build(self, method: str, url: str, body: JSON | None,
               headers: dict[str, str] | None) -> urllib.request.Request:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", self._auth)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        return req

    def _exchange(self, req: urllib.request.Request, what: str, budget: float
                  ) -> tuple[int, dict[str, str], bytes]:
        """The status, headers and body, read within ``budget`` seconds."""
        late = BmcTimeoutError(f"{self.name}: {what}: no answer (or not all of it) within "
                               f"{budget:.3g}s (deadlines: {self._timeout:g}s a request, "
                               f"{self._deadline.seconds:g}s a call)")
        self._clock.at = time.monotonic() + budget
        try:
            with self._opener.open(req, timeout=budget) as resp:
                hdrs = dict(resp.headers.items())
                return resp.status, hdrs, _read_body(self.name, what, resp, hdrs)
        except urllib.error.HTTPError as exc:
            return self._error_answer(exc, what, late)
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, TimeoutError):
                raise late from exc
            if isinstance(reason, ssl.SSLCertVerificationError):
                raise BmcUnreachableError(
                    f"{self.name}: TLS certificate not trusted ({reason.verify_message}); "
                    "give the BMC's CA file, or explicitly allow an insecure connection"
                ) from exc
            raise BmcUnreachableError(f"{self.name}: {what}: {reason}") from exc
        except TimeoutError as exc:
            raise late from exc
        except (OSError, HTTPException) as exc:
            raise BmcUnreachableError(f"{self.name}: {what}: {exc}") from exc

    def _error_answer(self, exc: urllib.error.HTTPError, what: str, late: BmcTimeoutError
                      ) -> tuple[int, dict[str, str], bytes]:
        """An HTTP error status is an answer too: its body, read as any other."""
        status, hdrs = exc.code, dict(exc.headers.items())
        try:
            return status, hdrs, _read_body(self.name, what, exc, hdrs)
        except TimeoutError as texc:
            raise late from texc
        except (OSError, HTTPException) as rexc:
            raise BmcUnreachableError(f"{self.name}: {what}: HTTP {status}, then "
                                      f"{rexc}") from rexc
        finally:
            exc.close()

    def _answer(self, what: str, status: int, hdrs: dict[str, str], raw: bytes,
                ok: tuple[int, ...]) -> _Response:
        """The parsed body, or the BmcError its status means."""
        parsed: JSON = {}
        if raw.strip():
            try:
                value = json.loads(raw)
            except ValueError:
                value = {"_text": bmc_text(raw)}
            parsed = value if isinstance(value, dict) else {"_value": value}
        if status in (401, 403):
            raise BmcAuthError(f"{self.name}: {what}: HTTP {status}: credentials "
                               f"rejected{_message(parsed)}")
        if status == 412:
            raise PreconditionFailedError(f"{self.name}: {what}: HTTP 412: the resource "
                                          f"changed (If-Match){_message(parsed)}")
        if status not in ok:
            raise BmcProtocolError(f"{self.name}: {what}: HTTP {status}{_message(parsed)}")
        return _Response(status, {k.lower(): v for k, v in hdrs.items()}, parsed)

    def _url(self, link: str) -> str:
        """Where a path or a link from the BMC points; refused unless it is the BMC."""
        relative = link.startswith("/") and not link.startswith("//")
        url = self.base_url + link if relative else link
        if origin(url) != self._home:
            raise BmcProtocolError(
                f"{self.name}: the BMC links to {bmc_text(repr(link), 120)}, which is not on "
                f"{self.base_url}: refused (its credentials go nowhere else)")
        return url

    # --- resources ------------------------------------------------------------------

    @bounded
    def system_path(self) -> str:
        if self._system_path is None:
            members = self._request("GET", "/redfish/v1/Systems").body.get("Members")
            if not isinstance(members, list) or not members:
                raise BmcProtocolError(f"{self.name}: /redfish/v1/Systems lists no system")
            if len(members) > 1:
                ids = ", ".join(str(m.get("@odata.id")) if isinstance(m, dict) else "?"
                                for m in members[:10])
                raise BmcProtocolError(f"{self.name}: several systems ({bmc_text(ids)}); "
                                       "name one")
            path = members[0].get("@odata.id")
            if not isinstance(path, str):
                raise BmcProtocolError(f"{self.name}: system member without @odata.id")
            self._system_path = path
        return self._system_path

    @bounded
    def get(self, link: str) -> JSON:
        """The resource at ``link`` (a path, or a link the BMC gave: refused unless it is on
        the BMC), its body as the BMC sent it: untrusted (fleet.bmc.facts reads it)."""
        return self._request("GET", link).body

    def _system(self) -> _Response:
        return self._request("GET", self.system_path())

    @bounded
    def power_state(self) -> PowerState:
        state = self._system().body.get("PowerState")
        if state in ("On", "PoweringOn"):
            return "on"
        if state in ("Off", "PoweringOff"):
            return "off"
        raise BmcProtocolError(f"{self.name}: unexpected PowerState "
                               f"{bmc_text(repr(state), 80)}")

    @bounded
    def boot_override(self) -> JSON:
        """The system's ``Boot`` object as the BMC reports it now."""
        boot = self._system().body.get("Boot")
        return boot if isinstance(boot, dict) else {}

    @bounded
    def set_pxe_once(self) -> None:
        try:
            self._patch_boot()
        except PreconditionFailedError:  # changed between our GET and PATCH: read again, once
            try:
                self._patch_boot()
            except PreconditionFailedError as exc:
                raise BmcProtocolError(f"{exc} (the ETag changed again after a fresh read; "
                                       "retried once)") from exc

    def _patch_boot(self) -> None:
        path, etag, boot = self._boot_target(self._system())
        headers = {"If-Match": etag} if etag else {}
        self._request("PATCH", path, {"Boot": pxe_once_body(boot)}, headers,
                      ok=(200, 202, 204))

    def _boot_target(self, sysr: _Response) -> tuple[str, str | None, JSON]:
        """Where to PATCH Boot: the system, or its @Redfish.Settings object when the BMC
        takes boot changes there (as sushy does), with that resource's ETag."""
        boot = sysr.body.get("Boot")
        if not isinstance(boot, dict):
            raise BmcProtocolError(f"{self.name}: {self.system_path()} has no Boot object")
        settings = sysr.body.get("@Redfish.Settings")
        if isinstance(settings, dict):
            obj = settings.get("SettingsObject")
            spath = obj.get("@odata.id") if isinstance(obj, dict) else None
            if isinstance(spath, str):
                sres = self._request("GET", spath)
                if isinstance(sres.body.get("Boot"), dict):
                    return spath, etag(self.name, spath, sres), boot
        return self.system_path(), etag(self.name, self.system_path(), sysr), boot

    def _reset(self, state: PowerState) -> str:
        return self._reset_with(RESET_WHEN_ON if state == "on" else RESET_WHEN_OFF,
                                f"a powered-{state} system")

    def _reset_with(self, prefs: tuple[str, ...], what: str) -> str:
        """POST ComputerSystem.Reset with the first of ``prefs`` the BMC allows."""
        sysr = self._system()
        action = sysr.body.get("Actions", {}).get("#ComputerSystem.Reset")
        if not isinstance(action, dict) or not isinstance(action.get("target"), str):
            raise BmcProtocolError(f"{self.name}: {self.system_path()} has no "
                                   "#ComputerSystem.Reset action")
        allowed = action.get("ResetType@Redfish.AllowableValues")
        info = action.get("@Redfish.ActionInfo")
        if allowed is None and isinstance(info, str):
            params = self._request("GET", info).body.get("Parameters", [])
            for p in params if isinstance(params, list) else []:
                if isinstance(p, dict) and p.get("Name") == "ResetType":
                    allowed = p.get("AllowableValues")
        reset_type = choose_reset(prefs, allowed if isinstance(allowed, list) else None)
        if reset_type is None:
            raise BmcProtocolError(f"{self.name}: no usable ResetType for {what} among "
                                   f"{bmc_text(allowed)}")
        self._request("POST", action["target"], {"ResetType": reset_type},
                      ok=(200, 202, 204))
        return reset_type

    @bounded
    def power_on_or_reset(self) -> str:
        state = self.power_state()
        reset_type = self._reset(state)
        return f"{'reset' if state == 'on' else 'on'} ({reset_type})"

    @bounded
    def power_on(self) -> str:
        return self._reset_with(RESET_WHEN_OFF, "powering on")

    @bounded
    def power_off(self) -> str:
        return self._reset_with(POWER_OFF, "powering off")

    @bounded
    def reset(self) -> str:
        return self._reset_with(RESET_WHEN_ON, "a reset")

    def _cycle(self) -> str:
        return self._reset_with(POWER_CYCLE, "a power cycle")


def pxe_once_body(boot: JSON) -> JSON:
    """The Boot patch: PXE, once, and UEFI where the BMC has a boot mode at all."""
    targets = boot.get("BootSourceOverrideTarget@Redfish.AllowableValues")
    if isinstance(targets, list) and "Pxe" not in targets:
        raise BmcProtocolError(f"the BMC does not allow BootSourceOverrideTarget Pxe "
                               f"(allowed: {bmc_text(targets)})")
    body: JSON = {"BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}
    modes = boot.get("BootSourceOverrideMode@Redfish.AllowableValues")
    if "BootSourceOverrideMode" in boot and (not isinstance(modes, list) or "UEFI" in modes):
        body["BootSourceOverrideMode"] = "UEFI"
    return body


def choose_reset(prefs: tuple[str, ...], allowed: list[Any] | None) -> str | None:
    if allowed is None:
        return prefs[0]
    return next((p for p in prefs if p in allowed), None)


def etag(name: str, path: str, resp: _Response) -> str | None:
    """The resource's ETag (header, else ``@odata.etag``) for If-Match; one that is not
    an entity tag is refused, naming the BMC, before it can reach a header."""
    tag = resp.headers.get("etag") or resp.body.get("@odata.etag")
    if tag is None or tag == "":
        return None
    if not isinstance(tag, str) or not _ETAG.fullmatch(tag):
        shown = bmc_text(repr(tag), 80)
        raise BmcProtocolError(f"{name}: {bmc_text(path, 120)}: the ETag {shown} is not an "
                               f"entity tag (visible ASCII, at most {ETAG_LIMIT} characters, "
                               "no white space or control characters): refused; the BMC's "
                               "firmware is faulty or it is not a BMC")
    return tag


def _message(body: JSON) -> str:
    err = body.get("error")
    if isinstance(err, dict):
        msgs = [str(err.get("message", ""))]
        for info in err.get("@Message.ExtendedInfo", []) or []:
            if isinstance(info, dict) and info.get("Message"):
                msgs.append(str(info["Message"]))
        text = bmc_text("; ".join(m for m in msgs if m))
        return f": {text}" if text else ""
    if "_text" in body:
        return f": {bmc_text(body['_text'])}"
    return ""
