"""nccl-pair: nccl-tests' ``all_reduce_perf`` over two nodes, the node under test and its
partner (fleet.burnin.pairs), as ONE Slurm job of the burn-in partition
(fleet.inventory.lifecycle.BURNIN_PARTITION, root only) that the master submits through
its Slurm command, as every scontrol of fleet runs.

The job is ``sbatch --wait`` of both nodes, whole (``--exclusive``, every GPU as GRES),
bounded by a time limit from the check's seconds; its script is OpenMPI's ``mpirun``,
which inside an allocation starts its daemons through Slurm's own srun (no ssh between
the nodes): ``GPUS`` ranks on each node, one GPU each, every rank with ``NCCL_IB_HCA``
the HCA of its node's planned GUID (the rail's; found in that node's sysfs by a fixed
snippet, :data:`HCA_SH`). Every value in the script is checked against its strict shape
and quoted for the shell; the script is one argument of sbatch (``--wrap``).

Its output, read back from the job's batch host through Salt, is the node's word:
hostile input. Only nccl-tests' own report lines count (:func:`parse_report`: numbers of
bounded digits); wrong values, out-of-bounds values, a rank count or a host other than
the pair's, or no report, fail. Figures: ``busbw_gb_s`` (the report's average bus
bandwidth, judged against the profile's baseline like nccl-allreduce's) and
``busbw_peak_gb_s`` (the largest message's), which must reach the rail's rate (the
profile's first InfiniBand NIC, in GB/s) less the check's tolerance.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from fleet.burnin import results
from fleet.burnin.pairs import Partner, rail_gbps
from fleet.burnin.results import Result
from fleet.inventory.burnintools import TOOLS
from fleet.inventory.lifecycle import BURNIN_PARTITION
from fleet.inventory.model import Node
from fleet.inventory.schema.hardware import Profile
from fleet.master import slurm
from fleet.master.runner import Runner
from fleet.master.salt import MasterError, Salt
from fleet.master.text import clean, last_line

CHECK = "nccl-pair"
JOB_NAME = "fleet-burnin-nccl-pair"
OUTPUT = "/var/tmp/fleet-burnin-nccl-pair-%j.out"  # on the job's batch host; %j: its id
SYSFS = "/sys"
READ_MAX = 64 * 1024  # bytes of the job's output read back
SLACK_S = 300  # beyond the check's seconds: the daemons' start, NCCL's setup
QUEUE_S = 300  # beyond the time limit: how long sbatch --wait may wait for the nodes
MAX_REASON = 180
# the sizes of the node's own nccl-allreduce; each rank one GPU, data checked (-c 1)
PERF_ARGS = ("-b", "8M", "-e", "1G", "-f", "2", "-g", "1", "-c", "1")

HOST = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
GUID = re.compile(r"^(?:0x[0-9a-f]{16}|-)$")
PROGRAM = re.compile(r"^/[A-Za-z0-9._/-]{1,200}$")

# One rank's start: $1 the sysfs root, $2 its node's planned HCA GUID (-: none planned,
# the first HCA with an ACTIVE port), then the program and its arguments. The HCA becomes
# NCCL_IB_HCA ("=": exactly that device); none found ends the rank, and so the job.
HCA_SH = r"""s=$1 g=$2; shift 2
for d in "$s"/class/infiniband/*; do
  v=0x$(tr -d : 2>/dev/null <"$d/node_guid") || continue
  if [ "$v" = "$g" ] || { [ "$g" = - ] && cat "$d"/ports/*/state 2>/dev/null \
      | grep -q ACTIVE; }; then
    NCCL_IB_HCA="=${d##*/}"; export NCCL_IB_HCA; exec "$@"
  fi
