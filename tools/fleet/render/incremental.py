"""One-node edits at scale: render again only the nodes whose inputs changed.

Beside the output, ``.render.inputs`` keeps what the last render was made of: a hash of
the *context* (the renderer's code and the whole validated inventory except each node's
own facts), a hash per node (the context and that node's own facts) with the files that
node's render made, the site's files made from the context alone
(:func:`fleet.render.context_files`: the pillar's lists, most of the PXE files, the
pictures), and a digest of the identities (inode, size, mtime) of each node's files and
of the site's. The next render renders the nodes whose hash differs and the site's few
files that read nodes' own facts (:func:`fleet.render.fact_files`), and keeps the other
files as they are on disk, unread.

A node's own facts (:data:`LOCAL`) are those no other node's files read (its serial, MACs
and InfiniBand GUID), nor the site's context files; any other change (a node's state,
address or NIC, a group, the site, the code) changes the context, and so every node's
hash: a full render.

The store is input like any other file: anything unexpected in it (not JSON, another
version, a path outside the output, a kept file missing or changed since) means a full
render, never a partial one. ``render --check`` never reads it: it compares a full render.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from array import array
from contextlib import suppress
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import Any

from fleet.inventory.model import Inventory
from fleet.render import fact_files, join, render_parts
from fleet.render.scan import OWNED, existing
from fleet.render.volumes import previous_volumes

STORE = ".render.inputs"
VERSION = 4
SITE = ""  # the site's context files' entry in Plan.stamps (no hostname is empty)
# A node's facts that only its own files (and the site's, always rendered) read; any other
# fact of a node is context. The property test edits each of them.
LOCAL = ("serial", "mac", "bmc_mac", "ib_guid")
_REL = re.compile(rf"(?:{'|'.join(OWNED)})(?:/[A-Za-z0-9._@+=-]+)+")
_RELS = re.compile(rf"(?:{_REL.pattern}\n)+")
_HEX = re.compile(r"[0-9a-f]{64}")


@dataclass
class Plan:
    """What to render: everything (``nodes`` is None) or the site and ``nodes``."""

    context: str
    keys: dict[str, str]  # hostname -> input hash
    nodes: list[str] | None
    keep: dict[str, list[str]]  # hostname -> its files kept from the last render
    why: str  # why a full render, or how many nodes
    site: list[str] = field(default_factory=list)  # the site's context files (kept or made)
    stamps: dict[str, str] = field(default_factory=dict)  # of the kept files: by host, SITE
    old: dict[str, list[str]] = field(default_factory=dict)  # hostname -> last render's files


def _code_hash() -> str:
    """The renderer's code: every file of the fleet package (templates included), in the
    order of their paths' parts (scandir and strings: a third of pathlib's rglob)."""
    found: list[tuple[tuple[str, ...], str]] = []  # (parts below the package, path)
    stack: list[tuple[tuple[str, ...], str]] = [((), os.fspath(Path(__file__).parents[1]))]
    while stack:
        parts, where = stack.pop()
        with os.scandir(where) as entries:
            for entry in entries:
                if entry.is_dir():
                    if entry.name != "__pycache__":
                        stack.append(((*parts, entry.name), entry.path))
                elif entry.is_file():
                    found.append(((*parts, entry.name), entry.path))
    h = hashlib.sha256()
    for parts, path in sorted(found):
        h.update(os.fsencode("/".join(parts)) + b"\0")
        # os.read, not Path.read_bytes: no Path nor buffered file per file (half the time)
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            while chunk := os.read(fd, 1 << 16):
                h.update(chunk)
        finally:
            os.close(fd)
    return h.hexdigest()


def input_hashes(inv: Inventory) -> tuple[str, dict[str, str]]:
    """The context's hash, and each rendered node's (context and own facts)."""
    raw = inv.raw
    # pydantic's own JSON, in the inventory's order (a reordered inventory is a new context:
    # a full render, never a wrong one)
    doc = raw.model_dump_json(exclude={"nodes": {"__all__": set(LOCAL)}})
    h = hashlib.sha256(_code_hash().encode())
    h.update(doc.encode())
    context = h.hexdigest()
    keys = {}
    head = hashlib.sha256(f"{context}\0".encode())  # each node's hash goes on from here
    own_facts = attrgetter(*LOCAL)
    facts = raw.nodes
    for host in inv.nodes:
        h = head.copy()
        h.update(repr(own_facts(facts[host])).encode())  # str or None each: one-to-one
        keys[host] = h.hexdigest()
    return context, keys


def identity(root: Path, files: list[str]) -> str:
    """A digest of the identities (inode, size, mtime) of ``files`` under ``root`` (strings:
    a Path per file is most of the cost at 80,000 files); OSError where one is gone."""
    base = os.fspath(root) + os.sep
    ids = array("q")
    for rel in files:
        st = os.lstat(base + rel)
        ids.extend((st.st_ino, st.st_size, st.st_mtime_ns))
    return digest(ids)


def digest(ids: array[int]) -> str:
    """:func:`identity` of the files whose (inode, size, mtime) are ``ids``, in order."""
    return hashlib.sha256(ids.tobytes()).hexdigest()


def load(root: Path) -> dict[str, Any] | None:
    """The store, checked; None where it is missing or not one fleet wrote."""
    try:
        fd = os.open(root / STORE, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read()
    try:
        doc = json.loads(raw)
        if not _shape_ok(doc):
            return None
    except (ValueError, TypeError, AttributeError, KeyError):
        return None
    return doc  # type: ignore[no-any-return]


def _shape_ok(doc: Any) -> bool:
    if not (isinstance(doc, dict) and doc.get("version") == VERSION
            and _is_hash(doc.get("context")) and isinstance(doc["nodes"], dict)):
        return False
    return all(isinstance(entry, list) and len(entry) == 3 and _is_hash(entry[0])
               and _paths_ok(entry[1]) and _is_hash(entry[2])
               for entry in (doc["site"], *doc["nodes"].values()))


def _is_hash(value: Any) -> bool:
    return isinstance(value, str) and _HEX.fullmatch(value) is not None


def _paths_ok(paths: Any) -> bool:
    """A list of output files' paths (none with '..'): one match of them all, joined."""
    if not isinstance(paths, list):
        return False
    if not paths:
        return True
    joined = "\n".join(paths) + "\n"  # TypeError at a non-string
    return (_RELS.fullmatch(joined) is not None and "/../" not in joined
            and "/..\n" not in joined)


