"""Run-time boot mode of each node: ``install`` or ``local`` (the default).

The rendered ``pxe/`` tree holds both variants of every host's boot script; the state
directory (``site.pxe_state``, served by nginx as ``/state/``) holds one pair of links
per node that selects one of them::

    <state>/52-54-00-00-00-65.ipxe   -> <pxe_root>/http/hosts/gpu-01/install.ipxe   (iPXE)
    <state>/grub.cfg-52:54:00:00:00:65 -> <pxe_root>/http/hosts/gpu-01/grub-install.cfg (GRUB)

``boot.ipxe`` chains to ``/state/${mac:hexhyp}.ipxe`` and ``grub.cfg`` to
``/state/grub.cfg-${net_default_mac}``; a missing link (a node never armed, a MAC not in
the inventory) falls back to the local disk. A switch replaces each link with
``rename(2)``, so a client reads either the old or the new script, never a partial one;
it needs no render and no dnsmasq reload.

API (used by ``fleet pxe`` and by ``fleet reinstall``)::

    t = target(inv, "gpu-01")          # by hostname or MAC; pxe_root= to override
    set_mode(state_dir(inv), t, "install")   # arm an install: atomic, idempotent
    set_mode(state_dir(inv), t, "local")     # e.g. from the install-finished callback
    get_mode(state_dir(inv), t)        # -> "install" | "local"
    status(state_dir(inv), targets(inv))     # -> [Entry], one per node, inventory order
    strays(state_dir(inv), targets(inv))     # links of MACs no node has (a MAC changed)

``set_mode`` raises :class:`StateError` when the rendered script it would point at is
missing (the tree was not deployed): a link is never left dangling.

Install tokens (``fleet reinstall``) are never in the state directory: TFTP serves that
directory (GRUB builds without HTTP read ``state/`` there) to anyone. They live in the
sibling ``<state>-tokens`` (:func:`tokens_dir`), which no TFTP root reaches and nginx
serves only as the rendered ``location = /state/<mac>.token`` of each node, to that
node's address. The provisioning role creates it ``root:<nginx group>`` 2750 (setgid):
a token is written under a dot-name in that directory (never served), mode 0640 with the
directory's group, fsynced, then renamed into place.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from fleet.inventory.model import Inventory
from fleet.inventory.netutil import try_normalize_mac
from fleet.pxe.modes import DEFAULT as DEFAULT
from fleet.pxe.modes import LOADERS, Loader, script_name
from fleet.pxe.modes import MODES as MODES
from fleet.pxe.modes import Mode as Mode


class StateError(Exception):
    """A mode cannot be set or read (unknown node, rendered tree not deployed)."""


@dataclass(frozen=True, slots=True)
class Target:
    """One node as the state directory sees it: its MAC and its rendered scripts."""

    hostname: str
    mac: str  # lower-case, colon-separated
    hosts_dir: Path  # the deployed pxe/http/hosts

    @property
    def ipxe_link(self) -> str:
        return self.mac.replace(":", "-") + ".ipxe"

    @property
    def grub_link(self) -> str:
        return "grub.cfg-" + self.mac

    @property
    def token_file(self) -> str:
        """The one-time install token of ``fleet reinstall``, while an install is armed,
        in :func:`tokens_dir` (fetched by the installer's late-command; nginx serves it to
        the node's address only, see ``fleet.render.pxe``)."""
        return self.mac.replace(":", "-") + ".token"

    def script(self, mode: Mode, loader: Loader) -> Path:
        return self.hosts_dir / self.hostname / script_name(mode, loader)


@dataclass(frozen=True, slots=True)
class Entry:
    hostname: str
    mac: str
    mode: Mode
    ipxe: str | None  # where the iPXE link points, None when absent
    grub: str | None
    consistent: bool  # both links agree (or both absent)


def state_dir(inv: Inventory) -> Path:
    return Path(inv.raw.site.pxe_state)


def hosts_dir(inv: Inventory, pxe_root: Path | None = None) -> Path:
    return Path(pxe_root if pxe_root is not None else inv.raw.site.pxe_root) / "http" / "hosts"


def target(inv: Inventory, node: str, pxe_root: Path | None = None) -> Target:
    """The node named by hostname or by its provisioning MAC (any spelling)."""
    found = inv.nodes.get(node)
    if found is None:
        mac = try_normalize_mac(node)
        found = next((n for n in inv.nodes.values() if n.mac == mac), None)
    if found is None:
        raise StateError(f"{node}: no such node (hostname or MAC) in {inv.file}")
    return Target(found.hostname, found.mac, hosts_dir(inv, pxe_root))


def targets(inv: Inventory, pxe_root: Path | None = None) -> list[Target]:
    hd = hosts_dir(inv, pxe_root)
    return [Target(n.hostname, n.mac, hd) for n in inv.nodes.values()]


def _replace_link(directory: Path, name: str, dest: Path) -> None:
    tmp = directory / f".{name}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(dest)
    tmp.replace(directory / name)


def tokens_dir(state: Path) -> Path:
    """Where ``state``'s install tokens are published: its sibling ``<name>-tokens``."""
    return state.with_name(state.name + "-tokens")


def _write_token(state: Path, t: Target, token: str) -> None:
    tokens = tokens_dir(state)
    if not tokens.is_dir():
        # the provisioning role makes it root:<nginx group> 2750; made here it is
        # private to root (nginx cannot read it: run the provisioning state first)
        tokens.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = tokens / f".{t.token_file}.{os.getpid()}.tmp"
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, token.encode())
        # the nginx workers read it through the directory's group; nobody else
        os.fchmod(fd, 0o640)
        os.fsync(fd)
    finally:
        os.close(fd)
    tmp.replace(tokens / t.token_file)
    dfd = os.open(tokens, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def remove_token(state: Path, t: Target) -> None:
    (tokens_dir(state) / t.token_file).unlink(missing_ok=True)
    (state / t.token_file).unlink(missing_ok=True)  # where older versions published it


def set_mode(state: Path, t: Target, mode: str, token: str | None = None) -> None:
    """Point both of ``t``'s links at its ``mode`` scripts, each by one atomic rename.

    ``install`` with a ``token`` (``fleet reinstall``) first publishes it as
    ``<state>-tokens/<mac>.token`` for the installer; ``local`` removes any token after the
    switch (the callback, an abort, a failure or an expiry all end in ``local``). A plain
    ``install`` leaves an existing token alone."""
    if mode not in MODES:
        raise StateError(f"{mode!r}: not a boot mode (choose {' or '.join(MODES)})")
    m: Mode = "install" if mode == "install" else "local"
    ipxe, grub = t.script(m, "ipxe"), t.script(m, "grub")
    for path in (ipxe, grub):
        if not path.is_file():
            raise StateError(f"{path}: missing; deploy the rendered pxe/ tree first")
    if token is not None and m != "install":
        raise StateError("a token is published only with the install mode")
    state.mkdir(parents=True, exist_ok=True)
    if token is not None:
        _write_token(state, t, token)
    _replace_link(state, t.grub_link, grub)
    _replace_link(state, t.ipxe_link, ipxe)
    if m == "local":
        remove_token(state, t)


def has_token(state: Path, t: Target) -> bool:
    return (tokens_dir(state) / t.token_file).is_file()


def _mode_of(link: Path) -> tuple[Mode | None, str | None]:
    try:
        dest = str(link.readlink())
    except FileNotFoundError:
        return None, None
    except OSError as exc:  # a plain file where a link belongs: not ours
        raise StateError(f"{link}: not a link ({exc.strerror})") from exc
    name = Path(dest).name
    mode: Mode = "install" if name in {script_name("install", x) for x in LOADERS} else "local"
    return mode, dest


def entry(state: Path, t: Target) -> Entry:
    ipxe_mode, ipxe = _mode_of(state / t.ipxe_link)
    grub_mode, grub = _mode_of(state / t.grub_link)
    # "install" when either loader would install (a half-done switch, fixed by setting
    # the mode again); "local" when both are local or absent
    mode: Mode = "install" if "install" in (ipxe_mode, grub_mode) else DEFAULT
    return Entry(t.hostname, t.mac, mode, ipxe, grub, consistent=ipxe_mode == grub_mode)


def get_mode(state: Path, t: Target) -> Mode:
    return entry(state, t).mode


def status(state: Path, ts: Iterable[Target]) -> list[Entry]:
    return [entry(state, t) for t in ts]


def strays(state: Path, ts: Iterable[Target]) -> list[str]:
    """Names in the state directory that belong to no target: left by a MAC that changed
    in the inventory (harmless, as no client has that MAC any more, but worth removing)."""
    ours = {name for t in ts for name in (t.ipxe_link, t.grub_link, t.token_file)}
    try:
        names = sorted(p.name for p in state.iterdir())
    except FileNotFoundError:
        return []
    return [n for n in names if n not in ours and not n.startswith(".")]
