"""What the ops tests share: a secrets store with the fakes' password, a stand-in for
Slurm's squeue (a script reading which jobs run where), an empty PXE state directory."""

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
    """A stand-in for a Slurm client reached through --slurm-command: ``CMD squeue -h -w
    NODE ...`` prints the job ids ``jobs`` gives NODE, one a line (as ``-o %i`` does);
    every call is appended to calls.log. ``broken``: squeue fails as with slurmctld down."""
    table = tmp / "slurm-jobs.json"
    table.write_text(json.dumps(jobs))
    log = tmp / "calls.log"
    script = tmp / "slurm-standin"
    script.write_text(f"""#!/usr/bin/env python3
import json, sys
with open({str(log)!r}, "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\\n")
if {broken!r}:
    sys.stderr.write("squeue: error: Unable to contact slurm controller (connect failure)\\n")
    sys.exit(1)
args = sys.argv[1:]
assert args[0] == "squeue", args
node = args[args.index("-w") + 1]
for job in json.load(open({str(table)!r})).get(node, []):
    print(job)
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
