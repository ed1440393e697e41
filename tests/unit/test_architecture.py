"""The architecture, kept true by tests: no import cycle inside ``tools/fleet``, and
docs/architecture.md's module map names modules and packages that exist, and every package.

Imports are read from the source (nothing is imported): a module-level import is an edge, so
is one inside a function (it runs when the function does); one under ``if TYPE_CHECKING:``
is not (it never runs). ``from fleet.a import b`` is an edge to ``fleet.a.b`` when that is a
module, else to ``fleet.a``; an import of ``fleet.a.b`` runs ``fleet/a/__init__.py`` too,
but a package's ``__init__`` importing its own submodules is not counted as a cycle with
them (Python runs a package before its submodules by design).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"
FLEET = TOOLS / "fleet"
ARCH = ROOT / "docs" / "architecture.md"


def _name(path: Path) -> str:
    parts = list(path.relative_to(TOOLS).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_name(p): p for p in sorted(FLEET.rglob("*.py"))}
PACKAGES = sorted(m for m, p in MODULES.items() if p.name == "__init__.py")


def _resolve(module: str, level: int, here: str, is_package: bool) -> str:
    if not level:
        return module
    base = here.split(".") if is_package else here.split(".")[:-1]
    base = base[:len(base) - level + 1]
    return ".".join([*base, module] if module else base)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, here: str, is_package: bool, *, types: bool = False) -> set[str]:
    """The fleet modules a module's code imports at run time (``types``: and those it
    imports for the type checker alone)."""
    out: set[str] = set()

    def visit(node: ast.AST) -> None:
        if not types and isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            mod = _resolve(node.module or "", node.level, here, is_package)
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.add(sub if sub in MODULES else mod)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {m for m in out if m in MODULES and m != here}


def _graph(*, types: bool = False) -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        deps = _imports(ast.parse(path.read_text(), str(path)), name,
                        path.name == "__init__.py", types=types)
        if path.name == "__init__.py":
            deps = {d for d in deps if not d.startswith(name + ".")}
        graph[name] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle (a path back to its start) per strongly connected component (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(_path(graph, set(comp), min(comp)))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def _path(graph: dict[str, set[str]], comp: set[str], start: str) -> list[str]:
    """A shortest cycle through ``start`` inside one component, for the message."""
    prev: dict[str, str] = {}
    todo = [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(graph[v] & comp):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v,
                                                                                   start]
            if w not in prev:
                prev[w] = v
                todo.append(w)
    raise AssertionError(f"no cycle through {start}")


def test_the_graph_sees_imports() -> None:
    graph = _graph()
    # a function-level import is an edge: the context loads the inventory only when asked
    assert "fleet.inventory.load" in graph["fleet.context"]
    assert "fleet.render.bootstrap" in graph["fleet.render.autoinstall"]
    # a type-only import is no edge: slurmcompat names Ctx for mypy only
    assert "fleet.inventory.checks.ctx" not in graph["fleet.inventory.slurmcompat"]


def test_function_level_imports_are_edges_and_type_only_ones_are_not() -> None:
    src = ("from typing import TYPE_CHECKING\n"
           "if TYPE_CHECKING:\n    from fleet.render import pillar\n"
           "def f():\n    from fleet.render.bootstrap import http_base\n")
    deps = _imports(ast.parse(src), "fleet.render.x", False)
    assert deps == {"fleet.render.bootstrap"}


def test_cycles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [["a", "b", "c", "a"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_fleet() -> None:
    cycles = _cycles(_graph())
    assert not cycles, "import cycles in tools/fleet (a function-level import counts; put " \
        "what both need in a module of its own, or import for types only under " \
        "TYPE_CHECKING):\n" + "\n".join("  " + " -> ".join(c) for c in cycles)


def _room(module: str) -> str:
    """The package a module lives in, one level under fleet (fleet.a.b.c -> fleet.a); a
    module directly under fleet is a room of its own."""
    return ".".join(module.split(".")[:2])


def _rooms(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, deps in graph.items():
        room = _room(module)
        out.setdefault(room, set()).update(_room(d) for d in deps if _room(d) != room)
    return out


def test_a_planted_package_cycle_is_found() -> None:
    graph = {"fleet.pxe.powerguard": {"fleet.reinstall.bootmode"},
             "fleet.reinstall.bootmode": {"fleet.pxe.state"}, "fleet.pxe.state": set(),
             "fleet.master.salt": set()}
    assert _cycles(_rooms(graph)) == [["fleet.pxe", "fleet.reinstall", "fleet.pxe"]]


def test_no_import_cycle_between_packages() -> None:
    cycles = _cycles(_rooms(_graph()))
    assert not cycles, "import cycles between the packages of tools/fleet (move what both " \
        "use to the floor below them: master/, pxe/, fleet/<module>.py):\n" + \
        "\n".join("  " + " -> ".join(c) for c in cycles)


def test_a_type_only_circle_is_found() -> None:
    a = ("from typing import TYPE_CHECKING\nfrom fleet.yamlsrc import load\n"
         "if TYPE_CHECKING:\n    from fleet.problems import Problem\n")
    assert _imports(ast.parse(a), "fleet.secrets", False) == {"fleet.yamlsrc"}
    assert _imports(ast.parse(a), "fleet.secrets", False, types=True) == {
        "fleet.yamlsrc", "fleet.problems"}


def test_no_circle_even_through_type_only_imports() -> None:
    """A module that names another's types for the checker only still leans on it: the
    floors hold with those imports counted too (module by module and package by package)."""
    graph = _graph(types=True)
    cycles = _cycles(graph) + _cycles(_rooms(graph))
    assert not cycles, "circles through type-only imports (take the type from the module " \
        "that defines it, or move it to the floor below both):\n" + \
        "\n".join("  " + " -> ".join(c) for c in cycles)


def _below(graph: dict[str, set[str]], floor: str) -> list[str]:
    """``module -> import`` for each import of a ``floor`` module that leaves the floor."""
    return [f"{m} -> {d}" for m, deps in sorted(graph.items())
            if m == floor or m.startswith(floor + ".")
            for d in sorted(deps) if d != floor and not d.startswith(floor + ".")]


def test_a_planted_climb_out_of_the_floor_is_found() -> None:
    graph = {"fleet.master.salt": {"fleet.master.runner"}, "fleet.master.runner": set(),
             "fleet.master.pyclient": {"fleet.master.salt", "fleet.apply.run"}}
    assert _below(graph, "fleet.master") == ["fleet.master.pyclient -> fleet.apply.run"]


def test_master_is_the_ground_floor() -> None:
    """fleet/master/ imports nothing of fleet but itself (type-only imports too): every
    verb may stand on it, and it on no verb."""
    climbs = _below(_graph(types=True), "fleet.master")
    assert not climbs, "fleet/master/ imports from above it (move what it needs down into " \
        "it, or pass it in):\n  " + "\n  ".join(climbs)


# docs/architecture.md's map names modules as fleet/a/b.py (or a bare b.py under the
# fleet/a/ line above it, or under fleet/) and packages as fleet/a/ or fleet/a/b/
MAP_PATH = re.compile(r"(?<![\w/.])((?:fleet/)?(?:[a-z_]+/)*[a-z_]+(?:\.py|/))(?![\w/])")


def _map_text() -> str:
    return ARCH.read_text(encoding="utf-8")


def _named_paths(text: str) -> list[str]:
    """Every ``fleet/...`` path the doc names, and every bare ``x/y.py`` path that follows
    the package it sits in (``render/scan.py`` under the ``fleet/render/`` lines)."""
    return sorted({m for m in MAP_PATH.findall(text)
                   if m.startswith("fleet/") or m.endswith(".py")})


def _exists(named: str) -> bool:
    if named.startswith(("tools/", "benchmarks/")):
        return (ROOT / named).exists()
    rel = named.removeprefix("fleet/")
    return any((FLEET / rel).exists() or (FLEET / pkg / rel).exists()
               for pkg in ["", *(p.split(".", 1)[1].replace(".", "/")
                                 for p in PACKAGES if "." in p)])


def test_the_map_is_read() -> None:
    named = _named_paths(_map_text())
    assert "fleet/inventory/load.py" in named and "render/scan.py" in named


@pytest.mark.parametrize("named", _named_paths(_map_text()))
def test_every_module_the_architecture_names_exists(named: str) -> None:
    assert _exists(named), (
        f"docs/architecture.md names {named}, which is not under tools/fleet/: "
        "write the path it has now, or drop it from the map")


@pytest.mark.parametrize("package", [p.split(".", 1)[1] for p in PACKAGES if "." in p])
def test_the_architecture_names_every_package(package: str) -> None:
    path = "fleet/" + package.replace(".", "/") + "/"
    assert path in _map_text(), (
        f"tools/{path} is a package that docs/architecture.md does not name: add a line "
        f"`{path}  <what it does>` to the map (the day-two block lists the packages of "
        "the master; the diagram the inventory and render stages)")


# --- the product never imports its tests ---------------------------------------------------

TEST_PACKAGES = {"tests", "support", "conftest"}


def _is_test_name(name: str | None) -> bool:
    return (name or "").split(".")[0] in TEST_PACKAGES


def _reaches(node: ast.AST) -> bool:
    """An import of a test package, a ``sys.path`` use, or ``import_module("support...")``."""
    if isinstance(node, ast.Import):
        return any(_is_test_name(a.name) for a in node.names)
    if isinstance(node, ast.ImportFrom):
        return not node.level and _is_test_name(node.module)
    if isinstance(node, ast.Attribute):
        return node.attr == "path" and isinstance(node.value, ast.Name) \
            and node.value.id == "sys"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr == "import_module" and bool(node.args) \
            and isinstance(node.args[0], ast.Constant) and _is_test_name(str(node.args[0].value))
    return False


def _reaches_tests(tree: ast.AST) -> list[int]:
    """Lines that import a test package or edit ``sys.path`` (the product stands alone)."""
    return sorted({n.lineno for n in ast.walk(tree)
                   if isinstance(n, ast.stmt | ast.expr) and _reaches(n)})


def test_a_planted_reach_into_the_tests_is_found() -> None:
    src = ("import sys\nimport importlib\nfrom pathlib import Path\n"
           "sys.path.insert(0, 'tests')\n"
           "from support import harness\n"
           "import tests.support.saltrender\n"
           "m = importlib.import_module('support.saltrender')\n"
           "from fleet.master import runner\n")
    assert _reaches_tests(ast.parse(src)) == [4, 5, 6, 7]


def test_the_product_never_reaches_into_the_tests() -> None:
    found = [f"{p.relative_to(ROOT)}:{line}" for p in sorted(TOOLS.rglob("*.py"))
             for line in _reaches_tests(ast.parse(p.read_text(), str(p)))]
    assert not found, (
        "tools/ edits sys.path or imports from tests/ (what the product needs lives under "
        "tools/fleet/, and the tests import it from there):\n  " + "\n  ".join(found))


# --- master/ is the only door to Salt and Slurm --------------------------------------------

MASTER_TOOLS = frozenset({"salt", "salt-key", "salt-run", "salt-call", "salt-cp", "scontrol",
                          "squeue", "sinfo", "scancel", "sacct", "sbatch", "srun"})


def _tool_argvs(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, tool) of every list or tuple literal whose first item names a tool of the
    master or of Slurm: an argv that goes around fleet/master/."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.List | ast.Tuple) and node.elts:
            first = node.elts[0]
            if isinstance(first, ast.Constant) and first.value in MASTER_TOOLS:
                out.append((node.lineno, str(first.value)))
    return out


def test_a_planted_argv_around_the_master_is_found() -> None:
    src = ('def f(runner, node):\n'
           '    runner.run(["scontrol", "show", "node", "-o", node])\n'
           '    runner.run(("salt-key", "-L"))\n'
           '    runner.run(["ipmitool", "power", "status"])\n'
           '    return {"salt": 1}, ["sinfo"]\n')
    assert _tool_argvs(ast.parse(src)) == [(2, "scontrol"), (3, "salt-key"), (5, "sinfo")]


# the lab stands up its own master (fleet lab up) and generates its keys before it exists
AROUND_THE_MASTER = {"fleet/lab/"}


def test_only_master_runs_salt_and_slurm() -> None:
    found = []
    for path in sorted(FLEET.rglob("*.py")):
        rel = str(path.relative_to(TOOLS))
        if rel.startswith("fleet/master/") or any(rel.startswith(a) for a in AROUND_THE_MASTER):
            continue
        found += [f"{rel}:{line}: {tool}"
                  for line, tool in _tool_argvs(ast.parse(path.read_text(), str(path)))]
    assert not found, (
        "an argv of the master's or Slurm's tools outside fleet/master/ (call salt.py, "
        "keys.py or slurm.py there; add what is missing to them):\n  " + "\n  ".join(found))


# Salt's own Python modules are the master's floor too; the lab stands up a master of its own
# (its key before it runs), and fleet.saltrender renders states in-process, with no master
SALT_PYTHON_AROUND = ("fleet/lab/", "fleet/saltrender.py")


def _salt_imports(tree: ast.AST) -> list[int]:
    """Lines that import Salt's Python package (``import salt.client``, ``from salt import
    x``): a door to the master, like an argv of its tools."""
    return sorted(
        node.lineno for node in ast.walk(tree)
        if (isinstance(node, ast.Import)
            and any(a.name.split(".")[0] == "salt" for a in node.names))
        or (isinstance(node, ast.ImportFrom) and not node.level
            and (node.module or "").split(".")[0] == "salt"))


def test_a_planted_salt_import_is_found() -> None:
    src = ("def connect():\n    import salt.client\n    from salt.key import Key\n"
           "    from fleet.master import salt\n    import saltext\n")
    assert _salt_imports(ast.parse(src)) == [2, 3]


def test_only_master_imports_salt() -> None:
    found = [f"{rel}:{line}" for path in sorted(FLEET.rglob("*.py"))
             if not (rel := str(path.relative_to(TOOLS))).startswith(
                 ("fleet/master/", *SALT_PYTHON_AROUND))
             for line in _salt_imports(ast.parse(path.read_text(), str(path)))]
    assert not found, ("Salt's Python package imported outside fleet/master/ (a client of "
                       "the master lives there):\n  " + "\n  ".join(found))


# the one drain before a node is changed: drain, requeue, --force's cancel, the wait
DRAIN_PARTS = frozenset({"wait_drained", "requeue_preemptible", "cancel"})


def _drain_parts(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, name) of each call of a part of the one drain (``slurm.wait_drained(...)``)."""
    return [(node.lineno, node.func.attr) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "slurm"
            and node.func.attr in DRAIN_PARTS]


