"""``site.backup``: the backup leaves the master. An sftp destination is a node of the
inventory that is neither the Salt master nor its standby (a backup on the disk it guards
is no backup); a path destination is not inside a directory of the master's own. Whether
another path is on the master's system disk the inventory cannot tell (it names disks, not
mount points): docs/operations.md asks for a mount of its own."""

from __future__ import annotations

from collections.abc import Iterator

from fleet.inventory.checks.ctx import Ctx
from fleet.inventory.model import YamlPath
from fleet.problems import Problem

# directories on the master's system tree, whatever its disks: fleet's state, Salt's keys
MASTER_DIRS = ("/etc", "/var/lib/fleet", "/var/lib/salt", "/srv/fleet")


def _inside(a: str, b: str) -> bool:
    return a == b or a.startswith(b.rstrip("/") + "/")


def check_backup(c: Ctx) -> Iterator[Problem]:
    site = c.raw.site
    if site.backup is None:
        return
    dest = site.backup.destination
    at: YamlPath = ("site", "backup", "destination")
    masters = {site.salt.master: "the Salt master (site.salt.master)"}
    if site.salt.standby is not None:
        masters[site.salt.standby.host] = "the standby master (site.salt.standby.host)"
    if dest.type == "sftp" and dest.host is not None:
        if dest.host in masters:
            yield c.problem((*at, "host"), f"{dest.host} is {masters[dest.host]}: a backup "
                            "kept on a master is lost with it", code="mismatch",
                            hint="name a storage server of the inventory, a node that is "
                                 "no master")
        elif dest.host not in c.nodes:
            yield c.problem((*at, "host"), f"unknown node {dest.host!r}: the backup's sftp "
                            "host is a node of this inventory (its login is made by the "
                            "backup.target state)", code="unknown_ref",
                            hint="name a storage server under nodes/node_groups")
    if dest.type == "path" and dest.path is not None:
        yield from _path(c, dest.path, (*at, "path"))


def _path(c: Ctx, path: str, at: YamlPath) -> Iterator[Problem]:
    site = c.raw.site
    own = [d for d in (*MASTER_DIRS, site.checkout, site.pxe_root, site.pxe_state,
                       site.apt.repo) if d is not None and _inside(path, d)]
    if own:
        yield c.problem(at, f"{path} is inside {own[0]}, a directory of the master's own: "
                        "the backup would share the master's system disk", code="mismatch",
                        hint="a mount of its own (another disk, an NFS export), or an sftp "
                             "destination on a storage server")

