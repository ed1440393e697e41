"""The nvidia role as rendered per OS: the pinned branch's names, the driver check after
the install, the P2P option's purge/userspace lists, and a branch that is no branch."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest

from support import harness, saltrender

GPU_NODE = "tbox-001"
OSES = ("ubuntu-24.04", "ubuntu-22.04", "debian-12")


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
    branch = "535" if os_name == "debian-12" else "580"
    assert f"--branch {branch} " in check["name"]
    if os_name != "debian-12":
        assert all("-580-" in p for p in held), held
        assert "-570-" not in check["name"]


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
        assert purged == ["linux-modules-nvidia-580-server-open-generic",
                          f"linux-modules-nvidia-580-server-open-{kernel}"]
        assert "nvidia-utils-580-server" in userspace["pkgs"]
    assert userspace["hold"] is True
    check = states["nvidia-driver-cmd-run-check"]
    assert {"pkg": "nvidia-p2p-pkg-installed-userspace"} in check["require"]
    assert " ".join(userspace["pkgs"]) in check["name"]


def test_branch_that_is_not_a_number_fails_the_render(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2] / "salt"
    tree = tmp_path / "salt"
    shutil.copytree(root, tree)
    defaults = tree / "nvidia" / "defaults.yaml"
    text = defaults.read_text()
    assert "  branch: '580'\n" in text
    defaults.write_text(text.replace("  branch: '580'\n", "  branch: '580-server'\n"))
    renderer, _key = harness.make_renderer(tmp_path / "render", file_root=tree)
    result = renderer.render(GPU_NODE, "ubuntu-24.04")
    assert any("nvidia: branch 580-server does not match" in e for e in result.errors), \
        result.errors
