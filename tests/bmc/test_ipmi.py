"""The IPMI fallback (the real ipmitool) against a fake BMC: pyghmi's fakebmc."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from fleet.bmc import BmcAuthError, BmcUnreachableError
from fleet.bmc.ipmi import IpmiClient
from support.bmcfakes import PASSWORD, USER, FakeBmcProcess, free_port, start_fake_ipmi


def client(fake: FakeBmcProcess, password: str = PASSWORD) -> IpmiClient:
    return IpmiClient("127.0.0.1", USER, password, port=fake.port, timeout=1, retries=1)


def bootparam5(fake: FakeBmcProcess) -> str:
    """The boot flags as ipmitool reads them back (``chassis bootparam get 5``)."""
    out = subprocess.run(["ipmitool", "-I", "lanplus", "-H", "127.0.0.1", "-p", str(fake.port),
                          "-U", USER, "-E", "chassis", "bootparam", "get", "5"],
                         env={**os.environ, "IPMI_PASSWORD": PASSWORD}, capture_output=True,
                         text=True, timeout=20, check=True).stdout
    return next(ln.split(":", 1)[1].strip() for ln in out.splitlines()
                if ln.startswith("Boot parameter data"))


def test_powered_off_node_gets_efi_pxe_then_on(fake_ipmi: FakeBmcProcess) -> None:
    c = client(fake_ipmi)
    assert c.power_state() == "off"
    assert c.pxe_boot_now() == "on"
    assert c.power_state() == "on"
    # 0xa0 = valid + EFI, next boot only; 0x04 = force PXE
    assert bootparam5(fake_ipmi).startswith("a004")
    assert "power reset" not in fake_ipmi.output()


def test_powered_on_node_is_reset_not_powered_on() -> None:
    fake = start_fake_ipmi(power="on")
    try:
        assert client(fake).pxe_boot_now() == "reset"
    finally:
        out = fake.output()
    assert "power reset 1" in out
    assert "power on" not in out
    assert "boot flags a004" in out  # the flags went before the reset


def test_reset_resets_a_powered_on_node_and_sets_no_boot_flags() -> None:
    """What the reinstall's boot guard sends a node hung after its install: a reset alone,
    no boot device (it boots from its disk)."""
    fake = start_fake_ipmi(power="on")
    try:
        assert client(fake).reset() == "reset"
    finally:
        out = fake.output()
    assert "power reset 1" in out
    assert "boot flags" not in out and "power on" not in out


def test_password_is_not_on_the_command_line(fake_ipmi: FakeBmcProcess,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import fleet.bmc.ipmi as ipmi

    seen: list[list[str]] = []
    real_popen = subprocess.Popen

    def spy(argv: list[str], **kw: object) -> subprocess.Popen[bytes]:
        seen.append(list(argv))
        return real_popen(argv, **kw)  # type: ignore[call-overload, no-any-return]

    monkeypatch.setattr(ipmi.subprocess, "Popen", spy)  # records argv, runs the real ipmitool
    assert client(fake_ipmi).power_state() == "off"
    assert seen and all(PASSWORD not in " ".join(a) for a in seen)
    assert "-E" in seen[0] and "-P" not in seen[0]


def test_wrong_password(fake_ipmi: FakeBmcProcess) -> None:
    with pytest.raises(BmcAuthError, match="credentials rejected"):
        client(fake_ipmi, password="wrong").power_state()


def test_bmc_down() -> None:
    c = IpmiClient("127.0.0.1", USER, PASSWORD, port=free_port(socket.SOCK_DGRAM), timeout=1,
                   retries=1)
    with pytest.raises(BmcUnreachableError, match="does not answer"):
        c.power_state()
