"""Each node's boot scripts in ``pxe/http/hosts/<host>/``: the installer and the local disk,
for iPXE and for UEFI GRUB (named by :func:`fleet.pxe.modes.script_name`).

Plain Python rather than templates: four short fixed texts for every node, where a Jinja
render (a new context each call) was a sixth of a node's render time. Every value is one
line (:func:`fleet.render.escape.line`), and each is escaped for its language where it
lands.
"""

from __future__ import annotations

from dataclasses import dataclass

from fleet.render.escape import grub_title, grub_word, ipxe_word, line
from fleet.render.header import TEXT


@dataclass(frozen=True)
class Boot:
    """What a node's scripts show and load (``http``: the site's base URL for iPXE,
    ``tftp_server``: GRUB's server)."""

    hostname: str
    mac: str
    os_name: str
    kernel: str
    initrd: str
    http: str
    tftp_server: str


def install_ipxe(b: Boot, cmdline: str) -> str:
    """``cmdline``: the kernel's, each word already checked for iPXE."""
    http = ipxe_word(b.http)
    return f"""#!ipxe
# {TEXT}
echo fleet: installing {line(b.os_name)} on {line(b.hostname)} ({line(b.mac)})
kernel {http}/{ipxe_word(b.kernel)} initrd=initrd {line(cmdline)} || goto failed
initrd --name initrd {http}/{ipxe_word(b.initrd)} || goto failed
boot || goto failed
:failed
# not back to boot.ipxe's local fallback (the old disk): reboot into PXE and try again
echo fleet: could not load the installer, rebooting (back to PXE) in 10 s
sleep 10
reboot
"""


def local_ipxe(b: Boot) -> str:
    return f"""#!ipxe
# {TEXT}
echo fleet: {line(b.hostname)} boots from its local disk
iseq ${{platform}} efi && exit 1 ||
sanboot --no-describe --drive 0x80 || exit 1
"""


def install_grub(b: Boot, cmdline: str) -> str:
    """``cmdline``: the kernel's, each word already quoted for GRUB."""
    return f"""# {TEXT}
set default=0
set timeout=3
if [ -z "$fleet_src" ]; then set fleet_src=(tftp,{line(b.tftp_server)}); fi
# GRUB boots a kernel whose initrd did not load (it then panics), and a second load in the
# same GRUB after a TFTP transfer stalled mid-file booted a kernel that hung: so any failed
# load reboots, back to PXE and a fresh GRUB (the node is still armed).
menuentry 'fleet: install {grub_title(b.os_name)} on {grub_title(b.hostname)}' {{
    echo "fleet: loading the installer from $fleet_src"
    linux $fleet_src/{grub_word(b.kernel)} {line(cmdline)}
    if [ "$?" = 0 ]; then
        initrd $fleet_src/{grub_word(b.initrd)}
        if [ "$?" = 0 ]; then
            boot
        fi
    fi
    echo "fleet: could not load the installer; rebooting (back to PXE) in 10 s"
    sleep 10
    reboot
}}
"""


def local_grub(b: Boot, efi_dir: str) -> str:
    """``efi_dir``: the distribution's directory in the EFI system partition."""
    efi = grub_word(efi_dir)
    return f"""# {TEXT}
set default=0
set timeout=0
menuentry 'fleet: boot {grub_title(b.hostname)} from its local disk' {{
    search --no-floppy --set=root --file /EFI/{efi}/shimx64.efi
    chainloader /EFI/{efi}/shimx64.efi
}}
menuentry 'fleet: return to firmware boot order' {{
    exit 1
}}
"""
