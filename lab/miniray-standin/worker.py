"""STAND-IN for miniray's worker.py (lab only, docs/lab.md): what compute.worker installs
in the lab when no real miniray is given (FLEET_MINIRAY_SRC). It says so, shows the
interpreter and environment the worker job gave it, and runs until Slurm stops it, like
the real worker's loop. It exits 3 while the file STOP exists (a worker that went away:
tests/lab/test_compute_slurm.py sees its job requeue itself)."""

import os
import sys
import time

print(f"STAND-IN miniray worker: python {sys.executable} in {os.getcwd()}, "
      f"queue {os.environ.get('PIPELINE_QUEUE')}, redis {os.environ.get('REDIS_HOST')}",
      flush=True)
STOP = "/tmp/fleet-test-standin-exit"
while True:
    if os.path.exists(STOP):
        print("STAND-IN miniray worker: exiting 3 (asked to)", flush=True)
        sys.exit(3)
    time.sleep(1)
