"""The commissioning boot of a machine the inventory does not know (rendered by
fleet.render.pxe when a provisioning network has a ``dhcp_pool``):

- dnsmasq leases it an address from that pool (one hour) instead of ignoring it, and
  boots it into iPXE (a UEFI machine gets iPXE, not the Secure Boot chain: the
  commissioning image is not signed), then to ``commission.ipxe``;
- that script loads the commissioning kernel and initrd (``images/commission/``, built
  from the archive's packages: ``make commission-image``) with the report URL on the
  kernel command line; the environment gathers the facts (commission/fleet-commission),
  posts them to the master's endpoint from the leased address, and powers off.

Nothing here installs, arms or touches a disk.
"""

from __future__ import annotations

from fleet.inventory.model import Inventory

KERNEL = "images/commission/vmlinuz"
INITRD = "images/commission/initrd.img"


def pool_network(inv: Inventory) -> str | None:
    """The provisioning network with a commissioning pool, if one has."""
    return next((name for name, net in inv.raw.networks.items()
                 if net.purpose == "provisioning" and net.dhcp_pool is not None), None)


def report_url(inv: Inventory) -> str:
    """Where the environment posts: the endpoint's /v1/discover/ (``fleet endpoint
    --discover``), the MAC appended by iPXE."""
    return f"http://{inv.master_address}:{inv.raw.site.salt.reinstall_port}/v1/discover/"
