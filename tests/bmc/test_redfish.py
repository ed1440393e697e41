"""The Redfish client against a fake BMC: sushy-tools' emulator (fake driver)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from fleet.bmc import BmcAuthError, BmcError, BmcProtocolError, BmcUnreachableError
from fleet.bmc.redfish import (
    RESET_WHEN_OFF,
    RESET_WHEN_ON,
    RedfishClient,
    TlsOptions,
    choose_reset,
    pxe_once_body,
)
from support.bmcfakes import (
    PASSWORD,
    USER,
    Catcher,
    FakeBmcProcess,
    free_port,
    start_fake_redfish,
)


def client(fake: FakeBmcProcess, password: str = PASSWORD, **kw: object) -> RedfishClient:
    return RedfishClient(fake.url, USER, password, timeout=5, **kw)  # type: ignore[arg-type]


def patches(fake: FakeBmcProcess) -> list[dict[str, object]]:
    return [r for r in fake.control("GET", "/_fake/requests") if r["method"] == "PATCH"]


def test_discovers_the_system_and_reads_power(fake_redfish: FakeBmcProcess) -> None:
    c = client(fake_redfish)
    assert c.system_path() == "/redfish/v1/Systems/27946b59-9e44-4fa7-8e91-f3527a1ef094"
    assert c.power_state() == "off"


def test_pxe_once_uefi_with_if_match_then_power_on(fake_redfish: FakeBmcProcess) -> None:
    c = client(fake_redfish)
    assert c.boot_override()["BootSourceOverrideTarget"] == "Hdd"
    action = c.pxe_boot_now()
    assert action == "on (On)"  # powered off: "On", never a restart
    assert c.boot_override()["BootSourceOverrideTarget"] == "Pxe"
    [patch] = patches(fake_redfish)
    # The emulator ignores BootSourceOverrideEnabled (always "Continuous"), so what proves
    # "Once" is the request the fake received.
    assert patch["body"] == {"Boot": {"BootSourceOverrideTarget": "Pxe",
                                      "BootSourceOverrideEnabled": "Once",
                                      "BootSourceOverrideMode": "UEFI"}}
    assert patch["if_match"] == 'W/"1"'
    resets = [r for r in fake_redfish.control("GET", "/_fake/requests")
              if r["method"] == "POST"]
    assert [r["body"] for r in resets] == [{"ResetType": "On"}]


def test_powered_on_system_gets_force_restart(fake_redfish_on: FakeBmcProcess) -> None:
    c = client(fake_redfish_on)
    assert c.power_state() == "on"
    assert c.power_on_or_reset() == "reset (ForceRestart)"
    # The emulator's fake driver takes the system down at once and up again 1-11 s later.
    assert c.power_state() == "off"
    # /_fake/pending names the change held back (the lab's reinstall rig waits on it)
    assert fake_redfish_on.control("GET", "/_fake/pending")["pending_power"][
        "power_state"] == "ForceRestart"
    deadline = time.monotonic() + 30
    while fake_redfish_on.control("GET", "/_fake/pending")["pending_power"] is not None:
        assert time.monotonic() < deadline, "the fake's restart never completed"
        time.sleep(0.5)
    assert c.power_state() == "on"


def test_stale_etag_is_retried_once(fake_redfish: FakeBmcProcess) -> None:
    fake_redfish.control("POST", "/_fake/conflicts?n=1")
    c = client(fake_redfish)
    c.set_pxe_once()
    sent = patches(fake_redfish)
    assert len(sent) == 2  # the 412, then the retry after a fresh GET
    assert sent[0]["if_match"] != sent[1]["if_match"]
    assert c.boot_override()["BootSourceOverrideTarget"] == "Pxe"


def test_etag_changing_twice_fails_clearly(fake_redfish: FakeBmcProcess) -> None:
    fake_redfish.control("POST", "/_fake/conflicts?n=2")
    with pytest.raises(BmcProtocolError, match=r"HTTP 412.*retried once"):
        client(fake_redfish).set_pxe_once()
    assert len(patches(fake_redfish)) == 2  # exactly one retry
    assert client(fake_redfish).boot_override()["BootSourceOverrideTarget"] == "Hdd"


def test_wrong_password(fake_redfish: FakeBmcProcess) -> None:
    with pytest.raises(BmcAuthError, match=r"HTTP 401: credentials rejected"):
        client(fake_redfish, password="wrong").power_state()


def test_bmc_down_connection_refused() -> None:
    c = RedfishClient(f"http://127.0.0.1:{free_port()}", USER, PASSWORD, timeout=2)
    with pytest.raises(BmcUnreachableError, match="Connection refused"):
        c.power_state()


def test_bmc_not_answering_times_out() -> None:
    with socket.socket() as s:  # accepts TCP connections (backlog) but never answers
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        c = RedfishClient(f"http://127.0.0.1:{s.getsockname()[1]}", USER, PASSWORD,
                          timeout=0.5)
        t0 = time.monotonic()
        with pytest.raises(BmcUnreachableError, match=r"timed out|no answer"):
            c.power_state()
        assert time.monotonic() - t0 < 5


def test_tls_self_signed(tmp_path: Path) -> None:
    fake = start_fake_redfish(tmp_path, tls=True)
    try:
        with pytest.raises(BmcUnreachableError, match="certificate not trusted"):
            client(fake).power_state()
        assert client(fake, tls=TlsOptions(ca_file=fake.ca_file)).power_state() == "off"
        assert client(fake, tls=TlsOptions(insecure=True)).power_state() == "off"
    finally:
        fake.stop()


def test_boot_body_follows_what_the_bmc_allows() -> None:
    assert pxe_once_body({"BootSourceOverrideTarget": "Hdd"}) == {
        "BootSourceOverrideTarget": "Pxe", "BootSourceOverrideEnabled": "Once"}
    assert "BootSourceOverrideMode" not in pxe_once_body(
        {"BootSourceOverrideMode": "Legacy",
         "BootSourceOverrideMode@Redfish.AllowableValues": ["Legacy"]})
    with pytest.raises(BmcProtocolError, match="does not allow"):
        pxe_once_body({"BootSourceOverrideTarget@Redfish.AllowableValues": ["Hdd", "Cd"]})


def test_reset_type_follows_allowable_values() -> None:
    assert choose_reset(RESET_WHEN_ON, None) == "ForceRestart"
    assert choose_reset(RESET_WHEN_ON, ["On", "ForceOff", "PowerCycle"]) == "PowerCycle"
    assert choose_reset(RESET_WHEN_OFF, ["ForceOn", "ForceRestart"]) == "ForceOn"
    assert choose_reset(RESET_WHEN_OFF, ["ForceRestart"]) is None


# --- the credentials go to the BMC only ------------------------------------------------------

SYSTEMS = "/redfish/v1/Systems"


def test_a_redirect_to_another_origin_is_not_followed(fake_redfish: FakeBmcProcess,
                                                       catcher: Catcher) -> None:
    """The BMC redirects the system list elsewhere: refused, naming the target, and nothing
    reaches it; a redirect to the BMC itself (an absolute URL) is followed."""
    fake_redfish.redirect(SYSTEMS, catcher.url + SYSTEMS)
    with pytest.raises(BmcProtocolError, match=rf"HTTP 307 redirect to '{catcher.url}"
                                               r"/redfish/v1/Systems' refused"):
        client(fake_redfish).power_state()
    assert catcher.requests == []
    fake_redfish.redirect(SYSTEMS, fake_redfish.url + SYSTEMS, status=302)
    assert client(fake_redfish).power_state() == "off"
    assert {"method": "GET", "path": SYSTEMS, "redirected_to": fake_redfish.url + SYSTEMS} \
        in fake_redfish.control("GET", "/_fake/requests")


@pytest.mark.parametrize("to", ["same port", "other port"])
def test_a_redirect_from_https_to_http_is_not_followed(tmp_path: Path, catcher: Catcher,
                                                       to: str) -> None:
    fake = start_fake_redfish(tmp_path, tls=True)
    try:
        where = (fake.url.replace("https:", "http:") if to == "same port" else catcher.url)
        fake.redirect(SYSTEMS, where + SYSTEMS)
        with pytest.raises(BmcProtocolError, match=r"redirect to 'http://127\.0\.0\.1:\d+"
                                                   r"/redfish/v1/Systems' refused"):
            client(fake, tls=TlsOptions(ca_file=fake.ca_file)).power_state()
    finally:
        fake.stop()
    assert catcher.requests == []


@pytest.mark.parametrize("key", ["@odata.id", "target"])
def test_absolute_links_elsewhere_are_refused(fake_redfish: FakeBmcProcess,
                                              catcher: Catcher, key: str) -> None:
    """The BMC's links (the system's @odata.id, the reset action's target) made absolute
    and pointing at another origin: refused before any request goes there; absolute links
    to the BMC itself work."""
    fake_redfish.relink(catcher.url, [key])
    with pytest.raises(BmcProtocolError, match=rf"links to '{catcher.url}/redfish/v1/"
                                               r"Systems/[^']+', which is not on"):
        client(fake_redfish).pxe_boot_now()
    assert catcher.requests == []
    fake_redfish.relink(fake_redfish.url, ["@odata.id", "target"])
    assert client(fake_redfish).pxe_boot_now() == "on (On)"


def test_no_proxy_from_the_environment(fake_redfish: FakeBmcProcess, catcher: Catcher,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY"):
        monkeypatch.setenv(var, catcher.url)
    for var in ("no_proxy", "NO_PROXY"):
        monkeypatch.delenv(var, raising=False)
    assert client(fake_redfish).power_state() == "off"
    assert catcher.requests == []


@pytest.mark.parametrize("base", ["https://10.0.1.1@127.0.0.1:8443", "https://10.0.1.1/x",
                                  "ftp://10.0.1.1", "https://10.0.1.1 x"])
def test_a_base_url_with_more_than_scheme_host_and_port_is_refused(base: str) -> None:
    with pytest.raises(BmcError, match="not a BMC address"):
        RedfishClient(base, USER, PASSWORD)


def test_reset_restarts_a_powered_on_system_and_leaves_its_boot_alone(
        fake_redfish_on: FakeBmcProcess) -> None:
    """What the reinstall's boot guard sends a node hung after its install: a reset alone,
    no boot override (it boots from its disk)."""
    assert client(fake_redfish_on).reset() == "ForceRestart"
    posts = [r for r in fake_redfish_on.control("GET", "/_fake/requests")
             if r["method"] == "POST"]
    assert [r["body"] for r in posts] == [{"ResetType": "ForceRestart"}]
    assert patches(fake_redfish_on) == []
