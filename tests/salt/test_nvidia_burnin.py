"""nvidia.burnin as rendered: the site's null pins build nothing (its highstate and the
lab's are unchanged), a pin is fetched by its checksum and built after the driver into
its own directory with `current` linked last, an OS whose archive lacks a package the
build needs fails loudly, and the build command itself, run here on a STAND-IN source
(a Makefile that writes the program: no CUDA here), leaves the program where the state's
`creates` and the runner look, or, when it fails, no tree at all."""

from __future__ import annotations

import copy
import io
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet import saltrender
from fleet.inventory.burnintools import TOOLS
from fleet.packages.highstates import pillar_of, role_sets, with_pinned_sources
from support.cli import ROOT

GPU_NODE = "tbox-001"
OSES = ("ubuntu-24.04", "ubuntu-22.04", "debian-12")
GPU_BURN, NCCL = TOOLS["gpu-stress"], TOOLS["nccl-allreduce"]
SHA = {GPU_BURN.name: "a" * 64, NCCL.name: "b" * 64}


def _pin(tool: Any, root: str | None = None) -> dict[str, Any]:
    """pillar node:nvidia:burnin_tools's entry of a pinned ``tool`` (``root``: its
    directory somewhere else, for the build run here)."""
    return {"source": f"http://10.1.0.10/pypi/artifacts/{tool.name}.tar",
            "sha256": SHA[tool.name], "dir": root or tool.dir, "binary": tool.binary}


