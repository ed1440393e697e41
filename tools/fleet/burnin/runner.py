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
    python3 runner.py link-speed --link prov,ethernet,100,MAC --link ib,infiniband,200,GUID
                                                    each planned NIC's kernel link (sysfs) at
                                                    its profile speed or faster, and up
    python3 runner.py gpu-present --expect-gpus 8 --expect-memory-gb 80
                                                    nvidia-smi: count, PCIe link width and
                                                    generation (current against max), memory,
                                                    ECC
    python3 runner.py gpu-stress --seconds 600      gpu_burn (correctness-checked GEMM), TFLOPS
    python3 runner.py nccl-allreduce --expect-gpus 8
                                                    nccl-tests' all_reduce_perf over the node's
                                                    GPUs, bus bandwidth and its own check
    python3 runner.py ib-write-bw --role server --ib-guid GUID --seconds 10
    python3 runner.py ib-write-bw --role client --peer ADDR --ib-guid GUID --seconds 10 \
                              --expect-gbps 200 --tolerance-percent 10
                                                    perftest's ib_write_bw between two nodes
                                                    (the server on the partner first), BW
                                                    average in Gb/s against the IB rate

A check whose tool is not on the node fails as "not run: TOOL not installed" (never a pass);
gpu_burn and all_reduce_perf are built on the node (nvidia.burnin): ``--tool PATH`` names
the build, ``--pinned-by FIELD`` the inventory's pin of it, said when it is missing.

The tool's own verdict is ``passed``; the master judges the figures against the profile's
baseline (fleet.burnin.verdict).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

Outcome = tuple[bool, dict[str, float], str | None]


def _run(argv: list[str], timeout: float,
         cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                          cwd=cwd)


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


GPU_QUERY = ("index,pci.bus_id,pcie.link.width.current,pcie.link.width.max,"
             "pcie.link.gen.current,pcie.link.gen.max,memory.total,ecc.mode.current")
MEMORY_SLACK = 0.95  # a card reports a little less than its nominal GiB (24564 MiB: "24 GB")


def _num(text: str) -> float | None:
    return float(text) if re.fullmatch(r"[0-9]{1,7}", text) else None


def gpu_present(args: argparse.Namespace) -> Outcome:
    """Every GPU on the bus with its PCIe link at its full width, its memory and ECC.
    A link narrower than the card's max (x8 of x16) fails; the generation is kept as a
    figure only: a GPU lowers it at idle to save power, so current < max is no fault."""
    if shutil.which("nvidia-smi") is None:
        return False, {}, "not run: nvidia-smi not installed"
    r = _run(["nvidia-smi", f"--query-gpu={GPU_QUERY}", "--format=csv,noheader,nounits"], 60)
    if r.returncode != 0:
        return False, {"gpus": 0.0}, _tail(r.stderr + r.stdout)
    rows = [[c.strip() for c in ln.split(",")] for ln in r.stdout.strip().splitlines()]
    rows = [x for x in rows if len(x) == 8]
    problems = [f"{len(rows)} GPUs of {args.expect_gpus}"] if len(rows) != args.expect_gpus \
        else []
    widths, gens, mems = [], [], []
    for idx, bus, w_cur, w_max, g_cur, _g_max, mem, ecc in rows:
        name = f"GPU {_tail(idx)[:3]} ({_tail(bus)[:16]})"
        wc, wm, gc, mib = _num(w_cur), _num(w_max), _num(g_cur), _num(mem)
        if wc is not None:
            widths.append(wc)
            if wm is not None and wc < wm:
                problems.append(f"{name} PCIe x{wc:g} of x{wm:g}")
        if gc is not None:
            gens.append(gc)
        if mib is not None:
            mems.append(mib / 1024)
            if args.expect_memory_gb and mib / 1024 < args.expect_memory_gb * MEMORY_SLACK:
                problems.append(f"{name} memory {mib / 1024:.1f} GiB of "
                                f"{args.expect_memory_gb} GB")
        if ecc not in ("Enabled", "[N/A]"):  # N/A: a card without ECC (GeForce)
            problems.append(f"{name} ECC {_tail(ecc)[:16]}")
    figures = {"gpus": float(len(rows)), "pcie_width_min": min(widths, default=0.0),
               "pcie_gen_min": min(gens, default=0.0), "memory_gb_min": min(mems, default=0.0)}
    return not problems, figures, "; ".join(problems)[:180] or None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except OSError:  # a down link's speed: EINVAL; a missing attribute
        return None


