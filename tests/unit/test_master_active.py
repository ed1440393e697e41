"""Which master is active, and the refusal of a changing verb on the standby
(fleet.inventory.masters): the inventory names the active master (site.salt.master) and the
standby (site.salt.standby.host); on the standby a verb that would change nodes stops
before it does anything, exit 6, saying where to run it and how to promote; reading
verbs and the ones that write only this checkout (render, restore) still run there."""

from __future__ import annotations

import argparse
import json
import socket
from pathlib import Path

import pytest

from fleet import cli
from fleet.audit.record import CHANGING, changes
from fleet.exitcodes import Exit
from fleet.inventory import masters as active
from fleet.inventory.load import load_inventory
from support.cli import SMALL


def standby_inventory(tmp: Path) -> Path:
    """The small inventory with stor-2 named the standby master."""
    text = SMALL.read_text()
    assert "  salt: {master: head-01}\n" in text
    path = tmp / "standby.yaml"
    path.write_text(text.replace("  salt: {master: head-01}\n",
                                 "  salt: {master: head-01, standby: {host: stor-2}}\n"))
    return path


def ns(verb: str, **kw: object) -> argparse.Namespace:
    return argparse.Namespace(verb=verb, **kw)


def test_the_verbs_that_drive_nodes_are_changing_verbs() -> None:
    assert set(CHANGING) >= active.DRIVES_NODES
    assert not {"render", "restore", "backup", "discover", "secrets"} & active.DRIVES_NODES


def test_who_is_active_and_what_this_host_is(tmp_path: Path) -> None:
    inv = load_inventory(standby_inventory(tmp_path))
    assert active.masters(inv, "head-01").role_here == "active"
    assert active.masters(inv, "stor-2").role_here == "standby"
    m = active.masters(inv, "gpu-01")
    assert (m.active, m.standby, m.role_here) == ("head-01", "stor-2", "neither")
    one = active.masters(load_inventory(SMALL), "head-01")
    assert one.standby is None and one.role_here == "active"


@pytest.mark.parametrize(("args", "refused"), [
    (ns("apply"), True),
    (ns("reinstall"), True),
    (ns("power", action="off"), True),
    (ns("power", action="status"), False),
    (ns("pxe", pxe_verb="set"), True),
    (ns("pxe", pxe_verb="status"), False),
    (ns("keys", keys_verb="check", remove=True), True),
    (ns("keys", keys_verb="check", remove=False), False),
    (ns("status"), False),
    (ns("render"), False),
    (ns("restore"), False),
])
def test_the_standby_refuses_changing_verbs_only(tmp_path: Path, args: argparse.Namespace,
                                                 refused: bool) -> None:
    inv = load_inventory(standby_inventory(tmp_path))
    changing = changes(args)
    # the active master, and a host that is no master (the lab's): always run
    active.require_active(inv, args.verb, changing, here="head-01")
    active.require_active(inv, args.verb, changing, here="gpu-01")
    if refused:
        with pytest.raises(active.NotActiveError, match="stor-2 is the standby"):
            active.require_active(inv, args.verb, changing, here="stor-2")
    else:
        active.require_active(inv, args.verb, changing, here="stor-2")


def test_a_changing_verb_on_the_standby_exits_6_before_it_acts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The real command line in-process, this host named stor-2: `fleet power off` stops
    at the inventory, before any BMC is asked (none is reachable from here: a call would
    fail with another code and another message)."""
    monkeypatch.setattr(socket, "gethostname", lambda: "stor-2.lab.test")
    monkeypatch.setenv("FLEET_AUDIT_LOG", str(tmp_path / "audit.jsonl"))
    inv = standby_inventory(tmp_path)
    rc = cli.main(["power", "off", "gpu-01", "-i", str(inv), "--json"])
    out, err = capsys.readouterr()
    assert rc == Exit.BUSY == 6
    doc = json.loads(out)
    assert doc["ok"] is False
    assert any("head-01 is the active one" in str(e) for e in doc["errors"]), doc
    assert "stor-2 is the standby Salt master" in err and "swap site.salt.master" in err
    # the refused run is recorded, with its outcome
    (record,) = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text()
                 .splitlines()]
    assert record["verb"] == "power" and record["exit"] == 6


def test_status_line_and_document(tmp_path: Path) -> None:
    inv = load_inventory(standby_inventory(tmp_path))
    m = active.masters(inv, "stor-2")
    assert active.status_line(m) == ("salt master: head-01 active (site.salt.master), "
                                     "standby stor-2; this host is the STANDBY: changing "
                                     "verbs refuse here")
    assert active.document(m) == {"active": "head-01", "standby": "stor-2", "here": "stor-2",
                                  "role_here": "standby"}
    one = active.masters(load_inventory(SMALL), "head-01")
    assert active.status_line(one) == ("salt master: head-01 active (site.salt.master), "
                                       "no standby; this host is the active master")
