"""`fleet apply` against the lab master: every lab node accounted for, a stopped minion
named as not returned, a failing state named with the node and the state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from labtools import ROOT, Lab, podman_exec, poll


def fleet_apply(lab: Lab, *args: str, timeout: float = 1800) -> tuple[int, dict[str, Any], str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tools")}
    proc = subprocess.run(
        [sys.executable, "-m", "fleet", "apply", *args, "--json",
         "-i", str(ROOT / "inventory.yaml"), *lab.paths.overlay_args(),
         "--salt-config", str(lab.paths.salt_etc)],
        capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env, check=False)
    report = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return proc.returncode, report, proc.stderr


def _answers(lab: Lab, node: str) -> bool:
    return bool(lab.salt(node, "test.ping", "-t", "10", timeout=120).get(node) is True)


def test_a_stopped_minion_is_named_as_not_returned(lab: Lab) -> None:
    stopped = lab.with_role("slurm.compute")[-1].hostname
    podman_exec(lab, stopped, "systemctl", "stop", "salt-minion")
    try:
        rc, report, err = fleet_apply(lab, "*", "--timeout", "120")
    finally:
        podman_exec(lab, stopped, "systemctl", "start", "salt-minion")
    assert rc == 5, err
    nodes = {n["node"]: n for n in report["nodes"]}
    assert sorted(nodes) == sorted(n.hostname for n in lab.nodes)  # every lab node
    assert nodes[stopped]["status"] == "no-return", nodes[stopped]
    assert "never answered find_job" in nodes[stopped]["why"]
    returned = {n: v["status"] for n, v in nodes.items() if n != stopped}
    assert all(s in ("ok", "changed", "failed") for s in returned.values()), returned
    assert all(nodes[n]["states"] > 10 for n in returned)  # each ran its whole highstate
    assert report["counts"]["no-return"] == 1
    poll(f"{stopped}'s minion to answer again", lambda: _answers(lab, stopped), timeout=300)


def test_a_failing_state_is_named_with_the_node_and_the_state(lab: Lab) -> None:
    """A file where mkv.volume manages a directory: file.directory refuses to replace a
    file, so that state fails (and the volume's service with it, as a failed requisite)."""
    node = lab.with_role("mkv.volume")[0].hostname
    root = lab.pillar(f"nodes/{node}")["node"]["mkv"]["root"]
    body_temp = f"{root}/.body_temp"
    podman_exec(lab, node, "sh", "-c", f"rm -rf {body_temp} && echo not a directory > {body_temp}")
    try:
        rc, report, err = fleet_apply(lab, node, timeout=900)
    finally:
        podman_exec(lab, node, "rm", "-f", body_temp)
    assert rc == 5, err
    (only,) = report["nodes"]
    assert only["node"] == node and only["status"] == "failed", only
    failed = {f["id"]: f for f in only["failed"]}
    assert "mkv-volume-file-directory-root-body-temp" in failed, failed
    assert failed["mkv-volume-file-directory-root-body-temp"]["function"] == "file.directory"
    assert all(f["comment"] for f in failed.values())  # each says why
    # and the cause removed, the same node is no longer failed
    rc, report, err = fleet_apply(lab, node, timeout=900)
    assert rc == 0, err
    assert report["nodes"][0]["status"] in ("ok", "changed")