done
echo "fleet nccl-pair: no InfiniBand HCA $g on $(hostname)" >&2
exit 3"""


class JobError(ValueError):
    """A value that cannot go into the job, or a job that gave no output: one line."""


@dataclass(frozen=True)
class PairJob:
    node: str
    partner: str
    gpus: int  # per node
    guids: tuple[str, str]  # the node's and the partner's planned HCA GUID, "-": none
    program: str
    seconds: int
    sysfs: str = SYSFS

    def __post_init__(self) -> None:
        for host in (self.node, self.partner):
            if not HOST.match(host):
                raise JobError(f"{host[:40]!r} is no hostname for a Slurm job")
        if self.node == self.partner:
            raise JobError(f"{self.node} cannot be its own partner")
        for guid in self.guids:
            if not GUID.match(guid):
                raise JobError(f"{guid[:40]!r} is no HCA GUID")
        for path in (self.program, self.sysfs):
            if not PROGRAM.match(path) or "/../" in path + "/":
                raise JobError(f"{path[:60]!r} is no plain absolute path")
        if not 1 <= self.gpus <= 64 or not 0 <= self.seconds <= 7 * 86400:
            raise JobError(f"{self.gpus} GPUs, {self.seconds} s: out of bounds")

    @property
    def minutes(self) -> int:
        """The job's time limit, from the check's seconds."""
        return math.ceil((max(self.seconds, 60) + SLACK_S) / 60)


def script(job: PairJob) -> str:
    """The job's shell script (sbatch ``--wrap``): ``mpirun`` of two app contexts, one per
    node, each starting its ranks through :data:`HCA_SH`."""
    def context(host: str, guid: str) -> list[str]:
        return ["-np", str(job.gpus), "-H", f"{host}:{job.gpus}", "sh", "-c", HCA_SH,
                "fleet-nccl-pair", job.sysfs, guid, job.program, *PERF_ARGS]

    argv = ["mpirun", "--allow-run-as-root", "--bind-to", "none",
            *context(job.node, job.guids[0]), ":", *context(job.partner, job.guids[1])]
    return "exec " + shlex.join(argv)


def sbatch_options(job: PairJob) -> list[str]:
    """The options of the job's ``sbatch`` (fleet.master.slurm.submit_and_wait). No task
    count: the nodes are whole (``--exclusive``), mpirun's slots are their CPUs, and
    ``--ntasks-per-node`` would ask one CPU per rank (refused on a node with fewer)."""
    return [f"--partition={BURNIN_PARTITION}", "--nodes=2",
            f"--nodelist={job.node},{job.partner}", "--exclusive", f"--gres=gpu:{job.gpus}",
            f"--time={job.minutes}", f"--job-name={JOB_NAME}", f"--output={OUTPUT}",
            f"--wrap={script(job)}"]


# --- the report ---------------------------------------------------------------------------

_F = r"[0-9]{1,9}(?:\.[0-9]{1,6})?"
# "#  Rank  0 Group  0 Pid  4242 on   tbox-001 device  0 [0x1b] NVIDIA H100 80GB HBM3"
RANK = re.compile(r"#\s+Rank\s+([0-9]{1,4})\s+(?:Group\s+[0-9]{1,4}\s+)?Pid\s+[0-9]{1,10}\s+"
                  r"on\s+([A-Za-z0-9.-]{1,253})\s+device\s+[0-9]{1,3}\b.{0,120}")
# one size: size count type redop root, then out-of-place and in-place (time algbw busbw
# #wrong); #wrong is N/A without -c 1
DATA = re.compile(rf"\s*([0-9]{{1,13}})\s+([0-9]{{1,13}})\s+[a-z0-9_]{{1,12}}\s+"
                  rf"[a-z]{{1,8}}\s+-?[0-9]{{1,4}}\s+({_F})\s+({_F})\s+({_F})\s+"
                  rf"([0-9]{{1,12}}|N/A)\s+({_F})\s+({_F})\s+({_F})\s+([0-9]{{1,12}}|N/A)\s*")
OOB = re.compile(r"#\s*Out of bounds values\s*:\s*([0-9]{1,12})\s+(OK|FAILED)\s*")
BATCH_HOST = re.compile(r"(?:^|\s)BatchHost=(\S{1,253})")
AVG = re.compile(rf"#\s*Avg bus bandwidth\s*:\s*({_F})\s*")


@dataclass(frozen=True)
class Report:
    figures: dict[str, float]
    problems: list[str]


def parse_report(text: str, hosts: tuple[str, str], ranks: int) -> Report:
    """nccl-tests' report of the pair's job: each line matched whole against one of its
    formats or ignored; what is wrong with it as ``problems`` (none: it passed)."""
    seen: dict[int, str] = {}
    sizes: list[tuple[int, float, int]] = []  # (bytes, the better busbw, wrong values)
    oob: int | None = None
    oob_failed = False
    avg: float | None = None
    for line in text.splitlines()[:4096]:
        line = line.rstrip()[:400]
        if m := RANK.fullmatch(line):
            seen[int(m.group(1))] = m.group(2).split(".", 1)[0]
        elif m := DATA.fullmatch(line):
            wrong = sum(int(w) for w in (m.group(6), m.group(10)) if w != "N/A")
            sizes.append((int(m.group(1)), max(float(m.group(5)), float(m.group(9))), wrong))
        elif m := OOB.fullmatch(line):
            oob, oob_failed = int(m.group(1)), m.group(2) == "FAILED"
        elif m := AVG.fullmatch(line):
            avg = float(m.group(1))
    problems = []
    figures: dict[str, float] = {}
    if avg is None or not sizes:
        problems.append("no all_reduce_perf report")
    else:
        figures["busbw_gb_s"] = avg
        figures["busbw_peak_gb_s"] = max(sizes)[1]
    if sorted(seen) != list(range(ranks)) or set(seen.values()) != set(hosts):
        on = ",".join(sorted(set(seen.values())))[:60] or "no host"
        problems.append(f"{len(seen)} ranks on {on}, planned {ranks} on "
                        f"{hosts[0]},{hosts[1]}")
    wrong = sum(w for _, _, w in sizes)
    if wrong:
        problems.append(f"{wrong} wrong values")
    if oob is None and sizes:
        problems.append("no out-of-bounds count")
    elif oob or oob_failed:
        problems.append(f"{oob} out-of-bounds values")
    return Report(figures, problems)


# --- the run ------------------------------------------------------------------------------

def plan(profile: Profile, node: Node, partner: Partner, program: str) -> PairJob:
    test = profile.burnin[CHECK]  # type: ignore[index]  # a BurninCheck by its caller
    return PairJob(node.hostname, partner.host, profile.gpu.count if profile.gpu else 0,
                   (node.ib_guid or "-", partner.ib_guid or "-"), program, test.seconds)


def submit(runner: Runner, salt: Salt, job: PairJob) -> tuple[int, str]:
    """Run the job; its exit status (sbatch's, which is the job's) and its output, read
    from its batch host (at most :data:`READ_MAX` bytes) and removed there. JobError when
    Slurm took no job or its output cannot be read."""
    res = slurm.submit_and_wait(runner, sbatch_options(job), job.minutes * 60 + QUEUE_S)
    first = (res.stdout.strip().splitlines() or [""])[0].split(";")[0].strip()
    if not slurm.JOB_ID.match(first):
        # sbatch killed at its timeout prints no id: a job of ours still queued goes too
        slurm.cancel_named(runner, JOB_NAME, BURNIN_PARTITION, (job.node, job.partner))
        raise JobError(f"sbatch took no job (exit {res.returncode}): "
                       f"{last_line(res.stderr) or last_line(res.stdout, 120) or 'no output'}")
    try:
        shown = slurm.show_job_text(runner, first)
    finally:  # a job sbatch stopped waiting for (its timeout) must not hold the nodes
        slurm.end_own_job(runner, first)
    host = _batch_host(shown, first)
    if host not in (job.node, job.partner):
        raise JobError(f"job {first}: its batch host {clean(host or 'none', 40)} is "
                       f"neither {job.node} nor {job.partner}")
    path = OUTPUT.replace("%j", first)
    got = salt.run_argv(host, ["head", "-c", str(READ_MAX), path], timeout=120)
    salt.run_argv(host, ["rm", "-f", path], timeout=120)
    if not isinstance(got, dict) or not isinstance(got.get("stdout"), str) \
            or got.get("retcode") != 0:
        raise JobError(f"job {first}: no output on {host} ({clean(got, 100)})")
    return res.returncode, got["stdout"]


def _batch_host(shown: str, job_id: str) -> str | None:
    """BatchHost of ``scontrol show job -o ID``, on the line of that job."""
    line = next((ln for ln in shown.splitlines() if ln.startswith(f"JobId={job_id} ")), "")
    m = BATCH_HOST.search(line)
    return m.group(1) if m else None


def judge(job: PairJob, rc: int, text: str, rate_gbps: float, tolerance: int) -> Result:
    """The node's result of one pair job: the report's problems, its exit, and the peak
    bus bandwidth against the rail's rate (Gb/s) less ``tolerance`` percent."""
    rep = parse_report(text, (job.node, job.partner), 2 * job.gpus)
    problems = list(rep.problems)
    if rc != 0:
        problems.append(f"job exit {rc}: {last_line(text, 100) or 'no output'}")
    floor = rate_gbps / 8 * (100 - tolerance) / 100
    peak = rep.figures.get("busbw_peak_gb_s")
    if peak is not None and peak < floor:
        problems.append(f"busbw {peak:g} GB/s, the rail's {rate_gbps:g} Gb/s "
                        f"({rate_gbps / 8:g} GB/s) less {tolerance}%")
    return _result(not problems, rep.figures, "; ".join(problems) or None)


