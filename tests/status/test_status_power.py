"""``fleet status``'s power column through ``fleet power``'s pool and per-node deadline:
FAKE Redfish BMCs (sushy-tools' emulator, tests/support/bmcfakes.py), one on and one off,
and a FAKE hung BMC (accepts, never answers: tests/ops/helpers.py) that costs its node
the deadline and holds no other. The repository's inventory (tbox nodes)."""

from __future__ import annotations

import time
from pathlib import Path

from ops.helpers import INVENTORY, SilentBmc, secrets
from status.site import make_site, nodes
from support.bmcfakes import start_fake_redfish

DEADLINE = 4.0


def test_power_on_off_and_a_hung_bmc_within_its_deadline(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    for n in ("tbox-001", "tbox-002", "tbox-003"):
        site.key(n, "minions")
    (tmp_path / "on").mkdir()
    (tmp_path / "off").mkdir()
    on = start_fake_redfish(tmp_path / "on", power="On", system="tbox-001")
    off = start_fake_redfish(tmp_path / "off", power="Off", system="tbox-002")
    hung = SilentBmc()
    try:
        addresses = (f"tbox-001=127.0.0.1:{on.port},tbox-002=127.0.0.1:{off.port},"
                     f"tbox-003=127.0.0.1:{hung.port}")
        t0 = time.monotonic()
        rc, doc, err = site.run(
            "tbox-[001-003]", inventory=INVENTORY,
            power=["--secrets", str(secrets(tmp_path)), "--bmc-scheme", "http",
                   "--bmc-address", addresses, "--deadline", str(DEADLINE),
                   "--bmc-timeout", "30"])
        wall = time.monotonic() - t0
    finally:
        on.stop()
        off.stop()
        hung.close()
    assert rc == 5, err
    got = nodes(doc)
    assert got["tbox-001"]["power"] == {"state": "on", "error": None}
    assert "powered off" not in got["tbox-001"]["problems"]
    assert got["tbox-002"]["power"] == {"state": "off", "error": None}
    assert "powered off" in got["tbox-002"]["problems"]
    assert got["tbox-003"]["power"]["state"] is None
    assert got["tbox-003"]["problems"][0] == (
        f"BMC: no answer within {DEADLINE:g}s (--deadline); what was asked may still "
        "reach its BMC")
    assert doc["sources"]["power"]["seconds"] < DEADLINE + 10  # the deadline, + slack
    assert wall < 120


def test_no_secrets_store_is_the_power_column_unknown_not_each_node(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    _rc, doc, _err = site.run("tbox-[001-002]", inventory=INVENTORY,
                              power=["--secrets", str(tmp_path / "none"), "--deadline", "5"])
    assert doc["sources"]["power"]["error"] == (
        f"{tmp_path / 'none/bmc'}: no such directory: the BMC passwords are not here "
        "(--secrets DIR, or --no-power)")
    assert all("power" in n["unknown"] for n in doc["nodes"])
