"""The PXE boot mode of a node (``install`` or ``local``): the stores every verb sets and
reads it through (reinstall, rollout, power, status, the endpoint).

The store is the PXE side's (run-time links under ``site.pxe_state``, or ``fleet pxe`` on
the provisioning host); the verbs only need this interface, so that they can be tested and
wired independently. Both
stores also read a node's mode back (``get_mode``), for the power guard that keeps a
routine power action off a node armed for an install (fleet.pxe.powerguard).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from fleet.inventory.model import Inventory
from fleet.pxe.modes import Mode

BootMode = Mode


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

    def get_mode(self, node: str) -> BootMode:
        """The node's mode as ``fleet pxe status`` reads it; a state directory that is not
        here is no answer (its links' absence would read as ``local``)."""
        from fleet.pxe import state

        sd = self.state_dir if self.state_dir is not None else state.state_dir(self.inv)
        if not sd.is_dir():
            raise BootModeUnavailableError(
                f"{sd}: no PXE state directory on this host (give the provisioning host's "
                "with --pxe-state, or reach it with --pxe-command)")
        try:
            return state.get_mode(sd, state.target(self.inv, node, self.pxe_root))
        except (state.StateError, OSError) as exc:
            raise BootModeUnavailableError(f"cannot read {node}'s boot mode: {exc}") from exc


class CommandBootMode:
    """The boot mode set through ``fleet pxe set`` run by a command, for when the PXE state
    lives on another host than the master: ``ssh head-01 fleet`` in a site where the
    provisioning host is not the master, ``podman exec -i fleet-lab-head-01 fleet-lab`` in
    the lab. The token goes over stdin, never on a command line."""

    def __init__(self, command: list[str], timeout: float = 60.0) -> None:
        self.command, self.timeout = command, timeout

    def set_mode(self, node: str, mode: BootMode, token: str | None = None) -> None:
        import subprocess

        from fleet.master.runner import through

        args = ["pxe", "set", node, mode, "--quiet"]
        if token is not None:
            args.append("--token-stdin")
        argv = through(self.command, args)
        try:
            proc = subprocess.run(argv, input=(token or "") + "\n", capture_output=True,
                                  text=True, timeout=self.timeout, check=False,
                                  start_new_session=True)  # as commands.SubprocessRunner
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BootModeUnavailableError(f"cannot set {node}'s boot mode to {mode}: "
                                           f"`{' '.join(argv)}`: {exc}") from exc
        if proc.returncode != 0:
            last = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            raise BootModeUnavailableError(
                f"cannot set {node}'s boot mode to {mode}: `{' '.join(argv)}` exited "
                f"{proc.returncode}" + (f": {last[-1]}" if last else ""))

    def get_mode(self, node: str) -> BootMode:
        """The node's mode from ``CMD pxe status NODE --json``."""
        mode = self.get_modes([node])[node]
        if isinstance(mode, BootModeUnavailableError):
            raise mode
        return mode

    def get_modes(self, nodes: list[str]
                  ) -> dict[str, BootMode | BootModeUnavailableError]:
        """Each node's mode from one ``CMD pxe status NODE... --json``; raises when the
        command gives no answer, and a node its answer lacks gets its error as its value."""
        import json
        import subprocess

        from fleet.master.runner import through
        from fleet.pxe.modes import MODES

        argv = through(self.command, ["pxe", "status", *nodes, "--json"])
        shown = argv if len(nodes) == 1 else [*argv[:len(self.command) + 2], "...", "--json"]
        who = f"{nodes[0]}'s" if len(nodes) == 1 else f"{len(nodes)} nodes'"
        what = f"cannot read {who} boot mode: `{' '.join(shown)}`"
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                                  text=True, timeout=self.timeout, check=False,
                                  start_new_session=True)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BootModeUnavailableError(f"{what}: {exc}") from exc
        if proc.returncode != 0:
            last = (proc.stderr.strip() or proc.stdout.strip()).splitlines()
            raise BootModeUnavailableError(f"{what} exited {proc.returncode}"
                                           + (f": {last[-1]}" if last else ""))
        try:
            entries = json.loads(proc.stdout).get("nodes", [])
            modes = {str(e["node"]): e.get("mode") for e in entries}
        except (ValueError, AttributeError, TypeError, KeyError) as exc:
            raise BootModeUnavailableError(f"{what}: not its JSON ({exc})") from exc
        out: dict[str, BootMode | BootModeUnavailableError] = {}
        for n in nodes:
            mode = modes.get(n)
            out[n] = ("install" if mode == "install" else "local") if mode in MODES else \
                BootModeUnavailableError(f"{what}: no mode for {n} in its answer"
                                         if mode is None else
                                         f"{what}: mode {str(mode)[:40]!r} is none of {MODES}")
        return out
