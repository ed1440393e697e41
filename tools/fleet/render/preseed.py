"""Render Debian installer preseeds (``preseed.cfg``) and kernel lines for nodes whose
group names a ``site.images`` entry of type ``debian-preseed``.

The same node data as the Ubuntu autoinstall: hostname and domain, the boot disk only
(``partman/early_command`` picks it by the inventory's disk match), the admins' ssh keys,
and late commands that install salt-minion with the node's id and master.
"""

from __future__ import annotations

import base64
import shlex
from urllib.parse import urlsplit

from fleet.inventory.model import Inventory, Node
from fleet.inventory.schema.site import DebianImage
from fleet.render import bootstrap, escape, installkey
from fleet.render.bootstrap import http_base
from fleet.render.header import header

# d-i has no curl: the target's (pkgsel/include installs it before the late_command)
CURL = "chroot /target curl"


def image_of(inv: Inventory, node: Node) -> DebianImage | None:
    return inv.raw.site.images[node.image] if node.image is not None else None


def cmdline(inv: Inventory, node: Node, image: DebianImage) -> str:
    """Kernel command line of the Debian installer: fully automatic from the preseed."""
    return " ".join([
        "auto=true",
        "priority=critical",
        f"url={http_base(inv)}/hosts/{node.hostname}/preseed.cfg",  # = preseed/url
        f"BOOTIF=01-{node.mac.replace(':', '-')}",  # netcfg brings up the boot NIC
        f"hostname={node.hostname}",
        f"domain={inv.raw.site.domain}",
        "locale=en_US.UTF-8",
        "keymap=us",
        *image.args,
        "console=tty0",
        "console=ttyS0,115200n8",
    ])


def _disk_script(node: Node) -> str:
    """Shell (d-i busybox) that prints the boot disk's /dev path."""
    m = node.boot_disk
    if m is not None and (m.serial or m.model):
        key = m.serial or m.model or ""
        return ("for l in /dev/disk/by-id/*; do case $l in *-part*) ;; "
                f"*{shlex.quote(key)}*) readlink -f $l; break;; esac; done")
    pick = "tail -n1" if m is None or m.size != "smallest" else "head -n1"
    return ("for d in $(list-devices disk); do echo $(cat /sys/block/${d#/dev/}/size) $d; "
            f"done | sort -n | {pick} | cut -d' ' -f2")


def write_file(lines: list[str], path: str) -> str:
    """A late-command that writes ``lines`` to /target<path>. In base64, because no
    preseeded value may hold a backslash: the installer's debconf stores a backslash-n as
    a newline, and preseed_command's db_get then returns only the first line (a
    ``printf '%s\\n'`` here cut the whole late_command short: found by make test-vm)."""
    data = base64.b64encode("".join(f"{x}\n" for x in lines).encode()).decode()
    return f"echo {data} | base64 -d > /target{path}"


def _late_commands(inv: Inventory, node: Node, image: DebianImage) -> list[str]:
    site = inv.raw.site
    http = http_base(inv)
    repo_key = ([f"in-target curl -fsSL -o {bootstrap.SITE_REPO_KEYRING} "
                 + shlex.quote(bootstrap.site_repo_key_url(inv))] if site.apt.repo else [])

    cmds = [
        f"in-target install -d -m 0755 {' '.join(bootstrap.DIRS)}",
        f"in-target curl -fsSL -o {bootstrap.KEYRING} "
        + shlex.quote(f"{http}/{site.salt.keyring}"),
        *repo_key,
        *(write_file(text.splitlines(), path)
          for path, text in bootstrap.files(inv, node, image.suite).items()),
        installkey.fetch_key(inv, node, CURL),
    ]
    for admin in site.admins:
        home = f"/home/{admin.name}"
        groups = " -G sudo" if admin.sudo else ""
        cmds += [
            f"in-target sh -c 'id {admin.name} || useradd -m -s /bin/bash{groups} {admin.name}'",
            f"in-target install -d -m 0700 -o {admin.name} -g {admin.name} {home}/.ssh",
            write_file(list(admin.ssh_keys), f"{home}/.ssh/authorized_keys"),
            f"in-target chown {admin.name}: {home}/.ssh/authorized_keys",
        ]
        if admin.sudo:
            cmds.append(write_file([f"{admin.name} ALL=(ALL) NOPASSWD:ALL"],
                                   f"/etc/sudoers.d/90-fleet-{admin.name}"))
    cmds += [
        "in-target apt-get update",
        "in-target env DEBIAN_FRONTEND=noninteractive apt-get install -y salt-minion",
        "in-target systemctl enable salt-minion",
        installkey.callback(inv, node, CURL),  # last: the install is done
    ]
    return cmds


