"""``fleet repo fill`` and ``fleet repo list``: the site package repository (docs/repo.md).

``fill`` renders one node's highstate per set of roles (the committed salt/ and pillar/:
`make render` first), resolves what each installs from the archive as its rendered
sources name it (through the apt cache; ``--archive``: the archives themselves), and
puts every held and pinned package, and what is locked to them, into the repository at
``site.apt.repo``, signed by the secrets store's key; where the nodes' Salt source is on,
what the installer installs from Salt's own repository too (``fleet.repo.saltsource``).
A file whose sha256 is not the signed index's, or that the archive does not serve, is
refused by name: the repository is then left as it was.
Run it on the provisioning host whenever the pins change.

Exit codes: 0 filled (or listed); 1 invalid inventory; 2 usage (no site.apt.repo); 4 the
archive, the key or the repository could not be used; 5 the archive does not serve or
mangles a package the site pins.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fleet.cliparts import Parents, add_actions, add_secrets
from fleet.context import Context
from fleet.exitcodes import Exit
from fleet.signals import long_verb

if TYPE_CHECKING:
    from fleet.apt.archive import ScratchApt
    from fleet.apt.facts import NodeFacts

DESCRIPTION = "The site package repository: every package the site pins or holds."


# what a SIGINT/SIGTERM leaves (fleet.signals.long_verb)
STOPPED = ('the repository is left as it was before the package being fetched; run it again')


def register(sub: Any, parents: Parents) -> None:
    _p, actions = add_actions(sub, "repo", DESCRIPTION,
                              "exit codes: 0 ok, 1 invalid inventory, 2 usage, 4 archive, "
                              "key or repository unusable, 5 a pinned package refused")
    sp = actions.add_parser("fill", parents=list(parents),
                            help="fetch what the pins and holds need that it lacks",
                            description="Fill the repository from the archive: each file "
                                        "checked against the signed index's sha256.")
    sp.add_argument("--repo", type=Path, metavar="DIR",
                    help="the repository (default: the inventory's site.apt.repo)")
    add_secrets(sp, "the secrets store holding the signing key (default: ./secrets)")
    sp.add_argument("--archive", action="store_true",
                    help="fetch from the archives themselves (FLEET_UBUNTU_MIRROR, ...), not "
                         "through the apt cache the rendered sources name")
    sp.add_argument("--cache", type=Path, default=Path(".cache") / "packages", metavar="DIR",
                    help="scratch apt state (default: .cache/packages)")
    sp.add_argument("--salt-keyring", type=Path, metavar="FILE",
                    help="the keyring of Salt's repository, whose salt-minion the installer "
                         "installs (default: the one base.apt writes on this host)")
    sp = actions.add_parser("list", parents=list(parents), help="what it holds",
                            description="The packages the repository holds; stand-ins named.")
    sp.add_argument("--repo", type=Path, metavar="DIR",
                    help="the repository (default: the inventory's site.apt.repo)")


@long_verb(STOPPED)
def run(args: argparse.Namespace, ctx: Context) -> Exit:
    from fleet.render import bootstrap

    inv = ctx.inventory()
    site = inv.raw.site
    if args.repo is None and site.apt.repo is None:
        print("fleet repo: the inventory sets no site.apt.repo (and no --repo was given)",
              file=sys.stderr)
        return Exit.USAGE
    repo = args.repo or Path(str(site.apt.repo))
    codename = bootstrap.UBUNTU_CODENAMES[site.os.release]
    if args.repo_verb == "list":
        return _list(ctx, repo, codename)
    return _fill(args, ctx, repo, codename, f"ubuntu-{site.os.release}")


def _list(ctx: Context, repo: Path, codename: str) -> Exit:
    from fleet.apt.facts import deb822
    from fleet.repo import reprepro, standin

    index = reprepro.packages_index(repo, codename)
    if not index.is_file():
        print(f"fleet repo: {index}: no such index (fleet repo fill makes it)", file=sys.stderr)
        return Exit.IO
    rows = [{"package": s["Package"], "version": s["Version"],
             "stand_in": s.get(standin.MARKER)} for s in deb822(index.read_text())]
    if ctx.out.json:
        ctx.out.emit({"repo": str(repo), "codename": codename, "packages": rows})
        return Exit.OK
    for row in rows:
        extra = f"  STAND-IN: {row['stand_in']}" if row["stand_in"] else ""
        print(f"{row['package']} {row['version']}{extra}")
    return Exit.OK


def _fill(args: argparse.Namespace, ctx: Context, repo: Path, codename: str,
          os_name: str) -> Exit:
    from fleet.apt.archive import OSES, ArchiveError, ScratchApt, keyring
    from fleet.apt.facts import from_lowstate
    from fleet.packages.highstates import REPO, renderer, role_sets
    from fleet.repo import fill, reprepro, signing

    release = OSES[os_name]
    cache = args.cache.resolve()
    try:
        with renderer(REPO) as nodes:
            facts = []
            for node in role_sets(nodes).values():
                rendered = nodes.render(node, os_name)
                if rendered.errors:
                    print("\n".join(rendered.errors), file=sys.stderr)
                    return Exit.FAILED
                facts.append((node, from_lowstate(rendered.lowstate, rendered.files)))
        apt = ScratchApt(cache / f"repo-{os_name}", release, keyring(release.distro, cache))
        apt.write_sources(facts[0][1].sources, keep_uris=not args.archive)
        if (refused := _salt_source(args, apt, facts)) is not None:
            return refused
        apt.update()
        target = fill.Target(repo.resolve(), args.secrets.resolve(), codename)
        report = fill.fill(apt, facts, target, repo.resolve() / reprepro.STATE / "incoming")
    except fill.FillError as exc:
        print(f"fleet repo fill: {exc}", file=sys.stderr)
        return Exit.FAILED
    except (ArchiveError, reprepro.RepoError, signing.SigningError, OSError) as exc:
        print(f"fleet repo fill: {exc}", file=sys.stderr)
        return Exit.IO
    if ctx.out.json:
        ctx.out.emit({"repo": str(repo), "codename": codename,
                      "packages": [e.__dict__ for e in report.entries]})
    elif not args.quiet:
        for e in report.entries:
            if e.origin != "held":
                print(f"{e.origin}: {e.name} {e.version}")
        print(report.summary())
    return Exit.OK


def _salt_source(args: argparse.Namespace, apt: ScratchApt,
                 facts: list[tuple[str, NodeFacts]]) -> Exit | None:
    """Salt's own repository joins the fill where the nodes' Salt source is on: what the
    installer installs from it is kept too (None: nothing refused)."""
    from fleet.apt.facts import deb822
    from fleet.render import bootstrap
    from fleet.repo import saltsource

    salt = saltsource.enabled(facts[0][1].sources.get(bootstrap.SOURCES))
    if salt is None:
        return None
    # base.apt's copy on the provisioning host, where the fill runs
    salt_keyring = args.salt_keyring or Path(bootstrap.KEYRING)
    if not salt_keyring.is_file():
        print(f"fleet repo fill: {salt_keyring}: no Salt keyring (base.apt puts it "
              "there; or give --salt-keyring FILE)", file=sys.stderr)
        return Exit.IO
    uri = deb822(salt)[0]["URIs"]
    apt.add_source("salt", salt, salt_keyring.resolve(),
                   saltsource.upstream(uri) if args.archive else None)
    for _node, node_facts in facts:
        node_facts.installs += [p for p in saltsource.INSTALLS if p not in node_facts.installs]
    return None
