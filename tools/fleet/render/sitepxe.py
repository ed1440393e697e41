"""The site's own PXE files: dnsmasq's config, the iPXE and GRUB entry points, and the
commissioning scripts for MACs the inventory does not know (:mod:`fleet.render.pxe` names
them and gathers their values).

Plain Python rather than templates, as :mod:`fleet.render.bootscripts`: importing Jinja and
compiling five templates was about a tenth of the site's cold render. Every value is one
line (:func:`fleet.render.escape.line`), and each is escaped for its language where it
lands.
"""

from __future__ import annotations

from ipaddress import IPv4Address
from typing import NamedTuple

from fleet.render.escape import grub_word, ipxe_word, line
from fleet.render.header import TEXT


class DhcpNet(NamedTuple):
    """A network dnsmasq serves: ``pool`` its range for machines not in the inventory,
    ``relayed``: not the provisioning host's own, ``commission``: the pool's machines
    commission (a provisioning network with a pool)."""

    name: str
    purpose: str
    vlan: int | None
    network: IPv4Address
    netmask: IPv4Address
    gateway: IPv4Address | None
    mtu: int
    pool: tuple[IPv4Address, IPv4Address] | None
    relayed: bool
    commission: bool


class Commission(NamedTuple):
    """How dnsmasq and GRUB tell a machine to commission (:mod:`fleet.discover.boot`)."""

    option: int
    value: str
    config: str


def dnsmasq_conf(*, prov_host: str, interface: str, domain: str, pxe_root: str,
                 networks: list[DhcpNet], dns_servers: str, upstream_dns: list[str],
                 http: str, commission: Commission | None) -> str:
    """``commission``: the commissioning boot of unknown MACs (a provisioning network has
    a pool), or None."""
    pxe_root, domain = line(pxe_root), line(domain)
    out = [f"""# {TEXT}
# dnsmasq for the provisioning host {line(prov_host)}: DNS for the site's names, DHCP for
# inventoried MACs, TFTP for the first boot stage only (everything large goes over HTTP).
# Reloads: new or changed files in dhcp-hostsdir are read automatically; send SIGHUP after
# a MAC is removed or changed, and after dns-hosts changes.
interface={line(interface)}
bind-dynamic
log-dhcp
dhcp-authoritative
domain={domain}

# DNS: every inventory name (dns-hosts), never forwarded; the rest goes upstream
domain-needed
bogus-priv
local=/{domain}/
addn-hosts={pxe_root}/dnsmasq/dns-hosts
"""]
    if upstream_dns:
        out.append("no-resolv\n")
        out.extend(f"server={line(server)}\n" for server in upstream_dns)
    out.append("\n")
    for net in networks:
        out.append(_network(net, dns_servers))
    out.append(f"""# one file per known interface, generated from the inventory
dhcp-hostsdir={pxe_root}/dnsmasq/hosts

# firmware detection (client architecture, RFC 4578) and iPXE's user class
dhcp-match=set:bios,option:client-arch,0
dhcp-match=set:efi64,option:client-arch,7
dhcp-match=set:efi64,option:client-arch,9
dhcp-match=set:efi-http,option:client-arch,16
dhcp-userclass=set:ipxe,iPXE
dhcp-vendorclass=set:efi-http,HTTPClient

# BIOS: chainload iPXE; UEFI: shim -> signed GRUB (Secure Boot works); UEFI HTTP boot: iPXE
dhcp-boot=tag:bios,tag:!ipxe,undionly.kpxe
""")
    out.append(_boot(line(http), commission))
    out.append(f"""
enable-tftp
tftp-root={pxe_root}/tftp
""")
    return "".join(out)


