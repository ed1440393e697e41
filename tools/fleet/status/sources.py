"""The sources of ``fleet status``, each asked once for all the nodes and bounded in time:
a source that cannot be asked raises :class:`SourceError` (its column is then unknown,
with the reason); one that answers gives a value per node (a node's own failure, as a BMC
that does not answer, is that node's value, not the source's).

- power: the BMCs through ``fleet power``'s pool and per-node deadline (fleet.ops.power);
- bmc_hardware: each Redfish BMC's hardware facts (fleet.bmc.facts) against the inventory
  (fleet.discover.drift), at most ``parallel`` at once, their starts spread;
- boot mode: the one boot-mode store (fleet.cliparts.boot_mode_store);
- key: the master's key lists, read here (no salt-key process); minion: one ``salt -L
  NODES test.ping`` job (live), or the master's own view of the connected minions,
  ``salt-run manage.alived`` (the collector: no job on any minion);
- slurm: one ``scontrol show node -o``;
- apply, health: the last results ``fleet apply`` and ``fleet health`` keep
  (fleet.lastrun);
- work: a reinstall or rollout holding the node's lock, or an unfinished one in their
  journals;
- alerts: Prometheus's alerts API (fleet.monitoring.alerts).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from fleet.master.runner import Runner
from fleet.master.text import clean, last_line, printable


class SourceError(Exception):
    """The source could not be asked at all; its column is unknown for every node."""


def _last_line(text: str) -> str:
    return last_line(text, 300)


# --- power -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Power:
    state: str | None  # "on", "off" (what the BMC says), None when it did not tell
    error: str | None = None


def power(names: Sequence[str], client_for: Callable[[str], Any], *, parallel: int,
          deadline: float, secrets: Path | None = None, spread: float = 0.0
          ) -> dict[str, Power]:
    """``fleet power status`` of every node (the same pool, the same deadline; ``spread``:
    the nodes' starts spread over that many seconds); no ``secrets`` store at all is the
    source failing, not each node."""
    from fleet.ops import power as ops_power

    if secrets is not None and not (secrets / "bmc").is_dir():
        raise SourceError(f"{secrets / 'bmc'}: no such directory: the BMC passwords are "
                          "not here (--secrets DIR, or --no-power)")
    results = ops_power.run(names, "status", client_for, lambda _n: [], parallel=parallel,
                            deadline=deadline, spread=spread)
    return {r.node: Power(r.power, "; ".join(r.problems) if r.status.bad else None)
            for r in results}


# --- hardware from the BMCs -------------------------------------------------------------


@dataclass(frozen=True)
class BmcHardware:
    """One BMC's hardware facts against the inventory: the drifts, what it said
    (fleet.bmc.facts.Observed.as_json, escaped), or why it could not be read."""

    drifts: list[Any]  # fleet.discover.drift.Drift
    observed: dict[str, Any] | None = None
    error: str | None = None


def bmc_hardware(inv: Any, names: Sequence[str], client_for: Callable[[str], Any], *,
                 parallel: int, spread: float = 0.0, secrets: Path | None = None
                 ) -> dict[str, BmcHardware]:
    """Each installed node's BMC read (Redfish only: IPMI tells no such facts; a planned
    node's BMC is not asked), at most ``parallel`` at once, the i-th of N starting
    i*spread/N seconds in; each read bounded by its client's call deadline."""
    import time

    from fleet.bmc.base import BmcError
    from fleet.bmc.facts import read
    from fleet.bmc.redfish import RedfishClient
    from fleet.discover.drift import compare

    if secrets is not None and not (secrets / "bmc").is_dir():
        raise SourceError(f"{secrets / 'bmc'}: no such directory: the BMC passwords are "
                          "not here (--secrets DIR, or --no-power)")
    asked = [n for n in names if inv.nodes[n].state != "planned"]
    t0 = time.monotonic()

    def one(i: int, name: str) -> tuple[str, BmcHardware | None]:
        time.sleep(max(0.0, t0 + i * spread / max(1, len(asked)) - time.monotonic()))
        try:
            client = client_for(name)
            if not isinstance(client, RedfishClient):
                return name, None
            seen = read(client)
        except BmcError as exc:
            return name, BmcHardware([], None, str(exc))
        return name, BmcHardware(compare(inv.nodes[name], seen.facts), seen.as_json())

    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(asked)))) as pool:
        got = list(pool.map(one, range(len(asked)), asked))
    return {n: v for n, v in got if v is not None}


