"""The discovery report a machine posts from the commissioning environment: hostile input.

Parsed from at most :data:`MAX_REPORT_BYTES` of JSON (no duplicate keys, no NaN, nested at
most :data:`MAX_DEPTH` deep) into a strict schema: every string bounded and free of control
characters (no terminal escapes, line breaks or bidi overrides), every list bounded, no
unknown key. Whatever passes is still untrusted text: :func:`shown` escapes it for a
terminal, JSON output escapes it by itself.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StringConstraints,
    ValidationError,
    model_validator,
)

from fleet.inventory.netutil import normalize_mac
from fleet.inventory.types import no_control
from fleet.master.text import shown

MAX_REPORT_BYTES = 256 * 1024
MAX_DEPTH = 8
MAX_NICS = 64
MAX_DISKS = 256
MAX_DIMMS = 256
MAX_PCI = 1024


def _mac(value: str) -> str:
    mac = normalize_mac(value)
    if mac in ("ff:ff:ff:ff:ff:ff", "00:00:00:00:00:00") or int(mac[:2], 16) & 1:
        raise ValueError(f"{mac} is not a unicast MAC")
    return mac


Mac = Annotated[str, StringConstraints(max_length=17), AfterValidator(_mac)]
Word = Annotated[str, StringConstraints(max_length=128), AfterValidator(no_control)]
Serial = Annotated[str, StringConstraints(min_length=1, max_length=64, strip_whitespace=True),
                   AfterValidator(no_control)]
Guid = Annotated[str, StringConstraints(pattern=r"^0x[0-9a-f]{16}$")]
IfName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_.:@-]{1,15}$")]
PciSlot = Annotated[str, StringConstraints(
    pattern=r"^([0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")]
Count = Annotated[StrictInt, Field(ge=0, le=1 << 20)]
Bytes = Annotated[StrictInt, Field(ge=0, le=1 << 60)]


class Part(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Dmi(Part):
    serial: Serial
    """the system serial number (dmidecode -s system-serial-number)"""
    product: Word
    """the product name"""
    vendor: Word = ""
    board: Word = ""
    """the baseboard's product name"""
    board_serial: Word = ""


class Cpus(Part):
    model: Word
    sockets: Annotated[StrictInt, Field(ge=1, le=64)]
    cores_per_socket: Annotated[StrictInt, Field(ge=1, le=4096)]
    threads_per_core: Annotated[StrictInt, Field(ge=1, le=16)] = 1


class Dimm(Part):
    locator: Word
    size_mb: Count


class Memory(Part):
    total_mb: Annotated[StrictInt, Field(ge=1, le=1 << 30)]
    dimms: list[Dimm] = Field(default_factory=list, max_length=MAX_DIMMS)


class Disk(Part):
    name: IfName
    """the kernel's name (nvme0n1, sda)"""
    model: Word = ""
    serial: Word = ""
    size_bytes: Bytes
    transport: Literal["nvme", "sata", "sas", "usb", "virtio", "other"] = "other"
    smart_ok: bool | None = None
    """SMART overall health (smartctl -H), None: not readable"""


class Lldp(Part):
    """The neighbour heard on a NIC (lldpcli -f json show neighbors), as lldpd gave it."""

    chassis_name: Word | None = None
    chassis_id: Word | None = None
    port_id: Word | None = None
    port_id_type: Word | None = None
    port_descr: Word | None = None


class Nic(Part):
    name: IfName
    mac: Mac
    speed_mbps: Annotated[StrictInt, Field(ge=0, le=10_000_000)] | None = None
    lldp: Lldp | None = None


class PciDevice(Part):
    slot: PciSlot
    kind: Literal["gpu", "hca", "nic", "nvme", "other"]
    vendor: Word = ""
    device: Word = ""
    guid: Guid | None = None
    """an HCA's node GUID (ibstat / sysfs node_guid)"""
    link_width: Annotated[StrictInt, Field(ge=0, le=32)] | None = None
    link_speed: Word | None = None


class Report(Part):
    version: Literal[1]
    boot_mac: Mac
    """the NIC the machine booted the commissioning environment from"""
    dmi: Dmi
    cpus: Cpus
    memory: Memory
    disks: list[Disk] = Field(default_factory=list, max_length=MAX_DISKS)
    nics: list[Nic] = Field(min_length=1, max_length=MAX_NICS)
    pci: list[PciDevice] = Field(default_factory=list, max_length=MAX_PCI)
    bmc_mac: Mac | None = None
    """the BMC's MAC from the local IPMI interface (ipmitool lan print)"""

    @model_validator(mode="after")
    def _booted_from_a_nic(self) -> Report:
        macs = [n.mac for n in self.nics]
        if self.boot_mac not in macs:
            raise ValueError(f"boot_mac {self.boot_mac} is none of the nics' MACs")
        if len(set(macs)) != len(macs):
            raise ValueError("two nics with one MAC")
        return self

    def boot_nic(self) -> Nic | None:
        return next((n for n in self.nics if n.mac == self.boot_mac), None)

    def gpus(self) -> int:
        return sum(1 for d in self.pci if d.kind == "gpu")

    def hca_guids(self) -> list[str]:
        return [d.guid for d in self.pci if d.kind == "hca" and d.guid]


class ReportError(ValueError):
    """Why a report was refused: one line, safe to show and to send back."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ReportError(f"duplicate key {shown(key, 40)}")
        out[key] = value
    return out


def _constant(name: str) -> Any:
    raise ReportError(f"{name} is not a number")


def _depth(value: Any, at: int = 0) -> None:
    if at > MAX_DEPTH:
        raise ReportError(f"nested deeper than {MAX_DEPTH}")
    children = value.values() if isinstance(value, dict) else value if isinstance(
        value, list) else ()
    for child in children:
        _depth(child, at + 1)


def parse(body: bytes) -> Report:
    """The report in ``body``, or ReportError naming the first thing wrong."""
    if len(body) > MAX_REPORT_BYTES:
        raise ReportError(f"report of {len(body)} bytes: at most {MAX_REPORT_BYTES}")
    try:
        text = body.decode("utf-8")
        data = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_constant)
    except UnicodeDecodeError as exc:
        raise ReportError(f"not UTF-8 at byte {exc.start}") from None
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ReportError(f"not JSON: {shown(str(exc), 120)}") from None
    _depth(data)
    try:
        return Report.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "report"
        raise ReportError(f"{where}: {shown(err['msg'], 160)} "
                          f"({len(exc.errors())} problem(s))") from None
