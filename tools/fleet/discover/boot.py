"""The commissioning boot of a machine the inventory does not know (rendered by
fleet.render.pxe when a provisioning network has a ``dhcp_pool``):

- dnsmasq leases it an address from that pool (one hour) instead of ignoring it;
- a BIOS machine (and a UEFI HTTP boot) gets iPXE, then ``commission.ipxe``;
- a UEFI PXE machine gets the Secure Boot chain the installs use (shim, the archive's
  signed GRUB), and dnsmasq marks its answer with the site-specific DHCP option
  :data:`DHCP_OPTION` = :data:`DHCP_VALUE` (only for MACs that are not ``known``): the
  site's ``grub.cfg`` reads it and loads ``grub/commission.cfg``. The kernel is the
  archive's own, signed: GRUB verifies it through shim;
- both scripts load the commissioning kernel and initrd (``images/commission/``, built
  from the archive's packages: ``make commission-image``) with one command line
  (:func:`cmdline`) and the boot NIC's MAC as each loader names it; the environment
  gathers the facts (commission/fleet-commission), posts them to the master's endpoint
  (the report URL with its boot MAC appended) from the leased address, and powers off.

Both scripts are site files, the same for every unknown machine: nothing the machine sends
reaches them (its MAC is the loader's own variable, expanded at boot, never rendered).

Nothing here installs, arms or touches a disk.
"""

from __future__ import annotations

from fleet.inventory.model import Inventory

KERNEL = "images/commission/vmlinuz"
INITRD = "images/commission/initrd.img"
GRUB_CONFIG = "grub/commission.cfg"  # under pxe/tftp/, beside the site's grub.cfg
# RFC 3942: options 224-254 are site-specific. dnsmasq sends it (forced: no firmware asks
# for it) to UEFI PXE machines that are not known; GRUB reads it with net_get_dhcp_option.
DHCP_OPTION = 224
DHCP_VALUE = "fleet-commission"
# the boot NIC's MAC, as each boot loader names it at boot (iPXE's, GRUB's own variable)
BOOT_MAC = {"ipxe": "${mac}", "grub": "${net_default_mac}"}


def pool_network(inv: Inventory) -> str | None:
    """The provisioning network with a commissioning pool, if one has."""
    return next((name for name, net in inv.raw.networks.items()
                 if net.purpose == "provisioning" and net.dhcp_pool is not None), None)


def report_url(inv: Inventory) -> str:
    """Where the environment posts: the endpoint's /v1/discover/ (``fleet endpoint
    --discover``); the environment appends its boot MAC (``52-54-00-...``)."""
    return f"http://{inv.master_address}:{inv.raw.site.salt.reinstall_port}/v1/discover/"


def cmdline(inv: Inventory) -> list[str]:
    """The commissioning kernel's command line, the same for every loader, before each
    loader's own words (the boot MAC: :data:`BOOT_MAC`; iPXE's ``initrd=``), each still
    to be escaped for the loader's syntax."""
    return [f"fleet.report={report_url(inv)}", "console=tty0", "console=ttyS0,115200n8"]
