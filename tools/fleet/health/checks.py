"""The checks of ``fleet health``: one Salt call per check across every targeted minion
(``salt -L a,b,... cmd.run_all ...``), run side by side, plus one ``scontrol show node
-o`` for all Slurm nodes; then each node's findings from the answers (fleet.health.parse).

Which node gets which check follows its roles and profile (:func:`plan`):

- every service its states keep running: first one ``state.show_lowstate`` across the
  nodes (the master's states over each node's pillar, so its full role set:
  fleet.inventory.roles), then every ``service.running`` unit of each node must be
  active (:func:`expected_units`). No hand list: a role's new service is checked once
  its state runs it, and a stand-in that a container does not start is not expected.
- ``nvidia``: GPU count and persistence mode (nvidia-smi), NVIDIA Xid errors in the
  kernel log since boot; ``infiniband``: IB ports. These three are hardware checks,
  skipped (and said so) where pillar ``fleet:hardware`` is false.
- ``slurm.compute``: slurmd registered in slurmctld with the profile's GPU GRES, munge
  (a credential made on the node decodes).
- ``mkv.volume``: every data disk mounted (salt ``mount.active``) and the volume
  answering HTTP where the array's master reaches it; ``mkv.master`` each array's HTTP
  port.
- every node: time sync (``chronyc tracking``: synchronised, clock within 1 s).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from fleet.health import parse
from fleet.health.expect import data_mounts
from fleet.inventory.model import Inventory, Node
from fleet.master import slurm
from fleet.master.runner import Runner
from fleet.master.salt import MasterError, Salt
from fleet.master.text import clean

HTTP_TIMEOUT = 10  # seconds curl waits for each answer
OK, PROBLEM, WARNING, SKIPPED = "ok", "problem", "warning", "skipped"


@dataclass(frozen=True)
class Finding:
    check: str
    status: str  # ok | problem | warning | skipped
    detail: str

    def as_json(self) -> dict[str, str]:
        return {"check": self.check, "status": self.status, "detail": self.detail}


@dataclass
class NodeReport:
    node: str
    findings: list[Finding] = field(default_factory=list)
    slurm: dict[str, str] | None = None  # scontrol's fields of a Slurm node

    @property
    def healthy(self) -> bool:
        return not any(f.status == PROBLEM for f in self.findings)

    @property
    def problems(self) -> list[str]:
        return [f.detail for f in self.findings if f.status == PROBLEM]

    def add(self, check: str, good: bool, detail: str) -> None:
        self.findings.append(Finding(check, OK if good else PROBLEM, detail))


# --- what to ask whom -------------------------------------------------------------------


LOWSTATE_FUN = "state.show_lowstate"
UNIT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:_.@-]{0,199}$")
UNIT_SUFFIXES = (".service", ".timer", ".socket", ".mount", ".path", ".target")


def units_running(lowstate: Any) -> list[str] | str:
    """The units a node's states keep running (``service.running``), from its answer to
    ``state.show_lowstate`` (untrusted: each name checked); a str says why there are none
    to check: the minion did not answer, or its states do not render."""
    if not isinstance(lowstate, list):
        return NO_ANSWER if lowstate is None or isinstance(lowstate, str) else \
            f"states not read: {clean(repr(lowstate), 120)}"
    errors = [c for c in lowstate if not isinstance(c, dict)]
    if errors:
        return f"its states do not render: {clean(str(errors[0]), 200)}"
    units: list[str] = []
    for chunk in lowstate:
        if (chunk.get("state"), chunk.get("fun")) != ("service", "running"):
            continue
        name = chunk.get("name")
        if not isinstance(name, str) or not UNIT.match(name):
            return f"states name a unit that is not one: {clean(repr(name), 80)}"
        units.append(name if name.endswith(UNIT_SUFFIXES) else f"{name}.service")
    return list(dict.fromkeys(units))


def expected_units(salt: Salt, nodes: list[Node],
                   progress: Callable[[str], None]) -> dict[str, list[str] | str]:
    """Each node's units that must be active (:func:`units_running`), by one salt call."""
    names = [n.hostname for n in nodes]
    if not names:
        return {}
    try:
        got = salt.call(names, LOWSTATE_FUN)
    except MasterError as exc:
        progress(f"states: not read: {exc}")
        return dict.fromkeys(names, f"states not read: {exc}")
    progress(f"states: {len(got)} answer(s)")
    return {n: units_running(got.get(n)) for n in names}


def gpu_count(node: Node) -> int | None:
    gpu = node.profile.gpu
    return gpu.count if gpu is not None and node.has("nvidia") else None


