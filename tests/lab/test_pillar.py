"""Pillar isolation: a node sees its own node data and only the secrets targeted at it.

Salt 3008 masks pillar values in output by default: every query here passes unmask=True
(the minion's own view, which is what must not contain the data)."""

from __future__ import annotations

import json

import pytest
import yaml
from labtools import Lab, node_ids

STORAGE = node_ids("mkv.volume")


def munge_key(lab: Lab) -> str:
    """The secret as the lab's secrets store has it (never printed)."""
    text = (lab.paths.secrets / "pillar" / "secrets" / "munge.sls").read_text()
    key: str = yaml.safe_load(text)["secrets"]["munge_key"]
    assert key
    return key


@pytest.mark.parametrize("node", STORAGE)
def test_storage_node_sees_no_secrets(lab: Lab, node: str) -> None:
    pillar = lab.salt(node, "pillar.items", "unmask=True", "-t", "30")[node]
    assert isinstance(pillar, dict), pillar
    assert "secrets" not in pillar
    dump = json.dumps(pillar)
    assert "munge" not in dump.lower()
    leaked = munge_key(lab) in dump  # a bool: pytest must not print the values
    assert not leaked, f"the munge key is in {node}'s pillar"
    # the lab pillar gives every node slurm:lookup (role parameters); the cluster's
    # slurm pillar (controller, nodes, partitions) goes to Slurm nodes only
    assert not {"controller", "nodes", "partitions"} & set(pillar.get("slurm", {}))


@pytest.mark.parametrize("node", STORAGE)
def test_node_sees_only_its_own_node_data(lab: Lab, node: str) -> None:
    pillar = lab.salt(node, "pillar.items", "unmask=True", "-t", "30")[node]
    assert pillar["node"]["hostname"] == node
    dump = json.dumps(pillar)
    for other in lab.nodes:
        if other.hostname == node:
            continue
        # the hosts table names every node; nothing else of another node may be there
        assert other.mac.lower() not in dump.lower(), f"{other.hostname}'s MAC on {node}"
        serial = lab.plan.inventory.nodes[other.hostname].serial
        if serial:
            assert serial not in dump, f"{other.hostname}'s serial on {node}"


@pytest.mark.parametrize("node", STORAGE)
def test_minion_cannot_fetch_other_pillar(lab: Lab, node: str) -> None:
    """pillar.get of another node's or a secret's key, from the minion itself."""
    got = lab.salt(node, "pillar.get", "secrets", "unmask=True", "-t", "30")[node]
    assert got in ("", None, {})
    # the only node data this minion gets is its own
    raw = lab.salt(node, "pillar.item", "node", "unmask=True", "-t", "30")[node]["node"]
    assert raw["hostname"] == node


def test_slurm_nodes_get_the_munge_secret(lab: Lab) -> None:
    """The positive control: the same query on a Slurm node does return the key."""
    node = node_ids("slurm.compute")[0]
    pillar = lab.salt(node, "pillar.items", "unmask=True", "-t", "30")[node]
    assert "secrets" in pillar, sorted(pillar)
    # never print a secret: compare, and name only keys in the messages
    same = pillar["secrets"].get("munge_key") == munge_key(lab)  # a bool, see above
    assert same, f"{node}'s secrets:munge_key differs; keys: {sorted(pillar['secrets'])}"
