"""The PXE boot mode of a node (``install`` or ``local``), as the reinstall flow needs it.

The store itself belongs to the PXE side (run-time links under ``site.pxe_state``); the
flow only needs this interface, so that it can be tested and wired independently.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

from fleet.inventory.model import Inventory

BootMode = Literal["install", "local"]


class BootModeSetter(Protocol):
    def set_mode(self, node: str, mode: BootMode, token: str | None = None) -> None:
        """``install`` with ``token`` also publishes the one-time token for the node's
        installer; ``local`` withdraws any token."""


class BootModeUnavailableError(Exception):
    """The boot mode could not be set (unknown node, PXE tree not deployed...)."""


class PxeBootMode:
    """The PXE side's store (``fleet.pxe.state``): per-MAC links under ``site.pxe_state``
    pointing at the node's rendered ``install`` or ``local`` scripts."""

    def __init__(self, inv: Inventory, state_dir: Path | None = None,
                 pxe_root: Path | None = None) -> None:
        self.inv, self.state_dir, self.pxe_root = inv, state_dir, pxe_root

    def set_mode(self, node: str, mode: BootMode, token: str | None = None) -> None:
        from fleet.pxe import state

        sd = self.state_dir if self.state_dir is not None else state.state_dir(self.inv)
        try:
            state.set_mode(sd, state.target(self.inv, node, self.pxe_root), mode, token)
        except state.StateError as exc:
            raise BootModeUnavailableError(f"cannot set {node}'s boot mode to {mode}: "
                                           f"{exc}") from exc