def test_a_planted_drain_of_its_own_is_found() -> None:
    src = ("def drain(r, n):\n    slurm.drain(r, n, 'x')\n    slurm.cancel(r, slurm.jobs(r, n))\n"
           "    slurm.wait_drained(r, n, 60, 1)\n    slurm.drain_and_wait(r, n, 'x')\n")
    assert _drain_parts(ast.parse(src)) == [(3, "cancel"), (4, "wait_drained")]


def test_the_drain_and_wait_is_written_once() -> None:
    """reinstall and rollout drain through fleet.master.slurm.drain_and_wait, where --force
    has its one meaning at a drain (cancel the jobs, named): no verb puts the parts
    together again."""
    found = [f"{path.relative_to(TOOLS)}:{line}: slurm.{name}"
             for path in sorted(FLEET.rglob("*.py")) if path != FLEET / "master" / "slurm.py"
             for line, name in _drain_parts(ast.parse(path.read_text(), str(path)))]
    assert not found, "a drain put together outside fleet.master.slurm.drain_and_wait:\n  " \
        + "\n  ".join(found)


# the verbs that drain a node before changing it, each through the one drain
DRAINERS = {"reinstall": "fleet/reinstall/steps.py", "rollout": "fleet/rollout/flow.py",
            "power": "fleet/ops/powerdrain.py", "burnin run": "fleet/commands/burnin.py"}


