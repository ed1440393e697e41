"""The IPMI fallback: ``ipmitool -I lanplus``, the password through the environment (``-E``),
never on the command line (where every local user could read it in the process list).

    chassis power status
    chassis bootdev pxe options=efiboot     # next boot only, UEFI
    chassis power reset | chassis power on  # reset when on, on when off
    chassis power off | chassis power cycle  # fleet power, and the reinstall's power-off

The boot flags expire about 60 s after they are set unless a power command follows, so
``pxe_boot_now`` sends both back to back.

ipmitool prints what the BMC answered, so it is held to the same bounds as a Redfish
answer (fleet.bmc.limits): each run ends within its budget and what is left of the call's
deadline (then it is killed), at most MAX_ANSWER bytes of its stdout and stderr together
are read (a run printing more is killed and refused), and what it printed reaches a
message only through bmc_text.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import time

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
from fleet.bmc.limits import CALL_TIMEOUT, MAX_ANSWER, bounded

# ipmitool -v says why a session failed; these lines mean the BMC answered and refused us.
_AUTH_PATTERNS = ("RAKP 2 HMAC is invalid", "Unauthorized name", "invalid user name",
                  "Invalid user name", "RAKP 2 message indicates an error",
                  "Insufficient privilege level", "Invalid role")
_UNREACHABLE_PATTERNS = ("Get Auth Capabilities error", "No response from remote controller",
                         "no response from RAKP 1 message", "Address lookup")
_POWER = re.compile(r"Chassis Power is (on|off)")


class _TooMuchError(Exception):
    pass


def capture(argv: list[str], env: dict[str, str], timeout: float,
            cap: int = MAX_ANSWER) -> tuple[int, bytes, bytes]:
    """Run ``argv``: its exit status, stdout and stderr. TimeoutError when it has not
    ended within ``timeout`` seconds, _TooMuchError when it printed more than ``cap``
    bytes (both streams together); either way its whole session is killed first."""
    deadline = time.monotonic() + timeout
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = bytearray(), bytearray()
    into = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    try:
        with selectors.DefaultSelector() as sel:
            for f in (proc.stdout, proc.stderr):
                sel.register(f, selectors.EVENT_READ)
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                for key, _ in sel.select(left):
                    chunk = os.read(key.fd, 65536)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    into[key.fd] += chunk
                    if len(out) + len(err) > cap:
                        raise _TooMuchError
        rc = proc.wait(timeout=max(deadline - time.monotonic(), 0.01))
    except subprocess.TimeoutExpired as exc:
        _kill(proc)
        raise TimeoutError from exc
    except BaseException:
        _kill(proc)
        raise
    finally:
        proc.stdout.close()
        proc.stderr.close()
    return rc, bytes(out), bytes(err)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


class IpmiClient(ClientBase):
    def __init__(self, host: str, user: str, password: str, *, port: int = 623,
                 timeout: int = 2, retries: int = 2, ipmitool: str = "ipmitool",
                 call_timeout: float = CALL_TIMEOUT) -> None:
        """``timeout`` and ``retries``: ipmitool's per message (-N, -R); a run may take
        what they allow a session, at most what is left of ``call_timeout``, one
        method's deadline (fleet.bmc.limits)."""
        super().__init__(call_timeout)
        self.host, self.port, self.user = host, port, user
        self._password = password
        self._timeout, self._retries = timeout, retries
        self._ipmitool = ipmitool

    @property
    def name(self) -> str:
        return f"ipmi {self.host}:{self.port}"

    def _run(self, *args: str) -> str:
        what = f"{self.name}: ipmitool {' '.join(args)}"
        exe = shutil.which(self._ipmitool)
        if exe is None:
            raise BmcError(f"{self.name}: {self._ipmitool} not found (apt-get install ipmitool)")
        argv = [exe, "-I", "lanplus", "-H", self.host, "-p", str(self.port), "-U", self.user,
                "-E", "-N", str(self._timeout), "-R", str(self._retries), "-v", *args]
        env = {k: v for k, v in os.environ.items() if k != "IPMI_PASSWORD"}
        env["IPMI_PASSWORD"] = self._password
        # a session's messages, each with its retries, and the process's start
        budget = min(float((self._timeout * (self._retries + 1)) * 6 + 10),
                     self._deadline.left())
        if budget <= 0:
            raise BmcTimeoutError(f"{what}: not run: the call's {self._deadline.seconds:g}s "
                                  "deadline has passed")
        try:
            rc, raw_out, raw_err = capture(argv, env, budget)
        except TimeoutError as exc:
            raise BmcTimeoutError(f"{what}: no answer within {budget:.3g}s (killed)") from exc
        except _TooMuchError as exc:
            raise BmcProtocolError(f"{what}: printed more than {MAX_ANSWER} bytes (the most "
                                   "a BMC's answer may make it print): killed, refused"
                                   ) from exc
        except OSError as exc:
            raise BmcError(f"{what}: cannot run {exe}: {exc}") from exc
        stdout = raw_out.decode("utf-8", errors="replace")
        if rc != 0:
            err = raw_err.decode("utf-8", errors="replace") + stdout
            last = bmc_text(next((ln for ln in reversed(err.splitlines()) if ln.strip()),
                                 f"exit {rc}"))
            if any(p in err for p in _AUTH_PATTERNS):
                raise BmcAuthError(f"{what}: credentials rejected ({last})")
            if any(p in err for p in _UNREACHABLE_PATTERNS):
                raise BmcUnreachableError(f"{what}: BMC does not answer ({last})")
            raise BmcProtocolError(f"{what}: {last}")
        return stdout

    @bounded
    def power_state(self) -> PowerState:
        out = self._run("chassis", "power", "status")
        m = _POWER.search(out)
        if m is None:
            raise BmcProtocolError(f"{self.name}: unexpected power status output "
                                   f"{bmc_text(repr(out))}")
        return "on" if m.group(1) == "on" else "off"

    @bounded
    def set_pxe_once(self) -> None:
        self._run("chassis", "bootdev", "pxe", "options=efiboot")

    def _power(self, action: str) -> str:
        """``chassis power ACTION``; the action sent."""
        self._run("chassis", "power", action)
        return action

    @bounded
    def power_on_or_reset(self) -> str:
        return self._power("reset" if self.power_state() == "on" else "on")

    @bounded
    def power_on(self) -> str:
        return self._power("on")

    @bounded
    def power_off(self) -> str:
        return self._power("off")

    @bounded
    def reset(self) -> str:
        return self._power("reset")

    def _cycle(self) -> str:
        return self._power("cycle")
