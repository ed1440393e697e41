"""The IPMI fallback: ``ipmitool -I lanplus``, the password through the environment (``-E``),
never on the command line (where every local user could read it in the process list).

    chassis power status
    chassis bootdev pxe options=efiboot     # next boot only, UEFI
    chassis power reset | chassis power on  # reset when on, on when off
    chassis power off | chassis power cycle  # fleet power, and the reinstall's power-off

The boot flags expire about 60 s after they are set unless a power command follows, so
``pxe_boot_now`` sends both back to back.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

from fleet.bmc.base import BmcAuthError, BmcError, BmcProtocolError, BmcUnreachableError, PowerState

# ipmitool -v says why a session failed; these lines mean the BMC answered and refused us.
_AUTH_PATTERNS = ("RAKP 2 HMAC is invalid", "Unauthorized name", "invalid user name",
                  "Invalid user name", "RAKP 2 message indicates an error",
                  "Insufficient privilege level", "Invalid role")
_UNREACHABLE_PATTERNS = ("Get Auth Capabilities error", "No response from remote controller",
                         "no response from RAKP 1 message", "Address lookup")
_POWER = re.compile(r"Chassis Power is (on|off)")


class IpmiClient:
    def __init__(self, host: str, user: str, password: str, *, port: int = 623,
                 timeout: int = 2, retries: int = 2, ipmitool: str = "ipmitool") -> None:
        self.host, self.port, self.user = host, port, user
        self._password = password
        self._timeout, self._retries = timeout, retries
        self._ipmitool = ipmitool

    @property
    def name(self) -> str:
        return f"ipmi {self.host}:{self.port}"

    def _run(self, *args: str) -> str:
        exe = shutil.which(self._ipmitool)
        if exe is None:
            raise BmcError(f"{self.name}: {self._ipmitool} not found (apt-get install ipmitool)")
        argv = [exe, "-I", "lanplus", "-H", self.host, "-p", str(self.port), "-U", self.user,
                "-E", "-N", str(self._timeout), "-R", str(self._retries), "-v", *args]
        env = {k: v for k, v in os.environ.items() if k != "IPMI_PASSWORD"}
        env["IPMI_PASSWORD"] = self._password
        budget = (self._timeout * (self._retries + 1)) * 6 + 10
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, text=True,
                                  timeout=budget, check=False)
        except subprocess.TimeoutExpired as exc:
            raise BmcUnreachableError(f"{self.name}: ipmitool {' '.join(args)}: no answer within "
                                 f"{budget}s") from exc
        if proc.returncode != 0:
            err = proc.stderr + proc.stdout
            last = next((ln.strip() for ln in reversed(err.splitlines()) if ln.strip()),
                        f"exit {proc.returncode}")
            what = f"{self.name}: ipmitool {' '.join(args)}"
            if any(p in err for p in _AUTH_PATTERNS):
                raise BmcAuthError(f"{what}: credentials rejected ({last})")
            if any(p in err for p in _UNREACHABLE_PATTERNS):
                raise BmcUnreachableError(f"{what}: BMC does not answer ({last})")
            raise BmcProtocolError(f"{what}: {last}")
        return proc.stdout

    def power_state(self) -> PowerState:
        out = self._run("chassis", "power", "status")
        m = _POWER.search(out)
        if m is None:
            raise BmcProtocolError(f"{self.name}: unexpected power status output {out!r}")
        return "on" if m.group(1) == "on" else "off"

    def set_pxe_once(self) -> None:
        self._run("chassis", "bootdev", "pxe", "options=efiboot")

    def power_on_or_reset(self) -> str:
        if self.power_state() == "on":
            self._run("chassis", "power", "reset")
            return "reset"
        self._run("chassis", "power", "on")
        return "on"

    def pxe_boot_now(self) -> str:
        self.set_pxe_once()
        return self.power_on_or_reset()

    def power_on(self) -> str:
        self._run("chassis", "power", "on")
        return "on"

    def power_off(self) -> str:
        self._run("chassis", "power", "off")
        return "off"

    def reset(self) -> str:
        self._run("chassis", "power", "reset")
        return "reset"

    def power_cycle(self) -> str:
        if self.power_state() == "off":
            return self.power_on()
        self._run("chassis", "power", "cycle")
        return "cycle"