def _calls_the_one_drain(tree: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "drain_and_wait" and isinstance(n.func.value, ast.Name)
               and n.func.value.id == "slurm" for n in ast.walk(tree))


def test_a_planted_drain_by_hand_is_no_call_of_the_one_drain() -> None:
    assert _calls_the_one_drain(ast.parse("slurm.drain_and_wait(r, n, 'x')\n"))
    assert not _calls_the_one_drain(ast.parse("slurm.drain(r, n, 'x')\nslurm.jobs(r, n)\n"))


def test_reinstall_rollout_power_and_burnin_drain_through_the_one_drain() -> None:
    """One drain-and-wait with one meaning of --force (issue 34), used by every verb that
    takes a node out of Slurm to change it."""
    missing = [f"fleet {verb} ({rel})" for verb, rel in DRAINERS.items()
               if not _calls_the_one_drain(ast.parse((TOOLS / rel).read_text()))]
    assert not missing, "verbs that no longer drain through the one drain:\n  " + \
        "\n  ".join(missing)


# --- one room for text from outside ---------------------------------------------------------

TEXT_HOME = FLEET / "master" / "text.py"


# a language's own escaping of what is written in it, and a refusal, are no cleaner
OWN_CONTROL_RULES = {
    "fleet/render/": "escaping for the language a rendered file is written in (YAML, XML)",
    "fleet/inventory/types.py": "refuses a control character in an inventory value (an "
                                "error naming it), cleans nothing",
}


