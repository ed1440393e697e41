"""Each node's LLDP neighbours, asked through Salt: one ``cmd.run_all`` of ``lldpcli -f json
show neighbors`` over every node at once, bounded in time.

A minion is untrusted: its answer may be anything. Only a ``cmd.run_all`` answer with exit
status 0 and at most :data:`MAX_ANSWER` characters of lldpcli's JSON is read (by
:func:`fleet.cabling.lldp.neighbours`); anything else is that node's error, as printable
one-line text, and the node is "not observed"."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fleet.cabling.lldp import LldpFormatError, Neighbour, neighbours
from fleet.master.runner import Runner
from fleet.master.text import clean

LLDPCLI = "lldpcli -f json show neighbors"
# a node with 4 NICs and a neighbour each answers in about 6 KB; 4096 neighbours
# (lldp.MAX_NEIGHBOURS) of the largest legal strings still fit
MAX_ANSWER = 8 * 1024 * 1024


@dataclass
class Observed:
    """What the nodes reported: neighbours by node, and why the others are not known."""

    neighbours: dict[str, list[Neighbour]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


def salt_run_all(runner: Runner, nodes: Sequence[str], command: str, timeout: float,
                 gather: float) -> dict[str, Any]:
    """``salt -L NODES cmd.run_all COMMAND`` through the one Salt client
    (fleet.master.salt). A minion that is down costs the CLI's ``timeout``, then the
    master's ``gather`` (find_job) seconds; the call is bounded by both."""
    from fleet.master.salt import MasterError, Salt

    try:
        return Salt(runner).call(nodes, "cmd.run_all", command, "python_shell=False",
                                 timeout=timeout, gather=gather)
    except MasterError as exc:  # the one "master did not answer", its text cleaned
        raise MasterError(clean(str(exc), 300), exc.returncode) from exc


def read_answer(answer: Any) -> list[Neighbour]:
    """One minion's ``cmd.run_all`` answer as neighbours; ValueError saying what was wrong."""
    if not isinstance(answer, dict):
        raise ValueError(f"no lldpcli answer: {clean(answer, 200)}")
    code, out = answer.get("retcode"), answer.get("stdout")
    if not isinstance(out, str) or isinstance(code, bool) or not isinstance(code, int):
        raise ValueError("not a cmd.run_all answer (no retcode and stdout)")
    if code != 0:
        err = answer.get("stderr")
        why = clean(err if isinstance(err, str) and err.strip() else out, 200)
        raise ValueError(f"lldpcli exited {code}" + (f": {why}" if why else "")
                         + (" (is lldpd running? the lldp role installs it)"
                            if code == 127 or "unable to connect" in why else ""))
    if len(out) > MAX_ANSWER:
        raise ValueError(f"lldpcli's answer is {len(out)} characters, more than {MAX_ANSWER}")
    try:
        doc = json.loads(out)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"lldpcli's answer is not JSON: {clean(exc, 120)}") from None
    try:
        return neighbours(doc)
    except LldpFormatError as exc:
        raise ValueError(f"lldpcli's answer: {clean(exc, 200)}") from None


def observe(answers: dict[str, Any], nodes: Sequence[str]) -> Observed:
    """The nodes' answers read; a node absent from ``answers`` did not answer in time.
    Answers from minions not asked are ignored."""
    got = Observed()
    for node in nodes:
        if node not in answers:
            got.errors[node] = "the minion did not answer"
            continue
        try:
            got.neighbours[node] = read_answer(answers[node])
        except ValueError as exc:
            got.errors[node] = str(exc)
    return got
