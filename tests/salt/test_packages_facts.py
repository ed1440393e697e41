"""fleet.packages (make check-packages) without the network: the apt facts it takes from a
rendered highstate, and its readers of apt's output, on records and output that the real
archives and apt gave on 2026-12-01. The archive side itself is `make check-packages`."""

# ruff: noqa: E501 (apt's records and output, verbatim)
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from fleet.apt import facts
from fleet.apt.archive import OSES, ScratchApt

# apt-cache show --no-all-versions on Ubuntu 24.04 (trimmed to the fields read)
NOBLE_SHOW = """Package: linux-modules-nvidia-570-server-open-generic
Version: 6.8.0-151.151
Installed-Size: 26
Depends: linux-modules-nvidia-580-server-open-generic
Description: Extra drivers for nvidia-570-server-open for the generic flavour (dummy transitional package)

Package: nvidia-utils-570-server
Version: 570.211.01-0ubuntu1.24.04.1
Installed-Size: 37
Depends: nvidia-utils-580-server
Description: NVIDIA Server Driver support binaries

Package: nvidia-utils-580-server
Version: 580.178.04-0ubuntu0.24.04.1
Installed-Size: 1728
Depends: nvidia-kernel-common-580-server-580.178.04, libc6 (>= 2.34), libnvidia-compute-580-server (>= 580.178.04)
Description: NVIDIA Server Driver support binaries

Package: linux-modules-nvidia-580-server-open-generic
Version: 6.8.0-151.151
Installed-Size: 26
Depends: linux-modules-nvidia-580-server-open-6.8.0-151-generic (= 6.8.0-151.151), nvidia-kernel-common-580-server (>= 580.178.04)
Description: Extra drivers for nvidia-580-server-open for the generic flavour
"""

# apt-get -s install on an empty Debian 12 system (bookworm + security, contrib)
DEBIAN_UNMET = """Reading package lists...
Building dependency tree...
Some packages could not be installed. This may mean that you have
requested an impossible situation or if you are using the unstable
distribution that some required packages have not yet been created
or been moved out of Incoming.
The following information may help to resolve the situation:

The following packages have unmet dependencies:
 nvidia-open-kernel-dkms : Depends: firmware-nvidia-gsp (= 535.261.03) or
                                    firmware-nvidia-gsp-535.261.03
                           Depends: nvidia-open-kernel-support--v1
E: Unable to correct problems, you have held broken packages.
"""

NOBLE_SIM = """Inst nvidia-kernel-common-580-server (580.178.04-0ubuntu0.24.04.1 Ubuntu:24.04/noble-updates, Ubuntu:24.04/noble-security [amd64])
Inst slurm-client (23.11.4-1.2ubuntu5 Ubuntu:24.04/noble [amd64])
Inst libc6 [2.39-0ubuntu8] (2.39-0ubuntu8.6 Ubuntu:24.04/noble-updates [amd64])
Conf slurm-client (23.11.4-1.2ubuntu5 Ubuntu:24.04/noble [amd64])
"""


def test_transitional_570_packages_are_found_by_description_or_rename() -> None:
    recs = facts.records(NOBLE_SHOW)
    why = facts.transitional(recs["linux-modules-nvidia-570-server-open-generic"])
    assert why is not None and "dummy transitional package" in why
    # the userspace 570 packages do not say so: they pull their own name with 580
    why = facts.transitional(recs["nvidia-utils-570-server"])
    assert why == ("it is 37 kB and pulls nvidia-utils-580-server, its own name with "
                   "another number")
    assert facts.transitional(recs["nvidia-utils-580-server"]) is None
    # a meta package of the branch pulls the kernel's own module package: not a rename
    assert facts.transitional(recs["linux-modules-nvidia-580-server-open-generic"]) is None


def test_renamed() -> None:
    assert facts.renamed("libnvidia-compute-570-server", "libnvidia-compute-580-server")
    assert not facts.renamed("nvidia-headless-no-dkms-580-server-open",
                             "nvidia-kernel-common-580-server")
    assert not facts.renamed("linux-generic", "linux-image-generic")
    assert not facts.renamed("foo-a-1", "foo-b-1")


