"""The boot modes of a node, defined once: their names, the default, and the name of each
host's rendered boot script for a mode (``fleet render`` writes them, ``fleet pxe`` and
``fleet reinstall`` link to them)."""

from __future__ import annotations

from typing import Literal, get_args

Mode = Literal["install", "local"]
MODES: tuple[Mode, ...] = get_args(Mode)
DEFAULT: Mode = "local"
Loader = Literal["ipxe", "grub"]
LOADERS: tuple[Loader, ...] = get_args(Loader)


def script_name(mode: Mode, loader: Loader) -> str:
    """``install.ipxe``, ``local.ipxe``, ``grub-install.cfg``, ``grub-local.cfg``."""
    return f"{mode}.ipxe" if loader == "ipxe" else f"grub-{mode}.cfg"