# --- boot mode ---------------------------------------------------------------------------


class ModeReader(Protocol):
    def get_mode(self, node: str) -> str: ...


def boot_modes(store: ModeReader, names: Sequence[str], workers: int = 8
               ) -> dict[str, str | Exception]:
    """Each node's mode (``install`` or ``local``), or why it could not be read; a store
    that answers for no node is the source failing (its one reason). Through
    --pxe-command: one ``CMD pxe status NODES --json`` for all of them."""
    from fleet.pxe.bootmode import BootModeUnavailableError, CommandBootMode

    if isinstance(store, CommandBootMode):
        return _command_modes(store, names)

    def one(name: str) -> str | Exception:
        try:
            return store.get_mode(name)
        except BootModeUnavailableError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(names)))) as pool:
        got = dict(zip(names, pool.map(one, names), strict=True))
    if got and all(isinstance(v, Exception) for v in got.values()):
        reasons = {str(v) for v in got.values()}
        raise SourceError(next(iter(reasons)) if len(reasons) == 1 else
                          f"no node's boot mode could be read (first: {got[names[0]]})")
    return got


def _command_modes(store: Any, names: Sequence[str]) -> dict[str, str | Exception]:
    """One ``CMD pxe status NODE... --json`` for all (the store's own reader)."""
    from fleet.pxe.bootmode import BootModeUnavailableError

    try:
        return dict(store.get_modes(list(names)))
    except BootModeUnavailableError as exc:
        raise SourceError(str(exc)) from None


# --- Salt --------------------------------------------------------------------------------


def keys(config_dir: Path, names: Sequence[str]) -> dict[str, str]:
    """Each node's key on the master whose config is in ``config_dir``: accepted, pending,
    rejected, denied or missing; the lists read in this process (fleet.master.keys.listed:
    no salt-key process). The master's ``pki_dir/minions`` must be there (another
    master's config lists nothing, as if no key existed)."""
    from fleet.master.keys import KEY_LISTS, listed
    from fleet.master.runner import master_opts
    from fleet.master.salt import MasterError

    opts = master_opts(config_dir)
    accepted_dir = Path(opts["pki_dir"]) / "minions"
    if not accepted_dir.is_dir():
        raise MasterError(f"{accepted_dir}: no such directory (is --salt-config this "
                          "master's config dir?)")
    lists = listed(opts)
    out = {}
    for name in names:
        where = [label for k, label in KEY_LISTS.items() if name in lists.get(k, [])]
        out[name] = "accepted" if "accepted" in where else (where[0] if where else "missing")
    return out


def ping(runner: Runner, names: Sequence[str], timeout: float,
         gather: float | None = None) -> dict[str, bool]:
    """Which minions answer one ``test.ping`` (``-t timeout``), all in one salt call. A
    minion that is down keeps the CLI ``timeout`` and then the master's ``gather`` (its
    find_job) seconds: the call is bounded by both, and the CLI's start."""
    from fleet.master.salt import Salt

    data = Salt(runner).call(names, "test.ping", timeout=timeout, gather=gather)
    return {n: data.get(n) is True for n in names}


@dataclass(frozen=True)
class Presence:
    """Whether the master sees the minion connected (no job asked it anything)."""

    connected: bool


def presence(runner: Runner, names: Sequence[str], timeout: float = 60.0
             ) -> dict[str, Presence]:
    """Each minion connected to the master or not, from one ``salt-run manage.alived``."""
    from fleet.master.salt import Salt

    up = Salt(runner).connected(timeout)
    return {n: Presence(n in up) for n in names}


