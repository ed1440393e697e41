"""The monitoring role's configuration checks, run for real on what Salt renders.

head-01 (the monitoring host, a Slurm controller) and tbox-001 (a GPU node) are rendered
in-process; every monitoring state with a check_cmd has it run exactly as Salt runs it
(the command, then the new file's path, split without a shell), against the rendered
file: promtool check config / check rules, amtool check-config, the blackbox exporter's
--config.check, and each daemon parsing its own flags. A broken file must fail it.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support import harness

NEEDED = ("promtool", "amtool", "prometheus", "prometheus-node-exporter",
          "prometheus-alertmanager", "prometheus-blackbox-exporter")
MISSING = [b for b in NEEDED if shutil.which(b) is None]
pytestmark = pytest.mark.skipif(
    bool(MISSING), reason=f"LOUD SKIP: {', '.join(MISSING)} not installed "
    "(tools/install-host-deps.sh installs prometheus, prometheus-alertmanager, "
    "prometheus-node-exporter, prometheus-blackbox-exporter): the monitoring checks did NOT run")
FLEET_DIR = "/etc/prometheus/fleet"


@pytest.fixture(scope="module")
def renders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    renderer, _ = harness.make_renderer(tmp_path_factory.mktemp("monitoring-render"))
    out = {}
    for node in ("head-01", "tbox-001"):
        result = renderer.render(node, harness.DEFAULT_OS)
        assert not result.errors, result.errors
        out[node] = result
    out["pillar"] = renderer.pillar("head-01")
    return out


def _checked(result: Any) -> list[dict[str, Any]]:
    return [c for c in result.lowstate
            if c["__sls__"].startswith("monitoring") and "check_cmd" in c]


def _content(result: Any, chunk: dict[str, Any]) -> str:
    if chunk["__id__"] in result.files:
        return str(result.files[chunk["__id__"]])
    source = chunk["source"]
    assert source.startswith("salt://")
    return (harness.ROOT / "salt" / source.removeprefix("salt://")).read_text()


def _check(chunk: dict[str, Any], path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(shlex.split(f"{chunk['check_cmd']} {path}"), capture_output=True,
                          text=True, timeout=60, check=False)


def _stage(tmp: Path, pillar: dict[str, Any], result: Any) -> Path:
    """The monitoring host's /etc/prometheus/fleet in ``tmp``: rules and targets."""
    fleet = tmp / "fleet"
    fleet.mkdir()
    (rules,) = [c for c in result.lowstate if c["__id__"] == "monitoring-server-file-managed-rules"]
    (fleet / "rules.yml").write_text(result.files[rules["__id__"]])
    for job, groups in pillar["monitoring"]["targets"].items():
        (fleet / f"{job}.json").write_text(json.dumps(groups))
    return fleet


@pytest.mark.parametrize("node", ["head-01", "tbox-001"])
def test_every_monitoring_check_passes_on_the_rendered_file(
        tmp_path: Path, renders: dict[str, Any], node: str) -> None:
    result = renders[node]
    fleet = _stage(tmp_path, renders["pillar"], renders["head-01"])
    chunks = _checked(result)
    expected = 3 if node == "tbox-001" else 10
    assert len(chunks) == expected, [c["__id__"] for c in chunks]
    for chunk in chunks:
        path = tmp_path / chunk["__id__"]
        path.write_text(_content(result, chunk).replace(FLEET_DIR, str(fleet)))
        proc = _check(chunk, path)
        assert proc.returncode == 0, (chunk["__id__"], proc.stdout, proc.stderr)


BROKEN = {
    # state id: (old, new) in its rendered file
    "monitoring-server-file-managed-rules": ("expr: up{job=\"node\"} == 0",
                                             "expr: up{job=\"node\" == 0"),
    "monitoring-server-file-managed-prometheus": ("scrape_interval:", "scrape_intervall:"),
    "monitoring-server-file-managed-alertmanager": ("group_by:", "group_bye:"),
    "monitoring-server-file-managed-blackbox": ("timeout: 5s\n    tcp:", "timeoutt: 5s\n    tcp:"),
    "monitoring-server-file-managed-prometheus-defaults": ("--storage.tsdb.path=",
                                                           "--storage.tsdb.pathh="),
    "monitoring-server-file-managed-alertmanager-defaults": ("--cluster.listen-address=",
                                                             "--cluster.listen-adress="),
    "monitoring-node-file-managed-defaults": ("--collector.infiniband", "--collector.infiniban"),
    "monitoring-slurm-file-managed-script": ("def main(", "def main(("),
}


@pytest.mark.parametrize("state_id", sorted(BROKEN))
def test_a_broken_file_fails_its_check(tmp_path: Path, renders: dict[str, Any],
                                       state_id: str) -> None:
    result = renders["head-01"]
    fleet = _stage(tmp_path, renders["pillar"], result)
    (chunk,) = [c for c in _checked(result) if c["__id__"] == state_id]
    old, new = BROKEN[state_id]
    text = _content(result, chunk).replace(FLEET_DIR, str(fleet))
    assert old in text, f"{state_id}: {old!r} not in the rendered file"
    path = tmp_path / "broken"
    path.write_text(text.replace(old, new, 1))
    assert _check(chunk, path).returncode != 0, f"{state_id}: the broken file passed"


def test_daemons_bind_the_management_address_only(renders: dict[str, Any]) -> None:
    """Every listen flag of the role names the node's own provisioning address, never a
    wildcard; Alertmanager's gossip port is off."""
    pillar = renders["pillar"]
    address = pillar["node"]["monitoring"]["address"]
    assert address == pillar["site"]["provisioning"]["address"]
    text = "\n".join(str(v) for k, v in renders["head-01"].files.items()
                     if k.endswith("-defaults"))
    listens = re.findall(r"--([\w.]*listen-address)=([^\s\"]*)", text)
    assert len(listens) == 5, listens
    for flag, value in listens:
        assert (flag, value) == ("cluster.listen-address", "") or \
            value.startswith(address + ":"), (flag, value)
