"""The nvidia role as rendered per OS: the pinned branch's names, the driver check after
the install, the P2P option's purge/userspace lists, and a branch that is no branch."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from fleet import saltrender
from fleet.inventory.load import load_inventory
from fleet.inventory.nvidia import branches
from support.cli import ROOT

GPU_NODE = "tbox-001"
OSES = ("ubuntu-24.04", "ubuntu-22.04", "debian-12")


def _branch(os_name: str) -> str:
    """The inventory's branch of GPU_NODE on ``os_name`` (site.nvidia_branch and its
    profile's gpu.driver_branch): the only place it is written."""
    inv = load_inventory(ROOT / "inventory.yaml")
    return branches(inv.raw.site, inv.nodes[GPU_NODE].profile)[os_name]


def _render(renderer: Any, os_name: str,
            lookup: dict[str, Any] | None = None) -> saltrender.Rendered:
    original = renderer.pillar

    def pillar(node: str) -> dict[str, Any]:
        data = copy.deepcopy(original(node))
        if lookup is not None:
            data.setdefault("nvidia", {})["lookup"] = lookup
        return data

    renderer.pillar = pillar
    try:
        return renderer.render(GPU_NODE, os_name)  # type: ignore[no-any-return]
    finally:
        renderer.pillar = original


def _states(result: saltrender.Rendered) -> dict[str, dict[str, Any]]:
    assert not result.errors, "\n".join(result.errors)
    return {c["__id__"]: c for c in result.lowstate if c["__sls__"].startswith("nvidia")}


@pytest.mark.parametrize("os_name", OSES)
def test_driver_check_follows_the_install(renderer_and_key: tuple[Any, str],
                                          os_name: str) -> None:
    states = _states(_render(renderer_and_key[0], os_name))
    install, check = states["nvidia-driver-pkg-installed"], states["nvidia-driver-cmd-run-check"]
    assert install["hold"] is True
    assert {"pkg": "nvidia-driver-pkg-installed"} in check["require"]
    assert check["stateful"] is True
    held = check["name"].split("--held ")[1].split(" --driver")[0].split()
    assert held == install["pkgs"]
    branch = _branch(os_name)
    assert f"--branch {branch} " in check["name"]
    if os_name != "debian-12":  # Debian names its driver packages without the branch
        assert all(f"-{branch}-" in p for p in held), held


@pytest.mark.parametrize("os_name", OSES)
def test_p2p_replaces_this_os_modules(renderer_and_key: tuple[Any, str], os_name: str) -> None:
    lookup = {"p2p": {"enabled": True, "sha256": "0" * 64}}
    states = _states(_render(renderer_and_key[0], os_name, lookup))
    assert "nvidia-driver-pkg-installed" not in states
    purged = states["nvidia-p2p-pkg-purged-packaged-modules"]["pkgs"]
    userspace = states["nvidia-p2p-pkg-installed-userspace"]
    deps = states["nvidia-p2p-pkg-installed-build-deps"]["pkgs"]
    kernel = saltrender.OS_GRAINS[os_name]["kernelrelease"]
    assert f"linux-headers-{kernel}" in deps
    if os_name == "debian-12":
        assert purged == ["nvidia-kernel-dkms", "nvidia-open-kernel-dkms"]
        assert "nvidia-smi" in userspace["pkgs"]
    else:
        # the meta package and the running kernel's module package (the .ko files)
        branch = _branch(os_name)
        assert purged == [f"linux-modules-nvidia-{branch}-server-open-generic",
                          f"linux-modules-nvidia-{branch}-server-open-{kernel}"]
        assert f"nvidia-utils-{branch}-server" in userspace["pkgs"]
    assert userspace["hold"] is True
    check = states["nvidia-driver-cmd-run-check"]
    assert {"pkg": "nvidia-p2p-pkg-installed-userspace"} in check["require"]
    assert " ".join(userspace["pkgs"]) in check["name"]


def test_branch_that_is_not_a_number_fails_the_render(renderer_and_key: tuple[Any, str]
                                                      ) -> None:
    """The inventory's type refuses it first; the role refuses it too (a hand-edited
    pillar)."""
    renderer = renderer_and_key[0]
    original = renderer.pillar

    def pillar(node: str) -> dict[str, Any]:
        data = copy.deepcopy(original(node))
        data["node"]["nvidia"]["branches"]["ubuntu-24.04"] = "580-server"
        return data

    renderer.pillar = pillar
    try:
        result = renderer.render(GPU_NODE, "ubuntu-24.04")
    finally:
        renderer.pillar = original
    assert any("nvidia: branch 580-server does not match" in e for e in result.errors), \
        result.errors


def test_the_branch_of_each_os_comes_from_the_pillar(renderer_and_key: tuple[Any, str]
                                                    ) -> None:
    """A profile's own branch (pillar node:nvidia:branches) is what the role installs;
    an OS without one fails the render, naming the inventory's fields."""
    renderer = renderer_and_key[0]
    original = renderer.pillar
    branches_now: dict[str, str] = {}

    def pillar(node: str) -> dict[str, Any]:
        data = copy.deepcopy(original(node))
        data["node"]["nvidia"]["branches"] = dict(branches_now)
        return data

    renderer.pillar = pillar
    try:
        branches_now.update({"ubuntu-24.04": "1234"})
        states = _states(renderer.render(GPU_NODE, "ubuntu-24.04"))
        assert "nvidia-utils-1234-server" in states["nvidia-driver-pkg-installed"]["pkgs"]
        result = renderer.render(GPU_NODE, "debian-12")
    finally:
        renderer.pillar = original
    assert any("nvidia: no driver branch for debian-12 in pillar node:nvidia:branches" in e
               for e in result.errors), result.errors
