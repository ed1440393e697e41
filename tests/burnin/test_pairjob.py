"""nccl-pair, the two-node NCCL all-reduce as one Slurm job of the burn-in partition
(fleet.burnin.pairjob): the job's script and sbatch line from strictly typed values; the
per-rank HCA snippet on a FAKE sysfs tree; nccl-tests' report read as hostile input
(a STAND-IN report in the format of nccl-tests' all_reduce_perf: no GPU here); the
master's run through a FAKE Slurm command and a FAKE salt CLI, the pair retried once with
the next partner; no partner, a null pin, a profile with no GPU: failed, never a pass."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from discover.sites import ROOT
from fleet.burnin import pairjob, pairs
from fleet.burnin.pairjob import JobError, PairJob
from fleet.inventory.load import load_inventory
from fleet.inventory.model import Inventory
from fleet.inventory.schema.hardware import BurninTest, Profile
from fleet.master.runner import Result
from fleet.master.salt import Salt

SITE = ROOT / "inventory.yaml"
PROGRAM = "/opt/fleet/burnin/nccl-tests/current/build/all_reduce_perf"
G1, G2 = "0x1070fd0300106355", "0x1070fd030052d240"


def _job(**kw: object) -> PairJob:
    args: dict[str, object] = {"node": "tbox-001", "partner": "tbox-002", "gpus": 8,
                               "guids": (G1, G2), "program": PROGRAM, "seconds": 600}
    return PairJob(**(args | kw))  # type: ignore[arg-type]


# --- the job ------------------------------------------------------------------------------

def test_the_job_is_one_sbatch_of_both_nodes_on_the_burnin_partition() -> None:
    argv = pairjob.sbatch_options(_job())
    assert argv[:-1] == [
        "--partition=fleet-burnin", "--nodes=2",
        "--nodelist=tbox-001,tbox-002", "--exclusive", "--gres=gpu:8", "--time=15",
        "--job-name=fleet-burnin-nccl-pair",
        "--output=/var/tmp/fleet-burnin-nccl-pair-%j.out"]
    assert _job(seconds=0).minutes == 6  # at least a minute of work, and the slack
    words = shlex.split(argv[-1].removeprefix("--wrap="))
    tail = ["fleet-nccl-pair", "/sys"]
    perf = [PROGRAM, "-b", "8M", "-e", "1G", "-f", "2", "-g", "1", "-c", "1"]
    assert words == ["exec", "mpirun", "--allow-run-as-root", "--bind-to", "none",
                     "-np", "8", "-H", "tbox-001:8", "sh", "-c", pairjob.HCA_SH, *tail, G1,
                     *perf, ":",
                     "-np", "8", "-H", "tbox-002:8", "sh", "-c", pairjob.HCA_SH, *tail, G2,
                     *perf]


@pytest.mark.parametrize("kw", [
    {"node": "tbox-001;reboot"}, {"partner": "tbox-002 -w x"}, {"partner": "TBOX-2"},
    {"partner": "tbox-001"}, {"guids": (G1, "0x1070fd0300106355'")}, {"guids": ("$(id)", G2)},
    {"program": "/opt/x y"}, {"program": "/opt/../bin/sh"}, {"program": "rel/path"},
    {"gpus": 0}, {"gpus": 65}, {"seconds": -1},
])
def test_a_value_not_of_its_shape_makes_no_job(kw: dict[str, object]) -> None:
    with pytest.raises(JobError):
        _job(**kw)


def _sysfs(root: Path, active: dict[str, bool]) -> Path:
    """A FAKE /sys: tbox-001's two HCAs (mlx5_0 of another GUID, mlx5_1 of G1)."""
    for name, guid in (("mlx5_0", "0x0c42a10300934014"), ("mlx5_1", G1)):
        d = root / "class" / "infiniband" / name
        (d / "ports" / "1").mkdir(parents=True)
        g = guid[2:]
        (d / "node_guid").write_text(":".join(g[i:i + 4] for i in range(0, 16, 4)) + "\n")
        (d / "ports" / "1" / "state").write_text(
            "4: ACTIVE\n" if active[name] else "1: DOWN\n")
    return root


def _rank(sysfs: Path, guid: str) -> subprocess.CompletedProcess[str]:
    """One rank's start as mpirun runs it, the program here `env` (prints NCCL_IB_HCA)."""
    return subprocess.run(["sh", "-c", pairjob.HCA_SH, "fleet-nccl-pair", str(sysfs), guid,
                           "env"], capture_output=True, text=True, timeout=30, check=False,
                          env={"PATH": os.environ["PATH"]})


