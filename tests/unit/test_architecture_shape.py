"""The rules that keep themselves (issue 34): no two places in tools/ share six or more
lines of the same shape (tests/support/sameshape.py says what a shape is), boilerplate
aside, each exception listed here with its reason and still matching; and ``--force`` is
declared once, through fleet.cliparts (FORCE, add_force), one meaning per verb."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from support.sameshape import Run, runs, tree_runs

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ROOT / "tools"


@dataclass(frozen=True)
class Allowed:
    a: str
    b: str
    starts: str  # how line one of a's side begins (line numbers drift; the text does not)
    reason: str

    def matches(self, run: Run, lines: dict[str, list[str]]) -> bool:
        return (run.a, run.b) == (self.a, self.b) and \
            lines[run.a][run.a_lines[0] - 1].strip().startswith(self.starts)


_RECORD = ("a module's own error class, then its own small frozen record: declarations "
           "alike only in shape (other fields, other meanings)")
_COMMAND = ("the one command shape (issue 34): TYPE_CHECKING imports, DESCRIPTION, EPILOG, "
            "register through add_command, the verb's own options and the shared ones "
            "(add_state_dir, add_salt_*), a long verb's STOPPED (what a signal leaves) and "
            "its @long_verb (fleet.signals), then run's opening (ctx.progress, ctx.targets)")

ALLOWED = (
    Allowed("fleet/apt/archive.py", "fleet/monitoring/alerts.py", "class ArchiveError", _RECORD),
    Allowed("fleet/apt/archive.py", "fleet/repo/fetch.py", "class ArchiveError", _RECORD),
    Allowed("fleet/apt/archive.py", "fleet/repo/fill.py", "class ArchiveError", _RECORD),
    Allowed("fleet/monitoring/alerts.py", "fleet/repo/fetch.py", "class AlertsError", _RECORD),
    Allowed("fleet/monitoring/alerts.py", "fleet/repo/fill.py", "class AlertsError", _RECORD),
    Allowed("fleet/repo/fetch.py", "fleet/repo/fill.py", "class FetchError", _RECORD),
    Allowed("fleet/health/decide.py", "fleet/repo/fill.py", "@dataclass(frozen=True)",
            _RECORD),
    Allowed("fleet/commands/apply.py", "fleet/commands/health.py", "if TYPE_CHECKING", _COMMAND),
    Allowed("fleet/commands/apply.py", "fleet/commands/health.py", 'help="give up on a node',
            _COMMAND),
    Allowed("fleet/commands/power.py", "fleet/commands/restore.py", "if TYPE_CHECKING",
            _COMMAND),
    Allowed("fleet/commands/keys.py", "fleet/commands/keys.py", 'sp = actions.add_parser("check"',
            "two actions of one verb, each with its own help and longer description"),
)


# Lines a line-by-line finder also pairs in tools/, and why this rule does not: each is
# passed over by design (not pairs, so not entries above), shown so by
# test_an_import_list_a_table_and_unrelated_options_are_no_copy.
# - a parenthesized import list (fleet/bmc/ipmi.py and redfish.py both import the BMC error
#   classes from fleet.bmc.base): an import names what a module uses, it holds no logic;
#   the one definition is fleet.bmc.base itself
# - a table of values (fleet/render/pictures/style.py's colours, fleet/render/preseed.py's
#   answers): rows of data, each its own fact
# - runs of ``p.add_argument("--x", ..., help="...")`` of unrelated options
#   (fleet/commands/endpoint.py, rollout.py): each declares its own option; an option two
#   verbs share is declared once in fleet.cliparts (test_shared_options_are_declared_once)


def _lines(found: list[Run], root: Path) -> dict[str, list[str]]:
    paths = {r.a for r in found} | {r.b for r in found}
    return {p: (root / p).read_text(encoding="utf-8").splitlines() for p in paths}


PLANTED_A = '''
def tally(rows, limit):
    """Count the rows under the limit."""
    total = 0
    for row in rows:
        if row.size > limit:
            continue
        total += row.size
    print(f"{total} bytes")
    return total
'''
# the same code renamed, with other strings and numbers, comments and blank lines
PLANTED_B = '''
import os

def weigh(items, most):
    # a comment is no line
    seen = 1
    for it in items:

        if it.weight > most:
            continue
        seen += it.weight
    print(f"{seen} kg", os.sep)
    return seen
'''


def test_a_planted_same_shape_pair_is_found(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text(PLANTED_A)
    (tmp_path / "pkg" / "b.py").write_text(PLANTED_B)
    (tmp_path / "pkg" / "c.py").write_text("def alone(x):\n    return x + 1\n")
    found = tree_runs(tmp_path)
    assert [str(r) for r in found] == ["pkg/a.py:2-8 ~ pkg/b.py:4-11"]
    assert not any(a.matches(found[0], _lines(found, tmp_path)) for a in ALLOWED)


def test_five_lines_alike_are_no_pair_and_one_stretch_is_not_its_own_copy() -> None:
    five = "def f(a):\n    b = a.x\n    c = b.y(1)\n    return c\n"
    assert runs({"a.py": five, "b.py": five.replace("f(", "g(")}) == []
    body = "".join(f"v{i} = call(arg, {i})\n" for i in range(12))
    assert runs({"a.py": body}) == []  # a table of one shape: no copy of itself


def test_a_shape_copied_into_many_places_is_found(tmp_path: Path) -> None:
    """No run is too common to list: the same code in ten modules is ten copies (45 pairs),
    not an idiom of the language passed over."""
    for i in range(10):
        (tmp_path / f"m{i}.py").write_text(PLANTED_A.replace("tally", f"tally{i}"))
    found = tree_runs(tmp_path)
    assert len(found) == 45
    assert {(r.a_lines, r.b_lines) for r in found} == {((2, 10), (2, 10))}


IMPORTS_A = ("from fleet.bmc.base import (\n    BmcAuthError,\n    BmcError,\n"
             "    BmcProtocolError,\n    BmcTimeoutError,\n    BmcUnreachableError,\n"
             "    ClientBase,\n    PowerState,\n    bmc_text,\n)\n")


def test_an_import_list_a_table_and_unrelated_options_are_no_copy() -> None:
    table = "ROWS = (\n" + "".join(f'    ("k{i}", "#{i:06x}", "label {i}"),\n'
                                    for i in range(8)) + ")\n"
    options = "".join(f'p.add_argument("--o{i}", metavar="X{i}",\n'
                      f'               help="what {i} does "\n'
                      f'                    "and more of it")\n' for i in range(7))
    files = {"a.py": IMPORTS_A + table + options,
             "b.py": IMPORTS_A + table.replace("k", "z") + options.replace("--o", "--p")}
    assert runs(files) == []
    # code below the same import list is still found
    found = runs({"a.py": IMPORTS_A + PLANTED_A, "b.py": IMPORTS_A + PLANTED_B})
    assert [str(r) for r in found] == ["a.py:12-18 ~ b.py:14-21"]


def test_no_two_places_in_tools_share_six_lines_of_one_shape() -> None:
    found = tree_runs(TOOLS)
    lines = _lines(found, TOOLS)
    unexplained = [str(r) for r in found if not any(a.matches(r, lines) for a in ALLOWED)]
    assert not unexplained, (
        "places in tools/ that share 6 or more lines of the same shape (make them one "
        "shared definition; boilerplate only: an entry in ALLOWED with its reason):\n  "
        + "\n  ".join(unexplained))


def _stale(allowed: tuple[Allowed, ...], found: list[Run], lines: dict[str, list[str]]
           ) -> list[str]:
    return [f"{a.a} ~ {a.b} ({a.starts})" for a in allowed
            if not any(a.matches(r, lines) for r in found)]


def test_a_planted_stale_exception_is_found(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(PLANTED_A)
    (tmp_path / "b.py").write_text(PLANTED_B)
    found = tree_runs(tmp_path)
    lines = _lines(found, tmp_path)
    kept = Allowed("a.py", "b.py", "def tally", "planted")
    gone = Allowed("a.py", "b.py", "total = 0", "planted: matches no run's first line")
    assert _stale((kept, gone), found, lines) == ["a.py ~ b.py (total = 0)"]


def test_every_allowed_pair_still_matches() -> None:
    found = tree_runs(TOOLS)
    stale = _stale(ALLOWED, found, _lines(found, TOOLS))
    assert not stale, "ALLOWED entries that no longer match anything (remove them):\n  " + \
        "\n  ".join(stale)


# --- --force: one declaration -------------------------------------------------------------

FORCE_HOME = "fleet/cliparts.py"  # FORCE and add_force


def _force_declarations(tree: ast.AST) -> list[int]:
    """Lines of an ``add_argument`` call that names ``--force`` itself."""
    return [node.lineno for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
            and any(isinstance(a, ast.Constant) and a.value == "--force" for a in node.args)]


def test_a_planted_force_option_is_found() -> None:
    src = ('def register(p):\n'
           '    p.add_argument("--dry-run", action="store_true")\n'
           '    p.add_argument("-f", "--force", action="store_true", help="mine")\n'
           '    add_force(p, "rollout")\n')
    assert _force_declarations(ast.parse(src)) == [3]


def test_force_is_declared_only_through_cliparts() -> None:
    found = [f"{p.relative_to(TOOLS)}:{line}" for p in sorted((TOOLS / "fleet").rglob("*.py"))
             if str(p.relative_to(TOOLS)) != FORCE_HOME
             for line in _force_declarations(ast.parse(p.read_text(), str(p)))]
    assert not found, ("--force declared by hand (use fleet.cliparts.add_force, and give "
                       "the verb its one meaning in FORCE):\n  " + "\n  ".join(found))
    home = _force_declarations(ast.parse((TOOLS / FORCE_HOME).read_text()))
    assert len(home) == 1, f"{FORCE_HOME}: --force declared {len(home)} times, not once"


def test_each_verb_gives_force_one_meaning() -> None:
    from fleet.cliparts import FORCE

    used = {m.group(1) for p in (TOOLS / "fleet").rglob("*.py")
            for m in re.finditer(r'add_(?:force|node_flow)\(\w+, "([a-z_-]+)"', p.read_text())}
    assert used == set(FORCE), f"add_force verbs {sorted(used)} vs FORCE {sorted(FORCE)}"
    assert len(set(FORCE.values())) == len(FORCE), "two verbs share one --force text"


# --- options verbs share: declared once, in fleet.cliparts ---------------------------------

# a side entry point (``python -m fleet.pycache``) is a program with its own parser
SIDE_ENTRY = "__main__.py"
# the same word with a meaning of its own there, and why
OWN_MEANING = {
    ("fleet/commands/reinstall.py", "--parallel"):
        "reinstalls in flight (each a whole flow), bounded by the provisioning link; not the "
        "BMC pool's requests at once (cliparts.add_bmc_pool)",
}


def _declared(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, option) of every ``add_argument`` call's ``--option``."""
    return [(node.lineno, a.value) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
            for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
            and a.value.startswith("--")]


