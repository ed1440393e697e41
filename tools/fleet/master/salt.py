"""Salt through its CLI on the master, as the reinstall asks it: JSON answers of a target,
whether a minion answers, and a highstate published asynchronously and collected from the
job cache. (``fleet apply`` talks to the master through Salt's Python client instead,
fleet.apply.master; the reinstall keeps to the CLI its runner can run anywhere, through
``through`` prefixes too.)"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from fleet.master.runner import CommandError, Result, Runner

FIND_JOB_EVERY = 30.0  # seconds between saltutil.find_job questions while a job runs
LOST_AFTER = 2  # "not running it" answers in a row that give a job up


def json_dict(res: Result) -> dict[str, Any]:
    """A salt CLI's ``--out=json`` output as a dict; {} for none, or anything else."""
    try:
        data = json.loads(res.stdout) if res.stdout.strip() else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def salt_json(runner: Runner, target: str, *args: str, timeout: float) -> dict[str, object]:
    """``salt TARGET ARGS --out=json --static`` as a dict."""
    res = runner.run(["salt", target, *args, "--out=json", "--static"], timeout=timeout)
    data = json_dict(res)
    if not data and res.returncode != 0:
        res.check()  # no answer at all: the master is down, or salt is missing
    return data


def ping(runner: Runner, node: str) -> str | None:
    """One ``test.ping``: None when the minion answers, else why not. A minion still
    starting (or authenticating) is just not there yet; a missing salt CLI is not worth
    waiting for."""
    try:
        got = salt_json(runner, node, "test.ping", "-t", "15", timeout=120).get(node)
    except CommandError as exc:
        if exc.result.returncode == 127:
            raise
        return str(exc)
    return None if got is True else f"test.ping returned {got!r}"


class Lost(str):
    """The minion answered, twice, that it is not running the job, and it never returned."""


class NoReturnError(Exception):
    """The job did not return by the deadline."""

    def __init__(self, jid: str) -> None:
        super().__init__(jid)
        self.jid = jid


class NoJobError(Exception):
    """``salt --async`` printed no job id."""


def publish(runner: Runner, node: str, fun: str) -> str:
    """``salt --async NODE FUN``: the job id."""
    res = runner.run(["salt", "--async", node, fun], timeout=120).check()
    m = re.search(r"\b(\d{20})\b", res.stdout)
    if m is None:
        raise NoJobError(f"salt --async {fun} gave no job id: {res.stdout!r}")
    return m.group(1)


def lookup(runner: Runner, jid: str) -> dict[str, object]:
    """``salt-run jobs.lookup_jid``: the returns the job cache holds, by minion."""
    return json_dict(runner.run(["salt-run", "jobs.lookup_jid", jid, "--out=json"],
                                timeout=120))


def highstate(runner: Runner, node: str, deadline: float, poll: float) -> object:
    """``state.apply`` published asynchronously and collected from the master's job cache:
    the minion's return, or :class:`Lost`. The salt CLI's own wait gives up on a minion
    that does not answer ``find_job`` within gather_job_timeout, which a minion busy
    installing packages often does not; here the minion is given up on only when it twice
    says the job no longer runs, or at the deadline (:class:`NoReturnError`)."""
    jid = publish(runner, node, "state.apply")
    gone, last_check = 0, time.monotonic()
    while time.monotonic() < deadline:
        data = lookup(runner, jid)
        if node in data:
            return data[node]
        if time.monotonic() - last_check > FIND_JOB_EVERY:
            last_check = time.monotonic()
            try:
                running = salt_json(runner, node, "saltutil.find_job", jid, "-t", "15",
                                    timeout=120)
            except CommandError:
                running = {}  # no answer: busy or restarting
            # {} = answered, not running it; no answer = busy or restarting: wait
            gone = gone + 1 if running.get(node) == {} else 0
            if gone >= LOST_AFTER:
                return Lost(f"job {jid} ended on {node} without a return")
        time.sleep(min(poll, 3.0))
    raise NoReturnError(jid)
