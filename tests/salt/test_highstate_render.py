"""CI render check: every node's highstate renders, role snapshots, secrets.

Every node of the default inventory (pillar/ as rendered) is rendered with Ubuntu 24.04
grains, and the first node of each role with Ubuntu 22.04 and Debian 12 grains, with a
dummy munge key in a temporary secrets root. See tools/fleet/saltrender.py for what counts
as an error.
"""

from __future__ import annotations

import difflib
import json
import logging
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

try:
    import salt.config  # noqa: F401
except ImportError:  # CI installs Salt from requirements.txt: its absence is a failure
    raise ImportError("Salt is not installed: run `make deps` (requirements.txt pins it)") \
        from None

import snapshot

from fleet import saltrender
from support import harness


def test_every_node_renders_without_errors(rendered: dict[str, Any]) -> None:
    errors = [e for r in rendered["results"].values() for e in r.errors]
    assert not errors, f"{len(errors)} render error(s):\n" + "\n".join(errors)
    empty = [f"{n} [{o}]" for (n, o), r in rendered["results"].items() if not r.lowstate]
    assert not empty, f"no states rendered for: {', '.join(empty)}"


def test_every_node_and_os_was_rendered(rendered: dict[str, Any]) -> None:
    renderer = rendered["renderer"]
    done = set(rendered["results"])
    assert {(n, harness.DEFAULT_OS) for n in renderer.nodes()} <= done
    for role, nodes in rendered["roles"].items():
        for os_name in harness.OTHER_OS:
            assert (nodes[0], os_name) in done, (role, os_name)


def test_every_inventory_role_is_mapped_in_top(rendered: dict[str, Any]) -> None:
    top = (harness.ROOT / "salt" / "top.sls").read_text()
    unmapped = [r for r in rendered["roles"] if f"'node:roles:{r}':" not in top]
    assert not unmapped, f"roles with no entry in salt/top.sls: {unmapped}"
    assert set(rendered["roles"]) <= set(snapshot.ROLES), "add new roles to snapshot.ROLES"


def test_each_role_applies_its_own_states(rendered: dict[str, Any]) -> None:
    for role, nodes in rendered["roles"].items():
        for node in nodes:
            result = rendered["results"][(node, harness.DEFAULT_OS)]
            assert any(snapshot.role_owns(role, c["__sls__"]) for c in result.lowstate), (
                f"{node}: role {role} rendered no state")


@pytest.mark.parametrize("role", snapshot.ROLES)
def test_role_snapshot(rendered: dict[str, Any], role: str) -> None:
    if role not in rendered["roles"]:
        pytest.skip(f"no node of the default inventory has role {role}")
    node = rendered["roles"][role][0]
    result = rendered["results"][(node, harness.DEFAULT_OS)]
    assert not result.errors
    got = snapshot.dumps(snapshot.snapshot(role, result))
    path = harness.SNAPSHOTS / f"{role}.json"
    want = path.read_text() if path.exists() else ""
    if got != want:
        diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                            f"{path.name} (committed)", f"{path.name} (now)", n=2))
        pytest.fail(f"lowstate of role {role} ({node}) changed; if intended, run "
                    f"`PYTHONPATH=tools python tests/salt/update_snapshots.py` and commit:\n"
                    f"{diff[:6000]}")


def test_secret_never_in_rendered_output(rendered: dict[str, Any],
                                         caplog: pytest.LogCaptureFixture) -> None:
    key = rendered["key"]
    for (node, os_name), result in rendered["results"].items():
        text = json.dumps(result.lowstate, default=str) + json.dumps(result.files)
        assert key not in text, f"{node} [{os_name}]: munge key appears in the render"
        assert key[:32] not in text
    # and the state that deploys it reads the pillar at apply time, hidden from diffs
    head = next(r for (n, o), r in rendered["results"].items()
                if o == harness.DEFAULT_OS and "slurm.controller" in
                rendered["renderer"].pillar(n)["node"]["roles"])
    (munge,) = [c for c in head.lowstate if c["__id__"] == "slurm-munge-file-managed-key"]
    assert munge["contents_pillar"] == "secrets:munge_key"
    assert munge["show_changes"] is False and munge["mode"] == "0400"
    with caplog.at_level(logging.DEBUG, logger="salt"):
        rendered["renderer"].render(head.node, harness.DEFAULT_OS)
    assert caplog.records, "Salt logged nothing: the log check would prove nothing"
    assert key not in caplog.text


