"""Pure parsing of what nodes and Slurm answer, for the health gate of ``fleet health``,
``fleet rollout`` and ``fleet reinstall``. Nothing here runs a command; the
text parsed comes from the nodes and is only ever read, never executed, and passes
through :func:`fleet.master.text.clean` before it goes anywhere a person or Slurm reads it."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fleet.master.slurm import gres_gpus, reason_text, state_flags
from fleet.master.text import clean

SYS_IB = "/sys/class/infiniband"
# One line per port: "mlx5_0/ports/1|InfiniBand|4: ACTIVE|5: LinkUp". link_layer tells
# InfiniBand ports from RoCE/Ethernet ones (a ConnectX in Ethernet mode is listed too).
# Ends with `true`: no HCA at all is an empty answer, not a failed command.
IB_PORTS_CMD = (
    f'for p in {SYS_IB}/*/ports/*; do [ -r "$p/state" ] && '
    f'echo "${{p#{SYS_IB}/}}|$(cat "$p/link_layer" 2>/dev/null)|$(cat "$p/state")|'
    '$(cat "$p/phys_state" 2>/dev/null)"; done; true')
IB_ACTIVE, IB_LINKUP = "4: ACTIVE", "5: LinkUp"


# --- InfiniBand -------------------------------------------------------------------------


@dataclass(frozen=True)
class IbPorts:
    active: list[str]
    down: list[str]  # "mlx5_0 port 2 (1: DOWN, 3: Disabled)"


def ib_ports(out: str) -> IbPorts:
    """The InfiniBand ports of :data:`IB_PORTS_CMD`'s answer; other link layers ignored."""
    active: list[str] = []
    down: list[str] = []
    for line in out.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4 or parts[1] != "InfiniBand":
            continue
        port, _layer, state, phys = parts
        name = clean(port.replace("/ports/", " port "), 60)
        if state == IB_ACTIVE and phys == IB_LINKUP:
            active.append(name)
        else:
            down.append(f"{name} ({clean(state, 30) or '?'}, {clean(phys, 30) or '?'})")
    return IbPorts(active, down)


def ib_verdict(ports: IbPorts, expected: int, raw: str = "") -> tuple[bool, str]:
    """As many active ports as the profile has InfiniBand NICs (the inventory names no
    devices, so any will do); ports beyond that count may be down (an uncabled one)."""
    active, down = ports.active, ports.down
    text = f"{len(active)} of {expected} IB ports active"
    if len(active) >= expected:
        if len(active) > expected:
            text = f"{len(active)} IB ports active ({expected} in the inventory)"
        if down:
            text += f"; also down: {', '.join(down)}"
        return True, text
    if down:
        return False, f"{text}; down: {', '.join(down)}"
    said = clean(raw)
    return False, f"{text}; no InfiniBand port in {SYS_IB}" + (
        f" (the minion said: {said})" if said else "")


# --- GPUs -------------------------------------------------------------------------------

GPU_QUERY_CMD = ("nvidia-smi --query-gpu=index,pci.bus_id,persistence_mode "
                 "--format=csv,noheader")


@dataclass(frozen=True)
class Gpu:
    index: str
    bus: str
    persistence: bool


def gpus(out: str) -> list[Gpu]:
    """``0, 00000000:01:00.0, Enabled`` per GPU (:data:`GPU_QUERY_CMD`)."""
    found = []
    for line in out.splitlines():
        cells = [c.strip() for c in line.split(",")]
        if len(cells) == 3 and cells[0].isdigit():
            found.append(Gpu(cells[0], clean(cells[1], 20), cells[2] == "Enabled"))
    return found


def gpu_verdict(found: list[Gpu], expected: int) -> tuple[bool, str]:
    off = [g.index for g in found if not g.persistence]
    text = f"{len(found)} of {expected} GPUs seen by nvidia-smi"
    if off:
        text += f"; persistence mode off on GPU {', '.join(off)}"
    elif found:
        text += ", persistence mode on"
    return len(found) == expected and not off, text


# --- Xid --------------------------------------------------------------------------------

# kernel messages of this boot: NVRM prints "NVRM: Xid (PCI:0000:01:00): 79, pid=..."
XID_CMD = "journalctl -k -b -o cat --no-pager | grep -F 'NVRM: Xid'; true"
_XID = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+)")
# caused by an application, not the GPU: reported, not unhealthy (NVIDIA's Xid catalog:
# 13 graphics engine exception, 31 MMU fault, 43 GPU stopped processing (reset channel),
# 45 preemptive cleanup after an application exit)
XID_APPLICATION = frozenset({13, 31, 43, 45})


@dataclass(frozen=True)
class Xid:
    bus: str
    code: int


def xids(out: str) -> list[Xid]:
    return [Xid(m.group(1), int(m.group(2))) for m in map(_XID.search, out.splitlines()) if m]


def xid_verdict(found: list[Xid]) -> tuple[bool, bool, str]:
    """(healthy, worth a warning, text)."""
    if not found:
        return True, False, "no NVIDIA Xid in the kernel log since boot"
    bad = sorted({x.code for x in found if x.code not in XID_APPLICATION})
    where = sorted({x.bus for x in found})
    codes = sorted({x.code for x in found})
    text = (f"{len(found)} NVIDIA Xid error(s) since boot: Xid {', '.join(map(str, codes))} "
            f"on {', '.join(where[:4])}")
    if bad:
        return False, False, text
    return True, True, text + " (application errors only)"


