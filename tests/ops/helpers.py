"""What the ops tests share: a secrets store with the fakes' password, a stand-in for
Slurm's client (a script keeping which jobs run where and which nodes are drained), an
empty PXE state directory."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path

from support.bmcfakes import PASSWORD
from support.cli import ROOT

INVENTORY = ROOT / "inventory.yaml"


def secrets(tmp: Path, name: str = "bmc-tinybox") -> Path:
    store = tmp / "secrets"
    (store / "bmc").mkdir(mode=0o700, parents=True, exist_ok=True)
    path = store / "bmc" / name
    path.write_text(PASSWORD + "\n")
    path.chmod(0o600)
    return store


def slurm_standin(tmp: Path, jobs: dict[str, list[str]], *, broken: bool = False) -> Path:
    """A stand-in for a Slurm client reached through --slurm-command, for one controller's
    state kept in a file (a FAKE Slurm: none can run here): ``squeue -h -w NODE`` prints
    the job ids ``jobs`` gives NODE, one a line (as ``-o %i`` does); ``scontrol update
    NodeName=N State=DRAIN|RESUME`` drains or resumes it; ``sinfo -h -N -n N -o %T`` says
    ``draining`` while a drained node has jobs, ``drained`` once it has none (``idle`` /
    ``allocated`` undrained); ``scancel IDS`` ends those jobs, ``scontrol requeue IDS`` takes
them off the node (a job never ends by itself); a job ``ID@PART`` is of partition PART.
    Every call is appended to calls.log. ``broken``: every call fails as with slurmctld
    down."""
    table = tmp / "slurm-jobs.json"
    table.write_text(json.dumps({"jobs": jobs, "drained": []}))
    log = tmp / "calls.log"
    script = tmp / "slurm-standin"
    script.write_text(f"""#!/usr/bin/env python3
import fcntl, json, sys
lock = open({str(table)!r} + ".lock", "w")
fcntl.flock(lock, fcntl.LOCK_EX)  # the drains run side by side: one call at a time
with open({str(log)!r}, "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
if {broken!r}:
    sys.stderr.write(sys.argv[1] + ": error: Unable to contact slurm controller\\n")
    sys.exit(1)
args = sys.argv[1:]
state = json.load(open({str(table)!r}))
jobs, drained = state["jobs"], state["drained"]
if args[0] == "squeue":  # a job "ID@PART" is of partition PART (-p); others of none named
    part = args[args.index("-p") + 1] if "-p" in args else None
    for job in jobs.get(args[args.index("-w") + 1], []):
        if part is None or job.endswith("@" + part):
            print(job.split("@")[0])
elif args[0] == "sinfo":
    node = args[args.index("-n") + 1]
    busy = bool(jobs.get(node))
    print(("draining" if busy else "drained") if node in drained else
          ("allocated" if busy else "idle"))
elif args[:2] == ["scontrol", "update"]:
    node = args[2].removeprefix("NodeName=")
    if "State=DRAIN" in args and node not in drained:
        drained.append(node)
    elif "State=RESUME" in args and node in drained:
        drained.remove(node)
elif args[0] == "scancel" or args[:2] == ["scontrol", "requeue"]:  # requeued: pending
    ids = args[1:] if args[0] == "scancel" else args[2].split(",")
    state["jobs"] = {{n: [j for j in js if j.split("@")[0] not in ids]
                     for n, js in jobs.items()}}
else:
    sys.exit("the stand-in does not know " + " ".join(args))
json.dump(state, open({str(table)!r}, "w"))
""")
    script.chmod(0o755)
    return script


def pxe_state(tmp: Path) -> Path:
    state = tmp / "pxe-state"
    state.mkdir(exist_ok=True)
    return state


def arm_install(state: Path, mac: str) -> None:
    """The iPXE link of an armed install, as fleet.pxe.state.set_mode leaves it."""
    (state / (mac.replace(":", "-") + ".ipxe")).symlink_to("/srv/fleet/pxe/http/hosts/x/"
                                                           "install.ipxe")


class SilentBmc:
    """A fake hung BMC: a TCP server that accepts every connection and never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self._stop = True
        self.sock.close()
        for c in self.held:
            c.close()