def _net_links(sysfs: Path) -> dict[str, tuple[str, float | None, bool]]:
    """Physical Ethernet interfaces: name -> (MAC, speed in Gb/s or None, up)."""
    links = {}
    base = sysfs / "class" / "net"
    for d in sorted(base.iterdir()) if base.is_dir() else []:
        if not (d / "device").exists() or _read(d / "type") != "1":  # 1: ARPHRD_ETHER
            continue
        speed = _read(d / "speed")
        gbps = int(speed) / 1000 if speed and re.fullmatch(r"[0-9]{1,9}", speed) else None
        links[d.name] = ((_read(d / "address") or "").lower(), gbps,
                         _read(d / "operstate") == "up")
    return links


def _ib_ports(sysfs: Path) -> dict[str, tuple[str, float | None, bool]]:
    """InfiniBand ports: "<hca>/<port>" -> (the HCA's GUID as 0x..., rate Gb/s, ACTIVE)."""
    ports = {}
    base = sysfs / "class" / "infiniband"
    for hca in sorted(base.iterdir()) if base.is_dir() else []:
        guid = "0x" + (_read(hca / "node_guid") or "").replace(":", "").lower()
        for port in sorted((hca / "ports").iterdir()) if (hca / "ports").is_dir() else []:
            rate = re.match(r"([0-9]+(?:\.[0-9]+)?) Gb/sec", _read(port / "rate") or "")
            state = _read(port / "state") or ""
            ports[f"{hca.name}/{port.name}"] = (guid, float(rate.group(1)) if rate else None,
                                                state.endswith("ACTIVE"))
    return ports


def link_speed(args: argparse.Namespace) -> Outcome:
    """Each planned NIC (``--link NIC,KIND,GBPS,ID``; ID the inventory's MAC or HCA GUID,
    or ``-``) against the kernel's view: found by ID, else by a kernel interface of the
    NIC's name, else the fastest of the kind's ports no other NIC took. Slower than
    planned, or down, fails, naming the NIC, the port and both figures."""
    sysfs = Path(args.sysfs)
    found = {"ethernet": _net_links(sysfs), "infiniband": _ib_ports(sysfs)}
    taken: set[str] = set()
    planned = [ln.split(",") for ln in args.link]
    problems: list[str] = []
    figures: dict[str, float] = {"links": float(len(planned))}
    # by ID, then by name, then the free ports: a fallback never takes a port another owns
    order = sorted(planned, key=lambda x: (x[3] == "-", x[0] not in
                                           {p.split("/")[0] for p in found.get(x[1], {})}))
    for nic, kind, want, ident in order:
        ports = found.get(kind, {})
        how = ""
        if ident != "-":
            mine = [p for p, (i, _, _) in ports.items() if i == ident.lower()]
            if not mine:
                problems.append(f"{nic}: no {kind} port with {ident}")
                continue
        else:
            mine = [p for p in ports if p.split("/")[0] == nic and p not in taken]
            if not mine:
                how = " (no MAC or GUID planned: the fastest free port)"
                mine = [p for p in ports if p not in taken]
            if not mine:
                problems.append(f"{nic}: no {kind} port left")
                continue
        best = max(mine, key=lambda p: (ports[p][2], ports[p][1] or 0.0))
        taken.add(best)
        _, gbps, up = ports[best]
        figures[f"{re.sub('[^a-z0-9]', '_', nic)}_gbps"[:40]] = gbps or 0.0
        if not up:
            problems.append(f"{nic} ({best}) down, planned {want} Gb/s{how}")
        elif gbps is None or gbps < float(want):
            problems.append(f"{nic} ({best}) at {gbps or 0:g} Gb/s, planned {want} Gb/s{how}")
    speeds = [v for k, v in figures.items() if k.endswith("_gbps")]
    figures["link_gbps_min"] = min(speeds, default=0.0)
    return not problems, figures, "; ".join(problems)[:180] or None


def _built(args: argparse.Namespace, name: str) -> tuple[str, str | None] | str:
    """The program of a check whose tool nvidia.burnin builds: ``--tool`` (the built
    path, run in its own directory: gpu_burn reads compare.ptx from there), else ``name``
    on PATH; as (program, working directory), or why the check is not run, naming the
    inventory's pin the tool is built from (``--pinned-by``)."""
    if args.tool is None:
        return (name, None) if shutil.which(name) else f"not run: {name} not installed"
    tool = Path(args.tool)
    if tool.is_file() and os.access(tool, os.X_OK):
        return str(tool), str(tool.parent)
    shown = _tail(str(tool))
    shown = shown if len(shown) <= 64 else "..." + shown[-61:]
    by = f": nvidia.burnin builds it from {_tail(args.pinned_by)[:48]}" if args.pinned_by else ""
    return f"not run: {name} not installed (no {shown}{by})"


