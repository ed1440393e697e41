#!/usr/bin/python3
"""Managed by Salt (slurm). Syntax check of Slurm configuration files before a restart.

Slurm has no config-test mode, so this checks what a render can break:
  fleet-slurm-conf-check NAME FILE   one file (Salt check_cmd: FILE is the new version)
  fleet-slurm-conf-check --dir DIR   the set in DIR
Every line must be `Key=Value` words; slurm.conf must name the cluster, the controller,
the auth type and at least one node and one partition.
"""
import pathlib
import re
import sys

REQUIRED = {"slurm.conf": ["ClusterName", "SlurmctldHost", "AuthType"]}
WORD = re.compile(r"^[A-Za-z][A-Za-z0-9]*=\S+$")


def parse(path):
    lines = []
    for no, raw in enumerate(pathlib.Path(path).read_text().splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        bad = [w for w in words if not WORD.match(w)]
        if bad:
            sys.exit(f"{path}:{no}: not Key=Value: {' '.join(bad)}")
        lines.append(dict(w.split("=", 1) for w in words))
    return lines


def check(name, path):
    lines = parse(path)
    keys = {k for line in lines for k in line}
    missing = [k for k in REQUIRED.get(name, []) if k not in keys]
    if missing:
        sys.exit(f"{path}: missing {', '.join(missing)}")
    if name == "slurm.conf":
        for kind in ("NodeName", "PartitionName"):
            if kind not in keys:
                sys.exit(f"{path}: no {kind} line")
    return lines


def main(argv):
    if len(argv) == 3 and argv[1] == "--dir":
        d = pathlib.Path(argv[2])
        check("slurm.conf", d / "slurm.conf")
        for name in ("gres.conf", "cgroup.conf", "topology.conf"):
            if (d / name).exists():
                check(name, d / name)
        return 0
    if len(argv) == 3:
        check(argv[1], argv[2])
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
