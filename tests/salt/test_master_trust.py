"""Salt's side of the install identity, on every node's rendered
highstate: the master listens on its provisioning address only, never auto-accepts, and
every minion's config pins the master's key when the inventory recorded it."""

from __future__ import annotations

from typing import Any

import yaml

from support import harness

MASTER_STATE = "provisioning-master-file-managed-conf"
MINION_STATE = "base-minion-file-managed-conf"


def test_the_master_binds_to_its_provisioning_address(rendered: dict[str, Any]) -> None:
    renderer = rendered["renderer"]
    heads = [r for (n, o), r in rendered["results"].items() if o == harness.DEFAULT_OS
             and "provisioning" in renderer.pillar(n)["node"]["roles"]]
    assert heads
    for head in heads:
        conf = yaml.safe_load(head.files[MASTER_STATE])
        nics = renderer.pillar(head.node)["node"]["interfaces"].values()
        boot = [nic["address"] for nic in nics if nic.get("boot")]
        assert conf["interface"] == boot[0] and conf["interface"] != "0.0.0.0"
        assert conf["auto_accept"] is False and conf["open_mode"] is False


def test_every_minion_pins_the_recorded_master_key(rendered: dict[str, Any]) -> None:
    """The recorded finger reaches every minion's config (the real inventory records none
    yet: the state falls back to the key the minion authenticated, which the in-process
    render has none of, so that case renders no pin)."""
    renderer = rendered["renderer"]
    for (node, _os), result in rendered["results"].items():
        conf = yaml.safe_load(result.managed(MINION_STATE)[1])
        recorded = renderer.pillar(node)["site"]["salt"]["master_finger"]
        assert conf.get("master_finger") == (recorded or None), node
        assert "auto_accept" not in conf and "open_mode" not in conf
