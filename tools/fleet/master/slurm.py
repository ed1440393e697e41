"""Drain and resume a node in Slurm through ``scontrol`` and ``sinfo`` (research notes §3:
DRAIN survives re-registration; only an explicit RESUME returns the node), and what
``scontrol show node -o`` prints, parsed (for health, status and rollout)."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fleet.master.runner import Result, Runner
from fleet.master.text import clean

# Base states (sinfo %T, flags such as "*" stripped) in which no job runs on the node.
IDLE_ENOUGH = frozenset({"drained", "down", "fail"})
REASON_MAX = 400
JOB_ID = re.compile(r"^[0-9]+(?:_[0-9]+)?(?:\.[0-9a-z]+)?$")  # 123, 123_4 (an array's)


def drain(runner: Runner, node: str, reason: str) -> None:
    """The reason is one argument (``commands.through`` quotes it for ssh); text a node
    supplied in it (health output) loses its control characters and is cut short."""
    runner.run(["scontrol", "update", f"NodeName={node}", "State=DRAIN",
                f"Reason={clean(reason, REASON_MAX)}"]).check()


def resume(runner: Runner, node: str) -> None:
    runner.run(["scontrol", "update", f"NodeName={node}", "State=RESUME"]).check()


def node_rows(sinfo_output: str) -> list[str]:
    """The distinct rows of ``sinfo -h -N -n NODE -o FIELDS``, in order. sinfo prints one
    row per node *and partition*: a worker node is in its training partition and in the
    workers' preemptible one (fleet.render.compute), and both rows carry the node's own
    state and reason, so they are one row here."""
    return list(dict.fromkeys(ln.strip() for ln in sinfo_output.splitlines() if ln.strip()))


def node_row(sinfo_output: str, node: str) -> str:
    """The one row of ``sinfo -h -N -n NODE -o FIELDS``; none, or rows that differ
    (never seen: Slurm keeps one state per node), is a LookupError, never a guess."""
    rows = node_rows(sinfo_output)
    if not rows:
        raise LookupError(f"sinfo does not know node {node}")
    if len(rows) > 1:
        raise LookupError(f"sinfo gives node {node} different rows in its partitions: "
                          + "; ".join(repr(r[:60]) for r in rows[:4]))
    return rows[0]


def state(runner: Runner, node: str) -> str:
    """The node's state as ``sinfo -h -N -n NODE -o %T`` prints it, e.g. ``draining``."""
    out = runner.run(["sinfo", "-h", "-N", "-n", node, "-o", "%T"]).check().stdout
    return node_row(out, node)


def base_state(sinfo_state: str) -> str:
    """``drained*`` -> ``drained``: drop sinfo's flag suffixes (not responding, powered...)."""
    return sinfo_state.rstrip("*~#!%$@^-+")


def no_jobs_can_run(sinfo_state: str) -> bool:
    return base_state(sinfo_state) in IDLE_ENOUGH


def jobs(runner: Runner, node: str, partition: str | None = None, *,
         states: str | None = None, timeout: float = 120) -> list[str]:
    """The ids of the jobs Slurm has on the node (``squeue -h -w NODE -o %i``: running,
    completing, suspended), only those of ``partition`` and ``states`` (``-t``) where
    given; an id that is not one is an error (LookupError), never passed on."""
    only = ["-p", partition] if partition is not None else []
    only += ["-t", states] if states is not None else []
    out = runner.run(["squeue", "-h", "-w", node, *only, "-o", "%i"],
                     timeout=timeout).check().stdout
    ids = [ln.strip() for ln in out.splitlines() if ln.strip()]
    bad = [i for i in ids if not JOB_ID.match(i)]
    if bad:
        raise LookupError(f"squeue gave a job id that is not one for {node}: {bad[0][:40]!r}")
    return ids


@dataclass(frozen=True)
class Drained:
    state: str      # sinfo's state once no job can run, e.g. ``drained``
    waited: float   # seconds
    polls: int      # how many times it was not yet so


class DrainWaitError(Exception):
    """The node did not get there: its state then, the jobs still on it (when asked), and
    whether ``stopped`` ended the wait rather than the deadline."""

    def __init__(self, state: str, left: list[str], stopped: bool) -> None:
        super().__init__(f"still {state}")
        self.state, self.left, self.stopped = state, left, stopped