def gpu_stress(args: argparse.Namespace) -> Outcome:
    """gpu_burn (github.com/wilicc/gpu-burn, built on the node: no distribution packages
    it): GEMMs on every GPU for ``--seconds``, each result compared with the first; a GPU
    with a wrong result is FAULTY. Figure: the slowest GPU's last Gflop/s, as TFLOPS."""
    found = _built(args, "gpu_burn")
    if isinstance(found, str):
        return False, {}, found
    prog, cwd = found
    r = _run([prog, "-tc", str(args.seconds)], args.seconds + 300, cwd)
    text = r.stdout + r.stderr
    verdicts = re.findall(r"GPU (\d+): (OK|FAULTY)", text)
    last = text.strip().splitlines()
    rates = []
    for ln in reversed(last):
        if "Gflop/s" in ln:
            rates = [float(x) for x in re.findall(r"\(([0-9.]+) Gflop/s\)", ln)]
            break
    figures = {"gpus": float(len(verdicts))}
    if rates:
        figures["gpu_tflops"] = min(rates) / 1000
    bad = [f"GPU {i} FAULTY" for i, v in verdicts if v != "OK"]
    if not verdicts:
        bad.append(f"gpu_burn gave no verdict (exit {r.returncode}): {_tail(text)}")
    elif len(verdicts) != args.expect_gpus and args.expect_gpus:
        bad.append(f"{len(verdicts)} GPUs tested of {args.expect_gpus}")
    return not bad and r.returncode == 0, figures, "; ".join(bad)[:180] or None


def nccl_allreduce(args: argparse.Namespace) -> Outcome:
    """all_reduce_perf of nccl-tests (github.com/NVIDIA/nccl-tests, built on the node
    against the archive's libnccl-dev and CUDA: no distribution packages nccl-tests) over
    the node's GPUs, 8 MiB to 1 GiB, with its own data check (-c 1). Figure: its average
    bus bandwidth."""
    found = _built(args, "all_reduce_perf")
    if isinstance(found, str):
        return False, {}, found
    prog, cwd = found
    gpus = max(args.expect_gpus, 1)
    r = _run([prog, "-b", "8M", "-e", "1G", "-f", "2", "-g", str(gpus),
              "-c", "1"], max(args.seconds, 60) + 600, cwd)
    text = r.stdout + r.stderr
    bw = re.search(r"Avg bus bandwidth\s*:\s*([0-9.]+)", text)
    oob = re.search(r"Out of bounds values\s*:\s*([0-9]+)", text)
    figures = {"busbw_gb_s": float(bw.group(1))} if bw else {}
    bad = []
    if bw is None or r.returncode != 0:
        bad.append(f"all_reduce_perf (exit {r.returncode}): {_tail(text)}")
    if oob is not None and int(oob.group(1)) > 0:
        bad.append(f"{oob.group(1)} wrong values")
    return not bad, figures, "; ".join(bad)[:180] or None


SLACK_S = 60  # beyond a pair's seconds: perftest's start and its exchange
IB_WRITE_BW_PORT = 18515  # perftest's own default TCP port for its out-of-band exchange
CONNECT_RETRY_S = 2.0
# the report's header and data lines (perftest 4.5: " %-7lu    %-10lu       %-7.2lf
# %-7.2lf\t\t   %-7.6lf"): bytes, iterations, BW peak, BW average, MsgRate
BW_HEADER = re.compile(r"#bytes\s+#iterations\s+BW peak\[([A-Za-z/]{1,8})\]\s+"
                       r"BW average\[([A-Za-z/]{1,8})\]")
BW_LINE = re.compile(r"\s*([0-9]{1,12})\s+([0-9]{1,15})\s+([0-9]{1,7}\.[0-9]{1,6})\s+"
                     r"([0-9]{1,7}\.[0-9]{1,6})\s+([0-9]{1,7}\.[0-9]{1,6})\s*")


def _ib_device(sysfs: Path, guid: str) -> tuple[str, str] | None:
    """The HCA and port to test: the port of the node's planned GUID (``-``: none
    planned, the first ACTIVE port), as (device, port number)."""
    ports = _ib_ports(sysfs)
    if guid != "-":
        mine = [p for p, (g, _, _) in ports.items() if g == guid.lower()]
    else:
        mine = [p for p, (_, _, up) in ports.items() if up]
    if not mine:
        return None
    dev, port = max(mine, key=lambda p: ports[p][2]).split("/")
    return dev, port


def parse_ib_write_bw(text: str) -> float | None:
    """BW average in Gb/s of an ib_write_bw report (``--report_gbits``; a report in any
    other unit, or none, is None): the last data line under the header."""
    header = None
    value = None
    for line in text.splitlines():
        h = BW_HEADER.search(line)
        if h:
            header = h.group(2)
            continue
        m = BW_LINE.fullmatch(line)
        if header is not None and m:
            value = float(m.group(4)) if header == "Gb/sec" else None
    return value


