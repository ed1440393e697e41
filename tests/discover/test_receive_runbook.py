"""docs/operations.md's "Receive a rack", followed step by step in the order written there
(tests/support/runbook.py reads it: each ```yaml block an edit of the inventory, each `$`
line a command, the output lines shown under a command required in its output), on a
copy of the site's inventory.yaml. Nothing here restates a step: a step the doc drops,
reorders or gets wrong fails a check below.

The unit-tier form of each step:

- an edit: merged into the copy (``yaml.safe_dump``: the copy's comments are not the
  point here; tests/discover/test_accept.py proves accept keeps them);
- ``fleet validate|diff|render|discover|burnin|node``: the real CLI in this process on the
  copy (``-i``), rendering into a temporary ``-o``; the reports and results under
  ``$FLEET_DISCOVER_STATE`` and ``$FLEET_BURNIN_STATE`` in a temporary directory;
- the machines' reports: STAND-INS for the commissioning environment (which
  tests/pxe/test_discover_pxe.py boots in QEMU), one per machine of the group with no
  entry, its boot NIC's LLDP neighbour the group's planned switch port, kept by the real
  store (fleet.discover.store) as the endpoint keeps them;
- ``--result FILE``: STAND-INS for the runner's output on the node (the real stress-ng,
  memtester and smartctl run in tests/burnin/test_runner.py), all passing;
- ``fleet status TARGET``: its stage column only, the status source itself
  (fleet.status.stage) judged by fleet.status.view on the same stores (the other columns
  need the Salt master, the BMCs and Slurm: tests/status, tests/lab/test_status.py);
- ``git commit``, ``fleet apply``, ``fleet reinstall``: NOT RUN here (no master, no
  node to install: tests/lab/test_runbook.py and the PXE/VM tiers run those); each is
  named in the test's output.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from discover.reports import GOOD
from discover.sites import SITE
from fleet.cli import main
from fleet.discover import plan, store
from fleet.discover.report import parse
from fleet.inventory.load import parse as parse_inventory
from fleet.status import stage, view
from support import runbook

SECTION = "Receive a rack"
NOT_RUN = {"git": "no checkout here", "apply": "no Salt master here",
           "reinstall": "no node to install here"}
RUN = ("validate", "diff", "render", "discover", "burnin", "node", "status")


def _merge(base: Any, over: Any) -> Any:
    if isinstance(base, dict) and isinstance(over, dict):
        return {**base, **{k: _merge(base.get(k), v) for k, v in over.items()}}
    return over


def _standin_reports(inv_path: Path, root: Path) -> list[str]:
    """One STAND-IN report per machine with no entry, heard on its planned port."""
    _, planned = plan.load(inv_path.read_text(), str(inv_path))
    hosts = sorted(h for h, p in planned.items() if not p.entered)
    for i, h in enumerate(hosts):
        switch, port = planned[h].port or ("", 0)
        doc = copy.deepcopy(GOOD)
        mac = f"0c:42:a1:ee:00:{i + 1:02x}"
        doc.update(boot_mac=mac, bmc_mac=f"a8:a1:59:ee:00:{i + 1:02x}")
        doc["dmi"]["serial"] = f"TBPRACK{i + 1:04d}"
        doc["nics"][0].update(mac=mac)
        doc["nics"][0]["lldp"].update(chassis_name=switch, port_id=f"ethernet1/1/{port}")
        doc["nics"][1]["mac"] = f"0c:42:a1:ee:01:{i + 1:02x}"
        doc["pci"][-1]["guid"] = f"0x1070fd0300ee{i + 1:04x}"
        store.save(root, parse(json.dumps(doc).encode()), f"10.1.3.{200 + i}")
    return hosts


def _standin_results(path: Path, checks: dict[str, int], n: int) -> int:
    """The runner's lines of ``checks`` (check -> the profile's seconds), all passing, one
    a line, the first started ``n`` hours after the test's clock; the next ``n``."""
    lines = []
    for check, seconds in checks.items():
        figures = {"cpu-stress": {"bogo_ops_s": 1000.0 + 10 * n}}.get(check, {})
        lines.append(json.dumps({"check": check, "passed": True, "figures": figures,
                                 "started": 1796515200.0 + 3600 * n,
                                 "seconds": float(max(seconds, 1))}))
        n += 1
    path.write_text("".join(line + "\n" for line in lines))
    return n


