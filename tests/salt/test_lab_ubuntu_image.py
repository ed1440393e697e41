"""The Ubuntu 24.04 lab image's inputs (fleet.lab.ubuntu_image): the apt sources the states
render, and an unreachable archive that stops the build naming the Debian lab."""

from __future__ import annotations

from typing import Any

import pytest

from fleet.apt.facts import deb822
from fleet.lab import ubuntu_image
from fleet.lab.run import LabError


def test_image_sources_are_the_ones_base_apt_renders(rendered: dict[str, Any]) -> None:
    node = rendered["roles"]["nvidia"][0]
    result = rendered["results"][(node, "ubuntu-24.04")]
    (chunk,) = [c for c in result.lowstate if c["__id__"] == "base-apt-file-managed-sources"]
    states = deb822(result.files[chunk["__id__"]])
    image = deb822(ubuntu_image.sources("http://mirror.example/ubuntu", "/k.gpg"))
    assert [(s["Suites"], s["Components"]) for s in image] == \
        [(s["Suites"], s["Components"]) for s in states]


def test_unreachable_archive_stops_naming_the_debian_lab() -> None:
    with pytest.raises(LabError) as exc:
        ubuntu_image.probe("http://127.0.0.1:9/ubuntu")
    text = str(exc.value)
    assert "the Ubuntu archive does not answer (http://127.0.0.1:9/ubuntu/dists/noble/Release" \
        in text
    assert "make lab LAB_OS=debian-12" in text and "FLEET_LAB_UBUNTU_MIRROR" in text
