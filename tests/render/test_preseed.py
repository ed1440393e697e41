"""Debian netboot images (site.images, node_groups.*.image): the preseed and kernel line
rendered from the same node data as the Ubuntu autoinstall; validation of the names."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.problems import InventoryError
from render.helpers import IPXE_ON_FAIL, ipxe_kernel_line, preseed_writes, render_debian_part_a

ROOT = Path(__file__).resolve().parents[2]
SMALL = ROOT / "tests" / "fixtures" / "small.yaml"
IMAGE = {"type": "debian-preseed", "kernel": "images/debian-12/linux",
         "initrd": "images/debian-12/initrd.gz", "mirror": "http://deb.example/debian",
         "args": ["netcfg/dhcp_timeout=90"]}


@pytest.fixture(scope="module")
def debian(tmp_path_factory: pytest.TempPathFactory) -> tuple[Inventory, dict[str, str]]:
    return render_debian_part_a(tmp_path_factory.mktemp("ov"), IMAGE)


def test_only_the_groups_nodes_get_a_preseed(debian: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = debian
    for node in inv.nodes.values():
        base = f"pxe/http/hosts/{node.hostname}/"
        is_debian = node.group == "part-a"
        assert (base + "preseed.cfg" in files) is is_debian
        assert (base + "user-data" in files) is not is_debian
        assert node.image == ("debian-12" if is_debian else None)


def test_kernel_lines(debian: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = debian
    node = inv.nodes["gpu-02"]
    base = "pxe/http/hosts/gpu-02/"
    ipxe = files[base + "install.ipxe"]
    assert "kernel http://10.1.0.10/images/debian-12/linux initrd=initrd " in ipxe
    assert ("initrd --name initrd http://10.1.0.10/images/debian-12/initrd.gz"
            + IPXE_ON_FAIL) in ipxe
    args = ipxe_kernel_line(ipxe).split()[3:]
    for want in ("auto=true", "priority=critical", "hostname=gpu-02", "domain=lab.test",
                 "url=http://10.1.0.10/hosts/gpu-02/preseed.cfg", "netcfg/dhcp_timeout=90",
                 f"BOOTIF=01-{node.mac.replace(':', '-')}"):
        assert want in args
    grub = next(ln.strip() for ln in files[base + "grub-install.cfg"].splitlines()
                if ln.strip().startswith("linux "))
    assert shlex.split(grub) == ["linux", "$fleet_src/images/debian-12/linux", *args]


def test_preseed_from_node_data(debian: tuple[Inventory, dict[str, str]]) -> None:
    inv, files = debian
    text = files["pxe/http/hosts/gpu-01/preseed.cfg"]
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    q = {}
    for ln in lines:  # owner question type [value]: one debconf answer per line
        m = re.match(r"^(d-i|tasksel|popularity-contest) (\S+) (string|boolean|select|"
                     r"multiselect|password|note)( .*)?$", ln)
        assert m, ln
        q[m.group(2)] = (m.group(4) or "").strip()
    assert q["netcfg/get_hostname"] == "gpu-01" and q["netcfg/get_domain"] == "lab.test"
    assert q["mirror/http/hostname"] == "deb.example"
    assert q["mirror/http/directory"] == "/debian"
    assert q["passwd/root-login"] == "false" and q["passwd/username"] == "ops"
    written = preseed_writes(q["preseed/late_command"])
    assert written["/etc/salt/minion_id"] == "gpu-01\n"
    assert "master: 10.1.0.10\n" in written["/etc/salt/minion.d/fleet.conf"]
    admin = inv.raw.site.admins[0]
    assert admin.ssh_keys[0] in written[f"/home/{admin.name}/.ssh/authorized_keys"]
    # the boot disk (largest, from the gpu profile) chosen before partitioning
    assert "tail -n1" in q["partman/early_command"]
    assert "partman-auto/disk" in q["partman/early_command"]
    stor = files["pxe/http/hosts/stor-2/user-data"]  # not Debian: untouched
    assert stor.startswith("#cloud-config")


def test_no_preseeded_value_holds_a_backslash(debian: tuple[Inventory, dict[str, str]]) -> None:
    """The installer's debconf stores a backslash-n as a newline, and preseed_command's
    db_get returns only the first line of a value: a late_command with one runs cut short
    (seen in the Debian installer by make test-vm)."""
    _inv, files = debian
    text = files["pxe/http/hosts/gpu-01/preseed.cfg"]
    values = [ln for ln in text.splitlines() if ln and not ln.startswith("#")]
    assert values and not [ln for ln in values if "\\" in ln]


def test_unknown_image_is_reported_with_position(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text('node_groups:\n  part-b:\n    image: debian-13\n')
    with pytest.raises(InventoryError) as exc:
        load_inventory(SMALL, overlay)
    [problem] = exc.value.problems
    text = str(problem)
    assert "overlay.yaml:3:12" in text and "unknown image 'debian-13'" in text


def test_image_type_and_mirror_are_validated(tmp_path: Path) -> None:
    overlay = tmp_path / "overlay.yaml"
    overlay.write_text(json.dumps({"site": {"images": {"deb": {**IMAGE, "type": "rhel",
                                                               "mirror": "deb.example"}}}}))
    with pytest.raises(InventoryError) as exc:
        load_inventory(SMALL, overlay)
    paths = {p.path for p in exc.value.problems}
    assert {"site.images.deb.type", "site.images.deb.mirror"} <= paths