def test_the_apt_cache_login_reaches_the_provisioning_host_only(
        rendered: dict[str, Any]) -> None:
    """secrets.aptcache: in the provisioning host's pillar only, never in a rendered state
    or file (the state writes it with contents_pillar at apply time, hidden from diffs)."""
    renderer = rendered["renderer"]
    holders = [n for n in renderer.nodes()
               if "apt_cache_auth" in renderer.pillar(n).get("secrets", {})]
    assert holders == [n for n in renderer.nodes()
                       if "provisioning" in renderer.pillar(n)["node"]["roles"]] != []
    auth = renderer.pillar(holders[0])["secrets"]["apt_cache_auth"]
    password = auth.rsplit(":", 1)[1]
    assert len(password) >= 16
    for (node, os_name), result in rendered["results"].items():
        text = json.dumps(result.lowstate, default=str) + json.dumps(result.files)
        assert password not in text, f"{node} [{os_name}]: the apt cache login is rendered"
    head = next(r for (n, o), r in rendered["results"].items()
                if n == holders[0] and o == harness.DEFAULT_OS)
    (admin,) = [c for c in head.lowstate
                if c["__id__"] == "provisioning-aptcache-file-managed-admin"]
    assert admin["contents_pillar"] == "secrets:apt_cache_auth"
    assert admin["show_changes"] is False and admin["mode"] == "0600"


def test_secrets_reach_only_slurm_nodes(rendered: dict[str, Any]) -> None:
    renderer = rendered["renderer"]
    for node in renderer.nodes():
        roles = renderer.pillar(node)["node"]["roles"]
        has = "munge_key" in renderer.pillar(node).get("secrets", {})
        assert has == any(r.startswith("slurm.") for r in roles), node


def test_pillar_assembly_matches_salt(rendered: dict[str, Any]) -> None:
    """The fast pillar assembly used by the check equals Salt's own pillar compiler."""
    renderer = rendered["renderer"]
    for role, nodes in sorted(rendered["roles"].items()):
        node = nodes[0]
        ours = renderer.pillar(node)
        theirs = renderer.salt_pillar(node)
        assert json.loads(json.dumps(ours)) == json.loads(json.dumps(theirs)), (role, node)


# -- the check catches planted mistakes, naming node and state -----------------------------

PLANTS: dict[str, dict[str, Any]] = yaml.safe_load(
    (Path(__file__).with_name("plants.yaml")).read_text())


@pytest.mark.parametrize("plant", sorted(PLANTS))
def test_planted_mistake_fails_naming_node_and_state(tmp_path: Path, plant: str) -> None:
    rel, old, new, node, expected = (PLANTS[plant][k] for k in ("file", "old", "new", "node",
                                                                "names"))
    tree = tmp_path / "salt"
    shutil.copytree(harness.ROOT / "salt", tree)
    target = tree / rel
    text = target.read_text()
    assert old in text, f"plant {plant}: anchor not found in {rel}"
    target.write_text(text.replace(old, new, 1))
    renderer, _ = harness.make_renderer(tmp_path, file_root=tree)
    result = renderer.render(node, harness.DEFAULT_OS)
    assert result.errors, f"plant {plant} was not detected"
    joined = "\n".join(result.errors)
    for word in expected:
        assert word in joined, f"plant {plant}: {word!r} not named in:\n{joined}"
    # the unmodified tree renders the same node cleanly
    clean, _ = harness.make_renderer(tmp_path / "clean")
    assert not clean.render(node, harness.DEFAULT_OS).errors


def test_unsupported_os_fails_clearly(rendered: dict[str, Any]) -> None:
    renderer: saltrender.Renderer = rendered["renderer"]
    saltrender.OS_GRAINS["centos-9"] = {"os": "CentOS Stream", "os_family": "RedHat",
                                        "osfinger": "CentOS Stream-9", "oscodename": "",
                                        "osrelease": "9", "osmajorrelease": 9,
                                        "kernelrelease": "5.14.0"}
    try:
        result = renderer.render("cache-01", "centos-9")
    finally:
        del saltrender.OS_GRAINS["centos-9"]
    assert any("unsupported OS CentOS Stream-9" in e and "cache-01" in e for e in result.errors)
