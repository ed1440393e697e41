"""Render the ``pxe/`` tree served by the provisioning host.

    pxe/dnsmasq/dnsmasq.conf              DNS, DHCP (known MACs only), TFTP, firmware detection
    pxe/dnsmasq/dns-hosts                 the site's names for DNS
    pxe/dnsmasq/hosts/<host>              dhcp-hostsdir: boot NIC and BMC leases
    pxe/http/boot.ipxe                    iPXE entry point -> /state/<mac>.ipxe
    pxe/tftp/grub/grub.cfg                GRUB entry point -> /state/grub.cfg-<mac>
    pxe/http/commission.ipxe, pxe/tftp/grub/commission.cfg   unknown MACs (a dhcp_pool):
                                          the commissioning environment (fleet discover)
    pxe/http/hosts/<host>/install.ipxe    the installer, with this host's autoinstall seed
    pxe/http/hosts/<host>/local.ipxe      boot from the local disk
    pxe/http/hosts/<host>/grub-install.cfg, grub-local.cfg   the same for UEFI GRUB
    pxe/http/hosts/<host>/user-data       autoinstall (NoCloud seed) + meta-data
    pxe/http/hosts/<host>/preseed.cfg     instead, for a node whose group names a Debian image
    pxe/nginx/tokens.conf                 nginx: /state/<mac>.token only to that node's address

``/state/`` is not rendered and lives outside ``pxe/`` (``site.pxe_state``): it holds the
per-MAC links that select install or local for each host, switched at run time, so a
mode change never needs a render and a render never touches a mode.
"""

from __future__ import annotations

from fleet.discover import boot as commission
from fleet.inventory.model import Inventory, Node
from fleet.pxe.modes import script_name
from fleet.render import bootscripts, escape, installkey, preseed, sitepxe, yamlout
from fleet.render.autoinstall import render_meta_data, render_user_data
from fleet.render.bootstrap import http_base
from fleet.render.header import TEXT
from fleet.render.names import host_names


def cmdline(inv: Inventory, node: Node, *, grub: bool) -> str:
    """Kernel command line of the Ubuntu live-server installer for ``node``."""
    site = inv.raw.site
    seed = f"ds=nocloud-net;s={http_base(inv)}/hosts/{node.hostname}/"
    return _words([
        "ip=dhcp",
        f"BOOTIF=01-{node.mac.replace(':', '-')}",  # pin DHCP to the boot NIC
        f"url={site.install.iso_url}",
        "autoinstall",
        seed,
        "cloud-config-url=/dev/null",  # cloud-init must not fetch the ISO URL as config
        "console=tty0",
        "console=ttyS0,115200n8",
    ], grub=grub)


def _words(words: list[str], *, grub: bool) -> str:
    """A kernel command line for GRUB (each word quoted where GRUB would split or expand
    it, such as the seed's ';') or for iPXE (which cannot quote: each word checked)."""
    if grub:
        return " ".join(escape.grub_word(w) for w in words)
    return " ".join(escape.ipxe_word(w) for w in words)


def render(inv: Inventory) -> dict[str, str]:
    out = site_files(inv)
    for files in node_files(inv, list(inv.nodes.values())).values():
        out.update(files)
    return out


def _common(inv: Inventory) -> dict[str, str]:
    prov_node = inv.nodes[inv.raw.site.provisioning_host]
    return {"header": TEXT, "http": http_base(inv), "tftp_server": str(prov_node.address)}


def site_files(inv: Inventory) -> dict[str, str]:
    """The PXE files of the whole site (every node's are :func:`node_files`)."""
    out = context_files(inv)
    out.update(fact_files(inv))
    return out


def fact_files(inv: Inventory) -> dict[str, str]:
    """The site's PXE files that read nodes' own facts (an install token's name is made
    from its boot MAC: :func:`fleet.render.installkey.token_name`)."""
    return {"pxe/nginx/tokens.conf": _token_rules(inv)}


def context_files(inv: Inventory) -> dict[str, str]:
    """The site's PXE files that read no node's own facts (see :func:`fact_files`)."""
    site = inv.raw.site
    prov_node = inv.nodes[site.provisioning_host]
    out: dict[str, str] = {}
    common = _common(inv)
    http = common["http"]
    pool = commission.pool_network(inv) is not None
    boot = sitepxe.Commission(commission.DHCP_OPTION, commission.DHCP_VALUE,
                              commission.GRUB_CONFIG) if pool else None
    out["pxe/dnsmasq/dnsmasq.conf"] = sitepxe.dnsmasq_conf(
        prov_host=prov_node.hostname, interface=prov_node.boot_nic, domain=site.domain,
        pxe_root=site.pxe_root, networks=_dhcp_networks(inv),
        dns_servers=",".join(str(a) for a in site.dns_servers),
        upstream_dns=[str(a) for a in site.upstream_dns], http=http, commission=boot)
    out["pxe/dnsmasq/dns-hosts"] = _dns_hosts(inv)
    out["pxe/http/boot.ipxe"] = sitepxe.boot_ipxe(http)
    if boot:
        out |= _commission_files(inv, common, boot)
    out["pxe/tftp/grub/grub.cfg"] = sitepxe.grub_cfg(
        http_host=http.removeprefix("http://"), tftp_server=common["tftp_server"],
        commission=boot)
    return out