def _boot(http: str, commission: Commission | None) -> str:
    """Which first stage each firmware loads (the commissioning one for unknown MACs)."""
    if commission:
        return f"""dhcp-boot=tag:efi64,tag:!ipxe,tag:known,bootx64.efi
dhcp-boot=tag:efi-http,tag:!ipxe,{http}/ipxe.efi
dhcp-option-force=tag:efi-http,60,HTTPClient
dhcp-boot=tag:ipxe,tag:known,{http}/boot.ipxe
# not in the inventory: BIOS (and UEFI HTTP boot) through iPXE to the commissioning
# script; UEFI PXE through shim and the signed GRUB (Secure Boot works), which loads
# {line(commission.config)} when this site-specific option says so (fleet discover)
dhcp-boot=tag:efi64,tag:!ipxe,tag:!known,bootx64.efi
dhcp-option-force=tag:efi64,tag:!known,{line(commission.option)},{line(commission.value)}
dhcp-boot=tag:ipxe,tag:!known,{http}/commission.ipxe
"""
    return f"""dhcp-boot=tag:efi64,tag:!ipxe,bootx64.efi
dhcp-boot=tag:efi-http,tag:!ipxe,{http}/ipxe.efi
dhcp-option-force=tag:efi-http,60,HTTPClient
dhcp-boot=tag:ipxe,{http}/boot.ipxe
"""


def _network(net: DhcpNet, dns_servers: str) -> str:
    name, netmask = line(net.name), line(net.netmask)
    vlan = line(net.vlan if net.vlan else "untagged")
    relayed = " - relayed by its gateway" if net.relayed else ""
    out = [f"# network {name} ({line(net.purpose)}, VLAN {vlan}){relayed}\n"]
    static = f"dhcp-range=set:{name},{line(net.network)},static,{netmask},infinite\n"
    if net.commission:
        assert net.pool is not None
        out.append(static)
        out.append(f"""# machines not in the inventory: an hour's lease from the commissioning pool and the
# commissioning boot (fleet discover: they report their hardware, then power off)
dhcp-range=set:commission,{line(net.pool[0])},{line(net.pool[1])},{netmask},1h
""")  # noqa: E501
    elif net.pool:
        out.append(f"dhcp-range=set:{name},{line(net.pool[0])},{line(net.pool[1])},"
                   f"{netmask},1h\n")
    else:
        out.append(static)
    for tag in [net.name, "commission"] if net.commission else [net.name]:
        tag = line(tag)
        if net.gateway:
            out.append(f"dhcp-option=tag:{tag},option:router,{line(net.gateway)}\n")
        if dns_servers:
            out.append(f"dhcp-option=tag:{tag},option:dns-server,{line(dns_servers)}\n")
        if net.purpose == "provisioning":
            out.append(f"dhcp-option=tag:{tag},option:mtu,{line(net.mtu)}\n")
    if net.purpose == "provisioning" and not net.commission:
        out.append(f"""# machines that are not in the inventory get nothing on this network
dhcp-ignore=tag:{name},tag:!known
""")
    out.append("\n")
    return "".join(out)


def boot_ipxe(http: str) -> str:
    return f"""#!ipxe
# {TEXT}
# Entry point for every iPXE client: the per-MAC link in /state/ (outside the rendered
# tree, switched at run time) names the host's current boot mode, install or local.
chain --autofree {line(http)}/state/${{mac:hexhyp}}.ipxe || goto local
:local
echo fleet: no install armed for ${{mac}}; booting from local disk
iseq ${{platform}} efi && exit 1 ||
sanboot --no-describe --drive 0x80 || exit 1
"""