def ib_count(node: Node) -> int:
    if not node.has("infiniband"):
        return 0
    return sum(1 for nic in node.profile.nics.values() if nic.kind == "infiniband")


def mastered_arrays(inv: Inventory, host: str) -> list[str]:
    if inv.raw.mkv is None:
        return []
    return [name for name, a in inv.raw.mkv.arrays.items() if a.master == host]


def mkv_probe(inv: Inventory, master: str, volumes: list[Node]) -> str:
    """One command for the array master ``master``: ``volume:<node> CODE`` for each
    volume (at the name:port in mkv's -volumes: the master redirects clients there, so
    this is the path that must work) and ``master:<array> CODE`` for each of its arrays.
    Any status below 500 is an answer; 0 is none."""
    assert inv.raw.mkv is not None
    curl = f"curl -s --noproxy '*' -o /dev/null -m {HTTP_TIMEOUT} -w '%{{http_code}}'"
    lines = []
    for v in volumes:
        assert v.mkv_array is not None
        port = inv.raw.mkv.arrays[v.mkv_array].volume_port
        url = shlex.quote(f"http://{v.hostname}:{port}/")
        lines.append(f"echo volume:{v.hostname} $({curl} {url})")
    for name in mastered_arrays(inv, master):
        url = shlex.quote(f"http://{master}:{inv.raw.mkv.arrays[name].port}/")
        lines.append(f"echo master:{name} $({curl} {url})")
    return "; ".join(lines) + "; true"


# --- asking -----------------------------------------------------------------------------


def stdout_of(answer: Any) -> str | None:
    """The stdout of a ``cmd.run_all`` answer; None when the minion did not answer."""
    if isinstance(answer, dict) and "stdout" in answer:
        return str(answer.get("stdout", ""))
    return None


@dataclass
class Answers:
    """What the calls returned, by check then node; ``scontrol`` for Slurm."""

    by_check: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # check -> why it was not asked
    scontrol: dict[str, dict[str, str]] | None = None
    expected: dict[str, list[str] | str] = field(default_factory=dict)  # expected_units

    def get(self, check: str, node: str) -> Any:
        return self.by_check.get(check, {}).get(node)


@dataclass(frozen=True)
class Call:
    check: str
    nodes: list[str]
    run: Callable[[], dict[str, Any]]


def plan(inv: Inventory, nodes: list[Node], salt: Salt,
         expected: dict[str, list[str] | str]) -> list[Call]:
    """The salt calls for ``nodes``: one per check, each across every node it concerns
    (the mkv probe once per array master); ``expected``: :func:`expected_units`."""
    names = [n.hostname for n in nodes]
    gpu = [n.hostname for n in nodes if gpu_count(n)]
    nvidia = [n.hostname for n in nodes if n.has("nvidia")]
    ib = [n.hostname for n in nodes if ib_count(n)]
    hw = list(dict.fromkeys(gpu + nvidia + ib))
    slurm = [n.hostname for n in nodes if n.has("slurm.compute") or n.has("slurm.controller")]
    volumes = [n for n in nodes if n.has("mkv.volume") and data_mounts(n)]
    with_units = {n: us for n, us in expected.items() if isinstance(us, list)}
    every_unit = list(dict.fromkeys(u for us in with_units.values() for u in us))
    calls = [
        Call("hardware", hw, lambda: salt.call(hw, "pillar.get", "fleet:hardware", "True")),
        Call("gpu", gpu, lambda: salt.shell(gpu, parse.GPU_QUERY_CMD)),
        Call("xid", nvidia, lambda: salt.shell(nvidia, parse.XID_CMD)),
        Call("ib", ib, lambda: salt.shell(ib, parse.IB_PORTS_CMD)),
        Call("munge", slurm, lambda: salt.shell(slurm, parse.MUNGE_CMD)),
        Call("time", names, lambda: salt.shell(names, parse.CHRONY_CMD)),
        Call("mounts", [v.hostname for v in volumes],
             lambda: salt.call([v.hostname for v in volumes], "mount.active")),
    ]
    units_nodes = [n for n, us in with_units.items() if us]
    if every_unit:
        show = ("systemctl show -p Id,LoadState,ActiveState,SubState -- "
                + " ".join(shlex.quote(u) for u in every_unit))
        calls.append(Call("units", units_nodes, lambda: salt.shell(units_nodes, show)))
    # each array master probes its volumes (targeted or not: a head check) and itself
    masters: dict[str, list[Node]] = {}
    mkv = inv.raw.mkv
    if mkv is not None:
        for v in volumes:
            assert v.mkv_array is not None
            if v.mkv_array in mkv.arrays:
                masters.setdefault(mkv.arrays[v.mkv_array].master, []).append(v)
        for n in nodes:
            if n.has("mkv.master") and mastered_arrays(inv, n.hostname):
                masters.setdefault(n.hostname, [])
    for master, vols in masters.items():
        calls.append(Call(f"mkv@{master}", [master],
                          partial(salt.shell, [master], mkv_probe(inv, master, vols))))
    return [c for c in calls if c.nodes]