def _record_file(step: runbook.Step, later: list[runbook.Step], inv_path: Path
                 ) -> tuple[str, dict[str, int]]:
    """A record step's file and the checks it holds, with their seconds in the profile:
    ``NODE.CHECK.json`` that check; ``NODE.json`` each check of the node's profile that
    no later step records."""
    def named(s: runbook.Step) -> tuple[str, str, str]:
        name = s.argv[s.argv.index("--result") + 1]
        node, _, check = Path(name).stem.partition(".")
        return name, node, check

    name, node, check = named(step)
    after = {named(s)[2] for s in later if s.argv[1:3] == ["burnin", "record"]
             and named(s)[1] == node}
    inv = parse_inventory(inv_path.read_text(), str(inv_path))
    burnin = inv.raw.profiles[inv.nodes[node].profile_name].burnin
    return name, {c: t.seconds for c, t in burnin.items()
                  if (c == check if check else c not in after)}


def _status_stage(inv_path: Path, target: str, env: dict[str, Path]) -> str:
    """`fleet status TARGET`'s stage column (see the module's docstring)."""
    import fnmatch

    inv = parse_inventory(inv_path.read_text(), str(inv_path))
    names = [h for h in inv.nodes if fnmatch.fnmatchcase(h, target)]
    cols = {"stage": view.Column(values=stage.stages(inv, names, env["discover"],
                                                      env["burnin"]))}
    rows = view.rows([(h, inv.nodes[h].state, True) for h in names], cols)
    return view.table(rows, cols, 0.0, [])


def test_receive_a_rack_step_by_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    env = {"discover": tmp_path / "reports", "burnin": tmp_path / "burnin"}
    monkeypatch.setenv("FLEET_DISCOVER_STATE", str(env["discover"]))
    monkeypatch.setenv("FLEET_BURNIN_STATE", str(env["burnin"]))
    monkeypatch.chdir(tmp_path)
    inv_path, out = tmp_path / "inventory.yaml", tmp_path / "render"
    inv_path.write_text(SITE)
    assert main(["render", "-q", "-i", str(inv_path), "-o", str(out)]) == 0
    steps = runbook.steps(SECTION)
    assert [s for s in steps if s.edit is not None] and [s for s in steps if s.argv]
    seen: list[str] = []
    recorded = 0
    for i, step in enumerate(steps):
        if step.edit is not None:
            doc = _merge(yaml.safe_load(inv_path.read_text()), step.edit)
            inv_path.write_text(yaml.safe_dump(doc, sort_keys=False))
            continue
        prog, verb = step.argv[0], (step.argv[1] if len(step.argv) > 1 else "")
        assert prog in ("fleet", "git"), step.text
        if prog == "git" or verb in NOT_RUN:
            print(f"NOT RUN here: {step.text}: {NOT_RUN[prog if prog == 'git' else verb]}")
            continue
        assert verb in RUN, f"{step.text}: no unit-tier form of this step"
        capsys.readouterr()
        if verb == "discover" and step.argv[2] == "list":
            assert _standin_reports(inv_path, env["discover"]), step.text
        if verb == "burnin" and step.argv[2] == "record":
            name, checks = _record_file(step, steps[i + 1:], inv_path)
            recorded = _standin_results(tmp_path / name, checks, recorded)
        if verb == "status":
            got, rc = _status_stage(inv_path, step.argv[2], env), 0
        else:
            args = [*step.argv[1:], "-i", str(inv_path)]
            args += ["-o", str(out)] if verb in ("diff", "render") else []
            rc = main(args)
            cap = capsys.readouterr()
            got = cap.out + cap.err
        assert rc == (3 if verb == "diff" else 0), (step.text, got)
        for line in step.shown:
            assert line in got, (step.text, line, got)
        seen.append(step.text)
    final = parse_inventory(inv_path.read_text(), str(inv_path))
    assert {h: final.nodes[h].state for h in ("tbox-076", "tbox-077")} == {
        "tbox-076": "active", "tbox-077": "active"}
    assert final.nodes["tbox-077"].serial == "TBPRACK0002"
    assert len(seen) >= 15, seen
