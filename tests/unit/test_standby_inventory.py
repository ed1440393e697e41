"""site.salt.standby in the inventory: strictly typed (a node other than the master; an
ssh-ed25519 key without comment or options, the line the active master's authorized_keys
gets), a head node for the refusals of reinstall, power and rollout, and the minion
config it renders (the failover list; without a standby the single line of before)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fleet.inventory.head import head_reasons
from fleet.inventory.load import load_inventory
from fleet.problems import InventoryError
from fleet.render.bootstrap import minion_conf
from support.cli import SMALL

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEyDceWfXu3BQy79KBbHKDGK3NaKXWu0LID7p3IMhgry"


def inventory(tmp: Path, standby: str) -> Path:
    text = SMALL.read_text()
    line = "  salt: {master: head-01}\n"
    assert line in text
    path = tmp / "inv.yaml"
    path.write_text(text.replace(line, f"  salt: {{master: head-01, standby: {standby}}}\n"))
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(InventoryError) as exc:
        load_inventory(path)
    return [str(p) for p in exc.value.problems]


def test_the_standby_is_another_node(tmp_path: Path) -> None:
    (msg,) = problems(inventory(tmp_path, "{host: head-09}"))
    assert "site.salt.standby.host" in msg and "unknown node 'head-09'" in msg
    (msg,) = problems(inventory(tmp_path, "{host: head-01}"))
    assert "head-01 is the Salt master itself" in msg


@pytest.mark.parametrize("key", [
    f"{KEY} ops@sd1",  # a comment: the authorized_keys line is built from the key alone
    "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ",
    'command="sh" ' + KEY,
    KEY + "\\nssh-ed25519 AAAA",
])
def test_a_sync_key_is_one_ed25519_key_and_nothing_else(tmp_path: Path, key: str) -> None:
    (msg,) = problems(inventory(tmp_path, "{host: stor-2, sync_key: " + repr(key) + "}"))
    assert "site.salt.standby.sync_key" in msg


def test_the_standby_renders_the_failover_list_and_is_a_head_node(tmp_path: Path) -> None:
    inv = load_inventory(inventory(tmp_path, f"{{host: stor-2, sync_key: '{KEY}'}}"))
    conf = yaml.safe_load(minion_conf(inv, inv.nodes["gpu-01"]))
    assert conf["master"] == [str(inv.master_address), str(inv.nodes["stor-2"].address)]
    assert conf["master_type"] == "failover" and conf["master_failback"] is False
    assert head_reasons(inv, inv.nodes["stor-2"])[0] == "standby salt master"
    assert "provisioning.standby" in inv.nodes["stor-2"].derived_roles
    assert "provisioning.keysource" in inv.nodes["head-01"].derived_roles
    one = load_inventory(SMALL)
    text = minion_conf(one, one.nodes["gpu-01"])
    assert f"\nmaster: {one.master_address}\n" in text and "failover" not in text
    assert not {"provisioning.standby", "provisioning.keysource"} & set(
        one.nodes["head-01"].derived_roles)
