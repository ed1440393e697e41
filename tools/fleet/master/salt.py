"""The Salt master through its command-line tools (``salt``, ``salt-run``) over a
:class:`~fleet.master.runner.Runner`: the one Salt client of the day-two verbs.

``call``/``shell`` answer per node of a list (``salt -L``); ``ping`` says whether a minion
answers; ``publish`` (``--async``), ``lookup`` (``jobs.lookup_jid``) and ``find_job``
(``saltutil.find_job``) are a job's life; ``highstate`` publishes ``state.apply`` and
collects the returns from the master's job cache by a deadline. The salt CLI's own wait
gives up on a minion that does not answer ``find_job`` within gather_job_timeout, which
a minion busy installing packages often does not: here a minion is given up on only when
it says, :data:`LOST_AFTER` times in a row, that it no longer runs the job (:class:`Lost`).
A return is judged by fleet.master.highstate. (``fleet apply`` talks to the master
through Salt's Python client for its event bus, fleet.master.pyclient, and keeps the same
rule and verdict.)"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fleet.master.runner import Result, Runner
from fleet.master.text import clean, last_line

FIND_JOB_EVERY = 30.0  # seconds between saltutil.find_job questions while a job runs
FIND_JOB_WAIT = 15.0   # seconds a find_job waits for the minions (salt -t)
LOST_AFTER = 2  # "not running it" answers in a row that give a job up
POLL = 3.0  # seconds between job cache lookups
_JID = re.compile(r"\b(\d{20})\b")


def json_dict(res: Result) -> dict[str, Any]:
    """A salt CLI's ``--out=json`` output as one dict: its JSON objects merged (the salt
    CLI prints one per minion, as each returns; salt-run one for all); {} for none. What
    follows the first thing that is not a JSON object is not read."""
    decoder = json.JSONDecoder()
    text, at = res.stdout, 0
    data: dict[str, Any] = {}
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        try:
            got, at = decoder.raw_decode(text, at)
        except ValueError:
            return data
        if not isinstance(got, dict):
            return data
        data.update(got)


def _said(res: Result) -> bool:
    """The salt CLI's output is its own message, one JSON string and exit 0 ("The salt
    master could not be contacted. Is master running?"), where minions' answers would be."""
    try:
        return isinstance(json.loads(res.stdout), str)
    except ValueError:
        return False


SALT_GATHER_DEFAULT = 10.0  # Salt's own gather_job_timeout


def gather_job_timeout(config_dir: Path) -> float:
    """The master's ``gather_job_timeout`` (its ``master`` file, then ``master.d/*.conf``,
    as Salt reads them; Salt's default where none sets it): how long the salt CLI asks
    the minions that have not answered within ``-t`` whether they still run the job."""
    import yaml

    value = SALT_GATHER_DEFAULT
    for f in [config_dir / "master", *sorted((config_dir / "master.d").glob("*.conf"))]:
        try:
            data = yaml.safe_load(f.read_text(encoding="utf-8"))
        except (OSError, ValueError, yaml.YAMLError):
            continue
        got = data.get("gather_job_timeout") if isinstance(data, dict) else None
        if isinstance(got, (int, float)) and not isinstance(got, bool) and got > 0:
            value = float(got)
    return value