def ask(calls: list[Call], scontrol: Callable[[], str] | None,
        progress: Callable[[str], None], workers: int = 10) -> Answers:
    """Run the calls side by side (each is one salt process for many minions, mostly
    waiting for their returns). A failed call is recorded against its check; the
    master unreachable for all raises."""
    answers = Answers()
    workers = max(1, min(workers, len(calls) + 1))

    def one(call: Call) -> tuple[str, dict[str, Any] | None, str | None]:
        try:
            return call.check, call.run(), None
        except MasterError as exc:
            return call.check, None, str(exc)

    with ThreadPoolExecutor(max_workers=workers) as pool:
        slurm_future = pool.submit(scontrol) if scontrol is not None else None
        for check, data, err in pool.map(one, calls):
            if err is not None:
                answers.errors[check] = err
                progress(f"{check}: not asked: {err}")
            else:
                answers.by_check[check] = data or {}
                progress(f"{check}: {len(data or {})} answer(s)")
        if slurm_future is not None:
            try:
                answers.scontrol = slurm.scontrol_nodes(slurm_future.result())
            except Exception as exc:  # the controller unreachable: every slurm check says so
                answers.errors["slurm"] = clean(exc)
                progress(f"scontrol: {clean(exc)}")
    if calls and len(answers.errors) >= len(calls) and not answers.by_check:
        raise MasterError(next(iter(answers.errors.values())))
    return answers


def scontrol_reader(runner: Runner) -> Callable[[], str]:
    return partial(slurm.show_node_text, runner, None, 60)


# --- judging ----------------------------------------------------------------------------


NO_ANSWER = "the minion did not answer"
ELSEWHERE = frozenset({"slurm", "mkv volume"})  # asked of slurmctld / the array's master


def evaluate(inv: Inventory, nodes: list[Node], answers: Answers) -> list[NodeReport]:
    reports = [_node(inv, n, answers) for n in nodes]
    for r in reports:
        # a minion that answered no call at all: one problem, not one per check
        asked = [f for f in r.findings if f.status != SKIPPED and f.check not in ELSEWHERE]
        if asked and all(f.status == PROBLEM and f.detail.endswith(NO_ANSWER) for f in asked):
            r.findings = [f for f in r.findings if f not in asked]
            r.findings.insert(0, Finding("salt", PROBLEM, f"salt: {NO_ANSWER} (down, or "
                                                          "its key not accepted)"))
    return reports


def _node(inv: Inventory, node: Node, a: Answers) -> NodeReport:
    r = NodeReport(node.hostname)
    _hardware(node, a, r)
    _services(inv, node, a, r)
    _storage(inv, node, a, r)
    return r


def _out(a: Answers, r: NodeReport, check: str) -> str | None:
    """The node's stdout for ``check``; None (and a problem) when it did not answer."""
    if check in a.errors:
        r.add(check, False, f"{check} not checked: {a.errors[check]}")
        return None
    got = stdout_of(a.get(check, r.node))
    if got is None:
        r.add(check, False, f"{check} not checked: {NO_ANSWER}")
    return got


def _hardware(node: Node, a: Answers, r: NodeReport) -> None:
    """GPUs, Xid errors and IB ports: skipped, and said so, where fleet:hardware is false."""
    hw_value = a.get("hardware", r.node)
    hardware = hw_value not in (False, "False")
    if (node.has("nvidia") or ib_count(node)) and hw_value not in (True, False, "True",
                                                                    "False"):
        r.add("hardware", False, "pillar fleet:hardware not read: "
              + a.errors.get("hardware", "the minion did not answer"))
    expected_gpus = gpu_count(node)
    if expected_gpus:
        if not hardware:
            r.findings.append(Finding("gpu", SKIPPED, "GPU count and persistence mode not "
                                                      "checked (fleet:hardware false)"))
        elif (text := _out(a, r, "gpu")) is not None:
            r.add("gpu", *parse.gpu_verdict(parse.gpus(text), expected_gpus))
    if node.has("nvidia"):
        if not hardware:
            r.findings.append(Finding("xid", SKIPPED, "Xid errors not checked "
                                                      "(fleet:hardware false)"))
        elif (text := _out(a, r, "xid")) is not None:
            good, warn, detail = parse.xid_verdict(parse.xids(text))
            r.findings.append(Finding("xid", WARNING if warn else OK if good else PROBLEM,
                                      detail))
    if ib_count(node):
        if not hardware:
            r.findings.append(Finding("ib", SKIPPED, "IB ports not checked "
                                                     "(fleet:hardware false)"))
        elif (text := _out(a, r, "ib")) is not None:
            r.add("ib", *parse.ib_verdict(parse.ib_ports(text), ib_count(node), text))


