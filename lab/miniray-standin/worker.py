"""STAND-IN for miniray's worker.py (lab only, docs/lab.md): what compute.worker installs
in the lab when no real miniray is given (FLEET_MINIRAY_SRC). It says so, shows the
interpreter and environment the worker job gave it, and runs until Slurm stops it, like
the real worker's loop. It exits 3 when FLEET_STANDIN_EXIT names a file that exists (a
worker that went away: tests/lab/test_compute_slurm.py requeues it)."""

import os
import sys
import time

print(f"STAND-IN miniray worker: python {sys.executable} in {os.getcwd()}, "
      f"queue {os.environ.get('PIPELINE_QUEUE')}, redis {os.environ.get('REDIS_HOST')}",
      flush=True)
while True:
    stop = os.environ.get("FLEET_STANDIN_EXIT")
    if stop and os.path.exists(stop):
        print("STAND-IN miniray worker: exiting 3 (asked to)", flush=True)
        sys.exit(3)
    time.sleep(1)