def _render(renderer: Any, os_name: str, tools: dict[str, Any] | None = None,
            lookup: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """nvidia's states of GPU_NODE by ID, its pillar's burnin_tools replaced by ``tools``
    (None: the site's) and ``lookup`` as pillar nvidia:lookup."""
    original = renderer.pillar

    def pillar(node: str) -> dict[str, Any]:
        data = copy.deepcopy(original(node))
        if tools is not None:
            data["node"]["nvidia"]["burnin_tools"] = tools
        if lookup is not None:
            data.setdefault("nvidia", {})["lookup"] = lookup
        return data

    renderer.pillar = pillar
    try:
        result: saltrender.Rendered = renderer.render(GPU_NODE, os_name)
    finally:
        renderer.pillar = original
    assert not result.errors, "\n".join(result.errors)
    return {c["__id__"]: c for c in result.lowstate if c["__sls__"].startswith("nvidia")}


@pytest.mark.parametrize("os_name", OSES)
def test_the_sites_null_pins_build_nothing(renderer_and_key: tuple[Any, str],
                                           os_name: str) -> None:
    renderer = renderer_and_key[0]
    site = renderer.pillar(GPU_NODE)["node"]["nvidia"]["burnin_tools"]
    assert site == {GPU_BURN.name: None, NCCL.name: None}  # the committed render's
    states = _render(renderer, os_name)
    assert "nvidia-driver-pkg-installed" in states  # the role itself rendered
    assert not [i for i, c in states.items() if c["__sls__"] == "nvidia.burnin"]


def test_a_pin_is_fetched_by_checksum_and_built_after_the_driver(
        renderer_and_key: tuple[Any, str]) -> None:
    states = _render(renderer_and_key[0], "ubuntu-24.04",
                     {GPU_BURN.name: _pin(GPU_BURN), NCCL.name: _pin(NCCL)})
    pkgs = states["nvidia-burnin-pkg-installed"]
    assert pkgs["pkgs"] == ["build-essential", "nvidia-cuda-toolkit", "libnccl-dev",
                            "openmpi-bin", "libopenmpi-dev"]  # nccl-tests with MPI=1
    # after the driver: the toolkit's libcuda dependency is the held driver's
    assert {"pkg": "nvidia-driver-pkg-installed"} in pkgs["require"]
    for tool, make in ((GPU_BURN, "CUDAPATH=/usr"),
                       (NCCL, "MPI=1 MPI_HOME=/usr/lib/x86_64-linux-gnu/openmpi "
                              "CUDA_HOME=/usr CUDA_LIB=/usr/lib/x86_64-linux-gnu "
                              "NCCL_HOME=/usr")):
        tree = f"{tool.dir}/{SHA[tool.name]}"
        source = states[f"nvidia-burnin-file-managed-{tool.name}-source"]
        assert source["source_hash"] == f"sha256={SHA[tool.name]}"
        assert source["name"] == f"/var/cache/fleet/artifacts/{SHA[tool.name]}.tar"
        built = states[f"nvidia-burnin-cmd-run-{tool.name}-built"]
        assert built["creates"] == f"{tree}/{tool.binary}"  # built once per pin
        assert f"make -C {tree}.new {make} && test -x {tree}.new/{tool.binary}" \
            in built["name"]
        assert {"pkg": "nvidia-burnin-pkg-installed"} in built["require"]
        link = states[f"nvidia-burnin-file-symlink-{tool.name}-current"]
        assert (link["name"], link["target"]) == (f"{tool.dir}/current", tree)
        assert {"cmd": f"nvidia-burnin-cmd-run-{tool.name}-built"} in link["require"]
        assert f"{link['name']}/{tool.binary}" == tool.path  # where the runner looks


def test_one_pin_builds_only_its_tool(renderer_and_key: tuple[Any, str]) -> None:
    states = _render(renderer_and_key[0], "ubuntu-24.04",
                     {GPU_BURN.name: _pin(GPU_BURN), NCCL.name: None})
    assert states["nvidia-burnin-pkg-installed"]["pkgs"] == ["build-essential",
                                                              "nvidia-cuda-toolkit"]
    assert not [i for i in states if NCCL.name in i]


def test_with_the_p2p_modules_the_build_follows_their_userspace(
        renderer_and_key: tuple[Any, str]) -> None:
    states = _render(renderer_and_key[0], "ubuntu-24.04", {GPU_BURN.name: _pin(GPU_BURN)},
                     {"p2p": {"enabled": True, "sha256": "0" * 64}})
    assert {"pkg": "nvidia-p2p-pkg-installed-userspace"} in \
        states["nvidia-burnin-pkg-installed"]["require"]


@pytest.mark.parametrize("os_name", ["ubuntu-22.04", "debian-12"])
def test_nccl_tests_on_an_os_without_libnccl_fails_loudly(
        renderer_and_key: tuple[Any, str], os_name: str) -> None:
    states = _render(renderer_and_key[0], os_name,
                     {GPU_BURN.name: _pin(GPU_BURN), NCCL.name: _pin(NCCL)})
    fail = states[f"nvidia-burnin-test-fail-without-changes-{NCCL.name}"]
    assert fail["fun"] == "fail_without_changes"
    assert "nccl-tests is pinned (site.burnin_tools)" in fail["name"]
    assert "nvidia-burnin-cmd-run-gpu-burn-built" in states  # gpu_burn needs no NCCL
    assert "libnccl-dev" not in states["nvidia-burnin-pkg-installed"]["pkgs"]
    alone = _render(renderer_and_key[0], os_name, {NCCL.name: _pin(NCCL)})
    assert [i for i, c in alone.items() if c["__sls__"] == "nvidia.burnin"] == [
        f"nvidia-burnin-test-fail-without-changes-{NCCL.name}"]  # no empty install


def _source(path: Path, makefile: str) -> None:
    """A STAND-IN source tar (no CUDA here): its tree under one top directory, as
    `git archive --prefix=NAME/` writes it."""
    with tarfile.open(path, "w") as tar:
        data = makefile.encode()
        info = tarfile.TarInfo("gpu-burn/Makefile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def test_the_build_command_leaves_the_program_where_creates_looks(
        renderer_and_key: tuple[Any, str], tmp_path: Path) -> None:
    cache, root = tmp_path / "cache", tmp_path / "opt" / GPU_BURN.name
    cache.mkdir()
    root.mkdir(parents=True)
    # writes the program only when make is given the state's CUDAPATH
    _source(cache / f"{SHA[GPU_BURN.name]}.tar",
            "gpu_burn:\n\ttest \"$(CUDAPATH)\" = /usr && printf '#!/bin/sh\\n' > $@ && "
            "chmod 755 $@ && echo ptx > compare.ptx\n")
    states = _render(renderer_and_key[0], "ubuntu-24.04",
                     {GPU_BURN.name: _pin(GPU_BURN, str(root))},
                     {"burnin": {"cache": str(cache)}})
    built = states[f"nvidia-burnin-cmd-run-{GPU_BURN.name}-built"]
    run = subprocess.run(["/bin/sh", "-c", built["name"]], capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert Path(built["creates"]).is_file()  # the second apply: nothing to do
    tree = root / SHA[GPU_BURN.name]
    assert sorted(p.name for p in tree.iterdir()) == ["Makefile", "compare.ptx", "gpu_burn"]
    assert not (root / f"{SHA[GPU_BURN.name]}.new").exists()
    # a build that fails leaves no tree at the pin's path, whatever was there
    _source(cache / f"{SHA[GPU_BURN.name]}.tar", "gpu_burn:\n\tfalse\n")
    shutil.rmtree(tree)
    run = subprocess.run(["/bin/sh", "-c", built["name"]], capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode != 0 and not tree.exists()


def test_the_docs_say_where_each_tool_is_built_and_how() -> None:
    """docs/discovery.md (Burn-in tools) names each program's path and make arguments:
    checked against their one definitions (burnintools.py, nvidia/defaults.yaml)."""
    text = " ".join((ROOT / "docs" / "discovery.md").read_text().split())
    recipes = yaml.safe_load((ROOT / "salt" / "nvidia" / "defaults.yaml").read_text())
    for tool in TOOLS.values():
        assert tool.path in text and tool.pin in text
        assert f"make {recipes['values']['burnin']['build'][tool.name]['make']}" in text


def test_check_packages_checks_the_builds_packages_with_a_stand_in_pin(
        renderer_and_key: tuple[Any, str]) -> None:
    """`make check-packages` renders the GPU role set a second time with every null pin
    set to a STAND-IN (never fetched), so the build's packages are proven real and
    installable beside the held driver before an operator pins a source."""
    renderer = renderer_and_key[0]
    sets = role_sets(renderer)
    found = list(with_pinned_sources(renderer, sets))
    extra = [(roles, node, pillar) for roles, node, pillar in found if pillar is not None]
    assert len(found) == len(sets) + len(extra)
    ((roles, node, pillar),) = extra  # the site's one set with the nvidia role
    assert roles[-1] == "burnin_tools pinned" and "nvidia" in roles
    assert all(pillar["node"]["nvidia"]["burnin_tools"].values())
    with pillar_of(renderer, node, pillar):
        result = renderer.render(node, "ubuntu-24.04")
    assert not result.errors
    installed = {p for c in result.lowstate if c["__id__"] == "nvidia-burnin-pkg-installed"
                 for p in c["pkgs"]}
    assert installed == {"build-essential", "nvidia-cuda-toolkit", "libnccl-dev",
                         "openmpi-bin", "libopenmpi-dev"}
    assert renderer.pillar(node)["node"]["nvidia"]["burnin_tools"] == {
        GPU_BURN.name: None, NCCL.name: None}  # the node's own pillar again