def test_each_rank_gets_the_hca_of_its_nodes_planned_guid(tmp_path: Path) -> None:
    sysfs = _sysfs(tmp_path / "sys", {"mlx5_0": True, "mlx5_1": True})
    r = _rank(sysfs, G1)
    assert r.returncode == 0 and "NCCL_IB_HCA==mlx5_1" in r.stdout.splitlines()
    r = _rank(sysfs, "-")  # none planned: the first HCA with an ACTIVE port
    assert "NCCL_IB_HCA==mlx5_0" in r.stdout.splitlines()
    down = _sysfs(tmp_path / "sys2", {"mlx5_0": False, "mlx5_1": True})
    assert "NCCL_IB_HCA==mlx5_1" in _rank(down, "-").stdout.splitlines()
    r = _rank(sysfs, "0x00000000000000ff")
    assert r.returncode == 3 and "no InfiniBand HCA 0x00000000000000ff on" in r.stderr
    r = _rank(tmp_path / "nothing", G1)
    assert r.returncode == 3 and r.stdout == ""


# --- the report ---------------------------------------------------------------------------

def report(hosts: Sequence[str] = ("tbox-001", "tbox-002"), gpus: int = 8, busbw: float = 23.9,
           wrong: int = 0, oob: str = "0 OK", avg: str = "19.872") -> str:
    """A STAND-IN report in all_reduce_perf's own format (nccl-tests 2.13, MPI=1, -g 1)."""
    head = ["# nThread 1 nGpus 1 minBytes 8388608 maxBytes 1073741824 step: 2(factor) "
            "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0", "#",
            "# Using devices"]
    rank = 0
    for host in hosts:
        for dev in range(gpus):
            head.append(f"#  Rank {rank:2d} Group  0 Pid {4000 + rank:6d} on {host:>10} "
                        f"device {dev:2d} [0x{dev:02x}] NVIDIA GeForce RTX 4090")
            rank += 1
    head += ["#", "#                                                              "
             "out-of-place                       in-place          ",
             "#       size         count      type   redop    root     time   algbw   busbw "
             "#wrong     time   algbw   busbw #wrong",
             "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
             "            (us)  (GB/s)  (GB/s)       "]
    size = 8388608
    while size <= 1073741824:
        bw = busbw if size == 1073741824 else 12.5
        head.append(f"{size:12d} {size // 4:13d}     float     sum      -1  {1234.5:7.1f}  "
                    f"{bw / 1.875:6.2f}  {bw:6.2f}  {wrong if size == 8388608 else 0:5d}  "
                    f"{1230.1:7.1f}  {bw / 1.875:6.2f}  {bw:6.2f}      0")
        size *= 2
    return "\n".join([*head, f"# Out of bounds values : {oob}",
                      f"# Avg bus bandwidth    : {avg} ", "#", ""])


HOSTS = ("tbox-001", "tbox-002")


def test_the_report_gives_both_figures() -> None:
    rep = pairjob.parse_report(report(), HOSTS, 16)
    assert rep.problems == [] and rep.figures == {"busbw_gb_s": 19.872, "busbw_peak_gb_s": 23.9}
    fqdn = report(hosts=("tbox-001.site.example", "tbox-002.site.example"))
    assert pairjob.parse_report(fqdn, HOSTS, 16).problems == []


@pytest.mark.parametrize(("text", "says"), [
    (report(wrong=3), "3 wrong values"),
    (report(oob="12 FAILED"), "12 out-of-bounds values"),
    (report(oob="0 FAILED"), "0 out-of-bounds values"),
    (report().replace("# Out of bounds values : 0 OK\n", ""), "no out-of-bounds count"),
    (report(gpus=4), "8 ranks on tbox-001,tbox-002, planned 16 on tbox-001,tbox-002"),
    (report(hosts=("tbox-001", "tbox-001")), "16 ranks on tbox-001, planned 16"),
    (report(hosts=("tbox-001", "evil")), "16 ranks on evil,tbox-001, planned 16"),
    (report(avg="nan"), "no all_reduce_perf report"),
    (report(avg="1" * 30), "no all_reduce_perf report"),
    ("", "no all_reduce_perf report"),
    ("\x1b]0;pwned\x07\n# Avg bus bandwidth    : 30.0\n", "no all_reduce_perf report"),
])
def test_a_report_that_is_wrong_or_not_one_fails(text: str, says: str) -> None:
    rep = pairjob.parse_report(text, HOSTS, 16)
    assert any(says in p for p in rep.problems), rep.problems


def test_a_data_line_of_unbounded_numbers_is_no_data() -> None:
    big = report().replace("  23.90      0\n", "  23.90      " + "9" * 40 + "\n", 1)
    rep = pairjob.parse_report(big, HOSTS, 16)
    assert rep.figures["busbw_peak_gb_s"] == 12.5  # the 1 GiB line was not read