# --- Slurm ------------------------------------------------------------------------------

def slurmd_verdict(fields: dict[str, str] | None, gpus_expected: int | None
                   ) -> tuple[bool, str]:
    """Registered (not DOWN, NOT_RESPONDING, FAIL, FUTURE, UNKNOWN), with the GRES of the
    profile's GPUs. A drain alone is not a health problem: it is reported."""
    if fields is None:
        return False, "slurmctld does not know the node"
    state = fields.get("State", "")
    flags = state_flags(state)
    bad = flags & {"DOWN", "NOT_RESPONDING", "FAIL", "FUTURE", "UNKNOWN", "NO_RESPOND"}
    if bad:
        why = clean(reason_text(fields.get("Reason", "")), 120)
        return False, f"slurmd not registered (State={clean(state, 60)})" + (
            f": {why}" if why else "")
    if gpus_expected is not None:
        got = gres_gpus(fields.get("Gres", ""))
        if got != gpus_expected:
            return False, (f"slurmd reports Gres {clean(fields.get('Gres', ''), 60) or 'none'}"
                           f", not gpu:{gpus_expected}")
        return True, f"slurmd registered (State={clean(state, 60)}, gpu:{got})"
    return True, f"slurmd registered (State={clean(state, 60)})"


# --- systemd units ----------------------------------------------------------------------


def systemctl_show(out: str) -> dict[str, dict[str, str]]:
    """``systemctl show -p Id,LoadState,ActiveState,SubState UNIT...``: blocks separated
    by blank lines, by Id (an unknown unit is LoadState=not-found)."""
    units: dict[str, dict[str, str]] = {}
    block: dict[str, str] = {}
    for line in [*out.splitlines(), ""]:
        if not line.strip():
            if block.get("Id"):
                units[block["Id"]] = block
            block = {}
            continue
        key, sep, value = line.partition("=")
        if sep:
            block[key.strip()] = value.strip()
    return units


def unit_verdict(unit: str, props: dict[str, str] | None) -> tuple[bool, str]:
    if props is None:
        return False, f"{unit}: not reported"
    if props.get("LoadState") == "not-found":
        return False, f"{unit}: not installed"
    active, sub = props.get("ActiveState", "?"), props.get("SubState", "?")
    return active == "active", f"{unit}: {clean(active, 20)} ({clean(sub, 20)})"


# --- munge, chrony, mounts, HTTP --------------------------------------------------------

MUNGE_CMD = "munge -n | unmunge"


def munge_verdict(out: str) -> tuple[bool, str]:
    """``unmunge`` prints ``STATUS: Success (0)`` for a credential that decodes."""
    for line in out.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "STATUS":
            value = value.strip()
            return value.startswith("Success"), f"munge credential: {clean(value, 80)}"
    return False, f"munge credential not decoded: {clean(out, 120) or 'no answer'}"


CHRONY_CMD = "chronyc -n tracking"
MAX_OFFSET = 1.0  # seconds; chrony's makestep in base.time steps beyond this
_OFFSET = re.compile(r"([0-9.]+) seconds (slow|fast)")


def chrony_verdict(out: str, max_offset: float = MAX_OFFSET) -> tuple[bool, str]:
    """Synchronised (a reference, leap status not "Not synchronised") and the system
    clock within ``max_offset`` of NTP time."""
    fields = {}
    for line in out.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip()] = value.strip()
    ref, leap = fields.get("Reference ID", ""), fields.get("Leap status", "")
    if not ref or not leap:
        return False, f"chrony: no tracking data ({clean(out, 120) or 'no answer'})"
    if leap == "Not synchronised" or ref.startswith("00000000"):
        return False, f"chrony: not synchronised (reference {clean(ref, 40)})"
    m = _OFFSET.search(fields.get("System time", ""))
    offset = float(m.group(1)) if m else None
    text = (f"chrony: synchronised to {clean(ref, 40)}, stratum "
            f"{clean(fields.get('Stratum', '?'), 4)}")
    if offset is None:
        return False, text + ", offset unknown"
    if offset > max_offset:
        return False, text + f", clock {offset:.3f}s {m.group(2) if m else ''} (over " \
                             f"{max_offset:g}s)"
    return True, text + f", offset {offset * 1000:.1f} ms"


def mount_verdict(active: object, expected: list[str]) -> tuple[bool, str]:
    """Salt's ``mount.active`` (a dict by mount point) against the data-disk mounts."""
    if not isinstance(active, dict):
        return False, f"mounts not read: {clean(active, 120)}"
    missing = [m for m in expected if m not in active]
    if missing:
        return False, (f"data disk(s) not mounted: {', '.join(missing)} (writes there land "
                       "on the OS disk)")
    return True, f"{len(expected)} data disks mounted"


def http_codes(out: str) -> dict[str, int]:
    """``KEY CODE`` lines (curl -w '%{http_code}', 0/000 when nothing answered)."""
    codes: dict[str, int] = {}
    for line in out.splitlines():
        key, _, code = line.strip().partition(" ")
        if code.strip().isdigit():
            codes[key] = int(code)
    return codes