def _result(passed: bool, figures: dict[str, float], reason: str | None,
            started: float | None = None) -> Result:
    t0 = results.now() if started is None else started
    return Result.model_validate({
        "check": CHECK, "passed": passed, "figures": figures,
        "reason": None if reason is None else clean(reason, MAX_REASON),
        "started": t0, "seconds": round(max(results.now() - t0, 0.0), 3)})


def pair_job_check(runner: Runner, salt: Salt, profile: Profile, node: Node,
                   partners: list[Partner], why_none: str, unpinned: str | None,
                   say: Callable[[str], None]) -> Result:
    """nccl-pair of ``node`` with its first partner, then the next if that pair failed;
    no partner, a null pin or no GPU: a failed result saying why, never a pass."""
    why = unpinned if unpinned is not None else (
        "not run: the profile has no GPU" if not profile.gpu else None)
    if why is not None:
        return _result(False, {}, why)
    test = profile.burnin[CHECK]  # type: ignore[index]
    rate = rail_gbps(profile)
    result = _result(False, {}, why_none)
    for partner in partners:
        say(f"{node.hostname}: {CHECK} with {partner.host} (Slurm job, {BURNIN_PARTITION}) ...")
        started = results.now()
        try:
            job = plan(profile, node, partner, TOOLS[CHECK].path)
            rc, text = submit(runner, salt, job)
            got = judge(job, rc, text, rate, test.tolerance_percent)
            result = _result(got.passed, dict(got.figures),
                             None if got.passed else f"with {partner.host}: {got.reason}",
                             started)
        except (JobError, MasterError) as exc:
            result = _result(False, {}, f"with {partner.host}: {exc}", started)
        if result.passed:
            break
    return result
