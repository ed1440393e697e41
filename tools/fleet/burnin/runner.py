"""The burn-in checks as they run on a node (the installed OS; copied there alone: the
standard library only, no fleet import). Each prints one result as JSON, the shape
fleet.burnin.results checks on the master (``fleet burnin record NODE --result -``):

    python3 runner.py cpu-stress --seconds 600      stress-ng --cpu 0 --verify, bogo_ops_s
    python3 runner.py memtester --mb 1024           memtester, one loop
    python3 runner.py disk-verify --seconds 60 --target PATH
                                                    fio write + crc32c verify, read/write MiB/s;
                                                    PATH a scratch file, or a whole disk that
                                                    carries no data (no partition table or
                                                    file system signature, not mounted)
    python3 runner.py smart                         smartctl -H on every disk
    python3 runner.py gpu-present --expect-gpus 8   nvidia-smi: count, PCIe link, memory, ECC

The tool's own verdict is ``passed``; the master judges the figures against the profile's
baseline (fleet.burnin.verdict).
"""

from __future__ import annotations

import argparse
import json
import re
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

Outcome = tuple[bool, dict[str, float], str | None]


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def _tail(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    clean = re.sub(r"[^\x20-\x7e]", "?", lines[-1] if lines else "no output")
    return clean[:180]


def cpu_stress(args: argparse.Namespace) -> Outcome:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "metrics.yaml"
        r = _run(["stress-ng", "--cpu", "0", "--verify", "--timeout", f"{args.seconds}s",
                  "--metrics-brief", "--yaml", str(out)], args.seconds + 120)
        text = out.read_text() if out.exists() else ""
    m = re.search(r"bogo-ops-per-second-real-time:\s*([0-9.]+)", text)
    figures = {"bogo_ops_s": float(m.group(1))} if m else {}
    ok = r.returncode == 0 and bool(figures)
    return ok, figures, None if ok else _tail(r.stderr + r.stdout)


def memtester(args: argparse.Namespace) -> Outcome:
    t0 = time.monotonic()
    r = _run(["memtester", f"{args.mb}M", "1"], 24 * 3600)
    took = time.monotonic() - t0
    figures = {"mem_mib_s": args.mb / took} if r.returncode == 0 and took > 0 else {}
    return r.returncode == 0, figures, None if r.returncode == 0 else _tail(r.stdout)


def _no_data(target: Path) -> str | None:
    """Why ``target`` may not be written (None: it may): a file is scratch; a block
    device must carry no partition table or file system and not be mounted."""
    if not target.exists() or stat.S_ISREG(target.stat().st_mode):
        return None
    if not stat.S_ISBLK(target.stat().st_mode):
        return f"{target} is neither a file nor a block device"
    mounts = Path("/proc/mounts").read_text()
    if str(target) in mounts:
        return f"{target} is mounted"
    probe = _run(["blkid", "-p", str(target)], 30)
    if probe.returncode != 2:  # 2: nothing found on it
        return f"{target} carries a signature ({_tail(probe.stdout) or 'blkid'}): not erased"
    return None


def disk_verify(args: argparse.Namespace) -> Outcome:
    target = Path(args.target)
    why = _no_data(target)
    if why is not None:
        return False, {}, why
    r = _run(["fio", "--name=verify", f"--filename={target}", f"--size={args.mb}M",
              "--rw=write", "--bs=1M", "--direct=0", "--verify=crc32c", "--do_verify=1",
              "--verify_state_save=0",
              f"--runtime={args.seconds}", "--output-format=json"], args.seconds * 4 + 120)
    try:
        job = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]
    except (ValueError, KeyError, IndexError):
        return False, {}, _tail(r.stderr + r.stdout)
    figures = {"write_mib_s": job["write"]["bw"] / 1024, "read_mib_s": job["read"]["bw"] / 1024}
    ok = r.returncode == 0 and job.get("error", 0) == 0
    return ok, figures, None if ok else f"fio error {job.get('error')}: {_tail(r.stderr)}"


def smart(args: argparse.Namespace) -> Outcome:
    disks = [d.name for d in Path("/sys/block").iterdir()
             if not d.name.startswith(("loop", "ram", "dm-", "sr", "zram", "md", "nbd", "fd"))]
    bad = []
    for name in sorted(disks):
        r = _run(["smartctl", "-H", f"/dev/{name}"], 60)
        if "FAILED" in r.stdout or r.returncode & 0b1000:  # bit 3: disk failing
            bad.append(f"{name}: {_tail(r.stdout)}")
    return not bad, {"disks": float(len(disks))}, "; ".join(bad)[:180] or None


GPU_QUERY = ("index,pci.bus_id,pcie.link.width.current,pcie.link.gen.current,memory.total,"
             "ecc.mode.current")


def gpu_present(args: argparse.Namespace) -> Outcome:
    r = _run(["nvidia-smi", f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"], 60)
    if r.returncode != 0:
        return False, {"gpus": 0.0}, _tail(r.stderr + r.stdout)
    rows = [[c.strip() for c in ln.split(",")] for ln in r.stdout.strip().splitlines()]
    width = [float(x[2]) for x in rows if x[2].isdigit()]
    mem = [float(x[4]) / 1024 for x in rows if x[4].isdigit()]
    figures = {"gpus": float(len(rows)), "pcie_width_min": min(width, default=0.0),
               "memory_gb_min": min(mem, default=0.0)}
    problems = [f"{len(rows)} GPUs of {args.expect_gpus}"] if len(rows) != args.expect_gpus \
        else []
    problems += [f"GPU {x[0]} ECC {x[5]}" for x in rows if x[5] not in ("Enabled", "[N/A]")]
    return not problems, figures, "; ".join(problems) or None


CHECKS = {"cpu-stress": cpu_stress, "memtester": memtester, "disk-verify": disk_verify,
          "smart": smart, "gpu-present": gpu_present}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("check", choices=sorted(CHECKS))
    p.add_argument("--seconds", type=int, default=60)
    p.add_argument("--mb", type=int, default=256, help="memtester's and fio's size")
    p.add_argument("--target", default=str(Path(tempfile.gettempdir()) / "fleet-burnin.fio"))
    p.add_argument("--expect-gpus", type=int, default=0)
    args = p.parse_args(argv)
    started = time.time()
    try:
        passed, figures, reason = CHECKS[args.check](args)
    except (OSError, subprocess.TimeoutExpired) as exc:
        passed, figures, reason = False, {}, _tail(str(exc))
    doc: dict[str, Any] = {"check": args.check, "passed": passed, "figures": figures,
                           "started": started, "seconds": round(time.time() - started, 3)}
    if reason:
        doc["reason"] = reason
    json.dump(doc, sys.stdout)
    print()
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
