"""What every step gets: the node, its state directory and the parts it may use."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fleet.bmc.base import BmcClient
from fleet.inventory.model import Inventory, Node
from fleet.master import layout
from fleet.master.journal import Journal
from fleet.master.keys import MinionKeys
from fleet.master.runner import Runner
from fleet.master.salt import Salt
from fleet.pxe.bootmode import BootModeSetter
from fleet.reinstall.tokens import TokenStore


@dataclass(frozen=True)
class Options:
    force: bool = False  # do not wait for running jobs to finish when draining
    install_timeout: float = 3600.0  # power-on to the installer's callback
    power_timeout: float = 120.0  # power-off to the BMC reporting the node off
    drain_timeout: float = 3600.0
    converge_timeout: float = 1800.0
    # the callback to the minion's first answer before converge power-cycles the node
    # once; None: fleet.reinstall.bootguard's share of converge_timeout; 0: never
    boot_grace: float | None = None
    health_timeout: float = 300.0  # checks are retried until they pass or this is spent
    poll: float = 5.0
    reason: str = "fleet reinstall"

    @property
    def token_ttl(self) -> float:
        return self.install_timeout + 600.0


class StepFailedError(Exception):
    """A step could not do its job; the message says why, for the operator."""


class SkipStepError(Exception):
    """The step does not apply to this node; the message says why."""


@dataclass
class Context:
    inventory: Inventory
    node: Node
    state_root: Path
    runner: Runner
    boot: BootModeSetter
    bmc: Callable[[], BmcClient]
    keys: MinionKeys
    options: Options = field(default_factory=Options)
    say: Callable[[str], None] = print
    warnings: list[str] = field(default_factory=list)
    run_id: str = ""

    @property
    def name(self) -> str:
        return self.node.hostname

    @property
    def node_dir(self) -> Path:
        return layout.node_dir(self.state_root, self.node.hostname)

    @property
    def journal(self) -> Journal:
        return Journal(self.node_dir)

    @property
    def tokens(self) -> TokenStore:
        return TokenStore(self.node_dir)

    @property
    def token_file(self) -> Path:
        """The token in clear, 0600, for the delivery to the installer; removed once used."""
        return layout.token_file(self.node_dir)

    @property
    def key_file(self) -> Path:
        return layout.private_key(self.node_dir)

    @property
    def public_key_file(self) -> Path:
        return layout.public_key(self.node_dir)

    @property
    def salt(self) -> Salt:
        return Salt(self.runner, poll=min(self.options.poll, 3.0))

    def is_slurm_node(self) -> bool:
        return self.node.has("slurm.compute")