def test_the_peak_is_judged_against_the_rails_rate() -> None:
    """200 Gb/s is 25 GB/s; less 10%: 22.5 GB/s."""
    job = _job()
    assert pairjob.judge(job, 0, report(busbw=23.9), 200, 10).passed
    slow = pairjob.judge(job, 0, report(busbw=20.1), 200, 10)
    assert not slow.passed and slow.figures["busbw_peak_gb_s"] == 20.1
    assert slow.reason == "busbw 20.1 GB/s, the rail's 200 Gb/s (25 GB/s) less 10%"
    failed = pairjob.judge(job, 1, report() + "mpirun: a rank exited 1\n", 200, 10)
    assert not failed.passed and failed.reason == "job exit 1: mpirun: a rank exited 1"


# --- the master's run ---------------------------------------------------------------------

class _Slurm:
    """A FAKE Slurm command: sbatch answers with job ids in turn, scontrol with each job's
    BatchHost; every argv kept. With ``salt`` answers too, as the salt CLI (cmd.run_all)."""

    def __init__(self, exits: list[int], batch: list[str], outputs: dict[str, list[str]]
                 ) -> None:
        self.exits, self.batch, self.outputs = exits, batch, outputs
        self.argv: list[list[str]] = []
        self.job = 100

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        self.argv.append(list(argv))
        if argv[0] == "sbatch":
            self.job += 1
            return Result(tuple(argv), self.exits.pop(0), f"{self.job}\n", "")
        if argv[0] == "scontrol":
            host = self.batch.pop(0)
            return Result(tuple(argv), 0, f"JobId={self.job} JobName=fleet-burnin-nccl-pair "
                          f"UserId=root(0) JobState=COMPLETED Reason=None Dependency=(null) "
                          f"NodeList=tbox-[001-002] BatchHost={host} NumNodes=2\n", "")
        if argv[0] == "scancel":
            return Result(tuple(argv), 1, "", "scancel: error: Job has already finished")
        node = argv[argv.index("-L") + 1]
        cmd = json.loads(argv[argv.index("cmd.run_all") + 1])
        if cmd[0] == "rm":
            return Result(tuple(argv), 0, json.dumps({node: {"retcode": 0, "stdout": ""}}), "")
        out = self.outputs[node].pop(0)
        return Result(tuple(argv), 0, json.dumps({node: {"retcode": 0, "stdout": out,
                                                          "stderr": ""}}), "")


def _site(**states: str) -> Inventory:
    inv = load_inventory(SITE)
    for h, state in states.items():
        inv.nodes[h].state = state
    return inv


def _profile(inv: Inventory) -> Profile:
    return inv.raw.profiles["tinybox-pro"].model_copy(
        update={"burnin": {"nccl-pair": BurninTest(seconds=60, tolerance_percent=10)}})


def _check(inv: Inventory, fake: _Slurm, said: list[str], unpinned: str | None = None,
           profile: Profile | None = None) -> object:
    found = pairs.partners(inv, "tbox-001", check="nccl-pair")
    return pairjob.pair_job_check(fake, Salt(fake), profile or _profile(inv),
                                  inv.nodes["tbox-001"], found,
                                  pairs.why_none(inv, "tbox-001", check="nccl-pair"),
                                  unpinned, said.append)


def test_the_pair_runs_as_one_job_and_its_output_is_read_from_its_batch_host() -> None:
    inv = _site(**{"tbox-001": "burn-in", "tbox-002": "burn-in"})
    fake = _Slurm([0], ["tbox-002"], {"tbox-002": [report()]})
    said: list[str] = []
    r = _check(inv, fake, said)
    assert r.passed and r.figures == {"busbw_gb_s": 19.872,  # type: ignore[attr-defined]
                                      "busbw_peak_gb_s": 23.9}
    sbatch = fake.argv[0]
    assert sbatch[0] == "sbatch" and "--nodelist=tbox-001,tbox-002" in sbatch
    assert f"{inv.nodes['tbox-002'].ib_guid} {PROGRAM}" in sbatch[-1]
    assert fake.argv[1] == ["scontrol", "show", "job", "-o", "101"]
    assert fake.argv[2] == ["scancel", "101"]
    reads = [json.loads(a[a.index("cmd.run_all") + 1]) for a in fake.argv[3:]]
    assert reads == [["head", "-c", "65536", "/var/tmp/fleet-burnin-nccl-pair-101.out"],
                     ["rm", "-f", "/var/tmp/fleet-burnin-nccl-pair-101.out"]]
    assert said == ["tbox-001: nccl-pair with tbox-002 (Slurm job, fleet-burnin) ..."]