def grub_cfg(*, http_host: str, tftp_server: str, commission: Commission | None) -> str:
    out = [f"""# {TEXT}
# Loaded over TFTP by the signed network GRUB (prefix (tftp)/grub). The per-MAC link in
# /state/ (outside the rendered tree, switched at run time) names the host's current boot
# mode; GRUB's own per-MAC search differs between builds, so it is not relied on.
# HTTP where this GRUB build has it built in (a signed GRUB loads no modules; Debian 12's
# has none), else TFTP: the provisioning role links /state/ and /images/ into the TFTP
# root. `fleet_src` tells the per-host config where to load the kernel from.
set timeout=0
"""]
    tftp_server = line(tftp_server)
    if commission:
        option = line(commission.option)
        out.append(f"""# A machine the inventory does not know: dnsmasq sent DHCP option {option} (to no known
# MAC), and it commissions (fleet discover) before any per-MAC config is looked for.
# A known machine has no such option: GRUB says so and goes on.
net_get_dhcp_option fleet_boot ${{net_default_interface}} {option} string
if [ "$fleet_boot" = {grub_word(commission.value)} ]; then
    configfile (tftp,{tftp_server})/{grub_word(commission.config)}
fi
""")  # noqa: E501
    out.append(f"""set fleet_src=(http,{line(http_host)})
export fleet_src
configfile $fleet_src/state/grub.cfg-${{net_default_mac}}
set fleet_src=(tftp,{tftp_server})
configfile $fleet_src/state/grub.cfg-${{net_default_mac}}
echo "fleet: no install armed for ${{net_default_mac}}; booting from local disk"
exit 1
""")
    return "".join(out)


class CommissionBoot(NamedTuple):
    """The commissioning environment's kernel and initrd (paths under the server's root),
    its kernel line already escaped for the loader, and the loader's own boot-MAC
    variable."""

    http: str
    tftp_server: str
    kernel: str
    initrd: str
    cmdline: str
    boot_mac: str


def commission_ipxe(b: CommissionBoot) -> str:
    http = ipxe_word(b.http)
    return f"""#!ipxe
# {TEXT}
# A machine the inventory does not know (dnsmasq: not `known`): the commissioning
# environment reports its hardware to the master (fleet discover) and powers off. It
# installs nothing and touches no disk. Its MAC is iPXE's own, never a script's input
# (the kernel line is grub/commission.cfg's too: fleet.discover.boot.cmdline).
echo fleet: commissioning ${{mac}} (not in the inventory)
kernel {http}/{ipxe_word(b.kernel)} initrd=initrd {line(b.cmdline)} fleet.boot_mac={line(b.boot_mac)} || goto failed
initrd --name initrd {http}/{ipxe_word(b.initrd)} || goto failed
boot || goto failed
:failed
echo fleet: could not load the commissioning environment; powering off in 30 s
sleep 30
poweroff
"""  # noqa: E501


def grub_commission_cfg(b: CommissionBoot, commission: Commission) -> str:
    server = grub_word(b.tftp_server)
    return f"""# {TEXT}
# A UEFI machine the inventory does not know (dnsmasq: not `known`, and so DHCP option
# {line(commission.option)} = {line(commission.value)}, which grub.cfg read): the commissioning environment reports
# its hardware to the master (fleet discover) and powers off. It installs nothing and
# touches no disk. Its MAC is GRUB's own variable, never a script's input; the kernel line
# is commission.ipxe's too (fleet.discover.boot.cmdline). Over TFTP: Debian 12's signed
# GRUB has no HTTP (the role links tftp/images to the images directory); the kernel is
# the archive's signed one, verified through shim. A failed load reboots, back to PXE and
# a fresh GRUB, as grub-install.cfg does: a retry in the same GRUB after a stalled TFTP
# transfer booted a kernel that hung (docs/pxe.md); the environment powers off when done.
set default=0
set timeout=0
menuentry 'fleet: commissioning (not in the inventory)' {{
    echo "fleet: commissioning ${{net_default_mac}} (not in the inventory)"
    linux (tftp,{server})/{grub_word(b.kernel)} {line(b.cmdline)} fleet.boot_mac={line(b.boot_mac)}
    if [ "$?" = 0 ]; then
        initrd (tftp,{server})/{grub_word(b.initrd)}
        if [ "$?" = 0 ]; then
            boot
        fi
    fi
    echo "fleet: could not load the commissioning environment; rebooting (back to PXE) in 10 s"
    sleep 10
    reboot
}}
"""  # noqa: E501
