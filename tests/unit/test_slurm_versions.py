"""fleet validate: the Slurm each node would run (its OS's, under the pin) and Slurm's rules
for mixing versions (fleet.inventory.slurmcompat)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from fleet.inventory import slurmcompat
from fleet.inventory.load import parse
from fleet.problems import InventoryError, Problem

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "fixtures" / "small.yaml"
DEBIAN = {"type": "debian-preseed", "kernel": "images/debian-12/linux",
          "initrd": "images/debian-12/initrd.gz", "mirror": "http://deb.debian.org/debian",
          "suite": "bookworm"}


def inventory(pin: str | dict[str, str], release: str = "24.04",
              debian_groups: tuple[str, ...] = ()) -> str:
    data: dict[str, Any] = yaml.safe_load(SMALL.read_text())
    data["slurm"]["version"] = pin
    data["site"]["os"] = {"distro": "ubuntu", "release": release}
    if debian_groups:
        data["site"]["images"] = {"debian-12": DEBIAN}
        for group in debian_groups:
            data["node_groups"][group]["image"] = "debian-12"
    return yaml.safe_dump(data, sort_keys=False)


def skew(text: str, code: str = "slurm_skew") -> list[Problem]:
    try:
        parse(text, "inventory.yaml")
    except InventoryError as exc:
        others = [p for p in exc.problems if p.code != code]
        assert not others, "\n".join(map(str, others))
        return [p for p in exc.problems if p.code == code]
    return []


def test_the_table_is_what_the_archives_ship() -> None:
    # checked against the archives by `make check-packages` (the Slurm pins)
    assert slurmcompat.SHIPPED == {"ubuntu-24.04": "23.11", "ubuntu-22.04": "21.08",
                                   "debian-12": "22.05"}
    assert slurmcompat.apart("21.08", "23.11.4") == 3
    assert slurmcompat.apart("22.05", "23.11") == 2
    assert slurmcompat.apart("22.05", "99.99") is None


def test_one_os_is_never_skewed() -> None:
    assert skew(inventory("23.11")) == []
    # a pin the OS does not ship: every node gets the same (the OS's) Slurm; the states'
    # version check and check-packages report the pin itself
    assert skew(inventory("22.05")) == []


def test_older_compute_within_two_releases_is_allowed() -> None:
    # controller Ubuntu 24.04 (23.11), one partition on Debian 12 (22.05): two apart
    assert skew(inventory("23.11", debian_groups=("part-b",))) == []


def test_compute_newer_than_controller_is_rejected() -> None:
    # the controller on Debian 12 (22.05), the GPU nodes on Ubuntu 24.04 (23.11)
    text = inventory("23.11", debian_groups=("head",))
    (problem,) = skew(text)
    assert problem.path == "slurm.version"
    assert problem.message == (
        "slurmd 23.11 (ubuntu-24.04: gpu-01, gpu-02, gpu-03 and 1 more) "
        "would be newer than slurmctld 22.05 (debian-12: head-01): Slurm needs the "
        "controller at the newest version")
    assert problem.hint is not None and "ubuntu-22.04 21.08" in problem.hint
    line = next(i for i, s in enumerate(text.splitlines(), 1) if s.strip().startswith("version: "))
    assert problem.pos.line == line


def test_newer_compute_on_22_04_site_is_rejected() -> None:
    # Ubuntu 22.04 controller (21.08) and Debian 12 GPU nodes (22.05)
    (problem,) = skew(inventory("21.08", release="22.04", debian_groups=("part-a", "part-b")))
    assert "slurmd 22.05 (debian-12: gpu-01" in problem.message
    assert "newer than slurmctld 21.08 (ubuntu-22.04: head-01)" in problem.message


def test_more_than_two_releases_apart_is_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    # no two supported releases are three apart today; an archive where Debian 12 had
    # 21.08 would put the compute nodes three releases behind a 23.11 controller
    monkeypatch.setitem(slurmcompat.SHIPPED, "debian-12", "21.08")
    (problem,) = skew(inventory("23.11", debian_groups=("part-a",)))
    assert problem.message == (
        "slurmd 21.08 (debian-12: gpu-01, gpu-02) would be 3 major "
        "releases behind slurmctld 23.11 (ubuntu-24.04: head-01): Slurm supports at most 2")


def test_the_real_inventory_gives_each_os_its_slurm() -> None:
    data = yaml.safe_load((ROOT / "inventory.yaml").read_text())
    assert data["slurm"]["version"] == slurmcompat.SHIPPED


def test_per_os_entry_that_its_os_does_not_ship_is_rejected() -> None:
    pins = {"ubuntu-24.04": "23.11", "debian-12": "23.11"}
    text = inventory(pins, debian_groups=("part-b",))
    (problem,) = skew(text, "slurm_version")
    assert problem.path == "slurm.version.debian-12"
    assert problem.message == ("23.11 is not the Slurm of debian-12, which ships 22.05: apt "
                               "would ignore the pin")


def test_per_os_form_needs_an_entry_for_every_os_the_nodes_run() -> None:
    (problem,) = skew(inventory({"ubuntu-24.04": "23.11"}, debian_groups=("part-b",)),
                      "slurm_version")
    assert problem.message == "no version for debian-12, which gpu-03, gpu-04 run (it ships 22.05)"


def test_per_os_form_is_checked_for_skew() -> None:
    pins = {"ubuntu-24.04": "23.11", "debian-12": "22.05"}
    assert skew(inventory(pins, debian_groups=("part-b",))) == []
    (problem,) = skew(inventory(pins, debian_groups=("head",)))
    assert "slurmd 23.11 (ubuntu-24.04" in problem.message
    assert "newer than slurmctld 22.05 (debian-12: head-01)" in problem.message