def ib_write_bw(args: argparse.Namespace) -> Outcome:
    """One side of perftest's ib_write_bw between two nodes. The server (on the partner)
    waits for one client at most ``--connect-seconds``; the client (on the node under
    test) retries its connection for as long, runs ``--seconds`` and is judged: BW
    average under ``--expect-gbps`` less ``--tolerance-percent`` fails."""
    if shutil.which("ib_write_bw") is None:
        return False, {}, "not run: ib_write_bw not installed"
    found = _ib_device(Path(args.sysfs), args.ib_guid)
    if found is None:
        return False, {}, (f"no InfiniBand port with {args.ib_guid}" if args.ib_guid != "-"
                           else "no ACTIVE InfiniBand port")
    dev, port = found
    argv = ["ib_write_bw", "-d", dev, "-i", port, "-F", "--report_gbits",
            "-D", str(max(args.seconds, 1)), "-p", str(args.tcp_port)]
    bound = args.seconds + SLACK_S
    if args.role == "server":
        r = _run(argv, args.connect_seconds + bound)
        bw = parse_ib_write_bw(r.stdout)
        return (r.returncode == 0, {"bw_gb_s": bw} if bw is not None else {},
                None if r.returncode == 0 else _tail(r.stderr + r.stdout))
    try:
        ipaddress.ip_address(args.peer or "")
    except ValueError:
        return False, {}, f"no partner address ({_tail(args.peer or 'none')[:40]})"
    deadline = time.monotonic() + args.connect_seconds
    while True:
        r = _run([*argv, args.peer], bound)
        text = r.stdout + r.stderr
        if r.returncode == 0 or "Couldn't connect to" not in text \
                or time.monotonic() + CONNECT_RETRY_S > deadline:
            break
        time.sleep(CONNECT_RETRY_S)  # the partner's server not listening yet
    bw = parse_ib_write_bw(r.stdout)
    if r.returncode != 0 or bw is None:
        return False, {}, f"ib_write_bw (exit {r.returncode}) to {args.peer}: {_tail(text)}"
    floor = args.expect_gbps * (100 - args.tolerance_percent) / 100
    if bw < floor:
        return False, {"bw_gb_s": bw}, (f"{dev}/{port} to {args.peer}: {bw:g} Gb/s, planned "
                                        f"{args.expect_gbps:g} Gb/s less "
                                        f"{args.tolerance_percent}%")
    return True, {"bw_gb_s": bw}, None


CHECKS = {"cpu-stress": cpu_stress, "memtester": memtester, "disk-verify": disk_verify,
          "smart": smart, "link-speed": link_speed, "gpu-present": gpu_present,
          "gpu-stress": gpu_stress, "nccl-allreduce": nccl_allreduce,
          "ib-write-bw": ib_write_bw}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("check", choices=sorted(CHECKS))
    p.add_argument("--seconds", type=int, default=60)
    p.add_argument("--mb", type=int, default=256, help="memtester's and fio's size")
    p.add_argument("--target", default=str(Path(tempfile.gettempdir()) / "fleet-burnin.fio"))
    p.add_argument("--expect-gpus", type=int, default=0)
    p.add_argument("--expect-memory-gb", type=int, default=0, help="of one GPU (0: any)")
    p.add_argument("--link", action="append", default=[], metavar="NIC,KIND,GBPS,ID",
                   help="a planned NIC (link-speed); ID its MAC or HCA GUID, or -")
    p.add_argument("--sysfs", default="/sys", help="where sysfs is (a test's fake tree)")
    p.add_argument("--role", choices=["server", "client"], default="client",
                   help="ib-write-bw: the partner's side (server) or the node's (client)")
    p.add_argument("--peer", help="ib-write-bw client: the partner's address")
    p.add_argument("--ib-guid", default="-", help="ib-write-bw: the HCA's GUID (-: any)")
    p.add_argument("--tcp-port", type=int, default=IB_WRITE_BW_PORT)
    p.add_argument("--connect-seconds", type=int, default=60,
                   help="ib-write-bw: how long the two sides wait for each other")
    p.add_argument("--expect-gbps", type=float, default=0.0, help="ib-write-bw: the rate")
    p.add_argument("--tolerance-percent", type=int, default=10)
    p.add_argument("--tool", help="gpu-stress, nccl-allreduce: the built program (default: "
                   "its name on PATH)")
    p.add_argument("--pinned-by", help="the inventory field --tool is built from, named "
                   "when it is missing")
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
