"""Each node's Ethernet NICs by their name on the node (fleet/cabling/nics.py): the one
definition the lldp role's pillar and `fleet cabling` share."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fleet.cabling.nics import NETWORK_DEFAULTS, boot_nic_name, ethernet
from fleet.cabling.role import node_pillar
from fleet.inventory.load import load_inventory
from support.cli import SMALL


def test_the_boot_nic_name_is_the_network_roles() -> None:
    want = yaml.safe_load(NETWORK_DEFAULTS.read_text())["values"]["boot_nic_name"]
    assert boot_nic_name() == want == "prov"


@pytest.mark.parametrize("text", [None, "values: {}\n", "values: {boot_nic_name: 3}\n", "["])
def test_an_unreadable_network_default_is_a_clear_error(tmp_path: Path,
                                                        text: str | None) -> None:
    path = tmp_path / "defaults.yaml"
    if text is not None:
        path.write_text(text)
    with pytest.raises(RuntimeError, match=str(path)):
        boot_nic_name(path)


def test_ethernet_nics_only_the_boot_nic_renamed() -> None:
    inv = load_inventory(SMALL)
    node = inv.nodes["gpu-01"]
    assert set(node.interfaces) == {"prov", "ib", "bmc"}
    assert ethernet(node, "boot0") == ["boot0"]  # not ib (InfiniBand), not the BMC's port
    assert node_pillar(node) == {"interfaces": ["prov"], "system_name": "gpu-01"}