def test_a_failed_pair_is_tried_again_with_the_next_partner() -> None:
    inv = _site(**{"tbox-001": "burn-in", "tbox-002": "burn-in", "tbox-003": "burn-in"})
    fake = _Slurm([1, 0], ["tbox-001", "tbox-001"],
                  {"tbox-001": [report(wrong=2), report(hosts=("tbox-001", "tbox-003"))]})
    said: list[str] = []
    r = _check(inv, fake, said)
    assert r.passed  # type: ignore[attr-defined]
    assert [a for a in fake.argv if a[0] == "sbatch"][1][5] == "--nodelist=tbox-001,tbox-003"
    fake = _Slurm([1, 1], ["tbox-001", "tbox-003"],
                  {"tbox-001": [report(wrong=2)], "tbox-003": ["\x1b[2Jgarbage"]})
    r = _check(inv, fake, said)
    assert not r.passed and r.reason == (  # type: ignore[attr-defined]
        "with tbox-003: no all_reduce_perf report; 0 ranks on no host, planned 16 on "
        "tbox-001,tbox-003; job exit 1: [2Jgarbage")


def test_a_batch_host_outside_the_pair_or_no_job_fails_the_pair() -> None:
    inv = _site(**{"tbox-001": "burn-in", "tbox-002": "burn-in"})
    fake = _Slurm([0], ["head-01"], {})
    r = _check(inv, fake, [])
    assert r.reason == ("with tbox-002: job 101: its batch host head-01 "  # type: ignore[attr-defined]
                        "is neither tbox-001 nor tbox-002")

    class _Refused(_Slurm):
        def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
            self.argv.append(list(argv))
            return Result(tuple(argv), 1, "", "sbatch: error: Invalid partition name specified")

    refused = _Refused([], [], {})
    r = _check(inv, refused, [])
    assert r.reason == ("with tbox-002: sbatch took no job (exit 1): sbatch: error: "  # type: ignore[attr-defined]
                        "Invalid partition name specified")
    # no id (sbatch killed at its timeout prints none): a job of ours on the pair goes too
    assert refused.argv[1] == ["scancel", "--partition=fleet-burnin",
                               "--jobname=fleet-burnin-nccl-pair",
                               "--nodelist=tbox-001,tbox-002"]


def test_no_partner_a_null_pin_no_gpu_fail_without_a_job() -> None:
    inv = _site(**{"tbox-001": "burn-in"})
    fake = _Slurm([], [], {})
    r = _check(inv, fake, [])
    assert not r.passed and r.reason == (  # type: ignore[attr-defined]
        "not run: no partner of profile tinybox-pro on rail ib1/ib-tbox1 (another node in "
        "burn-in on it)")
    r = _check(_site(**{"tbox-001": "burn-in", "tbox-002": "burn-in"}), fake, [],
               unpinned="not run: site.burnin_tools.nccl_tests is null")
    assert r.reason == "not run: site.burnin_tools.nccl_tests is null"  # type: ignore[attr-defined]
    inv = _site(**{"tbox-001": "burn-in", "tbox-002": "burn-in"})
    r = _check(inv, fake, [], profile=_profile(inv).model_copy(update={"gpu": None}))
    assert r.reason == "not run: the profile has no GPU"  # type: ignore[attr-defined]
    assert fake.argv == []


def test_only_nodes_in_burnin_pair_for_the_burnin_partitions_job() -> None:
    """Active partners (--partners-in-service) and nodes under test in another state are
    in no burn-in partition: no partner; a node in service re-tested (--drain) is refused,
    saying how to run it."""
    inv = _site(**{"tbox-001": "burn-in", "tbox-002": "active", "tbox-003": "maintenance",
                   "tbox-004": "burn-in"})
    got = pairs.partners(inv, "tbox-001", testing=["tbox-001", "tbox-003"], in_service=True,
                         check="nccl-pair")
    assert [p.host for p in got] == ["tbox-004"]
    assert pairs.partners(inv, "tbox-002", in_service=True, check="nccl-pair") == []
    assert pairs.why_none(inv, "tbox-002", in_service=True, check="nccl-pair") == (
        "not run: tbox-002 is active, not in the burn-in partition its two-node job runs on "
        "(set nodes.tbox-002.state: burn-in, render and apply)")
    assert [p.host for p in pairs.partners(inv, "tbox-002", in_service=True)] == [
        "tbox-004", "tbox-005"]  # ib-write-bw's rule is its own


def test_run_keeps_a_null_pin_as_a_failure_without_a_job(tmp_path: Path) -> None:
    """`fleet burnin run` of the site's tbox-039 in burn-in (the site's nccl_tests pin is
    null): nccl-pair kept failed, naming the pin, exit 5; no Slurm or Salt is reached."""
    from burnin.sitecase import run_without_salt

    code, kept = run_without_salt(tmp_path, "      nccl-pair: {seconds: 60}\n")
    assert code == 5
    assert not kept["nccl-pair"].passed and (kept["nccl-pair"].reason or "").startswith(
        "not run: site.burnin_tools.nccl_tests is null (no pinned nccl-tests source")