def wait_drained(runner: Runner, node: str, timeout: float, poll: float, *,
                 no_jobs: bool = False, stopped: Callable[[], bool] = lambda: False,
                 note: Callable[[str, float], None] | None = None) -> Drained:
    """The one drain wait (reinstall, rollout): poll sinfo until no job can run on the
    drained node (and, with ``no_jobs``, squeue lists none on it either), ``timeout``
    seconds at most; ``stopped`` is asked between polls, ``note(state, seconds)`` told
    every 30 s of waiting."""
    t0 = time.monotonic()
    last_note, polls = t0, 0
    while True:
        state_now = state(runner, node)
        left = jobs(runner, node) if no_jobs else []
        if no_jobs_can_run(state_now) and not left:
            return Drained(state_now, time.monotonic() - t0, polls)
        polls += 1
        if stopped():
            raise DrainWaitError(state_now, left, True)
        if time.monotonic() - t0 >= timeout:
            raise DrainWaitError(state_now, left, False)
        if note is not None and time.monotonic() - last_note >= 30:
            last_note = time.monotonic()
            note(state_now, last_note - t0)
        time.sleep(poll)


@dataclass(frozen=True)
class DrainDone:
    requeued: list[str]   # jobs of the preemptible partition, put back in the queue
    cancelled: list[str]  # with force: the jobs cancelled, by id
    drained: Drained


def drain_and_wait(runner: Runner, node: str, reason: str, *, preemptible: str | None,
                   force: bool, timeout: float, poll: float,
                   stopped: Callable[[], bool] = lambda: False,
                   note: Callable[[str, float], None] | None = None,
                   drained: Callable[[], None] = lambda: None,
                   say: Callable[[str], None] = lambda msg: None) -> DrainDone:
    """The one drain of a node before it is changed (reinstall, rollout): drain it with
    ``reason`` (``drained()`` is told once Slurm took it), requeue the jobs of its
    ``preemptible`` partition, and wait until no job can run on it (:func:`wait_drained`).
    ``force``, the one meaning of ``--force`` at a drain: the jobs still on it are not
    waited for but cancelled, each by id, and the wait lasts until Slurm has none on it;
    a node is never changed under running jobs. ``say`` is told what is requeued and
    cancelled as it happens. DrainWaitError when it does not get there."""
    drain(runner, node, reason)
    drained()
    requeued = requeue_preemptible(runner, node, preemptible)
    if requeued:
        say(f"{node}: requeued preemptible job(s) {', '.join(requeued)}")
    cancelled = jobs(runner, node) if force else []
    if cancelled:
        say(f"{node}: --force: cancelling job(s) {', '.join(cancelled)}")
        cancel(runner, cancelled)
    done = wait_drained(runner, node, timeout, poll, no_jobs=force, stopped=stopped,
                        note=note)
    return DrainDone(requeued, cancelled, done)


def show_node_text(runner: Runner, node: str | None = None, timeout: float = 120) -> str:
    """``scontrol show node -o [NODE]`` as printed (:func:`scontrol_nodes` parses it)."""
    argv = ["scontrol", "show", "node", "-o", *([node] if node else [])]
    return runner.run(argv, timeout=timeout).check().stdout


def show_nodes(runner: Runner, node: str | None = None, timeout: float = 120
               ) -> dict[str, dict[str, str]]:
    """Every node slurmctld knows (or ``node``), by NodeName: its ``Key=value`` fields."""
    return scontrol_nodes(show_node_text(runner, node, timeout))


def cancel(runner: Runner, job_ids: list[str]) -> None:
    """``scancel`` those jobs (each id one argument)."""
    runner.run(["scancel", *job_ids]).check()


def end_own_job(runner: Runner, job_id: str) -> None:
    """``scancel`` a job fleet submitted itself (``submit_and_wait``), which may have
    ended already (scancel then exits 1: no error). Not a drain's cancel."""
    runner.run(["scancel", job_id])


def submit_and_wait(runner: Runner, options: Sequence[str], timeout: float) -> Result:
    """``sbatch --parsable --wait OPTIONS``: the job submitted and waited for; its result
    unchecked (sbatch's exit is the job's; the first line of its output the job's id, none
    when Slurm took no job or the wait ran past ``timeout``)."""
    return runner.run(["sbatch", "--parsable", "--wait", *options], timeout=timeout)


