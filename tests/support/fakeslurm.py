"""A FAKE Slurm for one node (Slurm cannot run here; tests/lab/test_compute_slurm.py has the
real one): this runner answers scontrol, sinfo, squeue and scancel as a controller would,
its jobs ending once cancelled, a requeued one pending, off the node. The drain's tests of
reinstall (tests/reinstall/test_force.py) and power (tests/ops/test_power.py) use it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fleet.master.runner import Result


@dataclass
class FakeSlurm:
    jobs: list[str]
    cancel_works: bool = True
    calls: list[tuple[str, ...]] = field(default_factory=list)
    preemptible: list[str] = field(default_factory=list)  # miniray's partition's jobs
    pending: list[str] = field(default_factory=list)

    def run(self, argv: Sequence[str], *, timeout: float = 120) -> Result:
        a = tuple(argv)
        self.calls.append(a)
        out = ""
        if a[0] == "squeue":
            listed = self.preemptible if "-p" in a else self.jobs + self.preemptible
            out = "".join(j + "\n" for j in listed)
        elif a[0] == "sinfo":
            out = "draining\n" if self.jobs or self.preemptible else "drained\n"
        elif a[0] == "scancel" and self.cancel_works:
            self.jobs = [j for j in self.jobs if j not in a[1:]]
        elif a[:2] == ("scontrol", "requeue"):
            ids = a[2].split(",")
            self.pending += ids
            self.preemptible = [j for j in self.preemptible if j not in ids]
        return Result(a, 0, out, "")