def test_simulated_install_and_unmet_dependencies() -> None:
    assert facts.simulated(NOBLE_SIM) == {
        "nvidia-kernel-common-580-server": "580.178.04-0ubuntu0.24.04.1",
        "slurm-client": "23.11.4-1.2ubuntu5", "libc6": "2.39-0ubuntu8.6"}
    lines = facts.unmet(DEBIAN_UNMET)
    assert lines[0].startswith("nvidia-open-kernel-dkms : Depends: firmware-nvidia-gsp "
                               "(= 535.261.03)")
    assert lines[-1] == "E: Unable to correct problems, you have held broken packages."


def test_preferences_and_pin_matching() -> None:
    (pin,) = facts.parse_preferences(
        "# Managed by Salt (slurm)\nPackage: slurm* libslurm* libpmi0* libpmi2-* libpam-slurm*\n"
        "Pin: version 22.05.*\nPin-Priority: 1001\n", "/etc/apt/preferences.d/60-fleet-slurm")
    assert pin.matches("slurmd") and pin.matches("libslurm38") and not pin.matches("munge")
    # Slurm's PMI libraries, not OpenMPI's PMIx (nvidia.burnin's openmpi pulls it in)
    assert pin.matches("libpmi0t64") and pin.matches("libpmi2-0-dev")
    assert not pin.matches("libpmix2t64") and not pin.matches("libpmix-dev")
    assert pin.version == "22.05.*" and pin.priority == 1001
    assert "Pin: version 22.05.*\n" in pin.text()


@pytest.mark.parametrize("os_name", ["ubuntu-24.04", "debian-12"])
def test_facts_of_a_rendered_gpu_node(rendered: dict[str, Any], os_name: str) -> None:
    node = rendered["roles"]["nvidia"][0]
    result = rendered["results"][(node, os_name)]
    got = facts.from_lowstate(result.lowstate, result.files)
    if os_name == "debian-12":
        assert {"nvidia-kernel-dkms", "linux-image-amd64", "slurmd"} <= set(got.installs)
        want_pin = "22.05.*"
    else:
        assert {"nvidia-utils-580-server", "linux-generic", "slurmd"} <= set(got.installs)
        assert "nvidia-fabricmanager-580" in got.removes
        want_pin = "23.11.*"
    assert set(got.holds) <= set(got.installs) and "slurmd" in got.holds
    pins = {Path(p.file).name: p for p in got.pins}
    assert pins["60-fleet-slurm"].version == want_pin
    assert "/etc/apt/sources.list.d/fleet.sources" in got.sources
    (main, security) = facts.deb822(got.sources["/etc/apt/sources.list.d/fleet.sources"])
    codename = {"ubuntu-24.04": "noble", "debian-12": "bookworm"}[os_name]
    assert main["Suites"].split()[0] == codename
    assert security["Suites"] == f"{codename}-security"


def test_scratch_apt_never_names_the_machines_apt(tmp_path: Path) -> None:
    apt = ScratchApt(tmp_path / "apt", OSES["ubuntu-24.04"], tmp_path / "ring.gpg")
    conf = apt.config(apt.preferences("n1", [])).read_text()
    paths = [v for line in conf.splitlines() if line.startswith("Dir")
             for v in [line.split('"')[1]]]
    assert len(paths) >= 12
    assert all(v == "/dev/null" or v.startswith(str(tmp_path)) for v in paths), paths
    assert 'Dir::Etc::main "/dev/null";' in conf
    assert f'Dir::State::status "{tmp_path}/apt/state/status";' in conf
    notes = apt.write_sources({
        "/etc/apt/sources.list.d/fleet.sources":
            "Types: deb\nURIs: http://10.1.0.10:3142/archive.ubuntu.com/ubuntu\nSuites: noble\n"
            "Components: main\nSigned-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n\n"
            "Types: deb\nURIs: http://10.1.0.10:3142/security.ubuntu.com/ubuntu\n"
            "Suites: noble-security\nComponents: main\n",
        "/etc/apt/sources.list.d/salt.sources":
            "Types: deb\nURIs: https://packages.broadcom.com/x\nSuites: stable\n"})
    stanzas = facts.deb822(apt.sources_text)
    assert [s["URIs"] for s in stanzas] == ["http://archive.ubuntu.com/ubuntu",
                                             "http://security.ubuntu.com/ubuntu"]
    assert {s["Signed-By"] for s in stanzas} == {str(tmp_path / "ring.gpg")}
    assert any(n.startswith("salt.sources: not checked") for n in notes)