def cancel_named(runner: Runner, name: str, partition: str, nodes: Sequence[str]) -> None:
    """``scancel`` the jobs of that name in that partition on those nodes (one whose id
    sbatch never printed); none is no error."""
    runner.run(["scancel", f"--partition={partition}", f"--jobname={name}",
                f"--nodelist={','.join(nodes)}"])


def show_job_text(runner: Runner, job_id: str, timeout: float = 120) -> str:
    """``scontrol show job -o JOB``: its one line of ``Key=value`` fields ('' when gone)."""
    return runner.run(["scontrol", "show", "job", "-o", job_id], timeout=timeout).stdout


def requeue_preemptible(runner: Runner, node: str, partition: str | None) -> list[str]:
    """The jobs of the preemptible partition on a node being drained, requeued (``scontrol
    requeue``): miniray's workers (fleet.render.compute) never end by themselves, and a job
    of that partition is made to be put back in the queue, as a training job's preemption
    does; they run again once the node is resumed. Their ids; none without a partition."""
    if partition is None:
        return []
    ids = jobs(runner, node, partition)
    if ids:
        runner.run(["scontrol", "requeue", ",".join(ids)]).check()
    return ids


# --- what scontrol prints -------------------------------------------------------------

_KEY = re.compile(r"(?:^|\s)([A-Z][A-Za-z]*(?:/[A-Za-z]+)?)=")


def scontrol_nodes(out: str) -> dict[str, dict[str, str]]:
    """``scontrol show node -o``: one line per node of ``Key=value`` pairs, by NodeName.
    A value may hold spaces (Reason=, OS=): it runs up to the next `` Key=``. Reason
    is the one free text and comes after the keys Slurm prints before it; its own
    ``x=y`` words would look like keys, so everything after ``Reason=`` up to a known
    later key (none in 22.05-23.11 but Comment=/Extra=) is the reason."""
    nodes: dict[str, dict[str, str]] = {}
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("NodeName="):
            continue
        rest, reason = line, None
        r = line.find(" Reason=")
        if r >= 0:
            rest, reason = line[:r], line[r + len(" Reason="):]
        fields: dict[str, str] = {}
        marks = list(_KEY.finditer(rest))
        for i, m in enumerate(marks):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(rest)
            fields[m.group(1)] = rest[m.end():end].strip()
        if reason is not None:
            for later in (" Comment=", " Extra="):
                cut = reason.find(later)
                if cut >= 0:
                    reason = reason[:cut]
            fields["Reason"] = reason.strip()
        name = fields.get("NodeName", "").split()[0] if fields.get("NodeName") else ""
        if name:
            nodes[name] = fields
    return nodes


def reason_text(reason: str) -> str:
    """The reason without Slurm's ``[user@time]`` suffix."""
    return re.sub(r"\s*\[[^\]]*@[^\]]*\]$", "", reason.strip())


def state_flags(state: str) -> set[str]:
    """``IDLE+DRAIN`` -> {IDLE, DRAIN}; ``DOWN*`` -> {DOWN, NOT_RESPONDING}."""
    flags = set()
    for part in state.split("+"):
        part = part.strip()
        if part.endswith("*"):
            flags.add("NOT_RESPONDING")
            part = part.rstrip("*")
        if part:
            flags.add(part.upper())
    return flags


DRAIN_FLAGS = frozenset({"DRAIN", "DRAINED", "DRAINING"})


def drained(fields: dict[str, str], also: frozenset[str] = frozenset()) -> bool:
    """A node's ``scontrol show node`` fields with DRAIN set (draining with jobs, or
    drained), or one of the flags ``also`` names."""
    return bool(state_flags(fields.get("State", "")) & (DRAIN_FLAGS | also))


def drained_by(fields: dict[str, str], prefix: str) -> bool:
    """Whether the node's drain reason is ours: it starts with ``prefix`` (each verb
    writes its own, e.g. ``fleet health:``), Slurm's ``[user@time]`` aside."""
    return reason_text(fields.get("Reason", "")).startswith(prefix)


def gres_gpus(gres: str) -> int | None:
    """GPUs in a ``Gres=`` value: ``gpu:tinybox:6(S:0-1)``, ``gpu:6``; None without."""
    total, seen = 0, False
    for item in re.split(r",(?![^(]*\))", gres):
        item = re.sub(r"\(.*\)$", "", item.strip())
        parts = item.split(":")
        if parts[0] == "gpu" and len(parts) >= 2 and parts[-1].isdigit():
            total += int(parts[-1])
            seen = True
    return total if seen else None
