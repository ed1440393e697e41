"""A BMC client for an inventory node: the address from its ``bmc`` interface, the protocol
and user from its profile, the password from the secrets store (``secrets/bmc/<name>``)."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

from fleet.bmc.base import BmcClient, BmcError
from fleet.bmc.ipmi import IpmiClient
from fleet.bmc.limits import CALL_TIMEOUT, REQUEST_TIMEOUT
from fleet.bmc.redfish import RedfishClient, TlsOptions
from fleet.inventory.model import Node


@dataclass(frozen=True)
class BmcOptions:
    """How to reach the BMCs. ``timeout`` bounds one request (connect to last byte; for
    IPMI a third of it is ipmitool's per-message timeout), ``call_timeout`` one client call
    with all its requests: every step that makes one BMC call (the reinstall's preflight
    and power steps, the rollout's reboot) ends with it (fleet.bmc.limits)."""

    secrets_dir: Path = Path("secrets")
    ca_file: str | None = None
    insecure: bool = False
    timeout: float = REQUEST_TIMEOUT
    call_timeout: float = CALL_TIMEOUT
    protocol: str | None = None  # override the profile's: "redfish" or "ipmi"
    address: str | None = None  # override the inventory's, e.g. "127.0.0.1:8000" (tests, lab)
    scheme: str = "https"


def read_password(secrets_dir: Path, name: str) -> str:
    """The BMC password ``name``; refuses a file other users could read."""
    path = secrets_dir / "bmc" / name
    try:
        st = path.stat()
    except FileNotFoundError:
        raise BmcError(f"{path}: no such BMC secret (write the password there, mode 0600; "
                       "`fleet secrets init` lists what is missing)") from None
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise BmcError(f"{path}: mode {stat.S_IMODE(st.st_mode):04o} lets others read it; "
                       "chmod 600 it")
    return path.read_text(encoding="utf-8").rstrip("\r\n")


def bmc_address(node: Node) -> str:
    iface = node.interfaces.get("bmc")
    if iface is None or iface.address is None:
        raise BmcError(f"{node.hostname}: the inventory gives no BMC address")
    return str(iface.address)


def client_for(node: Node, opts: BmcOptions) -> BmcClient:
    spec = node.profile.bmc
    password = read_password(opts.secrets_dir, spec.password_secret)
    address = opts.address or bmc_address(node)
    protocol = opts.protocol or spec.protocol
    if protocol == "redfish":
        return RedfishClient(f"{opts.scheme}://{address}", spec.user, password,
                             tls=TlsOptions(opts.ca_file, opts.insecure), timeout=opts.timeout,
                             call_timeout=opts.call_timeout)
    host, _, port = address.partition(":")
    return IpmiClient(host, spec.user, password, port=int(port or 623),
                      timeout=max(1, int(opts.timeout // 3)), call_timeout=opts.call_timeout)
