#!/usr/bin/python3
"""Managed by Salt (nvidia.driver). Are the held NVIDIA packages the pinned branch's driver?

  fleet-nvidia-driver-check --branch 580 --held PKG... --driver PKG... [--admindir DIR]
                            [--allow-stand-ins]

Fails (exit 1, one line per problem, each naming the package) when
  - a held package is not installed;
  - a held package is transitional: its description says so, or it depends on a package
    of the same name with another number (nvidia-utils-570-server -> nvidia-utils-580-server);
  - a held package is empty (no file outside /usr/share/doc) and none of its dependencies
    is of the pinned branch (an empty package that only pulls another branch);
  - a --driver package (whose version is the driver's) is not of the pinned branch, or a
    loaded kernel module (/sys/module/nvidia/version) is not;
  - a held package is a lab stand-in (its X-Fleet-Stand-In field: fleet's site repository
    made it because the archive did not serve the real one), unless --allow-stand-ins (the
    lab only): then it is named as a stand-in in the comment, and an empty stand-in passes.
On success it prints Salt's stateful line: changed=no comment='...'.
"""
import argparse
import pathlib
import re
import subprocess
import sys

FIELDS = ["Package", "Status", "Version", "Depends", "Pre-Depends", "Description",
          "X-Fleet-Stand-In"]
TRANSITIONAL = re.compile(r"transitional|dummy", re.IGNORECASE)


def query(admindir, packages):
    fmt = "".join("${%s}\x1f" % f for f in FIELDS) + "\x1e"
    cmd = ["dpkg-query"] + (["--admindir=" + admindir] if admindir else [])
    cmd += ["-W", "-f", fmt]
    proc = subprocess.run(cmd + list(packages), capture_output=True, text=True, check=False)
    out = {}
    for record in proc.stdout.split("\x1e"):
        values = record.split("\x1f")
        if len(values) > len(FIELDS):
            info = dict(zip(FIELDS, values, strict=False))
            out[info["Package"]] = info
    return out


def files_of(admindir, package):
    cmd = ["dpkg-query"] + (["--admindir=" + admindir] if admindir else []) + ["-L", package]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    return [line for line in proc.stdout.splitlines() if line.strip()]


def depends(info):
    """The first alternative of every dependency, without version constraints."""
    names = []
    for field in ("Pre-Depends", "Depends"):
        for dep in filter(None, (d.strip() for d in info.get(field, "").split(","))):
            names.append(re.split(r"[\s(:|]", dep, maxsplit=1)[0])
    return names


def renamed(name, other):
    """other is name with one number changed: the successor of a transitional package."""
    a, b = name.split("-"), other.split("-")
    if len(a) != len(b):
        return False
    diff = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    return len(diff) == 1 and diff[0][0].isdigit() and diff[0][1].isdigit()


def of_branch(name, version, branch):
    upstream = version.split(":", 1)[-1]
    return f"-{branch}-" in f"-{name}-" or upstream.startswith(branch + ".")


def empty(files):
    real = [f for f in files if not f.startswith("/usr/share/doc") and f not in ("/.", "/usr",
                                                                                  "/usr/share")]
    return not real


def check(branch, held, drivers, admindir, sysfs, allow_stand_ins=False, stand_ins=None):
    problems = []
    stand_ins = [] if stand_ins is None else stand_ins
    installed = query(admindir, sorted(set(held) | set(drivers)))
    for name in held:
        info = installed.get(name)
        if not info or not info["Status"].endswith(" installed"):
            problems.append(f"{name}: held, but not installed")
            continue
        if info.get("X-Fleet-Stand-In"):
            if not allow_stand_ins:
                problems.append(f"{name} {info['Version']}: held, but a lab stand-in, not the "
                                f"driver ({info['X-Fleet-Stand-In']}): never outside the lab")
            else:
                stand_ins.append(name)
            continue
        deps = depends(info)
        successors = [d for d in deps if renamed(name, d)]
        if TRANSITIONAL.search(info["Description"]) or successors:
            pulls = f": it pulls {', '.join(successors or deps)}" if successors or deps else ""
            problems.append(f"{name} {info['Version']}: held, but a transitional package{pulls}")
            continue
        if empty(files_of(admindir, name)):
            versions = query(admindir, deps)
            ours = [d for d in deps if of_branch(d, versions.get(d, {}).get("Version", ""), branch)]
            if not ours:
                problems.append(f"{name} {info['Version']}: held, but empty, and it pulls "
                                f"nothing of branch {branch} ({', '.join(deps) or 'nothing'})")
    for name in drivers:
        info = installed.get(name)
        if not info or not info["Status"].endswith(" installed"):
            problems.append(f"{name}: the driver package is not installed")
        elif not info["Version"].split(":", 1)[-1].startswith(branch + "."):
            problems.append(f"{name} {info['Version']}: the installed driver is not of the "
                            f"pinned branch {branch}")
    module = pathlib.Path(sysfs) / "module" / "nvidia" / "version"
    if module.is_file():
        loaded = module.read_text().strip()
        if not loaded.startswith(branch + "."):
            problems.append(f"kernel module nvidia {loaded}: the loaded driver is not of the "
                            f"pinned branch {branch}")
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--branch", required=True)
    parser.add_argument("--held", nargs="*", default=[])
    parser.add_argument("--driver", nargs="*", default=[])
    parser.add_argument("--admindir", default=None, help="dpkg database (tests)")
    parser.add_argument("--sysfs", default="/sys")
    parser.add_argument("--allow-stand-ins", action="store_true",
                        help="the lab: a marked stand-in passes, named")
    args = parser.parse_args()
    stand_ins = []
    problems = check(args.branch, args.held, args.driver, args.admindir, args.sysfs,
                     args.allow_stand_ins, stand_ins)
    if problems:
        for line in problems:
            print(line, file=sys.stderr)
        return 1
    standing = (f"; lab stand-in (not the driver): {', '.join(stand_ins)}" if stand_ins
                else "")
    print(f"changed=no comment='{len(args.held)} held packages: the driver of branch "
          f"{args.branch}, none transitional or empty{standing}'")
    return 0


if __name__ == "__main__":
    sys.exit(main())
