"""The salt-minion bootstrap is written once: every file both installers write (the Ubuntu
autoinstall's and the Debian preseed's late-commands) is byte-equal to the file the base
role's state manages for the same node, for every node of the real inventory and of
tests/fixtures/small.yaml; and the inventory's values reach the state-managed files."""

from __future__ import annotations

import base64
import json
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from fleet import saltrender
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory, Node
from fleet.inventory.schema.site import DebianImage
from fleet.render import bootstrap, render_all
from fleet.render.preseed import render_preseed
from support import harness

SMALL = harness.ROOT / "tests" / "fixtures" / "small.yaml"
REAL = harness.ROOT / "inventory.yaml"
# the base role's states that manage the bootstrap's files
STATES = {
    "base-apt-file-managed-site-repo": bootstrap.SITE_REPO_SOURCES,
    "base-apt-file-managed-site-repo-pin": bootstrap.SITE_REPO_PIN,
    "base-apt-file-managed-salt-repo": bootstrap.SOURCES,
    "base-apt-file-managed-salt-pin": bootstrap.PIN,
    "base-minion-file-managed-conf": bootstrap.MINION_CONF,
    "base-minion-file-managed-id": bootstrap.MINION_ID,
}
SITE_REPO_STATES = "base-apt-file-managed-site-repo"
# the suite of the rendered highstate's OS (harness.DEFAULT_OS)
SUITE = "noble"
# any Debian installer image: the preseed's late-commands do not depend on it
IMAGE = DebianImage(type="debian-preseed", kernel="images/debian-12/linux",
                    initrd="images/debian-12/initrd.gz", mirror="http://deb.example/debian")


def autoinstall_writes(user_data: str) -> dict[str, str]:
    """The files the autoinstall late-commands write: ``printf '%s\\n' LINE... > /target/P``."""
    out = {}
    for cmd in yaml.safe_load(user_data)["autoinstall"]["late-commands"]:
        words = shlex.split(cmd)
        if words[0] == "printf" and words[-2] == ">":
            assert words[1] == "%s\\n", cmd
            out[words[-1].removeprefix("/target")] = "".join(f"{w}\n" for w in words[2:-2])
    return out


def preseed_writes(preseed: str) -> dict[str, str]:
    """The files the preseed late_command writes: ``echo B64 | base64 -d > /target/P``."""
    return {m.group(2): base64.b64decode(m.group(1)).decode()
            for m in re.finditer(r"echo ([A-Za-z0-9+/=]+) \| base64 -d > /target([^\s;]+)",
                                 preseed)}


def installer_files(inv: Inventory, files: dict[str, str], node: Node) -> dict[str, dict[str, str]]:
    """installer -> the bootstrap files it writes for ``node``."""
    ai = autoinstall_writes(files[f"pxe/http/hosts/{node.hostname}/user-data"])
    ps = preseed_writes(render_preseed(inv, node, IMAGE))
    return {installer: {p: text[p] for p in STATES.values() if p in text}
            for installer, text in (("autoinstall", ai), ("preseed", ps))}


def state_files(result: saltrender.Rendered) -> dict[str, str]:
    assert not result.errors, result.errors
    out = {}
    for state_id, path in STATES.items():
        if state_id.startswith(SITE_REPO_STATES) and not any(c["__id__"] == state_id
                                                             for c in result.lowstate):
            continue  # an inventory without a site package repository
        name, text = result.managed(state_id)
        assert name == path, (state_id, name)
        out[name] = text
    return out


def write_pillar(files: dict[str, str], root: Path) -> Path:
    for path, text in files.items():
        if path.startswith("pillar/"):
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
    return root / "pillar"


def render_nodes(tmp: Path, pillar: Path, nodes: list[str]) -> dict[str, saltrender.Rendered]:
    saltrender.quiet_salt_logging()
    saltrender.enable_jinja_compile_cache()
    harness.write_secrets_root(tmp / "secrets")
    renderer = saltrender.Renderer(harness.ROOT / "salt", pillar, tmp / "secrets",
                                   tmp / "cache")
    return {n: renderer.render(n) for n in nodes}


