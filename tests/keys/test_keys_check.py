"""`fleet keys check [--remove]` and `fleet keys finger` against the real salt-key on a
throw-away master pki dir."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fleet.inventory.load import load_inventory
from support.cli import ROOT, run_fleet
from support.saltkeys import salt_key_bin, salt_master_config

SMALL = ROOT / "tests" / "fixtures" / "small.yaml"


def _accept(pki: Path, conf: Path, minion: str, where: str = "minions") -> None:
    work = pki.parent / "gen"
    subprocess.run([salt_key_bin(), "-c", str(conf), f"--gen-keys={minion}",
                    f"--gen-keys-dir={work}"], check=True, capture_output=True)
    (work / f"{minion}.pub").replace(pki / where / minion)


def test_stray_and_missing_keys_then_remove(tmp_path: Path) -> None:
    conf, pki = salt_master_config(tmp_path)
    inv = load_inventory(SMALL)
    nodes = list(inv.nodes)
    for node in nodes[1:]:
        _accept(pki, conf, node)
    _accept(pki, conf, "gpu-99")  # a node that was removed from the inventory
    _accept(pki, conf, "old-name")  # ... or renamed
    _accept(pki, conf, nodes[0], "minions_pre")  # its key is only pending
    base = ["keys", "check", "-i", str(SMALL), "--salt-config", str(conf)]
    r = run_fleet(*base, "--json")
    assert r.returncode == 3, r.stderr
    report = json.loads(r.stdout)
    assert report["ok"] is False
    assert report["stray"] == ["gpu-99", "old-name"]
    assert report["missing"] == {nodes[0]: "pending"}
    r = run_fleet(*base)
    assert r.returncode == 3
    assert "stray: gpu-99: accepted, but no node gpu-99" in r.stdout
    assert f"missing: {nodes[0]}: no accepted key (pending)" in r.stdout

    r = run_fleet(*base, "--remove", "--json")
    assert r.returncode == 3, r.stderr  # the missing key remains
    report = json.loads(r.stdout)
    assert report["removed"] == ["gpu-99", "old-name"] and report["stray"] == []
    assert not (pki / "minions" / "gpu-99").exists()
    assert (pki / "minions" / nodes[1]).exists()  # the inventory's keys are kept

    subprocess.run([salt_key_bin(), "-c", str(conf), "-y", "-a", nodes[0]], check=True,
                   capture_output=True)
    r = run_fleet(*base)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"{len(nodes)} accepted keys: one per node, none stray" in r.stdout


def test_unreadable_master_is_an_io_error(tmp_path: Path) -> None:
    conf, pki = salt_master_config(tmp_path)
    (pki / "minions").rmdir()
    r = run_fleet("keys", "check", "-i", str(SMALL), "--salt-config", str(conf))
    assert r.returncode == 4, r.stdout + r.stderr
    assert "no such directory" in r.stderr


def test_finger_is_read_from_the_masters_public_key(tmp_path: Path) -> None:
    conf, pki = salt_master_config(tmp_path)
    subprocess.run([salt_key_bin(), "-c", str(conf), "--gen-keys=master",
                    f"--gen-keys-dir={pki}"], check=True, capture_output=True)
    # what a minion compares with master_finger (salt.crypt: pem_finger of the file):
    # sha256 of the PEM body lines, hex pairs joined by ':' (`salt-key -F` in Salt 3007
    # hashes the whole PEM instead: not the value minions check)
    import hashlib

    lines = [ln for ln in (pki / "master.pub").read_bytes().splitlines(keepends=True)
             if ln.strip()][1:-1]
    digest = hashlib.sha256(b"".join(lines)).hexdigest()
    expected = ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))
    r = run_fleet("keys", "finger", "-i", str(SMALL), "--salt-config", str(conf))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == expected
    r = run_fleet("keys", "finger", "--check", "-i", str(SMALL), "--salt-config", str(conf))
    assert r.returncode == 3 and "record" in r.stderr  # the inventory has none recorded


LIFECYCLE = ROOT / "tests" / "fixtures" / "lifecycle-overlay.yaml"


def test_a_retired_nodes_key_is_flagged_and_a_planned_node_needs_none(tmp_path: Path) -> None:
    """gpu-01 retired (its key still accepted), gpu-02 planned (no key yet): the first is
    flagged with the salt-key -d to run, the second is no missing key."""
    conf, pki = salt_master_config(tmp_path)
    inv = load_inventory(SMALL, LIFECYCLE)
    assert "gpu-01" in inv.retired and inv.nodes["gpu-02"].state == "planned"
    for node in [*inv.nodes, "gpu-01"]:
        if node != "gpu-02":
            _accept(pki, conf, node)
    base = ["keys", "check", "-i", str(SMALL), "--overlay", str(LIFECYCLE),
            "--salt-config", str(conf)]
    r = run_fleet(*base)
    assert r.returncode == 3, r.stdout + r.stderr
    assert ("retired: gpu-01: its key is still accepted, but the inventory retired it "
            "(nodes.gpu-01.state): run `salt-key -d gpu-01` on the master") in r.stdout
    assert "missing: gpu-02" not in r.stdout
    assert "planned: 1 node(s) not installed yet, no key expected: gpu-02" in r.stdout
    r = run_fleet(*base, "--remove", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    report = json.loads(r.stdout)
    assert report["removed"] == ["gpu-01"] and report["retired"] == []
    assert report["planned"] == ["gpu-02"]
    assert not (pki / "minions" / "gpu-01").exists()