def identity_or_error(root: Path, files: list[str]) -> str | OSError:
    try:
        return identity(root, files)
    except OSError as exc:
        return exc


@dataclass
class Read:
    """What a render reads of its output ``root`` before it knows the inventory (by a
    forked child: :mod:`fleet.render.prefetch`)."""

    root: Path
    store: dict[str, Any] | None
    ids: dict[str, str | OSError] = field(default_factory=dict)  # owner -> identity
    listing: dict[str, list[str]] = field(default_factory=dict)  # top -> its files (rel)
    misfiled: str | None = None  # misfiled_file(store)
    volumes: dict[str, list[str]] | None = None  # previous_volumes(root)


def read(root: Path) -> Read:
    """The store, the identities of the files it lists, and the listing of each top
    directory that could be walked (one with a link or a special file in it is left out:
    the writer walks it itself, and refuses it)."""
    store = load(root)
    got = Read(root, store, misfiled=misfiled_file(store),
               volumes=previous_volumes(root))
    same: dict[str, str] = {}  # the store's own strings: pickled once, not twice
    if store is not None:
        owners = [(SITE, store["site"][1]),
                  *((h, entry[1]) for h, entry in store["nodes"].items())]
        got.ids = {owner: identity_or_error(root, files)
                   for owner, files in owners}
        same = {rel: rel for _owner, files in owners for rel in files}
    for top in OWNED:
        try:
            got.listing[top] = [same.get(rel, rel) for rel in existing(root, top)]
        except OSError:
            continue
    return got


