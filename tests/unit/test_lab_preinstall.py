"""The lab images' packages come from the lab's own highstates (fleet.lab.preinstall):
each node's set is what its states install, per role, and nothing that makes a host's
identity or that a state removes."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.lab import plan as lab_plan
from fleet.lab import preinstall
from fleet.lab.paths import Paths

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("salt", reason="the lab highstate render needs Salt (make deps)")


@pytest.fixture(scope="module")
def sets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, preinstall.NodeSet]:
    """The Ubuntu 24.04 lab rendered into a scratch checkout (links to this one's
    inventory, lab/, salt/ and tests/; its own .lab)."""
    repo = tmp_path_factory.mktemp("checkout")
    for name in ("inventory.yaml", "lab", "salt", "tests"):
        (repo / name).symlink_to(ROOT / name)
    paths = Paths(repo, "ubuntu-24.04")
    plan = lab_plan.load(paths)
    lab_plan.render(paths, plan)
    return preinstall.node_sets(paths, plan)


def test_each_node_carries_what_its_roles_install(sets: dict[str, preinstall.NodeSet]) -> None:
    head, gpu, storage = sets["head-01"], sets["tbox-001"], sets["stor-001"]
    for pkg in ("prometheus", "apt-cacher-ng", "dnsmasq", "nginx", "slurmctld", "munge",
                "chrony"):
        assert pkg in head.packages, pkg
    for pkg in ("slurmd", "munge", "nvidia-utils-580-server", "rdma-core"):
        assert pkg in gpu.packages, pkg
    # role isolation: a storage node gets no Slurm (no munge key), a GPU node no dnsmasq
    assert "munge" not in storage.packages and "dnsmasq" not in gpu.packages
    # the lab's pillar decides: no kernel headers, no precompiled NVIDIA modules
    assert not [p for s in sets.values() for p in s.packages
                if p.startswith(("linux-headers", "linux-modules-nvidia"))]
    assert sets["tbox-002"] == gpu  # one image for nodes with the same roles


def test_identity_and_removed_packages_stay_out(sets: dict[str, preinstall.NodeSet]) -> None:
    for nset in sets.values():
        assert "openssh-server" not in nset.packages
        assert "opensm" not in nset.packages


def test_the_states_services_are_disabled_in_the_image(
        sets: dict[str, preinstall.NodeSet]) -> None:
    assert {"slurmctld", "dnsmasq", "prometheus"} <= set(sets["head-01"].services)
    assert "slurmd" in sets["tbox-001"].services
    script = preinstall.SCRIPT.format(packages="p", services="slurmd", repo_setup="",
                                      repo_files="")
    assert "exit 101" in script and 'systemctl --root=/ disable "$unit"' in script
