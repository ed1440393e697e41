"""backup.target as the states render it on the site's sftp backup destination (stor-050,
site.backup): the master's backup login with the secrets store's key (pillar
secrets.backupkey, that node only), authorized with fleet.backupsftp's options (the
ones tests/backup/test_sftp.py proves against a real sshd), from the masters' addresses
only; Salt's own authorized_keys parser reads the line back as written (a second apply
changes nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleet import backupsftp as sftp
from fleet.inventory.load import load_inventory
from support import harness

TARGET = "stor-050"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("backup-target")
    saltrender = harness.highstates.saltrender()
    harness.write_secrets_root(tmp / "secrets-pillar")
    return saltrender.Renderer(harness.ROOT / "salt", harness.ROOT / "pillar",
                               tmp / "secrets-pillar", tmp / "cache")


def test_the_storage_server_makes_the_masters_sftp_login(site: Any) -> None:
    inv = load_inventory(harness.ROOT / "inventory.yaml")
    backup = inv.raw.site.backup
    assert backup is not None and backup.destination.host == TARGET
    res = site.render(TARGET)
    assert not res.errors, res.errors
    ids = {c["__id__"]: c for c in res.lowstate}
    user = ids["backup-target-user-present"]
    assert user["name"] == backup.destination.user and user["shell"] == "/usr/sbin/nologin"
    repo = ids["backup-target-file-directory-repository"]
    assert (repo["name"], repo["user"], repo["mode"]) == (
        backup.destination.path, backup.destination.user, "0700")
    auth = ids["backup-target-ssh_auth-present"]
    key = site.pillar(TARGET)["backup_login"]["key"]
    assert [auth["enc"], auth["name"], auth["comment"]] == key.split()
    masters = [str(inv.nodes[n].address) for n in ("head-01", "head-02")]
    assert auth["options"] == sftp.login_options(masters)
    assert auth["user"] == backup.destination.user


def test_a_master_address_of_its_own_is_one_of_the_masters(tmp_path: Path) -> None:
    """site.salt.master_address names where the master is (a VIP, the lab's host): the
    login is allowed from there too, once, besides the masters' nodes."""
    from fleet.render.pillar import _backup_target

    heads = [str(load_inventory(harness.ROOT / "inventory.yaml").nodes[n].address)
             for n in ("head-01", "head-02")]
    for address, masters in (("10.1.0.1", [*heads, "10.1.0.1"]), (heads[0], heads)):
        overlay = tmp_path / "master-address.yaml"
        overlay.write_text(f"site: {{salt: {{master_address: '{address}'}}}}\n")
        inv = load_inventory(harness.ROOT / "inventory.yaml", overlay)
        assert _backup_target(inv)["options"] == sftp.login_options(masters), address


def test_only_the_storage_server_gets_the_login() -> None:
    top = (harness.ROOT / "pillar" / "top.sls").read_text()
    assert top.count("secrets.backupkey") == 1
    roles = [p.name for p in (harness.ROOT / "pillar" / "nodes").iterdir()
             if "- backup.target\n" in p.read_text()]
    assert roles == [f"{TARGET}.sls"]


def test_salt_reads_the_login_line_back_as_written(tmp_path: Path) -> None:
    """ssh_auth compares the line it would write with the one it parses back; options
    with a comma inside quotes (from="a,b") must come back the same."""
    import salt.modules.ssh as ssh  # type: ignore[import-untyped]

    public = "ssh-ed25519 " + "A" * 68 + " fleet-backup"
    line = sftp.authorized_line(public, ["10.1.0.10", "10.1.0.11"])
    keys = tmp_path / "authorized_keys"
    keys.write_text(line + "\n")
    parsed = ssh._validate_keys(str(keys), None)[public.split()[1]]
    again = ssh._format_auth_line(public.split()[1], parsed["enc"], parsed["comment"],
                                  parsed["options"])
    assert again.strip() == line
