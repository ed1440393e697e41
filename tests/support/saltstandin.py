"""A STAND-IN for the ``salt`` CLI, for tests of verbs that talk to the master where no
master runs: a script that answers one Salt function for the minions listed with ``-L``,
from a table the test writes (``{minion: answer}``; printed as ``--out=json`` does: one
object per minion, as each returns), or fails as a master that does not respond, or
answers as the CLI does where it cannot reach its master (:data:`UNREACHABLE`). Each
call's argv is logged as a JSON line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

# what salt 3008's CLI prints, as one JSON string, and exit 0 (without --static; with it,
# a traceback and exit 1), for a config dir whose master does not run
UNREACHABLE = "The salt master could not be contacted. Is master running?"

SCRIPT = """#!{python}
import json, sys
st = json.load(open({state!r}))
with open({log!r}, "a") as f:
    f.write(json.dumps(["salt", *sys.argv[1:]]) + "\\n")
if st["broken"]:
    sys.stderr.write("Salt request timed out. The master is not responding.\\n")
    sys.exit(2)
if st["unreachable"]:
    print(json.dumps(st["unreachable"]))
    sys.exit(0)
args = sys.argv[1:]
assert st["function"] in args, args
nodes = args[args.index("-L") + 1].split(",")
for n, a in st["answers"].items():
    if n in nodes:
        print(json.dumps({{n: a}}, indent=4))
"""


def write_salt(bin_dir: Path, tmp: Path, function: str, answers: dict[str, Any],
               broken: bool = False, unreachable: bool = False) -> Path:
    """``bin_dir/salt`` answering ``function``; its calls are logged to tmp/calls.log."""
    state = tmp / "salt-standin.json"
    state.write_text(json.dumps({"function": function, "answers": answers, "broken": broken,
                                 "unreachable": UNREACHABLE if unreachable else None}))
    salt = bin_dir / "salt"
    salt.write_text(SCRIPT.format(python=sys.executable, state=str(state),
                                  log=str(tmp / "calls.log")))
    salt.chmod(0o755)
    return salt


def calls(tmp: Path) -> list[list[str]]:
    """Every logged call's argv (the stand-ins' name first), in order."""
    log = tmp / "calls.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
