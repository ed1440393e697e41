"""nvidia and infiniband on the GPU nodes: what Salt puts in place without hardware.

The containers have no GPU and no HCA (lab/pillar/lab.sls: ``fleet:hardware: false``), so
the states that need them (loading the modules, nvidia-smi's GPU count, an active IB port)
are not rendered, and the tests that would check them are skipped by name, with that
reason, in ``test_*_hardware`` below: never silently.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from labtools import ROOT, Lab, deep_merge, node_ids

from fleet.lab.paths import Paths

GPU_NODES = node_ids("nvidia")
IB_NODES = node_ids("infiniband")
NO_HARDWARE = ("lab containers have no GPU and no InfiniBand HCA (fleet:hardware is false "
               "in lab/pillar/lab.sls): this check runs only on real hardware")


def _role_defaults(role: str) -> dict:
    """The role's values for the lab's OS (what the lab's minions run), as map.jinja
    merges them: defaults.yaml values, then its osfinger block."""
    data = yaml.safe_load((ROOT / "salt" / role / "defaults.yaml").read_text())
    return deep_merge(data["values"], data["osfinger"].get(Paths(ROOT).osfinger) or {})


def _lookup(lab: Lab, role: str) -> dict:
    """The role's values with the lab pillar's lookup merged over them; for nvidia also
    the branch, the inventory's for the lab's OS (the lab render's pillar
    node:nvidia:branches of a GPU node, as names.jinja takes it)."""
    values = deep_merge(_role_defaults(role), lab.lab_pillar.get(role, {}).get("lookup", {}))
    if role == "nvidia":
        node = yaml.safe_load(Path(lab.paths.render / "pillar" / "nodes"
                                   / f"{GPU_NODES[0]}.sls").read_text())
        values["branch"] = node["node"]["nvidia"]["branches"][Paths(ROOT).osfinger.lower()]
    return values


def _names(nv: dict, key: str) -> list[str]:
    """nvidia package names with the branch and flavour filled in, as names.jinja does."""
    return [name.format(branch=nv["branch"], flavour=nv["flavour"]) for name in nv[key]]


def _installed(host, package: str) -> str | None:
    # "install ok installed", or "hold ok installed" for a held package
    out = host.run("dpkg-query -W -f '${Status} ${Version}' %s", package)
    words = out.stdout.split()
    if out.rc != 0 or len(words) != 4 or words[1:3] != ["ok", "installed"]:
        return None
    return words[3]


def test_lab_has_gpu_and_ib_nodes() -> None:
    # the parametrized tests below must not pass by having no nodes to check
    assert len(GPU_NODES) >= 3 and set(IB_NODES) >= set(GPU_NODES)


@pytest.mark.parametrize("node", GPU_NODES)
def test_nvidia_packages_pinned_and_held(lab: Lab, node: str) -> None:
    host = lab.host(node)
    nv = _lookup(lab, "nvidia")
    held = set(host.check_output("apt-mark showhold").split())
    for package in _names(nv, "packages"):
        version = _installed(host, package)
        assert version is not None, f"{package} is not installed on {node}"
        assert package in held, f"{package} is not held on {node}"
    # the pinned branch is the one installed (Debian names its packages without it)
    for package in _names(nv, "driver_packages"):
        version = _installed(host, package)
        assert version is not None and version.startswith(nv["branch"] + "."), \
            f"{package} {version} on {node} is not from the pinned branch {nv['branch']}"


@pytest.mark.parametrize("node", GPU_NODES)
def test_nvidia_persistenced_enabled_and_no_fabricmanager(lab: Lab, node: str) -> None:
    host = lab.host(node)
    nv = _lookup(lab, "nvidia")
    assert host.service(nv["persistenced_service"]).is_enabled
    for forbidden in nv["forbidden"]:
        name = forbidden.replace("{branch}", nv["branch"])
        assert _installed(host, name) is None, f"{name} must never be on {node}"
    blacklist = host.file(nv["modprobe_blacklist"])
    assert blacklist.mode == 0o644
    assert "blacklist nouveau" in blacklist.content_string.splitlines()


@pytest.mark.parametrize("node", GPU_NODES)
def test_nvidia_hardware(lab: Lab, node: str) -> None:
    if lab.lab_pillar["fleet"]["hardware"] is False:
        pytest.skip(f"nvidia-smi GPU count and persistenced running on {node}: {NO_HARDWARE}")
    pytest.fail("the lab pillar claims hardware: run these checks on a real node")


@pytest.mark.parametrize("node", IB_NODES)
def test_infiniband_packages_and_modules(lab: Lab, node: str) -> None:
    host = lab.host(node)
    ib = _lookup(lab, "infiniband")
    for package in ib["packages"]:
        assert _installed(host, package) is not None, f"{package} is not installed on {node}"
    listed = [line for line in host.file(ib["modules_load_file"]).content_string.splitlines()
              if line and not line.startswith("#")]
    assert listed == ib["modules"]
    # the IB switches run the subnet manager (inventory: subnet_manager on ib1/ib2)
    assert _installed(host, ib["opensm_package"]) is None, f"opensm must not run on {node}"


@pytest.mark.parametrize("node", IB_NODES)
def test_ipoib_configuration(lab: Lab, node: str) -> None:
    host = lab.host(node)
    ib = yaml.safe_load(Path(lab.paths.render / "pillar" / "nodes" / f"{node}.sls")
                        .read_text())["node"]["interfaces"]["ib"]
    netplan = host.file(_role_defaults("network")["netplan"]["file"])
    assert netplan.mode == 0o600
    conf = yaml.safe_load(netplan.content_string)["network"]["ethernets"]["ib"]
    assert conf["addresses"] == [f"{ib['address']}/{ib['prefixlen']}"]
    assert conf["mtu"] == ib["mtu"]
    assert conf["infiniband-mode"] == ib["ipoib_mode"]
    # netplan accepts it as it stands (the state's check_cmd, run again here)
    script = _role_defaults("network")["apply_script"]
    check = host.run("%s --check %s", script, netplan.path)
    assert check.rc == 0, check.stderr


@pytest.mark.parametrize("node", IB_NODES)
def test_infiniband_hardware(lab: Lab, node: str) -> None:
    if lab.lab_pillar["fleet"]["hardware"] is False:
        pytest.skip(f"IB modules loaded and port Active/LinkUp with an SM on {node}: "
                    f"{NO_HARDWARE}")
    pytest.fail("the lab pillar claims hardware: run these checks on a real node")
