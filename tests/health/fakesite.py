"""A fake Salt master and Slurm controller for ``fleet health`` on the small inventory:
answers ``salt -L NODES FUN ARGS --out=json`` (one object per minion) and ``scontrol``
as the real ones print them, from per-node state that a test breaks on purpose. Every
call is recorded.

``state.show_lowstate`` is not faked: it answers each node's lowstate as the real states
render it over the small inventory's rendered pillar (:func:`lowstates`, Salt's own
renderer, fleet/saltrender.py), so the units the health gate expects come from
salt/ as on a site."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from fleet.health import parse
from fleet.master.runner import Result

GPU_NODES = ["gpu-01", "gpu-02", "gpu-03", "gpu-04"]
STOR = ["stor-1", "stor-2"]
HEAD = "head-01"
ALL = [HEAD, *GPU_NODES, *STOR]

CHRONY_OK = """Reference ID    : 0A010001 (10.1.0.1)
Stratum         : 9
Ref time (UTC)  : Tue Dec 01 10:05:01 2026
System time     : 0.000012034 seconds fast of NTP time
Last offset     : +0.000004556 seconds
RMS offset      : 0.000004556 seconds
Frequency       : 1.231 ppm slow
Residual freq   : +0.010 ppm
Skew            : 0.321 ppm
Root delay      : 0.000123456 seconds
Root dispersion : 0.000234567 seconds
Update interval : 64.2 seconds
Leap status     : Normal
"""
CHRONY_UNSYNCED = """Reference ID    : 00000000 ()
Stratum         : 0
Ref time (UTC)  : Thu Jan 01 00:00:00 1970
System time     : 0.000000000 seconds fast of NTP time
Leap status     : Not synchronised
"""
UNMUNGE_OK = """STATUS:          Success (0)
ENCODE_HOST:     gpu-01 (10.1.0.100)
ENCODE_TIME:     2026-12-01 10:05:01 +0000 (1796119501)
DECODE_TIME:     2026-12-01 10:05:01 +0000 (1796119501)
TTL:             300
CIPHER:          aes128 (4)
MAC:             sha256 (5)
ZIP:             none (0)
UID:             root (0)
GID:             root (0)
LENGTH:          0
"""


def scontrol_line(node: str, state: str = "IDLE", gres: str = "gpu:rtx4090:8(S:0-1)",
                  reason: str = "") -> str:
    """One line of ``scontrol show node -o`` (Slurm 22.05's field order)."""
    line = (f"NodeName={node} Arch=x86_64 CoresPerSocket=32 CPUAlloc=0 CPUTot=128 "
            f"CPULoad=0.01 AvailableFeatures=(null) ActiveFeatures=(null) Gres={gres} "
            f"NodeAddr={node} NodeHostName={node} Version=22.05.8 OS=Linux 6.1.0-28-amd64 "
            f"#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1 (2024-11-22)  RealMemory=1000 "
            f"AllocMem=0 FreeMem=900 Sockets=2 Boards=1 State={state} ThreadsPerCore=1 "
            f"TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=tbox1 "
            f"BootTime=2026-12-01T09:00:00 SlurmdStartTime=2026-12-01T09:01:00 "
            f"LastBusyTime=2026-12-01T09:30:00 CfgTRES=cpu=128,mem=1000M,billing=128,"
            f"gres/gpu=8 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 "
            f"ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s")
    if reason:
        line += f" Reason={reason} [root@2026-12-01T09:40:00]"
    return line


SMALL = Path(__file__).resolve().parents[1] / "fixtures" / "small.yaml"


@cache
def lowstates(text: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """Each node's lowstate (Salt's state.show_lowstate) as salt/ renders it over the
    rendered pillar of ``text`` (default: the small inventory), Ubuntu 24.04 grains."""
    from fleet import saltrender
    from fleet.inventory.load import parse
    from fleet.render import render_all
    from support import harness

    inv = parse(text if text is not None else SMALL.read_text(), str(SMALL))
    saltrender.quiet_salt_logging()
    saltrender.enable_jinja_compile_cache()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for path, body in render_all(inv).items():
            if path.startswith("pillar/"):
                (root / path).parent.mkdir(parents=True, exist_ok=True)
                (root / path).write_text(body)
        harness.write_secrets_root(root / "secrets")
        renderer = saltrender.Renderer(harness.ROOT / "salt", root / "pillar",
                                       root / "secrets", root / "cache")
        out = {}
        for node in inv.nodes:
            res = renderer.render(node)
            assert not res.errors, res.errors
            out[node] = [{k: v for k, v in c.items() if k in ("__id__", "state", "fun",
                                                                   "name")}
                         for c in res.lowstate]
    return out


@dataclass
class Node:
    units: dict[str, str] = field(default_factory=dict)  # unit -> ActiveState (default active)
    gpus: int = 8
    persistence: bool = True
    xid: list[int] = field(default_factory=list)
    ib_active: int = 1
    chrony: str = CHRONY_OK
    munge: str = UNMUNGE_OK
    unmounted: list[str] = field(default_factory=list)
    http: int = 200
    hardware: object = True
    answers: bool = True
    lowstate: list[Any] | None = None  # None: as the states render it (lowstates())
    slurm_state: str = "IDLE"
    slurm_reason: str = ""


@dataclass
class FakeSite:
    nodes: dict[str, Node] = field(default_factory=lambda: {n: Node() for n in ALL})
    calls: list[tuple[str, ...]] = field(default_factory=list)
    master_down: bool = False

    def salt_calls(self) -> list[tuple[str, ...]]:
        return [c for c in self.calls if c[0] == "salt"]

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        a = tuple(argv)
        self.calls.append(a)
        if a[0] == "salt":
            return self._salt(a)
        if a[:3] == ("scontrol", "show", "node"):
            lines = [scontrol_line(n, s.slurm_state, reason=s.slurm_reason)
                     for n, s in self.nodes.items() if n.startswith("gpu-")]
            return Result(a, 0, "\n".join(lines) + "\n", "")
        if a[:2] == ("scontrol", "update"):
            fields = dict(w.split("=", 1) for w in a[2:])
            node = self.nodes[fields["NodeName"]]
            if fields["State"] == "DRAIN":
                node.slurm_state += "+DRAIN"
                node.slurm_reason = fields["Reason"]
            elif fields["State"] == "RESUME":
                node.slurm_state = node.slurm_state.split("+")[0]
                node.slurm_reason = ""
            return Result(a, 0, "", "")
        raise AssertionError(f"unexpected command {a}")

    def _salt(self, a: tuple[str, ...]) -> Result:
        assert a[1] == "-L" and a[-1] == "--out=json"
        if self.master_down:
            return Result(a, 2, "", "Salt request timed out. The master is not responding.")
        targets, fun = a[2].split(","), a[3]
        out: dict[str, Any] = {}
        for name in targets:
            n = self.nodes[name]
            if not n.answers:
                out[name] = "Minion did not return. [No response]"
                continue
            if fun == "pillar.get":
                out[name] = n.hardware
            elif fun == "state.show_lowstate":
                out[name] = n.lowstate if n.lowstate is not None else lowstates()[name]
            elif fun == "mount.active":
                out[name] = {f"/srv/mkv/sv{i:02X}": {"fstype": "xfs"} for i in range(11)
                             if f"/srv/mkv/sv{i:02X}" not in n.unmounted} | {
                                 "/": {"fstype": "ext4"}}
            elif fun == "cmd.run_all":
                out[name] = {"retcode": 0, "stderr": "", "pid": 1,
                             "stdout": self._shell(name, n, a[4])}
            else:
                raise AssertionError(f"unexpected salt function {fun}")
        # as the salt CLI prints --out=json: one object per minion, as each returns
        return Result(a, 0, "".join(json.dumps({n: v}, indent=4) + "\n"
                                    for n, v in out.items()), "")

    def _shell(self, name: str, n: Node, cmd: str) -> str:
        if cmd == parse.GPU_QUERY_CMD:
            state = "Enabled" if n.persistence else "Disabled"
            return "\n".join(f"{i}, 00000000:{i + 1:02X}:00.0, {state}" for i in range(n.gpus))
        if cmd == parse.XID_CMD:
            return "\n".join(f"NVRM: Xid (PCI:0000:01:00): {x}, pid=1234, name=python3, "
                             "Ch 00000008" for x in n.xid)
        if cmd == parse.IB_PORTS_CMD:
            return "\n".join(f"mlx5_{i}/ports/1|InfiniBand|4: ACTIVE|5: LinkUp"
                             for i in range(n.ib_active))
        if cmd == parse.MUNGE_CMD:
            return n.munge
        if cmd == parse.CHRONY_CMD:
            return n.chrony
        if cmd.startswith("systemctl show"):
            units = cmd.split(" -- ", 1)[1].split()
            blocks = []
            for u in units:
                state = n.units.get(u, "active")
                sub = {"active": "running", "inactive": "dead", "failed": "failed"}[state]
                blocks.append(f"Id={u}\nLoadState=loaded\nActiveState={state}\nSubState={sub}")
            return "\n\n".join(blocks)
        if "curl" in cmd:
            lines = []
            for part in cmd.split("; "):
                if part.startswith("echo "):
                    key = part.split()[1]
                    host = key.split(":", 1)[1]
                    code = self.nodes[host].http if key.startswith("volume:") else \
                        self.nodes[HEAD].http
                    lines.append(f"{key} {code}")
            return "\n".join(lines)
        raise AssertionError(f"unexpected command for {name}: {cmd}")