def plan(root: Path, inv: Inventory, got: Read | None = None) -> Plan:
    """What to render; ``got``: the store and its files' identities, already read (of
    this ``root``; another's is not used)."""
    context, keys = input_hashes(inv)
    if got is None or got.root != root:
        store = load(root)
        got = Read(root, store, misfiled=misfiled_file(store))
    store, now, misfiled = got.store, got.ids, got.misfiled
    if store is None:
        return Plan(context, keys, None, {}, f"no usable {STORE}")
    if store["context"] != context:
        return Plan(context, keys, None, {}, "the context changed")
    old: dict[str, list[Any]] = store["nodes"]
    if set(old) != set(keys):
        return Plan(context, keys, None, {}, "nodes were added or removed")
    site_key, site, site_id = store["site"]
    if site_key != context:
        return Plan(context, keys, None, {}, "the site's files are of another context")
    changed = [h for h in keys if old[h][0] != keys[h]]
    keep = {h: old[h][1] for h in keys if old[h][0] == keys[h]}
    if misfiled is not None:
        return Plan(context, keys, None, {}, misfiled)
    ids = {h: old[h][2] for h in keep}
    for owner, files, digest in ((SITE, site, site_id),
                                 *((h, keep[h], ids[h]) for h in keep)):
        whose = "the site's" if owner == SITE else f"{owner}'s"
        found = now[owner] if owner in now else identity_or_error(root, files)
        if isinstance(found, OSError):
            return Plan(context, keys, None, {}, f"{whose} file {found.filename} is gone")
        if found != digest:
            return Plan(context, keys, None, {}, f"{whose} files changed since the last "
                        "render")
    return Plan(context, keys, changed, keep, f"{len(changed)} of {len(keys)} nodes changed",
                site, {**ids, SITE: site_id}, {h: old[h][1] for h in changed})


@dataclass
class Rendered:
    plan: Plan
    files: dict[str, str]  # to write
    keep: list[str]  # to keep as they are on disk, unread (nodes' and the site's)
    removable: set[str] | None  # what may go (None: anything; a full render)


def misfiled_file(store: dict[str, Any] | None) -> str | None:
    """Why the store's lists cannot be trusted whatever the inventory (a node's file that
    is not its own, or one listed as the site's too), or None."""
    if store is None:
        return None
    nodes: dict[str, list[Any]] = store["nodes"]
    for host, (_key, files, _id) in nodes.items():
        for rel in files:
            if not _owns(host, rel):
                return f"{rel} is not {host}'s file"
    if not {rel for _k, files, _i in nodes.values() for rel in files}.isdisjoint(
            store["site"][1]):
        return "a node's file is listed as the site's"
    return None


def _owns(host: str, rel: str) -> bool:
    """Whether ``rel`` can be one of ``host``'s files: its name or a directory is the host's."""
    parts = rel.split("/")
    return host in parts or parts[-1] == f"{host}.sls"


def render(root: Path, inv: Inventory, got: Read | None = None,
           p: Plan | None = None) -> Rendered:
    """The files to write and the paths to keep as they are (see :func:`plan`; ``p``:
    that plan, already made)."""
    if p is None:
        p = plan(root, inv, got)
    if p.nodes is None:
        return full(inv, p)
    site, by_host = render_parts(inv, [inv.nodes[h] for h in p.nodes], context=False)
    keep = [rel for files in p.keep.values() for rel in files] + p.site
    # A re-rendered node's old files may go (its own facts changed what it has); no other.
    removable = set().union(*(files for h, files in p.old.items() if h in by_host))
    p.keep.update({h: sorted(files) for h, files in by_host.items()})
    return Rendered(p, join(site, by_host), keep, removable)


def full(inv: Inventory, p: Plan) -> Rendered:
    """Every node rendered (the store could not be trusted after all)."""
    site, by_host = render_parts(inv, list(inv.nodes.values()))
    p.nodes = None
    p.keep = {h: sorted(files) for h, files in by_host.items()}
    p.site = sorted(set(site).difference(fact_files(inv)))
    p.stamps = {}
    return Rendered(p, join(site, by_host), [], None)


def save(root: Path, p: Plan) -> None:
    """Record the render just written (after the commit); a failure only costs the next
    render its shortcut, so it removes the store rather than leaving an old one."""
    tmp = root / f"{STORE}.tmp"
    try:
        # A kept file is untouched by the commit (not rewritten; a rebuilt tree links it):
        # its identity is the one the plan checked.
        ids = {h: p.stamps.get(h) or identity(root, files) for h, files in p.keep.items()}
        site_id = p.stamps.get(SITE) or identity(root, p.site)
        doc = {"version": VERSION, "context": p.context, "site": [p.context, p.site, site_id],
               "nodes": {h: [p.keys[h], p.keep[h], ids[h]] for h in p.keys}}
        # dumps, not dump: only the one-shot encoder is json's C one (10x at 80,000 files)
        data = json.dumps(doc, separators=(",", ":")).encode()
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        tmp.replace(root / STORE)
    except OSError:
        with suppress(OSError):
            tmp.unlink()
        with suppress(OSError):
            (root / STORE).unlink()
        raise
