"""The machines: hardware against the profile, what a role needs of it, group memberships,
disks, InfiniBand fabrics and rack places."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from fleet.inventory import racks, schema
from fleet.inventory.checks.ctx import Ctx
from fleet.inventory.model import YamlPath
from fleet.problems import Problem


def check_hardware(c: Ctx) -> Iterator[Problem]:
    for node in c.nodes.values():
        hw = node.facts.hardware
        if hw is None:
            continue
        p = node.profile
        path: YamlPath = ("nodes", node.hostname, "hardware")
        expected = {
            "gpus": p.gpu.count if p.gpu else 0,
            "cpu_sockets": p.cpu.sockets,
            "cores_per_socket": p.cpu.cores_per_socket,
            "memory_gb": p.memory_gb,
        }
        for field, want in expected.items():
            got = getattr(hw, field)
            if got is not None and got != want:
                yield c.problem((*path, field), f"{got} does not match profile "
                                f"{node.profile_name!r}, which has {want}",
                                code="hardware_mismatch",
                                hint="repair the machine, or give it a profile that matches")


class _Membership(NamedTuple):
    """A role whose node groups name one entry of a top-level table, and the words for it."""

    role: str  # slurm.compute
    field: str  # the node group's field: slurm_partition
    needs: str  # a slurm_partition
    place: str  # a partition
    what: str  # partition (unknown partition 'x')
    section: str  # the top-level section: slurm
    table: str  # its table of entries: partitions


MEMBERSHIPS = (
    _Membership("slurm.compute", "slurm_partition", "a slurm_partition", "a partition",
                "partition", "slurm", "partitions"),
    _Membership("mkv.volume", "mkv_array", "an mkv_array", "an mkv array", "mkv array", "mkv",
                "arrays"),
)


def _entries(raw: schema.Inventory, m: _Membership) -> dict[str, object] | None:
    section = getattr(raw, m.section)
    return None if section is None else dict(getattr(section, m.table))


def check_memberships(c: Ctx) -> Iterator[Problem]:
    """A group with the role names an existing entry; a group without it names none."""
    for gname, group in c.raw.node_groups.items():
        gpath: YamlPath = ("node_groups", gname)
        for m in MEMBERSHIPS:
            value = getattr(group, m.field)
            has_role = m.role in group.roles
            if has_role and value is None:
                yield c.problem((*gpath, "roles"), f"{m.role} nodes need {m.needs}",
                                code="missing")
            if value is None:
                continue
            if not has_role:
                yield c.problem((*gpath, m.field),
                                f"only groups with role {m.role} can be in {m.place}",
                                code="mismatch")
            entries = _entries(c.raw, m)
            if entries is None or value not in entries:
                known = ", ".join(entries) if entries is not None \
                    else f"none (no {m.section} section)"
                yield c.problem((*gpath, m.field), f"unknown {m.what} {value!r}",
                                code="unknown_ref", hint=f"known {m.table}: {known}")


def check_roles(c: Ctx) -> Iterator[Problem]:
    """What a role needs of the group's hardware profile."""
    raw = c.raw
    for gname, group in raw.node_groups.items():
        gpath: YamlPath = ("node_groups", gname)
        profile = raw.profiles.get(group.profile)
        if profile is None:
            continue
        if (group.mkv_array is not None and raw.mkv is not None
                and group.mkv_array in raw.mkv.arrays
                and not profile.data_disks):
            yield c.problem((*gpath, "mkv_array"),
                            f"profile {group.profile!r} has no data disks for mkv",
                            code="mismatch")
        if "nvidia" in group.roles and profile.gpu is None:
            yield c.problem((*gpath, "roles"), f"role nvidia needs GPUs, but profile "
                            f"{group.profile!r} has none", code="mismatch")
        if "infiniband" in group.roles and not any(
                n.kind == "infiniband" for n in profile.nics.values()):
            yield c.problem((*gpath, "roles"), f"role infiniband needs an InfiniBand NIC, "
                            f"but profile {group.profile!r} has none", code="mismatch")


def check_profiles(c: Ctx) -> Iterator[Problem]:
    """The installer must only ever touch the boot disk."""
    for pname, profile in c.raw.profiles.items():
        path: YamlPath = ("profiles", pname, "disks")
        boots = [(i, d) for i, d in enumerate(profile.disks) if d.role == "boot"]
        if len(boots) != 1 or boots[0][1].count != 1:
            yield c.problem(path, "a profile needs exactly one boot disk (role: boot, count: 1)",
                            code="boot_disk")
            continue
        i, boot = boots[0]
        data = profile.data_disks
        if not data:
            continue
        match = boot.match
        if match is None or match.model_dump(exclude_none=True) == {}:
            yield c.problem((*path, i), "a profile with data disks needs a boot-disk 'match' "
                            "(serial, model, id_path or size), or an install could pick a data "
                            "disk", code="boot_disk")
        elif match.size == "largest" and any(d.size_gb >= boot.size_gb for d in data):
            yield c.problem((*path, i, "match", "size"), "'largest' would pick a data disk: "
                            "the boot disk is not the largest", code="boot_disk")
        elif match.size == "smallest" and any(d.size_gb <= boot.size_gb for d in data):
            yield c.problem((*path, i, "match", "size"), "'smallest' would pick a data disk: "
                            "the boot disk is not the smallest", code="boot_disk")


def check_fabrics(c: Ctx) -> Iterator[Problem]:
    """Every InfiniBand fabric needs a subnet manager, on the switch or on cabled hosts."""
    cabled: dict[str, set[str]] = {}
    for node in c.nodes.values():
        for iface in node.interfaces.values():
            if iface.kind == "infiniband" and iface.switch is not None:
                cabled.setdefault(iface.switch, set()).add(node.hostname)
    for sname, sw in c.raw.switches.items():
        path: YamlPath = ("switches", sname)
        if sw.kind != "infiniband":
            if sw.sm_hosts:
                yield c.problem((*path, "sm_hosts"), "only InfiniBand switches have subnet "
                                "managers", code="mismatch")
            continue
        hosts = cabled.get(sname, set())
        if hosts and not sw.subnet_manager and not sw.sm_hosts:
            yield c.problem(path, f"fabric {sname} has no subnet manager: its ports would stay "
                            "INIT", code="no_sm", key=True,
                            hint="set subnet_manager: true (managed switch) or list sm_hosts")
        for i, host in enumerate(sw.sm_hosts):
            sm_node = c.nodes.get(host)
            if sm_node is None:
                if host not in c.raw.nodes:
                    yield c.problem((*path, "sm_hosts", i), f"unknown node {host!r}",
                                    code="unknown_ref")
            elif host not in hosts or not sm_node.has("infiniband"):
                yield c.problem((*path, "sm_hosts", i), f"{host} is not an infiniband node "
                                f"cabled to {sname}", code="mismatch")


def check_racks(c: Ctx) -> Iterator[Problem]:
    """Rack placement: known racks, inside their height, one device per unit (racks.py)."""
    yield from racks.check_racks(c, c.raw, c.nodes)
