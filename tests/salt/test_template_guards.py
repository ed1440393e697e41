"""Defence in depth on the minions: the config templates of the Salt
states refuse (or neutralize) a pillar value that would add a directive, even if one got
past `fleet validate` (here: written into the rendered pillar by hand)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from fleet import saltrender
from fleet.inventory.load import load_inventory
from fleet.render import render_all
from support import harness

SMALL = harness.ROOT / "tests" / "fixtures" / "small.yaml"


@pytest.fixture(scope="module")
def pillar_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("guards")
    for path, text in render_all(load_inventory(SMALL)).items():
        if path.startswith("pillar/"):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
    harness.write_secrets_root(root / "secrets")
    saltrender.quiet_salt_logging()
    saltrender.enable_jinja_compile_cache()
    return root


def _render(base: Path, tmp: Path, node: str, edit: Any) -> saltrender.Rendered:
    """Render ``node`` with ``edit(pillar_root)`` applied to a copy of the pillar."""
    shutil.copytree(base / "pillar", tmp / "pillar")
    edit(tmp / "pillar")
    renderer = saltrender.Renderer(harness.ROOT / "salt", tmp / "pillar", base / "secrets",
                                   tmp / "cache")
    return renderer.render(node)


def _replace(file: str, old: str, new: str) -> Any:
    def edit(root: Path) -> None:
        path = root / file
        text = path.read_text()
        assert old in text, (file, old)
        path.write_text(text.replace(old, new, 1))
    return edit


def test_clean_pillar_renders(pillar_dir: Path, tmp_path: Path) -> None:
    res = _render(pillar_dir, tmp_path, "head-01", lambda root: None)
    assert not res.errors, res.errors


@pytest.mark.parametrize(("node", "file", "old", "new", "says"), [
    ("gpu-01", "site.sls", "- ntp.lab.test", '- "ntp.lab.test iburst\\nallow all"',
     "NTP server"),
    ("gpu-01", "nodes/gpu-01.sls", 'mirror: "http://10.1.0.10:3142/archive.ubuntu.com/ubuntu"',
     'mirror: "http://x/ubuntu\\nTypes: deb"', "is not one URI"),
    ("gpu-01", "nodes/gpu-01.sls", "\\nmaster: 10.1.0.10\\n", "\\nmaster: 10.1.0.10 x\\n",
     "master address"),
    ("gpu-01", "nodes/gpu-01.sls", "\\nid: gpu-01\\n", "\\nid: gpu-02\\n",
     "node:salt is for gpu-02, not gpu-01"),
    ("head-01", "slurm.sls", "cluster: lab", 'cluster: "lab\\nSlurmUser=root"',
     "one word of slurm.conf"),
    ("head-01", "slurm.sls", "max_time: INFINITE", 'max_time: "INFINITE State=DOWN"',
     "one word of slurm.conf"),
    ("head-01", "mkv.sls", "index_path: /var/lib/mkv/data",
     'index_path: "/var/lib/mkv/data -replicas 0"', "one word of a systemd unit"),
    ("gpu-01", "nodes/gpu-01.sls", "system_name: gpu-01",
     'system_name: "gpu-01\\nconfigure system chassisid x"', "is not an inventory name"),
    ("gpu-01", "nodes/gpu-01.sls", "    interfaces:\n    - prov",
     '    interfaces:\n    - "*,!prov"', "is not an inventory name"),
])
def test_a_hostile_pillar_value_fails_the_render(pillar_dir: Path, tmp_path: Path, node: str,
                                                 file: str, old: str, new: str,
                                                 says: str) -> None:
    res = _render(pillar_dir, tmp_path, node, _replace(file, old, new))
    assert any(says in e for e in res.errors), res.errors


def test_a_purpose_with_a_line_break_stays_in_its_comment(pillar_dir: Path,
                                                          tmp_path: Path) -> None:
    res = _render(pillar_dir, tmp_path, "head-01",
                  _replace("mkv.sls", "purpose: null",
                           'purpose: "data\\n[Service]\\nExecStartPre=/bin/reboot \\\\"'))
    assert not res.errors, res.errors
    unit = res.files["mkv-master-file-managed-unit-data"]
    assert "# data [Service] ExecStartPre=/bin/reboot \n[Unit]\n" in unit, unit[:300]
    assert "\nExecStartPre" not in unit


def test_no_security_mirror_is_no_security_stanza(pillar_dir: Path, tmp_path: Path) -> None:
    """site.apt.security_mirror null (an archive without a separate security host): the
    sources file has the one stanza, never ``URIs: None``."""
    node = "gpu-01"
    text = (pillar_dir / "pillar" / "nodes" / f"{node}.sls").read_text()
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("security_mirror:"))
    res = _render(pillar_dir, tmp_path, node,
                  _replace(f"nodes/{node}.sls", line, line.split(":")[0] + ": null"))
    assert not res.errors, res.errors
    sources = res.files["base-apt-file-managed-sources"]
    assert sources.count("Types: deb") == 1 and "None" not in sources, sources
    assert "URIs: http://10.1.0.10:3142/archive.ubuntu.com/ubuntu" in sources, sources