def _redeclared(shared: set[str], modules: dict[str, str]) -> list[str]:
    return [f"{rel}:{line}: {opt}" for rel, src in sorted(modules.items())
            if rel != FORCE_HOME and not rel.endswith("/" + SIDE_ENTRY)
            for line, opt in _declared(ast.parse(src))
            if opt in shared and (rel, opt) not in OWN_MEANING]


def test_a_planted_shared_option_is_found() -> None:
    src = ('def add(p):\n'
           '    p.add_argument("--secrets", type=Path, metavar="DIR")\n'
           '    p.add_argument("--password-file", type=Path)\n'
           '    p.add_argument("--pxe-state", type=Path)\n')
    assert _redeclared({"--secrets", "--pxe-state"}, {"fleet/backup/options.py": src}) == [
        "fleet/backup/options.py:2: --secrets", "fleet/backup/options.py:4: --pxe-state"]
    assert _redeclared({"--secrets"}, {"fleet/pycache/__main__.py": src}) == []


def test_shared_options_are_declared_once() -> None:
    """Every option fleet.cliparts declares (--secrets, --pxe-state, --salt-config, the BMC
    options, --force, ...) is declared there alone: one name, one meaning."""
    shared = {opt for _, opt in _declared(ast.parse((TOOLS / FORCE_HOME).read_text()))}
    assert {"--secrets", "--pxe-state", "--salt-config", "--bmc-protocol"} <= shared
    modules = {str(p.relative_to(TOOLS)): p.read_text()
               for p in sorted((TOOLS / "fleet").rglob("*.py"))}
    found = _redeclared(shared, modules)
    assert not found, ("an option of fleet.cliparts declared again by hand (call its add_* "
                       "there; a word with another meaning: OWN_MEANING, with why):\n  "
                       + "\n  ".join(found))
    used = {key for key in OWN_MEANING if any(
        opt == key[1] for _, opt in _declared(ast.parse(modules[key[0]])))}
    assert used == set(OWN_MEANING), "OWN_MEANING entries that match nothing (remove them)"