def _commission_files(inv: Inventory, common: dict[str, str],
                      boot: sitepxe.Commission) -> dict[str, str]:
    """The commissioning boot of unknown MACs: iPXE's script and GRUB's config, one kernel
    line (:func:`fleet.discover.boot.cmdline`), each loader's boot MAC its own."""
    words = commission.cmdline(inv)

    def env(*, grub: bool) -> sitepxe.CommissionBoot:
        return sitepxe.CommissionBoot(
            http=common["http"], tftp_server=common["tftp_server"], kernel=commission.KERNEL,
            initrd=commission.INITRD, cmdline=_words(words, grub=grub),
            boot_mac=commission.BOOT_MAC["grub" if grub else "ipxe"])

    return {
        "pxe/http/commission.ipxe": sitepxe.commission_ipxe(env(grub=False)),
        f"pxe/tftp/{commission.GRUB_CONFIG}": sitepxe.grub_commission_cfg(env(grub=True),
                                                                          boot),
    }


def node_files(inv: Inventory, nodes: list[Node]) -> dict[str, dict[str, str]]:
    """Each of ``nodes``' own PXE files, by hostname (a batch: see
    :func:`fleet.render.render_all`)."""
    common = _common(inv)
    memo = yamlout.Memo()
    out: dict[str, dict[str, str]] = {}
    for node in nodes:
        files = {f"pxe/dnsmasq/hosts/{node.hostname}": _dhcp_hosts(node)}
        files |= _node_boot_files(inv, node, common, memo)
        out[node.hostname] = files
    return out


def _dhcp_networks(inv: Inventory) -> list[sitepxe.DhcpNet]:
    """The networks dnsmasq serves (all but IPoIB); relayed: not the head's own."""
    prov_net = inv.nodes[inv.raw.site.provisioning_host].prov.network
    return [sitepxe.DhcpNet(
        name=name, purpose=net.purpose, vlan=net.vlan, network=net.cidr.network_address,
        netmask=net.cidr.netmask, gateway=net.gateway, mtu=net.mtu,
        pool=(net.dhcp_pool.start, net.dhcp_pool.end) if net.dhcp_pool else None,
        relayed=name != prov_net,
        commission=net.purpose == "provisioning" and net.dhcp_pool is not None,
    ) for name, net in inv.raw.networks.items() if net.purpose != "ipoib"]


def _node_boot_files(inv: Inventory, node: Node, common: dict[str, str],
                     memo: yamlout.Memo) -> dict[str, str]:
    """The node's installer seed and its install/local scripts for iPXE and GRUB."""
    site = inv.raw.site
    h = node.hostname
    d = f"pxe/http/hosts/{h}"
    out: dict[str, str] = {}
    image = preseed.image_of(inv, node)
    if image is None:
        os_name = f"Ubuntu {site.os.release}"
        kernel, initrd = site.install.kernel, site.install.initrd
        ipxe_line, grub_line = cmdline(inv, node, grub=False), cmdline(inv, node, grub=True)
        efi_dir: str = site.os.distro
        out[f"{d}/user-data"] = render_user_data(inv, node, memo)
        out[f"{d}/meta-data"] = render_meta_data(inv, node)
    else:
        os_name, kernel, initrd = f"Debian ({node.image})", image.kernel, image.initrd
        words = preseed.cmdline(inv, node, image).split(" ")
        ipxe_line, grub_line = _words(words, grub=False), _words(words, grub=True)
        efi_dir = "debian"
        out[f"{d}/preseed.cfg"] = preseed.render_preseed(inv, node, image)
    boot = bootscripts.Boot(h, node.mac, os_name, kernel, initrd, common["http"],
                            common["tftp_server"])
    out[f"{d}/{script_name('install', 'ipxe')}"] = bootscripts.install_ipxe(boot, ipxe_line)
    out[f"{d}/{script_name('local', 'ipxe')}"] = bootscripts.local_ipxe(boot)
    out[f"{d}/{script_name('install', 'grub')}"] = bootscripts.install_grub(boot, grub_line)
    out[f"{d}/{script_name('local', 'grub')}"] = bootscripts.local_grub(boot, efi_dir)
    return out


def _token_rules(inv: Inventory) -> str:
    """nginx locations (included by the provisioning role's site) that serve each node's
    one-time install token (``fleet reinstall``) to that node's own DHCP address only;
    the site denies every other ``*.token``."""
    lines = [f"# {TEXT}", "# fleet reinstall's install tokens: each to its node's address"]
    # nginx: bare words only (a ';', '{', '}', '$', quote or space would add a directive);
    # a word and "/" and a word are a word: the directory is checked once, not per node
    where = escape.nginx_word(installkey.tokens_dir(inv)) if inv.nodes else ""
    for node in inv.nodes.values():
        name = escape.nginx_word(installkey.token_name(node))
        lines.append(f"location = /state/{name} {{ alias {where}{name}; "
                     f"allow {node.address}; deny all; expires epoch; }}")
    return "\n".join(lines) + "\n"


def _dns_hosts(inv: Inventory) -> str:
    lines = [f"# {TEXT}"]
    lines += [escape.line(f"{addr} {fqdn} {short}", "a dns-hosts line")
              for addr, short, fqdn in host_names(inv)]
    return "\n".join(lines) + "\n"


def _dhcp_hosts(node: Node) -> str:
    lines = [f"# {TEXT}"]
    prov = node.prov
    lines.append(escape.line(f"{node.mac},{prov.address},{node.hostname},infinite",
                             "a dhcp-hosts line"))
    bmc = node.interfaces.get("bmc")
    if bmc is not None and bmc.address is not None:
        lines.append(escape.line(f"{node.bmc_mac},{bmc.address},{node.hostname}-bmc,infinite",
                                 "a dhcp-hosts line"))
    return "\n".join(lines) + "\n"
