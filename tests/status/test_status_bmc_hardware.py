"""The BMCs' hardware facts against the inventory in ``fleet status`` (the collector's
bmc_hardware source: ``--collect --once`` fills the cache, ``fleet status`` reads it) and
``fleet node show --bmc`` (both values side by side), through the real command line:
FAKE Redfish BMCs (sushy-tools' emulator with the FAKE hardware's parts,
tests/bmc/fake_redfish_parts.py), tbox-001's as its inventory entry says, tbox-002's with
a DIMM pulled, its board swapped (another serial) and its boot NIC changed. The site's
inventory; the BMCs' addresses overridden to the fakes (never the inventory's)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from bmc.test_redfish_facts import OTHER_NIC, _parts
from discover.sites import ROOT
from ops.helpers import INVENTORY, secrets
from status.site import make_site, nodes
from support.bmcfakes import start_fake_redfish

GOOD, BAD = "tbox-001", "tbox-002"


def test_collected_drift_in_status_and_both_values_in_node_show(tmp_path: Path) -> None:
    from fleet.inventory.load import parse

    inv = parse(INVENTORY.read_text(encoding="utf-8"), str(INVENTORY))
    site = make_site(tmp_path)
    bad_parts = _parts(inv.nodes[BAD])
    bad_parts["dimms"][0] = 0
    bad_parts |= {"serial": "TBP000SWAPPED", "macs": [OTHER_NIC]}
    fakes = {}
    for name, parts in ((GOOD, _parts(inv.nodes[GOOD])), (BAD, bad_parts)):
        (tmp_path / name).mkdir()
        fakes[name] = start_fake_redfish(tmp_path / name, power="On", system=name,
                                         hardware=parts)
    store = secrets(tmp_path)
    bmc = ["--secrets", str(store), "--bmc-scheme", "http", "--bmc-address",
           ",".join(f"{n}=127.0.0.1:{f.port}" for n, f in fakes.items())]
    try:
        rc, doc, err = site.run("--collect", "--once", f"{GOOD},{BAD}", inventory=INVENTORY,
                                power=bmc, live=False)
        assert rc == 0 and doc["failed"] == {}, (doc, err)
        env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
        show = subprocess.run(
            [str(site.bin / "python"), "-m", "fleet", "node", "show", f"{GOOD},{BAD}", "--bmc",
             *bmc, "--burnin-results", str(tmp_path / "none"), "-i", str(INVENTORY)],
            env=env, capture_output=True, text=True, timeout=120, check=False)
    finally:
        for f in fakes.values():
            f.stop()
    rc, doc, err = site.run(f"{GOOD},{BAD}", inventory=INVENTORY, power=bmc, live=False)
    assert rc == 5, err
    got = nodes(doc)
    assert doc["sources"]["bmc_hardware"]["error"] is None
    assert got[GOOD]["bmc_hardware"]["drifts"] == []
    assert not [p for p in got[GOOD]["problems"] if "drift" in p]
    node = inv.nodes[BAD]
    gb = node.profile.memory_gb
    assert [p for p in got[BAD]["problems"] if "drift" in p] == [
        f"hardware drift (BMC): serial: inventory {node.serial}, found TBP000SWAPPED",
        f"hardware drift (BMC): mac: inventory {node.mac}, found not among {OTHER_NIC}",
        f"hardware drift (BMC): memory: inventory {gb} GB (profile {node.profile_name}), "
        f"found {gb - 32} GB"]
    assert got[BAD]["bmc_hardware"]["observed"]["dimms"] == gb // 32 - 1
    assert show.returncode == 0, show.stderr
    out = show.stdout
    assert f"           !serial           {node.serial:<28}TBP000SWAPPED" in out, out
    assert f"           !memory           {f'{gb} GB':<28}{gb - 32} GB in {gb // 32 - 1} " \
           "DIMM(s)" in out, out
    assert f"            serial           {inv.nodes[GOOD].serial:<28}" \
           f"{inv.nodes[GOOD].serial}" in out, out
    assert "  firmware   BMC: 1.00" in out



def test_the_cache_keeps_drifts_as_they_were() -> None:
    from fleet.discover.drift import Drift
    from fleet.status import codec
    from fleet.status.sources import BmcHardware

    value = {"n1": BmcHardware([Drift("serial", "A", "B")], {"dimms": 11}),
             "n2": BmcHardware([], None, "redfish http://x: no answer")}
    assert codec.decode("bmc_hardware", codec.encode("bmc_hardware", value)) == value


@pytest.mark.parametrize("bad", [
    {"drifts": [{"fact": 1, "inventory": "A", "found": "B"}], "observed": None,
     "error": None},
    {"drifts": [], "observed": ["x"], "error": None},
    {"drifts": [], "observed": None},
], ids=["fact-not-text", "observed-not-object", "no-error-key"])
def test_the_cache_refuses_what_the_collector_never_wrote(bad: dict[str, object]) -> None:
    from fleet.status import codec

    with pytest.raises(ValueError, match=r"not a string|not an object|not a bmc_hardware"):
        codec.decode("bmc_hardware", {"n1": bad})


def test_the_source_asks_redfish_bmcs_only_of_installed_nodes(tmp_path: Path) -> None:
    """One FAKE BMC for tbox-001; tbox-002's BMC cannot be reached (its error is its value,
    not the source's), tbox-003's is IPMI (no such facts: no value), and a planned node's
    BMC is never asked."""
    from fleet.bmc.base import BmcUnreachableError
    from fleet.bmc.ipmi import IpmiClient
    from fleet.bmc.redfish import RedfishClient
    from fleet.inventory.load import parse
    from fleet.status.sources import bmc_hardware
    from support.bmcfakes import PASSWORD, USER

    inv = parse(INVENTORY.read_text(encoding="utf-8"), str(INVENTORY))
    planned = "tbox-004"
    object.__setattr__(inv.nodes[planned], "state", "planned")
    fake = start_fake_redfish(tmp_path, power="On", system=GOOD,
                              hardware=_parts(inv.nodes[GOOD]))
    asked: list[str] = []

    def client_for(name: str) -> object:
        asked.append(name)
        if name == GOOD:
            return RedfishClient(fake.url, USER, PASSWORD)
        if name == BAD:
            raise BmcUnreachableError(f"redfish https://{name}-bmc: connection refused")
        return IpmiClient("127.0.0.1", USER, PASSWORD, port=9)

    try:
        got = bmc_hardware(inv, [GOOD, BAD, "tbox-003", planned], client_for, parallel=2)
    finally:
        fake.stop()
    assert sorted(asked) == [GOOD, BAD, "tbox-003"]
    assert set(got) == {GOOD, BAD}
    assert got[GOOD].drifts == [] and got[GOOD].observed is not None
    assert got[BAD].error == f"redfish https://{BAD}-bmc: connection refused"
