"""TEST-ONLY shim: runs miniray's unmodified worker.py in a lab container, whose host has
cgroup v1 (miniray's worker needs cgroup v2 and a delegated subtree). Never shipped.

Armed by a ``sitecustomize`` (SITECUSTOMIZE below) in a directory that the worker's Slurm
job inherits as PYTHONPATH from its submitter's environment (tests/lab/test_miniray.py:
``PYTHONPATH=... sbatch`` of the rendered worker.sbatch, unchanged): it installs
itself only in a process whose script is a ``worker.py``, before that script runs, or by
hand: ``python miniray_shim.py .../worker.py``.

What it changes, and nothing else:
- ``/proc/self/cgroup`` reads as a non-root cgroup v2 path: the batch step's of the Slurm
  job (``0::/system.slice/slurmstepd.scope/job_<SLURM_JOB_ID>/step_batch/user/task_0``,
  as Slurm's cgroup/v2 plugin places it), else ``0::/system.slice/<MINIRAY_SHIM_UNIT>``;
- miniray.lib.cgroup's writes are no-ops, except: ``cgroup_add_pid`` records the task's
  process group (the worker starts each task in a new session), ``cgroup_kill`` sends it
  SIGKILL, ``cgroup_is_populated`` is true while a live (not zombie) process of that group
  exists; the cgroup CPU and memory statistics read 0;
- ``os.setpriority`` to a negative niceness (the worker raises its own priority) is
  skipped where it is refused: a lab container has no CAP_SYS_NICE;
- NVML's init failing (the lab's GPU containers have the driver's libnvidia-ml but no
  GPU) reads as NVML's "library not found", on which the worker runs CPU-only, as on a
  host without the driver.

The task slots' groups (procNNN) are the real ones compute.worker creates, each with a
gid of its own: miniray deletes /dev/shm entries by the slot's gid, so the shim never maps
a group to another gid.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import runpy
import signal
import sys
from typing import Any

UNIT = os.environ.get("MINIRAY_SHIM_UNIT", "fleet-test-miniray-worker.service")
JOB = os.environ.get("SLURM_JOB_ID", "")
CGROUP = (f"/system.slice/slurmstepd.scope/job_{JOB}/step_batch/user/task_0" if JOB
          else f"/system.slice/{UNIT}")
# the sitecustomize.py that arms the shim in the worker.py a Slurm job starts
SITECUSTOMIZE = """\
# TEST-ONLY (tests/lab/test_miniray.py): miniray's cgroup shim for the lab's cgroup v1 host
import os, sys
if os.path.basename(sys.argv[0] if sys.argv else "") == "worker.py":
    import miniray_shim
    miniray_shim.install_for(sys.argv[0])
"""
_read_text = pathlib.Path.read_text
_os_setpriority = os.setpriority
_groups: dict[str, int] = {}  # cgroup name -> process group of its task


def _read_text_shim(self: pathlib.Path, *args: Any, **kwargs: Any) -> str:
    if str(self) == "/proc/self/cgroup":
        return f"0::{CGROUP}\n"
    return _read_text(self, *args, **kwargs)


def _live_members(pgid: int) -> bool:
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = pathlib.Path(entry.path, "stat").read_bytes().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(stat[2]) == pgid and stat[0] != b"Z":
            return True
    return False


def _add_pid(name: str, pid: int) -> None:
    _groups[name] = os.getpgid(pid)


def _kill(name: str) -> None:
    if name in _groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(_groups[name], signal.SIGKILL)


def _populated(name: str) -> bool:
    return name in _groups and _live_members(_groups[name])


def _delete(name: str, recursive: bool = False) -> None:
    _groups.pop(name, None)


def _setpriority(which: int, who: int, prio: int) -> None:
    try:
        _os_setpriority(which, who, prio)
    except PermissionError:
        if prio >= 0:
            raise
        print(f"[miniray-shim] setpriority({prio}) refused (no CAP_SYS_NICE): skipped",
              file=sys.stderr, flush=True)


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _no_gpu() -> None:
    import pynvml

    init = pynvml.nvmlInit

    def nvml_init() -> None:
        try:
            init()
        except pynvml.NVMLError as e:
            print(f"[miniray-shim] nvmlInit: {e}: no GPU here, as NVML missing",
                  file=sys.stderr, flush=True)
            raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND) from e

    pynvml.nvmlInit = nvml_init


def install() -> None:
    import miniray.lib.cgroup as cg
    import miniray.lib.system_helpers as sh

    _no_gpu()

    pathlib.Path.read_text = _read_text_shim  # type: ignore[method-assign]
    os.setpriority = _setpriority
    for name in ("cgroup_create", "cgroup_set_subcontrollers", "cgroup_set_memory_limit",
                 "cgroup_set_numa_nodes", "cgroup_clear_all_children"):
        setattr(cg, name, _nothing)
    cg.cgroup_add_pid = _add_pid
    cg.cgroup_kill = _kill
    cg.cgroup_is_populated = _populated
    cg.cgroup_delete = _delete
    sh.get_cgroup_cpu_usage = lambda cgroup: 0.0
    sh.get_cgroup_mem_usage = lambda cgroup: 0


def install_for(worker: str) -> None:
    """From a sitecustomize, before ``worker`` runs: its directory (miniray's tree, whose
    ``miniray/`` is itself) importable already, then the shim installed."""
    sys.path.insert(0, str(pathlib.Path(worker).absolute().parent))
    install()
    print(f"[miniray-shim] TEST-ONLY cgroup shim installed for {worker} (cgroup {CGROUP})",
          file=sys.stderr, flush=True)


if __name__ == "__main__":
    worker = sys.argv[1]
    install()
    sys.argv = [worker]
    runpy.run_path(worker, run_name="__main__")
