"""``python -m fleet.pycache add LOCK...``: fill the site's Python package cache from uv.lock
files (docs/operations.md, Python package cache)."""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from fleet.exitcodes import Exit
from fleet.inventory.schema.compute import PythonCache
from fleet.pycache import lock, store


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m fleet.pycache",
        description="The site's Python package cache (a wheelhouse with a PEP 503 index, "
                    "served by the provisioning host's nginx at /pypi/).",
        epilog="exit codes: 0 ok, 2 usage or a lock the cache cannot take, 4 I/O, "
               "5 a file could not be fetched or does not match its lock's sha256")
    sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    a = sub.add_parser("add", help="cache every wheel a uv.lock names, checked against its "
                                   "sha256; rewrite the index",
                       description="Fetch the wheels of LOCK's index packages (those of "
                                   "--platform and pure-Python ones) into DIR, each refused "
                                   "unless its sha256 is the lock's, and rewrite DIR's "
                                   "simple index. Files already cached are not fetched again.")
    a.add_argument("locks", nargs="+", type=Path, metavar="LOCK", help="uv.lock files")
    a.add_argument("--dir", type=Path, default=Path(PythonCache().dir),
                   help="the cache's root (default: %(default)s, the inventory's "
                        "compute.python_cache.dir default)")
    a.add_argument("--from", dest="source", type=Path, metavar="WHEELHOUSE",
                   help="take the files from this directory (flat, by file name) instead "
                        "of their URLs")
    a.add_argument("--platform", action="append", metavar="REGEX",
                   help="a wheel platform tag to keep besides 'any' (repeatable; default: "
                        f"{lock.DEFAULT_PLATFORMS[0]})")
    a.add_argument("--python", action="append", type=_version, metavar="X.Y",
                   help="keep only the wheels a CPython X.Y installs (repeatable; default: "
                        "every Python's)")
    a.add_argument("--json", action="store_true", help="one JSON document on stdout")
    a.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    return p


def _version(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d)\.(\d{1,2})", text)
    if m is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a Python version X.Y")
    return int(m[1]), int(m[2])


def _fail(args: argparse.Namespace, code: Exit, message: str) -> Exit:
    if args.json:
        print(json.dumps({"ok": False, "errors": [{"message": message}]}))
    print(f"error: {message}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    platforms = args.platform or list(lock.DEFAULT_PLATFORMS)
    try:
        wanted = [w for path in args.locks
                  for w in lock.wheels(path, platforms, args.python or ())]
        added = store.add(args.dir, list({w.path: w for w in wanted}.values()), args.source)
    except lock.LockError as exc:
        return _fail(args, Exit.USAGE, str(exc))
    except store.StoreError as exc:
        return _fail(args, Exit.FAILED, str(exc))
    except OSError as exc:
        return _fail(args, Exit.IO, f"{args.dir}: {exc}")
    fetched = [a.wheel.filename for a in added if a.fetched]
    if args.json:
        print(json.dumps({"ok": True, "dir": str(args.dir), "wheels": len(added),
                          "fetched": fetched}))
    elif not args.quiet:
        print(f"{args.dir}: {len(added)} wheels of {len(args.locks)} lock(s) cached, "
              f"{len(fetched)} fetched now")
    return Exit.OK


if __name__ == "__main__":
    sys.exit(main())