def _services(inv: Inventory, node: Node, a: Answers, r: NodeReport) -> None:
    """The node's units, slurmd's registration, munge and time sync."""
    units = a.expected.get(node.hostname, NO_ANSWER)
    if isinstance(units, str):
        r.add("states", False, f"services not checked: {units}")
    elif units and (text := _out(a, r, "units")) is not None:
        shown = parse.systemctl_show(text)
        for unit in units:
            r.add(unit.removesuffix(".service"), *parse.unit_verdict(unit, shown.get(unit)))
    if node.has("slurm.compute"):
        if "slurm" in a.errors:
            r.add("slurm", False, f"slurmd registration not checked: {a.errors['slurm']}")
        elif a.scontrol is not None:
            r.slurm = a.scontrol.get(r.node)
            r.add("slurm", *parse.slurmd_verdict(r.slurm, gpu_count(node)))
    if (node.has("slurm.compute") or node.has("slurm.controller")) and \
            (text := _out(a, r, "munge")) is not None:
        r.add("munge", *parse.munge_verdict(text))
    if (text := _out(a, r, "time")) is not None:
        r.add("time", *parse.chrony_verdict(text))


def _storage(inv: Inventory, node: Node, a: Answers, r: NodeReport) -> None:
    """An mkv volume's data disks mounted and its HTTP; an mkv master's HTTP."""
    mounts = data_mounts(node) if node.has("mkv.volume") else []
    if mounts:
        if "mounts" in a.errors:
            r.add("mounts", False, f"mounts not checked: {a.errors['mounts']}")
        else:
            active = a.get("mounts", r.node)
            if not isinstance(active, dict):  # absent, or salt's "did not return" text
                r.add("mounts", False, f"mounts not checked: {NO_ANSWER}")
            else:
                r.add("mounts", *parse.mount_verdict(active, mounts))
        _volume_http(inv, node, a, r)
    if node.has("mkv.master"):
        _master_http(inv, node, a, r)


def _probe(inv: Inventory, master: str, a: Answers) -> tuple[dict[str, int] | None, str]:
    check = f"mkv@{master}"
    if check in a.errors:
        return None, a.errors[check]
    text = stdout_of(a.get(check, master))
    if text is None:
        return None, f"{master} did not answer"
    return parse.http_codes(text), ""


def _volume_http(inv: Inventory, node: Node, a: Answers, r: NodeReport) -> None:
    mkv = inv.raw.mkv
    if mkv is None or node.mkv_array not in mkv.arrays:
        return
    assert node.mkv_array is not None
    array = mkv.arrays[node.mkv_array]
    url = f"http://{node.hostname}:{array.volume_port}/"
    codes, why = _probe(inv, array.master, a)
    status = None if codes is None else codes.get(f"volume:{node.hostname}")
    if status is None:
        r.add("mkv volume", False, f"mkv volume {url} not checked from {array.master}"
                                   + (f": {why}" if why else ""))
    elif status == 0:
        r.add("mkv volume", False, f"mkv volume {url} does not answer (from {array.master})")
    else:
        r.add("mkv volume", status < 500, f"mkv volume {url} answers HTTP {status} "
                                          f"(from {array.master})")


def _master_http(inv: Inventory, node: Node, a: Answers, r: NodeReport) -> None:
    mkv = inv.raw.mkv
    arrays = mastered_arrays(inv, node.hostname)
    if mkv is None or not arrays:
        return
    codes, why = _probe(inv, node.hostname, a)
    for name in arrays:
        url = f"http://{node.hostname}:{mkv.arrays[name].port}/"
        status = None if codes is None else codes.get(f"master:{name}")
        if status is None:
            r.add(f"mkv-{name} http", False, f"mkv master {url} not checked: {why}")
        elif status == 0:
            r.add(f"mkv-{name} http", False, f"mkv master {url} does not answer")
        else:
            r.add(f"mkv-{name} http", status < 500, f"mkv master {url} answers HTTP {status}")
