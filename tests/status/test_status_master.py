"""``fleet status`` names the active Salt master (fleet.inventory.masters): the real command
line on the small inventory with a standby master, the site's sources as in
test_status_cli.py. The host that runs the test is neither master, and says so."""

from __future__ import annotations

import socket
from pathlib import Path

from status.site import make_site
from support.cli import SMALL


def test_status_names_the_active_master_and_the_standby(tmp_path: Path) -> None:
    text = SMALL.read_text()
    inventory = tmp_path / "standby.yaml"
    inventory.write_text(text.replace("  salt: {master: head-01}\n",
                                      "  salt: {master: head-01, standby: {host: stor-2}}\n"))
    site = make_site(tmp_path)
    rc, doc, err = site.run(inventory=inventory)
    assert rc == 0, err
    here = socket.gethostname().split(".", 1)[0].lower()
    assert here not in ("head-01", "stor-2"), "this test needs a host that is neither master"
    assert doc["master"] == {"active": "head-01", "standby": "stor-2", "here": here,
                             "role_here": "neither"}
    rc, doc, err = site.run()
    assert rc == 0, err
    assert doc["master"]["active"] == "head-01" and doc["master"]["standby"] is None
