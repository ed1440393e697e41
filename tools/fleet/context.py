"""The one context every verb's ``run(args, ctx)`` is handed (fleet.commands): the
inventory loader, the Salt master's config dir (``--salt-config``: declared once, in
fleet.cliparts, honouring ``$FLEET_SALT_CONFIG`` the same way for every verb), the state
directories, the output mode and its one JSON document (fleet.output), and progress."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from fleet.output import Output

if TYPE_CHECKING:
    from fleet.inventory.load import Verdict
    from fleet.inventory.model import Inventory
    from fleet.master.runner import SubprocessRunner


class Progress:
    """Stage messages on stderr, only for a person at a terminal (or with --verbose)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()

    def __call__(self, msg: str) -> None:
        if self.enabled:  # past fleet.output's tee: progress is not an error of the run
            print(f"[{time.perf_counter() - self.t0:6.2f}s] {msg}",
                  file=getattr(sys.stderr, "inner", sys.stderr), flush=True)


class Checked:
    """An inventory and its verdict (:class:`fleet.inventory.load.Verdict`), with what a
    valid one must still pass before a verb acts on it: a standby master never drives a
    node (fleet.inventory.masters: NotActiveError, exit 6)."""

    def __init__(self, ctx: Context, inv: Inventory, verdict: Verdict) -> None:
        self.ctx = ctx
        self.inv = inv
        self.verdict = verdict
        self._passed = False

    def wait(self) -> None:
        """Raise the inventory's problems, or let the verb go on (once checked, at once)."""
        if self._passed:
            return
        self.verdict.wait()
        self.ctx.progress(f"{len(self.inv.nodes)} nodes valid")
        from fleet.audit.record import changes
        from fleet.inventory.masters import require_active

        require_active(self.inv, self.ctx.args.verb, changes(self.ctx.args))
        self._passed = True

    def __enter__(self) -> Checked:
        return self

    def __exit__(self, *exc: object) -> None:
        self.verdict.close()  # a check not waited for: its child reaped


class Context:
    # a plain class: a dataclass compiles its methods at import, on every run of every verb
    def __init__(self, args: argparse.Namespace, out: Output, progress: Progress) -> None:
        self.args = args
        self.out = out
        self.progress = progress

    @classmethod
    def of(cls, args: argparse.Namespace) -> Context:
        quiet = bool(getattr(args, "quiet", False))
        verbose = bool(getattr(args, "verbose", False))
        out = Output(args.verb, json_mode=bool(getattr(args, "json", False)), quiet=quiet,
                     verbose=verbose)
        return cls(args, out, Progress(enabled=(verbose or sys.stderr.isatty()) and not quiet))

    def inventory(self) -> Inventory:
        """The inventory, the same for every verb: the secrets store is checked (as
        errors) only when ``--secrets`` names it for validate; a ``./secrets`` found here
        only adds warnings. On the standby master a run that would change nodes stops
        here (fleet.inventory.masters: NotActiveError, exit 6)."""
        checked = self.inventory_pending(behind=False)
        checked.wait()
        return checked.inv

    def inventory_pending(self, *, behind: bool = True) -> Checked:
        """:meth:`inventory`, returned while a large one's cross-object rules are still
        being checked by a forked child (fleet.inventory.load.parse_pending): the caller
        prints and writes nothing before :meth:`Checked.wait`, which raises what
        :meth:`inventory` would (``fleet render`` renders meanwhile)."""
        from fleet.inventory.load import load_pending

        args = self.args
        self.progress(f"validating {args.inventory}")
        store = getattr(args, "check_secrets", None)
        found = Path("secrets") if store is None and Path("secrets").is_dir() else None
        inv, verdict = load_pending(args.inventory, args.overlay, secrets=store,
                                    advise=found, behind=behind)
        return Checked(self, inv, verdict)

    def targets(self) -> tuple[Inventory, list[str]]:
        """The inventory and the hostnames the verb's TARGET names (its default target
        without one); a TARGET that names no node is a usage error (fleet.cli)."""
        from fleet.cliparts import target_nodes

        inv = self.inventory()
        return inv, target_nodes(self.args, inv)

    def warn(self, inv: Inventory) -> None:
        """The inventory's warnings on stderr (not with -q or --json: JSON carries them)."""
        if not self.out.quiet and not self.out.json:
            for w in inv.warnings:
                print(f"warning: {w}", file=sys.stderr)

    def runner(self) -> SubprocessRunner:
        """The command runner of the master's and Slurm's tools, from the verb's
        ``--salt-config`` (cliparts, declared once) and ``--slurm-command`` where it has one."""
        from fleet.master.runner import runner_for

        return runner_for(self.args.salt_config, getattr(self.args, "slurm_command", None))