class MasterError(Exception):
    """The master or its tools did not answer: salt or salt-key answered nothing (the
    master is down; ``returncode`` 127: the CLI is missing). The one such exception, for
    every verb (apply, health, status, cabling, reinstall, rollout): exit 4 where a verb
    cannot go on without the master."""

    def __init__(self, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode

    @classmethod
    def of(cls, result: Result) -> MasterError:
        detail = last_line(result.stderr.strip() or result.stdout, 300)
        return cls(f"`salt` exited {result.returncode}" + (f": {detail}" if detail else ""),
                   result.returncode)


class Lost(str):
    """The minion answered, twice, that it is not running the job, and it never returned."""


class NoJobError(Exception):
    """``salt --async`` printed no job id."""


@dataclass
class Collected:
    """What a published job left by its deadline: each node's return, or a :class:`Lost`
    (a node with neither did not return in time)."""

    jid: str
    returns: dict[str, object]

    def missing(self, nodes: Sequence[str]) -> list[str]:
        return [n for n in nodes if n not in self.returns]


class Salt:
    """``timeout``: seconds each call waits for the minions (``salt -t``); ``poll`` and
    ``find_job_every``: how often a job is looked up, and asked after."""

    def __init__(self, runner: Runner, timeout: float = 60.0, *, poll: float = POLL,
                 find_job_every: float = FIND_JOB_EVERY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.runner = runner
        self.timeout = timeout
        self.poll = poll
        self.find_job_every = find_job_every
        self.clock = clock

    def call(self, nodes: Sequence[str], fun: str, *args: str,
             timeout: float | None = None, gather: float | None = None) -> dict[str, Any]:
        """``salt -L NODES FUN ARGS -tT --out=json``: an answer per minion that returned
        (one that did not is absent, or a string saying so); :class:`MasterError` when
        salt answered nothing at all. ``gather``: the master's gather_job_timeout
        (:func:`gather_job_timeout`), which a minion that is down keeps the CLI for after
        T: the CLI is then bounded by both and its start (default T + 60). Not
        ``--static``: the salt CLI runs that as a 100% batch, which first sends every
        minion a ``test.ping`` job of its own (and waits T + gather for a silent one),
        then the call: twice the jobs for one answer."""
        if not nodes:
            return {}
        wait = self.timeout if timeout is None else timeout
        res = self.runner.run(["salt", "-L", ",".join(nodes), fun, *args, f"-t{wait:g}",
                               "--out=json"],
                              timeout=wait + 60 if gather is None else wait + gather + 30)
        data = json_dict(res)
        if not data and (res.returncode != 0 or _said(res)):
            raise MasterError.of(res)
        return data

    def shell(self, nodes: Sequence[str], cmd: str,
              timeout: float | None = None) -> dict[str, Any]:
        """``cmd.run_all`` of a shell command line: retcode, stdout, stderr per node."""
        return self.call(nodes, "cmd.run_all", cmd, "python_shell=True", timeout=timeout)

    def run_argv(self, node: str, argv: Sequence[str], *, timeout: float,
                 runas: str | None = None) -> object:
        """``cmd.run_all`` of an argument list, no shell, bounded by ``timeout`` on the
        node too: the node's answer (a dict with retcode, stdout, stderr when it ran)."""
        args = [json.dumps(list(argv)), "python_shell=False", f"timeout={timeout:g}"]
        if runas:
            args.append(f"runas={runas}")
        return self.call([node], "cmd.run_all", *args, timeout=timeout).get(node)

    def ping(self, node: str) -> str | None:
        """One ``test.ping``: None when the minion answers, else why not. A minion still
        starting (or authenticating) is just not there yet; a missing salt CLI is not
        worth waiting for (:class:`MasterError`, 127)."""
        try:
            got = self.call([node], "test.ping", timeout=FIND_JOB_WAIT).get(node)
        except MasterError as exc:
            if exc.returncode == 127:
                raise
            return str(exc)
        return None if got is True else f"test.ping returned {got!r}"

    def connected(self, timeout: float = 60.0) -> set[str]:
        """The minions connected to the master now, as the master itself sees them
        (``salt-run manage.alived``: its publish port's TCP peers matched to each minion's
        cached ipv4/ipv6 grains); no job is sent to any minion. :class:`MasterError` when
        salt-run answers no list."""
        res = self.runner.run(["salt-run", "manage.alived", "--out=json"], timeout=timeout)
        try:
            data = json.loads(res.stdout) if res.returncode == 0 else None
        except ValueError:
            data = None
        if not isinstance(data, list) or not all(isinstance(m, str) for m in data):
            raise MasterError.of(res) if res.returncode != 0 else MasterError(
                f"`salt-run manage.alived` answered no list of minions: "
                f"{clean(res.stdout, 200)!r}")
        return set(data)

    def publish(self, nodes: Sequence[str], fun: str, *args: str) -> str:
        """``salt --async -L NODES FUN ARGS``: the job id."""
        res = self.runner.run(["salt", "--async", "-L", ",".join(nodes), fun, *args],
                              timeout=120).check()
        m = _JID.search(res.stdout)
        if m is None:
            shown = clean(res.stdout, 200)
            raise NoJobError(f"salt --async {fun} gave no job id: {shown!r}")
        return m.group(1)

    def lookup(self, jid: str) -> dict[str, Any]:
        """``salt-run jobs.lookup_jid``: the returns the job cache holds, by minion."""
        return json_dict(self.runner.run(["salt-run", "jobs.lookup_jid", jid, "--out=json"],
                                         timeout=120))

    def find_job(self, nodes: Sequence[str], jid: str) -> dict[str, Any]:
        """``saltutil.find_job``: {} from a minion that answered and no longer runs the job,
        the job's data from one that does; no entry (or a string) from a silent one."""
        try:
            return self.call(nodes, "saltutil.find_job", jid, timeout=FIND_JOB_WAIT)
        except MasterError:
            return {}  # no answer at all: busy or restarting

    def highstate(self, nodes: Sequence[str], deadline: float,
                  states: Sequence[str] = ()) -> Collected:
        """``state.apply [STATES]`` published to ``nodes`` and collected by ``deadline``
        (this client's clock): each node's return, or :class:`Lost`."""
        jid = self.publish(nodes, "state.apply", *([",".join(states)] if states else []))
        got = Collected(jid, {})
        gone: dict[str, int] = {}
        asked = self.clock()
        while self.clock() < deadline:
            got.returns.update(self.lookup(jid))
            pending = got.missing(nodes)
            if not pending:
                break
            if self.clock() - asked >= self.find_job_every:
                asked = self.clock()
                self._ask(got, pending, gone)
                if not got.missing(nodes):
                    break
            time.sleep(min(self.poll, max(0.0, deadline - self.clock())))
        return got

    def _ask(self, got: Collected, pending: list[str], gone: dict[str, int]) -> None:
        running = self.find_job(pending, got.jid)
        for node in pending:
            # {} = answered, not running it; no answer = busy or restarting: wait
            gone[node] = gone.get(node, 0) + 1 if running.get(node) == {} else 0
            if gone[node] >= LOST_AFTER:
                got.returns[node] = Lost(f"job {got.jid} ended on {node} without a return")
