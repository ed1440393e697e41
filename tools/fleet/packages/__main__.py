"""python -m fleet.packages [--root CHECKOUT] [--os OS]... : see fleet/packages/__init__.py.

Exit status: 0 every check passed, 1 a package problem, 2 an archive that could not be
used (nothing was checked for that OS), 4 a render failure.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from fleet.apt.archive import OSES, ArchiveError, ScratchApt, keyring
from fleet.apt.facts import from_lowstate
from fleet.packages.check import Result, check_node
from fleet.packages.highstates import (
    REPO,
    pillar_of,
    renderer,
    role_sets,
    with_pinned_sources,
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fleet.packages",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--root", type=Path, default=REPO,
                        help="checkout whose salt/ and pillar/ are rendered (default: this one)")
    parser.add_argument("--os", action="append", choices=sorted(OSES), dest="oses",
                        help="OS release to check (repeatable; default: all)")
    parser.add_argument("--cache", type=Path, default=REPO / ".cache" / "packages",
                        help="scratch apt states and keyrings (git-ignored)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the notes too")
    args = parser.parse_args(argv)
    oses = args.oses or list(OSES)
    args.cache.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results: list[Result] = []
    archive_errors: list[str] = []
    with renderer(args.root) as nodes:
        sets = role_sets(nodes)
        for os_name in oses:
            if not _check_os(args, nodes, sets, os_name, results, archive_errors):
                return 4
    for line in archive_errors:
        print(f"ARCHIVE UNREACHABLE: {line}")
    bad = sum(len(r.problems) for r in results)
    print(f"check-packages: {len(results)} node/OS sets, {bad} problem(s), "
          f"{len(archive_errors)} archive(s) unusable, {time.monotonic() - started:.1f} s "
          f"(salt/ and pillar/ of {args.root})")
    if archive_errors:
        return 2
    return 1 if bad else 0


def _check_os(args: argparse.Namespace, renderer: Any, sets: dict[tuple[str, ...], str],
              os_name: str, results: list[Result], archive_errors: list[str]) -> bool:
    """Every role set's packages against the archive of ``os_name``; False when a highstate
    does not render (its errors printed)."""
    release = OSES[os_name]
    t0 = time.monotonic()
    try:
        apt = ScratchApt(args.cache / os_name, release, keyring(release.distro, args.cache))
    except ArchiveError as exc:
        archive_errors.append(str(exc))
        return True
    updated = False
    for roles, node, pillar in with_pinned_sources(renderer, sets):
        with pillar_of(renderer, node, pillar):
            rendered = renderer.render(node, os_name)
        if rendered.errors:
            print("\n".join(rendered.errors), file=sys.stderr)
            return False
        result = Result(os_name, node, roles, from_lowstate(rendered.lowstate, rendered.files))
        if not updated:
            # the archive list the states render decides what is fetched
            apt.write_sources(result.facts.sources)
            try:
                apt.update()
            except ArchiveError as exc:
                archive_errors.append(str(exc))
                break
            updated = True
        check_node(apt, result)
        results.append(result)
        _report(result, args.verbose)
    print(f"{os_name}: {time.monotonic() - t0:.1f} s", file=sys.stderr)
    return True


def _report(result: Result, verbose: bool) -> None:
    f = result.facts
    head = (f"{result.os} {result.node} [{' '.join(result.roles)}]: {len(f.installs)} "
            f"packages, {len(f.holds)} held, {len(f.removes)} removed, {len(f.pins)} pins")
    if result.ok:
        print(f"ok   {head}; the set installs ({result.resolved} packages); the site "
              f"repository's {result.repo} are fillable")
    else:
        print(f"FAIL {head}")
        for line in result.problems:
            print(f"     {line}")
    if verbose:
        for note in result.notes:
            print(f"     note: {note}")


if __name__ == "__main__":
    sys.exit(main())
