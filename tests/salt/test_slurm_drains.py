"""salt/slurm/files/fleet-slurm-drains.py, the controller's maintenance drains, run as the
real script against a fake ``scontrol`` (Slurm cannot run here; the fake keeps node
states in a JSON file and answers ``show node`` in scontrol's own layout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.cli import ROOT

SCRIPT = ROOT / "salt" / "slurm" / "files" / "fleet-slurm-drains.py"
PREFIX = "fleet-inventory: "

FAKE_SCONTROL = r'''#!PYTHON
"""A fake scontrol (named as such): show node / update NodeName=, state in $FAKE_SLURM."""
import json, os, sys
path = os.environ["FAKE_SLURM"]
nodes = json.load(open(path))
args = sys.argv[1:]
with open(path + ".log", "a") as log:
    log.write(" ".join(args) + "\n")
if args == ["ping"]:
    print("Slurmctld(primary) at head-01 is UP")
    sys.exit(0)
if args[:2] == ["show", "node"]:
    n = nodes.get(args[2])
    if n is None:
        sys.exit(f"Node {args[2]} not found")
    print(f"NodeName={args[2]} Arch=x86_64 CoresPerSocket=32\n   State={n['state']} "
          f"ThreadsPerCore=2\n   Partitions=tbox1")
    if n.get("reason"):
        print(f"   Reason={n['reason']} [root@2026-12-02T00:00:00]")
    sys.exit(0)
if args[0] == "update":
    words = dict(a.split("=", 1) for a in args[1:])
    n = nodes[words["NodeName"]]
    if words["State"] == "DRAIN":
        n["state"], n["reason"] = "IDLE+DRAIN", words["Reason"]
    elif words["State"] == "RESUME":
        n["state"], n["reason"] = "IDLE", ""
    json.dump(nodes, open(path, "w"))
    sys.exit(0)
sys.exit("fake scontrol: unknown call")
'''


def _bed(tmp: Path, nodes: dict[str, dict[str, str]]) -> dict[str, str]:
    bin_dir = tmp / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "scontrol"
    fake.write_text(FAKE_SCONTROL.replace("PYTHON", sys.executable))
    fake.chmod(0o755)
    (tmp / "slurm.json").write_text(json.dumps(nodes))
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "FAKE_SLURM": str(tmp / "slurm.json")}


def _run(tmp: Path, env: dict[str, str], drain: dict[str, str],
         resume: list[str]) -> dict[str, object]:
    data = tmp / "drains.json"
    data.write_text(json.dumps({"prefix": PREFIX, "drain": drain, "resume": resume}))
    r = subprocess.run([sys.executable, str(SCRIPT), str(data)], env=env, text=True,
                       capture_output=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)  # Salt's stateful cmd.run reads this
    assert isinstance(out, dict)
    return out


def _states(tmp: Path) -> dict[str, dict[str, str]]:
    return json.loads((tmp / "slurm.json").read_text())  # type: ignore[no-any-return]


def test_drains_with_the_reason_once_then_changes_nothing(tmp_path: Path) -> None:
    env = _bed(tmp_path, {"gpu-03": {"state": "IDLE"}, "gpu-04": {"state": "ALLOCATED"}})
    reason = PREFIX + "fan replaced; RMA #4711 'urgent' $(reboot)"
    out = _run(tmp_path, env, {"gpu-03": reason}, ["gpu-04"])
    assert out["changed"] is True and "drained gpu-03" in str(out["comment"])
    assert _states(tmp_path)["gpu-03"] == {"state": "IDLE+DRAIN", "reason": reason}
    assert _states(tmp_path)["gpu-04"] == {"state": "ALLOCATED"}
    again = _run(tmp_path, env, {"gpu-03": reason}, ["gpu-04"])
    assert again == {"changed": False, "comment": "Slurm drains match the inventory"}


def test_a_new_reason_drains_again(tmp_path: Path) -> None:
    env = _bed(tmp_path, {"gpu-03": {"state": "IDLE+DRAIN", "reason": PREFIX + "old"}})
    out = _run(tmp_path, env, {"gpu-03": PREFIX + "new"}, [])
    assert out["changed"] is True
    assert _states(tmp_path)["gpu-03"]["reason"] == PREFIX + "new"


def test_resumes_only_its_own_drains(tmp_path: Path) -> None:
    env = _bed(tmp_path, {
        "gpu-01": {"state": "IDLE+DRAIN", "reason": PREFIX + "fan replaced"},
        "gpu-02": {"state": "IDLE+DRAIN", "reason": "fleet-health: gpu count 7 != 8"},
        "gpu-04": {"state": "DOWN+DRAIN", "reason": "operator: cable"},
    })
    out = _run(tmp_path, env, {}, ["gpu-01", "gpu-02", "gpu-04", "gpu-09"])
    assert out["changed"] is True and "resumed gpu-01" in str(out["comment"])
    states = _states(tmp_path)
    assert states["gpu-01"]["state"] == "IDLE"
    assert states["gpu-02"]["state"] == "IDLE+DRAIN"  # fleet health's drain: not ours
    assert states["gpu-04"]["state"] == "DOWN+DRAIN"  # an operator's drain: not ours
    log = (tmp_path / "slurm.json.log").read_text()
    assert "update NodeName=gpu-01 State=RESUME" in log
    assert "gpu-02 State" not in log and "gpu-04 State" not in log


def test_a_failed_update_fails_the_state_naming_it(tmp_path: Path) -> None:
    env = _bed(tmp_path, {"gpu-03": {"state": "IDLE"}})
    fake = tmp_path / "bin" / "scontrol"
    fake.write_text(fake.read_text().replace('if args[0] == "update":',
                                             'if args[0] == "update":\n    sys.exit("denied")'))
    data = tmp_path / "drains.json"
    data.write_text(json.dumps({"prefix": PREFIX, "drain": {"gpu-03": PREFIX + "x"},
                                "resume": []}))
    r = subprocess.run([sys.executable, str(SCRIPT), str(data)], env=env, text=True,
                       capture_output=True, timeout=60, check=False)
    assert r.returncode == 1
    assert "scontrol update NodeName=gpu-03 State=DRAIN" in r.stderr and "denied" in r.stderr


def test_waits_for_a_slurmctld_this_highstate_restarted(tmp_path: Path) -> None:
    """The first `scontrol ping` finds slurmctld down (restarted by the same apply): the
    script waits and then drains, instead of skipping every node as unknown."""
    env = _bed(tmp_path, {"gpu-03": {"state": "IDLE"}})
    fake = tmp_path / "bin" / "scontrol"
    fake.write_text(fake.read_text().replace(
        'if args == ["ping"]:\n',
        'if args == ["ping"] and not os.path.exists(path + ".up"):\n'
        '    open(path + ".up", "w").close()\n'
        '    sys.exit("slurm_load_ctl_conf error: Unable to contact slurm controller")\n'
        'if args == ["ping"]:\n'))
    out = _run(tmp_path, env, {"gpu-03": PREFIX + "x"}, [])
    assert out["changed"] is True
    assert (tmp_path / "slurm.json.log").read_text().splitlines()[:2] == ["ping", "ping"]
    assert _states(tmp_path)["gpu-03"]["reason"] == PREFIX + "x"