def _text_policies(tree: ast.AST) -> list[int]:
    """Lines that decide by hand which characters a person may see: ``c.isprintable()``,
    a comparison with the printable ASCII's ends ``" "`` .. ``"~"``, or a pattern of the
    control characters (one that names ``\\x1f``)."""

    def judges(node: ast.AST) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            return node.func.attr == "isprintable"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return "\x1f" in node.value or "\\x1f" in node.value
        return isinstance(node, ast.Compare) and any(
            isinstance(x, ast.Constant) and x.value == "~"
            for x in [node.left, *node.comparators])

    return sorted({n.lineno for n in ast.walk(tree)
                   if isinstance(n, ast.expr) and judges(n)})


def test_a_planted_text_policy_is_found() -> None:
    src = ('def safe(s):\n    return "".join(c for c in s if c.isprintable())\n'
           'def ascii_only(s):\n    return "".join(c for c in s if " " <= c <= "~")\n'
           'def tilde(s):\n    return s.replace("~", "-")\n'
           'CONTROL = re.compile(r"[\\x00-\\x1f\\x7f-\\x9f]")\n'
           'BELL = "\\x07"\n')
    assert _text_policies(ast.parse(src)) == [2, 4, 7]


def test_text_from_outside_is_made_safe_in_one_room() -> None:
    """fleet.master.text (clean, printable, shown) is where a character is judged fit for
    a terminal, a report or a drain reason; nowhere else writes that test again."""
    found = [f"{rel}:{line}" for p in sorted(FLEET.rglob("*.py"))
             if p != TEXT_HOME and not (rel := str(p.relative_to(TOOLS))).startswith(
                 tuple(OWN_CONTROL_RULES))
             for line in _text_policies(ast.parse(p.read_text(), str(p)))]
    assert not found, "text made safe by hand (use fleet.master.text):\n  " + \
        "\n  ".join(found)
    used = {where for where in OWN_CONTROL_RULES for p in sorted(FLEET.rglob("*.py"))
            if str(p.relative_to(TOOLS)).startswith(where)
            and _text_policies(ast.parse(p.read_text(), str(p)))}
    assert used == set(OWN_CONTROL_RULES), "OWN_CONTROL_RULES entries that match nothing"


