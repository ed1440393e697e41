#!/usr/bin/python3
"""Managed by Salt (monitoring.gpu). GPU metrics for node_exporter's textfile collector,
under DCGM exporter's names, from `nvidia-smi --query-gpu` and the kernel's Xid messages.

  fleet-gpu-metrics --out DIR/fleet-gpu.prom [--nvidia-smi PATH] [--kernel-log CMD]

nvidia-smi failing (no driver, a GPU fallen off the bus) is a result, not an error:
fleet_gpus_visible is then the number of GPUs it listed (0), and fleet_gpu_smi_ok 0, so the
monitoring host's GpuMissing alert fires against the count the node's profile has.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fleet_textfile import Metrics, write_atomic  # noqa: E402

# nvidia-smi field -> (DCGM exporter name, TYPE, HELP); None: a label, not a metric
FIELDS: list[tuple[str, tuple[str, str, str] | None]] = [
    ("index", None),
    ("uuid", None),
    ("name", None),
    ("pci.bus_id", None),
    ("temperature.gpu", ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (C).")),
    ("power.draw", ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (W).")),
    ("utilization.gpu", ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (%).")),
    ("memory.used", ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (MiB).")),
    ("memory.free", ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (MiB).")),
    ("ecc.errors.corrected.volatile.total",
     ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Single-bit volatile ECC errors.")),
    ("ecc.errors.uncorrected.volatile.total",
     ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Double-bit volatile ECC errors.")),
]
QUERY = ",".join(f for f, _ in FIELDS)
# NVRM: Xid (PCI:0000:01:00): 79, pid=..., GPU has fallen off the bus.
XID = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)[^)]*\): (\d+)")
BUS_ID = re.compile(r"^([0-9a-fA-F]+):([0-9a-fA-F]+):([0-9a-fA-F]+)(\.[0-9a-fA-F]+)?$")


def _bus(domain: str, bus: str, device: str) -> tuple[int, int, int]:
    return int(domain, 16), int(bus, 16), int(device, 16)


def _number(text: str) -> float | None:
    """A value of nvidia-smi's csv,nounits output; None for [N/A], [Not Supported]..."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        return None


def parse_smi(output: str) -> list[dict[str, str]]:
    gpus = []
    for line in output.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != len(FIELDS):
            raise ValueError(f"nvidia-smi line has {len(cells)} fields, not {len(FIELDS)}: "
                             f"{line!r}")
        gpus.append(dict(zip([f for f, _ in FIELDS], cells, strict=True)))
    return gpus


def parse_xids(log: str) -> dict[tuple[int, int, int], list[int]]:
    """Xid codes by PCI (domain, bus, device), in log order."""
    out: dict[tuple[int, int, int], list[int]] = {}
    for m in XID.finditer(log):
        out.setdefault(_bus(m[1], m[2], m[3]), []).append(int(m[4]))
    return out


def collect(smi_output: str | None, kernel_log: str) -> Metrics:
    m = Metrics()
    m.declare("fleet_gpu_smi_ok", "gauge", "1 if nvidia-smi answered the query.")
    m.declare("fleet_gpus_visible", "gauge", "GPUs nvidia-smi lists.")
    gpus = parse_smi(smi_output) if smi_output is not None else []
    m.add("fleet_gpu_smi_ok", 1 if smi_output is not None else 0)
    m.add("fleet_gpus_visible", len(gpus))
    for _, meta in FIELDS:
        if meta:
            m.declare(meta[0], meta[1], meta[2])
    m.declare("DCGM_FI_DEV_XID_ERRORS", "gauge", "Code of the last Xid error this boot (0: none).")
    m.declare("fleet_gpu_xid_errors_total", "counter", "Xid error messages this boot.")
    xids = parse_xids(kernel_log)
    for gpu in gpus:
        labels = {"gpu": gpu["index"], "UUID": gpu["uuid"], "modelName": gpu["name"],
                  "device": f"nvidia{gpu['index']}", "pci_bus_id": gpu["pci.bus_id"]}
        for field, meta in FIELDS:
            if meta:
                value = _number(gpu[field])
                if value is not None:
                    m.add(meta[0], value, **labels)
        bus = BUS_ID.match(gpu["pci.bus_id"])
        codes = xids.get(_bus(bus[1], bus[2], bus[3]), []) if bus else []
        m.add("DCGM_FI_DEV_XID_ERRORS", codes[-1] if codes else 0, **labels)
        m.add("fleet_gpu_xid_errors_total", len(codes), **labels)
    return m


def _run(argv: list[str], timeout: float) -> str | None:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the .prom file in the textfile directory")
    ap.add_argument("--nvidia-smi", default="/usr/bin/nvidia-smi")
    ap.add_argument("--kernel-log", default="journalctl -k -b -o cat --no-pager -q",
                    help="command printing this boot's kernel messages")
    ap.add_argument("--timeout", type=float, default=20.0)
    args = ap.parse_args(argv)
    smi = _run([args.nvidia_smi, f"--query-gpu={QUERY}", "--format=csv,noheader,nounits"],
               args.timeout)
    log = _run(shlex.split(args.kernel_log), args.timeout) or ""
    try:
        metrics = collect(smi, log)
    except ValueError as exc:  # output of a driver this does not know: say so, write nothing
        print(f"fleet-gpu-metrics: {exc}", file=sys.stderr)
        return 1
    write_atomic(args.out, metrics.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
