"""The PXE boot mode of a node (``install`` or ``local``), as the reinstall flow needs it.

The store itself belongs to the PXE side (run-time links under ``site.pxe_state``); the
flow only needs this interface, so that it can be tested and wired independently.
"""

from __future__ import annotations

from typing import Literal, Protocol

BootMode = Literal["install", "local"]


class BootModeSetter(Protocol):
    def set_mode(self, node: str, mode: BootMode) -> None: ...


class BootModeUnavailableError(Exception):
    pass


class Unavailable:
    """Stands in until a real store is configured: every call fails with the reason."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def set_mode(self, node: str, mode: BootMode) -> None:
        raise BootModeUnavailableError(f"cannot set {node}'s boot mode to {mode}: "
                                       f"{self.reason}")