# --- one signal catcher --------------------------------------------------------------------

SIGNALS_HOME = FLEET / "signals.py"


def _handler_settings(tree: ast.AST) -> list[int]:
    """Lines that set a signal handler by hand: ``signal.signal(...)`` or ``signal(...)``
    (``from signal import signal``)."""
    return sorted(n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Attribute) and n.func.attr == "signal"
         and isinstance(n.func.value, ast.Name) and n.func.value.id == "signal")
        or (isinstance(n.func, ast.Name) and n.func.id == "signal")))


def _installs_the_catcher(tree: ast.AST) -> bool:
    """The verb's module installs fleet.signals' catcher: its ``run`` is decorated with
    ``long_verb(...)``, or it builds a ``SignalCatcher`` (or fleet.reinstall's subclasses of
    it) with a stop of its own."""
    for n in ast.walk(tree):
        if isinstance(n, ast.FunctionDef) and n.name == "run" and any(
                isinstance(d, ast.Call) and isinstance(d.func, ast.Name)
                and d.func.id == "long_verb" for d in n.decorator_list):
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in {
                "SignalCatcher", "Interrupts", "SignalHub"}:
            return True
    return False


def test_a_planted_handler_and_a_long_verb_without_the_catcher_are_found() -> None:
    src = ("import signal\nfrom signal import signal as sig\n"
           "def run(args, ctx):\n    signal.signal(signal.SIGTERM, lambda *a: None)\n"
           "    signal.getsignal(signal.SIGINT)\n")
    assert _handler_settings(ast.parse(src)) == [4]
    assert not _installs_the_catcher(ast.parse(src))
    assert _installs_the_catcher(ast.parse("@long_verb('x')\ndef run(args, ctx):\n  pass\n"))
    assert not _installs_the_catcher(ast.parse("@other('x')\ndef run(args, ctx):\n  pass\n"))


def test_only_signals_sets_a_signal_handler() -> None:
    """fleet.signals is the one catcher: no module sets a handler of its own."""
    found = [f"{p.relative_to(TOOLS)}:{line}" for p in sorted(FLEET.rglob("*.py"))
             if p != SIGNALS_HOME
             for line in _handler_settings(ast.parse(p.read_text(), str(p)))]
    assert not found, "signal.signal outside fleet/signals.py:\n  " + "\n  ".join(found)


def test_every_long_verb_installs_the_one_catcher() -> None:
    """Each of fleet.commands.LONG installs fleet.signals' catcher (so SIGINT/SIGTERM end
    it with 130/143 and a line saying what is left, never a traceback or a bare death)."""
    from fleet.commands import LONG, module_name

    missing = []
    for verb in sorted(LONG):
        path = TOOLS / (module_name(verb).replace(".", "/") + ".py")
        if not _installs_the_catcher(ast.parse(path.read_text(), str(path))):
            missing.append(f"{path.relative_to(TOOLS)} (fleet {verb})")
    assert not missing, "long verbs without fleet.signals' catcher:\n  " + "\n  ".join(missing)