# --- Slurm -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Slurm:
    state: str   # scontrol's State, e.g. IDLE, MIXED+DRAIN, DOWN*+NOT_RESPONDING
    reason: str

    @property
    def bad(self) -> bool:
        words = set(self.state.replace("*", "").replace("+", " ").split())
        return bool(words & {"DOWN", "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING",
                             "NOT_RESPONDING", "INVALID_REG", "UNKNOWN"}) or \
            self.state.endswith("*")


def slurm(runner: Runner, names: Sequence[str], timeout: float = 30.0) -> dict[str, Slurm]:
    """The Slurm state and reason of each node slurmctld knows (one ``scontrol``)."""
    from fleet.master.runner import CommandError
    from fleet.master.slurm import show_nodes

    try:
        nodes = show_nodes(runner, timeout=timeout)
    except CommandError as exc:
        res = exc.result
        raise SourceError(f"`scontrol show node` exited {res.returncode}: "
                          f"{_last_line(res.stderr or res.stdout)}") from None
    return {n: Slurm(clean(nodes[n].get("State", "?"), 40),
                     clean(nodes[n].get("Reason", ""), 200))
            for n in names if n in nodes}


# --- the last apply and health -----------------------------------------------------------


def last(state_dir: Path, verb: str, names: Sequence[str]) -> dict[str, Any]:
    """Each node's last ``verb`` (fleet.lastrun.Last), None when none, or the error."""
    from fleet import lastrun

    if not state_dir.is_dir():
        return dict.fromkeys(names)  # nothing kept yet: no node has a result
    out: dict[str, Any] = {}
    for n in names:
        try:
            out[n] = lastrun.read(state_dir, n, verb)
        except (lastrun.LastError, OSError) as exc:
            out[n] = exc
    return out


# --- reinstall and rollout ---------------------------------------------------------------


@dataclass(frozen=True)
class Work:
    running: str | None = None     # "fleet reinstall (pid 12)", "fleet rollout RUN (pid 9)"
    unfinished: str | None = None  # what an unfinished run left, and what to run


def _holder(lock: Path) -> str | None:
    """Who holds ``lock`` (its file's pid and command), None when nobody does. Asks with a
    shared flock taken and dropped at once (a flow starting in that instant is refused
    as busy, as by any other holder)."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            pid, _, command = os.read(fd, 256).decode(errors="replace").strip().partition(" ")
            pid = pid if pid.isdigit() else "?"
            command = printable(command, 80) or "fleet"
            return f"{command} (pid {pid})"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def work(reinstall_state: Path, rollout_state: Path, names: Sequence[str]) -> dict[str, Work]:
    from fleet.master import layout
    from fleet.master.journal import Journal, latest_run
    from fleet.master.rolloutlog import latest

    rollout = latest(Journal(rollout_state).entries()) if rollout_state.is_dir() else None
    rollout_running = _holder(rollout_state / "lock")
    out = {}
    for n in names:
        node_dir = layout.node_dir(reinstall_state, n)
        running = _holder(layout.lock(node_dir))
        unfinished = None
        if running is None:
            st = latest_run(Journal(node_dir).entries())
            if st.unfinished:
                where = f" at {st.failed_step}" if st.failed_step else ""
                unfinished = (f"reinstall {st.run_id} unfinished{where}: `fleet reinstall {n} "
                              "--resume` or `--abort`")
        if (unfinished is None and rollout is not None and rollout.unfinished
                and rollout_running is None and n in rollout.drained):
            unfinished = (f"left drained by unfinished rollout {rollout.run_id}: `fleet "
                          "rollout --resume` or `--abort`")
        out[n] = Work(running, unfinished)
    return out


# --- alerts ------------------------------------------------------------------------------


def alerts(url: str, names: Sequence[str], timeout: float) -> dict[str, list[Any]]:
    from fleet.monitoring import alerts as mon

    try:
        found = mon.by_node(mon.fetch(url, timeout=timeout))
    except mon.AlertsError as exc:
        raise SourceError(str(exc)) from None
    return {n: found.get(n, []) for n in names} | {"": found.get(mon.SITE_WIDE, [])}
