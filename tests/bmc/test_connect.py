"""A node's BMC client from the inventory and the secrets store."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.bmc import BmcError
from fleet.bmc.connect import BmcOptions, bmc_address, client_for
from fleet.bmc.ipmi import IpmiClient
from fleet.bmc.redfish import RedfishClient
from fleet.inventory.load import load_inventory
from support.bmcfakes import PASSWORD, FakeBmcProcess

ROOT = Path(__file__).resolve().parents[2]


def _secret(tmp: Path, name: str, mode: int = 0o600) -> Path:
    (tmp / "bmc").mkdir(mode=0o700, exist_ok=True)
    path = tmp / "bmc" / name
    path.write_text(PASSWORD + "\n")
    path.chmod(mode)
    return path


def test_address_protocol_and_secret_from_the_inventory(tmp_path: Path) -> None:
    node = load_inventory(ROOT / "inventory.yaml").nodes["tbox-001"]
    _secret(tmp_path, node.profile.bmc.password_secret)
    c = client_for(node, BmcOptions(secrets_dir=tmp_path))
    assert isinstance(c, RedfishClient)
    assert c.base_url == f"https://{bmc_address(node)}" == "https://10.0.1.1"


def test_ipmi_fallback_through_the_fake_ipmi_bmc(tmp_path: Path,
                                                 fake_ipmi: FakeBmcProcess) -> None:
    node = load_inventory(ROOT / "inventory.yaml").nodes["tbox-001"]
    _secret(tmp_path, node.profile.bmc.password_secret)
    c = client_for(node, BmcOptions(secrets_dir=tmp_path, protocol="ipmi",
                                    address=f"127.0.0.1:{fake_ipmi.port}", timeout=3))
    assert isinstance(c, IpmiClient)
    assert c.power_state() == "off"  # tbox's user is "admin", as the fake's


def test_secret_missing_or_readable_by_others(tmp_path: Path) -> None:
    node = load_inventory(ROOT / "inventory.yaml").nodes["tbox-001"]
    with pytest.raises(BmcError, match="no such BMC secret"):
        client_for(node, BmcOptions(secrets_dir=tmp_path))
    _secret(tmp_path, node.profile.bmc.password_secret, 0o644)
    with pytest.raises(BmcError, match="mode 0644 lets others read it"):
        client_for(node, BmcOptions(secrets_dir=tmp_path))


def test_an_address_override_cannot_send_the_password_elsewhere(tmp_path: Path) -> None:
    """``user@host`` in an address makes urllib connect to ``host``: refused."""
    node = load_inventory(ROOT / "inventory.yaml").nodes["tbox-001"]
    _secret(tmp_path, node.profile.bmc.password_secret)
    with pytest.raises(BmcError, match=r"not a BMC address: 'https://10\.0\.1\.1@127\.0\.0\.1"):
        client_for(node, BmcOptions(secrets_dir=tmp_path, address="10.0.1.1@127.0.0.1:8443"))