Answer = tuple[str, str, str]  # debconf question, type, value


def _mirror(image: DebianImage) -> list[Answer]:
    mirror = urlsplit(image.mirror)
    return [
        ("mirror/country", "string", "manual"),
        ("mirror/protocol", "string", mirror.scheme),
        (f"mirror/{mirror.scheme}/hostname", "string", mirror.netloc),
        (f"mirror/{mirror.scheme}/directory", "string", mirror.path or "/"),
        (f"mirror/{mirror.scheme}/proxy", "string", ""),
        ("mirror/suite", "string", image.suite),
    ]


def _partman(node: Node) -> list[Answer]:
    """Only the boot disk: data disks (mkv volumes) are never touched by an install."""
    return [
        ("partman/early_command", "string",
         f'disk="$({_disk_script(node)})"; debconf-set partman-auto/disk "$disk"; '
         'debconf-set grub-installer/bootdev "$disk"'),
        ("partman-auto/method", "string", "lvm"),
        ("partman-auto-lvm/guided_size", "string", "max"),
        ("partman-auto/choose_recipe", "select", "atomic"),
        ("partman-lvm/device_remove_lvm", "boolean", "true"),
        ("partman-md/device_remove_md", "boolean", "true"),
        ("partman-lvm/confirm", "boolean", "true"),
        ("partman-lvm/confirm_nooverwrite", "boolean", "true"),
        ("partman-partitioning/confirm_write_new_label", "boolean", "true"),
        ("partman/choose_partition", "select", "finish"),
        ("partman/confirm", "boolean", "true"),
        ("partman/confirm_nooverwrite", "boolean", "true"),
    ]


def render_preseed(inv: Inventory, node: Node, image: DebianImage) -> str:
    site = inv.raw.site
    first = site.admins[0]
    d: list[Answer] = [
        ("debian-installer/locale", "string", "en_US.UTF-8"),
        ("keyboard-configuration/xkb-keymap", "select", "us"),
        ("netcfg/choose_interface", "select", "auto"),
        ("netcfg/get_hostname", "string", node.hostname),
        ("netcfg/get_domain", "string", site.domain),
        ("netcfg/hostname", "string", node.hostname),
        *_mirror(image),
        ("passwd/root-login", "boolean", "false"),
        ("passwd/user-fullname", "string", first.name),
        ("passwd/username", "string", first.name),
        ("passwd/user-password-crypted", "password", "!"),  # ssh keys only
        ("clock-setup/utc", "boolean", "true"),
        ("time/zone", "string", site.timezone),
        ("clock-setup/ntp", "boolean", "true"),
        ("clock-setup/ntp-server", "string", site.ntp_servers[0]),
        *_partman(node),
        ("tasksel/first", "multiselect", "standard, ssh-server"),
        ("pkgsel/include", "string", "curl ca-certificates openssh-server"),
        ("popularity-contest/participate", "boolean", "false"),
        ("grub-installer/only_debian", "boolean", "true"),
        ("preseed/late_command", "string", "; ".join(_late_commands(inv, node, image))),
        ("finish-install/reboot_in_progress", "note", ""),
    ]
    owner = {"tasksel/first": "tasksel", "popularity-contest/participate": "popularity-contest"}
    # debconf: the answer is the rest of the line, so a line break would add a question
    lines = [f"{owner.get(q, 'd-i')} {q} {t} {escape.debconf_value(v)}".rstrip()
             for q, t, v in d]
    return header("#") + f"# Debian installer preseed for {node.hostname} ({node.mac})\n" + \
        "\n".join(lines) + "\n"
