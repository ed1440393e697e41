#!/usr/bin/python3
"""Managed by Salt (slurm.controller). The inventory's maintenance state, in Slurm.

  fleet-slurm-drains FILE

FILE (pillar slurm:drains, rendered by fleet) is JSON: {"prefix": P, "drain": {node:
reason}, "resume": [node, ...]}. Each node of "drain" is drained with its reason (which
starts with P) unless it is already drained with exactly that reason; each node of
"resume" (active in the inventory) is resumed only when it is drained with a reason that
starts with P, i.e. by this script: a drain by an operator or by `fleet health` is left
alone. A node slurmctld does not know (yet) is skipped; slurmctld itself must answer
(`scontrol ping`, up to 60 s: this highstate may have restarted it). Prints Salt's
stateful JSON.
"""
import json
import re
import subprocess
import sys
import time

STATE = re.compile(r"\bState=(\S+)")
REASON = re.compile(r"^\s*Reason=(.*?)(?: \[[^\]]*\])?\s*$", re.M)


def scontrol(*args):
    return subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=60,
                          check=False)


def show(node):
    """(state flags, reason) of the node, or None when slurmctld does not know it."""
    r = scontrol("show", "node", node)
    if r.returncode != 0:
        return None
    state = STATE.search(r.stdout)
    reason = REASON.search(r.stdout)
    flags = set(state.group(1).upper().split("+")) if state else set()
    return flags, (reason.group(1).strip() if reason else "")


def update(node, *words):
    r = scontrol("update", f"NodeName={node}", *words)
    if r.returncode != 0:
        sys.exit(f"scontrol update NodeName={node} {' '.join(words)}: "
                 f"{(r.stderr or r.stdout).strip()}")


def wait_for_slurmctld(timeout=60.0):
    """slurmctld answers (it may have been restarted by this same highstate)."""
    deadline = time.monotonic() + timeout
    while True:
        r = scontrol("ping")
        if r.returncode == 0 and "UP" in r.stdout:
            return
        if time.monotonic() > deadline:
            sys.exit(f"slurmctld does not answer `scontrol ping` after {timeout:.0f} s: "
                     f"{(r.stderr or r.stdout).strip()}")
        time.sleep(1)


def main(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    wait_for_slurmctld()
    prefix, done = data["prefix"], []
    for node, reason in sorted(data.get("drain", {}).items()):
        now = show(node)
        if now is None:
            continue
        flags, current = now
        if ("DRAIN" in flags or "DRAINED" in flags) and current == reason:
            continue
        update(node, "State=DRAIN", f"Reason={reason}")
        done.append(f"drained {node} ({reason})")
    for node in sorted(data.get("resume", [])):
        now = show(node)
        if now is None:
            continue
        flags, current = now
        if ("DRAIN" in flags or "DRAINED" in flags) and current.startswith(prefix):
            update(node, "State=RESUME")
            done.append(f"resumed {node} (was: {current})")
    comment = "; ".join(done) or "Slurm drains match the inventory"
    print(json.dumps({"changed": bool(done), "comment": comment}))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fleet-slurm-drains FILE")
    main(sys.argv[1])