def expected(inv: Inventory, node: Node, installer: str, managed: dict[str, str]
             ) -> dict[str, str]:
    """What ``installer`` must write for ``node``, given the state's files: the same bytes,
    but for the site repository's source, which names the installer's own suite, and which
    the provisioning host's state points at its own directory (the installers never run
    there: it serves them)."""
    want = dict(managed)
    if bootstrap.SITE_REPO_SOURCES in want:
        suite = IMAGE.suite if installer == "preseed" else SUITE
        want[bootstrap.SITE_REPO_SOURCES] = bootstrap.site_repo_sources(inv, suite)
        local = node.hostname == inv.raw.site.provisioning_host
        assert managed[bootstrap.SITE_REPO_SOURCES] == bootstrap.site_repo_sources(
            inv, SUITE, local=local), node.hostname
    return want


def assert_same_bytes(inv: Inventory, files: dict[str, str],
                      results: dict[str, saltrender.Rendered]) -> None:
    assert set(results) == set(inv.nodes)
    for name, node in inv.nodes.items():
        managed = state_files(results[name])
        has_repo = {bootstrap.SITE_REPO_SOURCES, bootstrap.SITE_REPO_PIN} <= set(managed)
        assert has_repo == (inv.raw.site.apt.repo is not None), name
        for installer, written in installer_files(inv, files, node).items():
            assert written == expected(inv, node, installer, managed), \
                f"{name}: {installer} and Salt differ"
        assert expected(inv, node, "autoinstall", managed) == bootstrap.files(inv, node, SUITE)


def test_real_inventory_installers_and_states_write_the_same_bytes(
        rendered: dict[str, Any]) -> None:
    inv = load_inventory(REAL)
    files = render_all(inv)
    # the render check's pillar is the committed pillar/: it must be this inventory's
    for path, text in files.items():
        if path.startswith("pillar/"):
            assert (harness.ROOT / path).read_text() == text, f"{path}: run `make render`"
    results = {n: r for (n, o), r in rendered["results"].items() if o == harness.DEFAULT_OS}
    assert_same_bytes(inv, files, results)


def test_small_inventory_installers_and_states_write_the_same_bytes(tmp_path: Path) -> None:
    inv = load_inventory(SMALL)
    files = render_all(inv)
    results = render_nodes(tmp_path, write_pillar(files, tmp_path), list(inv.nodes))
    assert_same_bytes(inv, files, results)


def test_the_inventorys_salt_repo_reaches_the_state(tmp_path: Path) -> None:
    """A site that sets its own Salt repository (and records the master's key) keeps both
    after a highstate: the state writes the inventory's URI, not a role default."""
    repo = "http://apt.example.internal/salt-mirror"
    finger = ":".join(["ab"] * 32)
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(json.dumps({"site": {"salt": {"repo": repo, "master_finger": finger,
                                                     "version": "3007.1"}}}))
    inv = load_inventory(SMALL, overlay)
    files = render_all(inv)
    node = "gpu-01"
    results = render_nodes(tmp_path, write_pillar(files, tmp_path), [node])
    managed = state_files(results[node])
    assert f"URIs: {repo}\n" in managed[bootstrap.SOURCES]
    assert "Enabled" not in managed[bootstrap.SOURCES]
    assert "Pin: version 3007.1*\n" in managed[bootstrap.PIN]
    assert yaml.safe_load(managed[bootstrap.MINION_CONF])["master_finger"] == finger
    assert managed == bootstrap.files(inv, inv.nodes[node], SUITE)
    for installer, written in installer_files(inv, files, inv.nodes[node]).items():
        assert written == expected(inv, inv.nodes[node], installer, managed), installer


def test_the_lab_switch_keeps_the_source_disabled(tmp_path: Path) -> None:
    """Pillar ``base:lookup:apt:salt_repo:enabled: false`` (lab/pillar/lab.sls) writes the
    bootstrap's source with ``Enabled: no``."""
    inv = load_inventory(SMALL)
    pillar = write_pillar(render_all(inv), tmp_path)
    (pillar / "lab.sls").write_text((harness.ROOT / "lab" / "pillar" / "lab.sls").read_text())
    top = yaml.safe_load((pillar / "top.sls").read_text())
    top["base"]["gpu-01"].append("lab")
    (pillar / "top.sls").write_text(yaml.safe_dump(top))
    results = render_nodes(tmp_path, pillar, ["gpu-01"])
    text = state_files(results["gpu-01"])[bootstrap.SOURCES]
    assert text == bootstrap.salt_sources(inv.raw.site.salt, enabled=False)
    assert text.endswith("\nEnabled: no\n")
