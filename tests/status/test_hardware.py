"""Hardware drift from the minions' grains, as `fleet node show --hardware` and `fleet
status --hardware` ask it: one ``salt -L NODES grains.item ...`` through a STAND-IN for the
salt CLI (tests/support/saltstandin.py: no master runs here) answering grains built from
the site's inventory (what a healthy node says), one node with a DIMM missing and a
changed HCA, one that does not answer."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from discover.sites import ROOT, SITE
from discover.test_drift import healthy
from fleet.inventory.load import parse
from fleet.master.runner import SubprocessRunner
from fleet.status import hardware, view
from support.saltstandin import calls, write_salt
from support.venvbin import venv_bin

INV = parse(SITE, "inventory.yaml")
GOOD, BAD, SILENT = "tbox-001", "tbox-002", "tbox-003"


def _answers() -> dict[str, Any]:
    bad = healthy(INV.nodes[BAD])
    bad["mem_total"] = (INV.nodes[BAD].profile.memory_gb - 32) * 1024  # a DIMM out
    bad["fleet_ib_guids"] = ["0x1070fd0300ffffff"]
    return {GOOD: healthy(INV.nodes[GOOD]), BAD: bad}  # SILENT: no answer


def test_status_source_and_view(tmp_path: Path) -> None:
    salt = write_salt(tmp_path, tmp_path, "grains.item", _answers())
    got = hardware.drift(SubprocessRunner({"salt": [str(salt)]}), INV,
                         [GOOD, BAD, SILENT], timeout=5)
    assert got[GOOD] == [] and SILENT not in got
    assert [d.fact for d in got[BAD]] == ["memory", "ib_guid"]
    (call,) = calls(tmp_path)
    assert call[call.index("-L") + 1] == f"{GOOD},{BAD},{SILENT}"
    assert set(hardware.GRAINS) <= set(call)
    cols = {"hardware": view.Column(values=dict(got))}
    rows = {r.node: r for r in view.rows([(n, "active", True) for n in (GOOD, BAD, SILENT)],
                                         cols)}
    assert rows[GOOD].problems == [] and rows[GOOD].fields["hardware"] == []
    assert rows[BAD].problems == [f"hardware drift: {d.text}" for d in got[BAD]]
    assert rows[SILENT].fields["hardware"] is None
    table = view.table(list(rows.values()), cols, 0.0, [])
    assert "2 drift" in table and "memory: inventory" in table


def test_node_show_gives_both_values(tmp_path: Path) -> None:
    bin_dir = venv_bin(tmp_path / "venv")
    write_salt(bin_dir, tmp_path, "grains.item", _answers())
    inv = tmp_path / "inventory.yaml"
    inv.write_text(SITE)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}

    def show(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(bin_dir / "python"), "-m", "fleet", "node", "show", f"{GOOD},{BAD},{SILENT}",
             "--hardware", "--salt-config", str(tmp_path), "--burnin-results",
             str(tmp_path / "none"), "-i", str(inv), *extra],
            env=env, capture_output=True, text=True, timeout=120, check=False)

    r = show("--json")
    assert r.returncode == 0, r.stderr
    recs = {n["node"]: n for n in json.loads(r.stdout)["nodes"]}
    assert recs[GOOD]["hardware"] == [] and recs[SILENT]["hardware"] is None
    mem = recs[BAD]["hardware"][0]
    node = INV.nodes[BAD]
    assert mem["fact"] == "memory" and mem["inventory"].startswith(
        f"{node.profile.memory_gb} GB") and mem["found"] == f"{node.profile.memory_gb - 32} GB"
    r = show()
    assert f"  hardware   memory: inventory {mem['inventory']}, found {mem['found']}" in r.stdout
    assert f"  hardware   ib_guid: inventory {node.ib_guid}, found not among " \
           "0x1070fd0300ffffff" in r.stdout
    assert "  hardware   as the inventory says" in r.stdout
    assert "  hardware   no answer from its minion" in r.stdout
