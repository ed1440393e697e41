"""The one rule for powering a node outside a reinstall: never while its next network boot
would install it.

A node whose PXE boot mode is ``install`` (armed by ``fleet reinstall`` or ``fleet pxe
set``, left so by an interrupted run) boots into the installer, which wipes its system
disk: a routine power cycle (``fleet rollout --reboot``, ``fleet power``) would reinstall
it. So a power action is refused for a node whose mode is
``install``, or cannot be read (no PXE state here, an unreadable link, the provisioning
host not answering), naming the node and why; the caller's force flag
(``--ignore-boot-mode``) is the only way past it. The mode is the PXE side's own
(fleet.pxe.state.get_mode, or ``fleet pxe status --json`` on the provisioning host),
read through the boot-mode stores (fleet.pxe.bootmode).
"""

from __future__ import annotations

from typing import Protocol

from fleet.pxe.modes import DEFAULT, Mode

FORCE_FLAG = "--ignore-boot-mode"


class BootModeReader(Protocol):
    def get_mode(self, node: str) -> Mode:
        """The node's boot mode now; raises BootModeUnavailableError when it cannot be
        read."""
        ...


def power_refusal(node: str, reader: BootModeReader, force_flag: str = FORCE_FLAG
                  ) -> str | None:
    """Why no power action may touch ``node`` now (one line naming it, and the caller's
    ``force_flag`` that overrides it), or None when its boot mode is ``local``."""
    from fleet.master.text import clean
    from fleet.pxe.bootmode import BootModeUnavailableError

    try:
        mode = reader.get_mode(node)
    except BootModeUnavailableError as exc:
        return (f"{node}: its PXE boot mode cannot be read ({clean(exc, 300)}): a power "
                "action could boot it into an armed install, wiping its disk; refused "
                f"(give where the boot modes are, or {force_flag})")
    if mode != DEFAULT:
        return (f"{node}: PXE boot mode {mode}: a power action would boot it into the "
                "installer, wiping its disk; refused (`fleet pxe set "
                f"{node} {DEFAULT}` when no install is meant, `fleet reinstall {node}` when "
                f"one is, or {force_flag})")
    return None
