"""Property tests: whatever is done to the inventory, validation reports located problems
or succeeds; it never crashes. What validates also renders. Hostlists round-trip.

Known loader crashes are kept out of the generators and pinned by xfail tests in
test_yamlsrc.py: a self-referencing alias (``&x [*x]``) and ``!!bool`` on a word. So the
generated text never contains ``&`` or ``!``.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fleet.inventory.load import parse
from fleet.inventory.model import Inventory
from fleet.problems import InventoryError, dotted
from fleet.render import render_all
from fleet.render.hostlist import compress
from fleet.yamlsrc import load

pytestmark = pytest.mark.slow

FILE = "inventory.yaml"
SMALL = (Path(__file__).resolve().parents[1] / "fixtures" / "small.yaml").read_text()
SMALL_DATA: dict[str, Any] = load(SMALL, FILE).data

# Sized so that this whole module stays well under a minute on a slow CI machine.
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check(text: str) -> Inventory | None:
    """The property every input must satisfy."""
    try:
        inv = parse(text, FILE)
    except InventoryError as exc:
        assert exc.problems, "InventoryError without problems"
        last_line = len(text.splitlines()) + 1
        for p in exc.problems:
            assert p.pos.file == FILE, str(p)
            assert 1 <= p.pos.line <= last_line, str(p)
            assert p.pos.col >= 1, str(p)
            assert isinstance(p.message, str) and p.message.strip(), repr(p)
            assert str(p).startswith(f"{FILE}:{p.pos.line}:{p.pos.col}: "), str(p)
        return None
    files = render_all(inv)
    assert files
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())
    return inv


# --- text-level mutations ---------------------------------------------------------------------


def _scalar_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of every scalar node, keys and values."""
    spans: list[tuple[int, int]] = []

    def walk(node: yaml.Node) -> None:
        if isinstance(node, yaml.ScalarNode):
            spans.append((node.start_mark.index, node.end_mark.index))
        elif isinstance(node, yaml.SequenceNode):
            for child in node.value:
                walk(child)
        elif isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                walk(k)
                walk(v)

    root = yaml.compose(text, Loader=yaml.SafeLoader)
    assert root is not None
    walk(root)
    return spans


SPANS = _scalar_spans(SMALL)
LINES = SMALL.splitlines(keepends=True)

TRICKY = [
    "0644", "10:25:30:12:34:56", "1:30", "2024-01-02", "2001-12-14t21:59:43.10-05:00",
    "yes", "no", "on", "off", "y", "n", "~", "null", "Null", "true", "False", "0x1f", "0o17",
    "0b101", "1_000", ".inf", "-.inf", ".nan", "1e3", "1.5", "-1", "0", "00", "65536",
    "99999999999999999999999", "''", '""', "'it''s'", '"\\u00e9"', "[]", "{}", "[a, b]",
    "{x: 1}", "[1, [2, [3]]]", "{a: {b: {c: d}}}", "-", "- x", "?", ":", "x: y", "#", "# c",
    "|", ">", "'", '"', "[", "{", "]", "}", ",", "*x", "%", "@", "`", "<<", "=", "\t",
    "\n", "\n  - a\n  - b", "\n  k: v", "é", "\u2028", "\x85", "\ufeff", "10.1.0.500",
    "10.1.0.0/33", "52:54:00:00:00:0", "ff:ff:ff:ff:ff:ff", "gpu-[9-1]", "tbox-[001-100000]",
]
ALPHABET = st.characters(codec="utf-8", exclude_characters="&!") | st.sampled_from(
    list("abc019:-_ ,[]{}#'\"\n\t"))
TOKENS = st.one_of(st.sampled_from(TRICKY), st.text(ALPHABET, max_size=24),
                   st.integers(-(2**70), 2**70).map(str))


@SETTINGS
@given(span=st.sampled_from(SPANS), token=TOKENS)
def test_replacing_any_scalar_never_crashes(span: tuple[int, int], token: str) -> None:
    start, end = span
    check(SMALL[:start] + token + SMALL[end:])


GARBAGE = [
    "  - x", "foo: [", "}", "]", "? a", ": b", "---", "...", "%YAML 1.1", "  key: value",
    "nodes:", "\tx: 1", "'unterminated", "a: b: c", "<<: {}", "  <<: {x: 1}", "*alias",
    "site: {}", "nodes: {}", "  gpu-01: {}", "  stor-9: {serial: X, mac: m, bmc_mac: b}",
    "profiles:", "    - {role: data}", "#", "", "   ", "- - -", "{", "[[[[",
]


@SETTINGS
@given(where=st.integers(0, len(LINES)),
       lines=st.lists(st.one_of(st.sampled_from(GARBAGE), st.text(ALPHABET, max_size=40)),
                      min_size=1, max_size=3))
def test_inserting_garbage_lines_never_crashes(where: int, lines: list[str]) -> None:
    check("".join(LINES[:where]) + "".join(s + "\n" for s in lines) + "".join(LINES[where:]))


@SETTINGS
@given(line=st.integers(0, len(LINES) - 1), times=st.integers(1, 3),
       delete=st.booleans())
def test_duplicating_or_deleting_a_line_never_crashes(line: int, times: int,
                                                     delete: bool) -> None:
    # a node's line copied: duplicate key; a continuation line copied: a syntax error or a
    # repeated field; a line removed: a missing field, a broken flow map, ...
    new = [] if delete else [LINES[line]] * (times + 1)
    check("".join(LINES[:line] + new + LINES[line + 1:]))


# --- data-level mutations ----------------------------------------------------------------------


def _paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*prefix, i))
    return out


PATHS = _paths(SMALL_DATA)

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**64), 2**64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(ALPHABET, max_size=20), st.sampled_from(TRICKY),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.one_of(st.text(ALPHABET, max_size=8), st.integers(), st.none()),
                      inner, max_size=3),
    max_leaves=8,
)


_Dumper: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump(data: Any) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        data = data[part]
    return data


@SETTINGS
@given(path=st.sampled_from(PATHS), value=VALUES)
def test_replacing_any_value_with_random_data_never_crashes(path: tuple[Any, ...],
                                                            value: Any) -> None:
    data = copy.deepcopy(SMALL_DATA)
    _parent(data, path)[path[-1]] = value
    check(_dump(data))


def test_deleting_any_key_or_item_never_crashes() -> None:
    # exhaustive rather than random: there are only a few hundred keys and items
    for path in PATHS:
        data = copy.deepcopy(SMALL_DATA)
        del _parent(data, path)[path[-1]]
        check(_dump(data))


NODE_NAMES = sorted(SMALL_DATA["nodes"])


@settings(SETTINGS, max_examples=50)
@given(source=st.sampled_from(NODE_NAMES),
       name=st.one_of(st.sampled_from([*NODE_NAMES, "stor-3", "gpu-05", "x"]),
                      st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True)),
       group=st.one_of(st.none(), st.sampled_from(sorted(SMALL_DATA["node_groups"]))))
def test_duplicating_a_node_never_crashes(source: str, name: str, group: str | None) -> None:
    data = copy.deepcopy(SMALL_DATA)
    data["nodes"][name] = copy.deepcopy(data["nodes"][source])
    if group is not None:  # and put it in a group, next to the group's own hosts
        g = data["node_groups"][group]
        g2 = copy.deepcopy(g)
        g2["hosts"] = name
        data["node_groups"][f"{group}-copy"] = g2
    check(_dump(data))


# --- what validates renders --------------------------------------------------------------------

# Free-text fields: any text must either validate and render, or be reported.
FREE_TEXT = [
    ("nodes", "stor-1", "comment"),
    ("nodes", "stor-2", "boot_disk", "serial"),
    ("nodes", "gpu-01", "serial"),
    ("profiles", "gpu", "vendor"),
    ("profiles", "storage", "model"),
    ("profiles", "head", "cpu", "model"),
    ("profiles", "gpu", "nics", "ib", "model"),
    ("profiles", "storage", "bmc", "kind"),
    ("profiles", "storage", "bmc", "user"),
    ("switches", "sw1", "model"),
    ("switches", "ib1", "location"),
    ("site", "timezone"),
    ("site", "ntp_servers", 0),
    ("site", "apt", "mirror"),
    ("site", "install", "kernel"),
    ("site", "install", "iso_url"),
    ("slurm", "version"),
    ("slurm", "partitions", "tbox1", "max_time"),
    ("mkv", "arrays", "data", "index_path"),
    ("mkv", "arrays", "data", "purpose"),
]


def _set(data: Any, path: tuple[Any, ...], value: Any) -> None:
    for part in path[:-1]:
        data = data.setdefault(part, {}) if isinstance(data, dict) else data[part]
    data[path[-1]] = value


@settings(SETTINGS, max_examples=60)
@given(edits=st.lists(st.tuples(st.sampled_from(FREE_TEXT),
                                st.text(st.characters(codec="utf-8"),
                                        min_size=1, max_size=40)),
                      min_size=1, max_size=4),
       hosts_padding=st.booleans(), ip_shift=st.integers(0, 40))
def test_valid_variations_render(edits: list[tuple[tuple[Any, ...], str]], hosts_padding: bool,
                                 ip_shift: int) -> None:
    data = copy.deepcopy(SMALL_DATA)
    for path, value in edits:
        _set(data, path, value)
    # structural but valid changes: zero-padded storage hostnames, shifted storage addresses
    if hosts_padding:
        data["node_groups"]["storage"]["hosts"] = "stor-[01-02]"
        data["nodes"] = {("stor-0" + k[-1] if k.startswith("stor-") else k): v
                         for k, v in data["nodes"].items()}
    data["node_groups"]["storage"]["nics"]["prov"]["ip_base"] = f"10.1.0.{150 + ip_shift}"
    inv = check(_dump(data))
    if inv is None:
        # each field has its own type: only an edited field may be rejected (or a serial
        # that repeats another), and the problem names it
        with pytest.raises(InventoryError) as info:
            parse(_dump(data), FILE)
        renamed = {"stor-1": "stor-01", "stor-2": "stor-02"} if hosts_padding else {}
        edited = {dotted(tuple(renamed.get(x, x) if isinstance(x, str) else x for x in path))
                  for path, _ in edits}
        for p in info.value.problems:
            assert p.path in edited or p.path.endswith(".serial"), str(p)


@pytest.mark.parametrize("text", [
    "plain", "with: colon", "#hash", "{{ jinja }}", "caf\u00e9", "'quote\"", "$(id); x",
])
def test_free_text_survives_the_rendered_pillar(text: str) -> None:
    data = copy.deepcopy(SMALL_DATA)
    data["profiles"]["storage"]["vendor"] = text
    inv = check(_dump(data))
    assert inv is not None
    sls = yaml.safe_load(render_all(inv)["pillar/nodes/stor-1.sls"])
    assert sls["node"]["hardware"]["vendor"] == text


@pytest.mark.parametrize("text", ["tab\there", "a\nb", "a\x7fb", "a\x85b", "a\x9fb",
                                  "a\x00b", "a\u202eb"])
def test_control_characters_in_free_text_are_reported(text: str) -> None:
    data = copy.deepcopy(SMALL_DATA)
    data["profiles"]["storage"]["vendor"] = text
    out = _dump(data)
    with pytest.raises(InventoryError) as info:
        parse(out, FILE)
    (p,) = info.value.problems
    assert p.path == "profiles.storage.vendor", str(p)
    assert "control character" in p.message, str(p)
    line = next(i for i, ln in enumerate(out.splitlines(), 1) if ln.lstrip().startswith("vendor:")
                and i > out[:out.index("storage:")].count("\n"))
    assert p.pos.line == line, str(p)


def test_the_default_inventory_renders() -> None:
    root = Path(__file__).resolve().parents[2]
    inv = check((root / "inventory.yaml").read_text())
    assert inv is not None


# --- hostlist compression ----------------------------------------------------------------------

_RANGE_PART = re.compile(r"^(?P<prefix>[^\[\],]*)\[(?P<body>[0-9,-]+)\]$")


def _split_top(expr: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in expr:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += {"[": 1, "]": -1}.get(ch, 0)
        assert depth in (0, 1), expr
        cur += ch
    parts.append(cur)
    return parts


def expand(expr: str) -> list[str]:
    """A tiny Slurm hostlist expander: ``a[01-03,7],b`` -> a01 a02 a03 a07 b."""
    names: list[str] = []
    if not expr:
        return names
    for part in _split_top(expr):
        assert part, f"empty element in {expr!r}"
        m = _RANGE_PART.match(part)
        if not m:
            assert "[" not in part and "]" not in part, part
            names.append(part)
            continue
        for item in m["body"].split(","):
            lo, _, hi = item.partition("-")
            if not hi:
                names.append(m["prefix"] + lo)
                continue
            assert int(lo) < int(hi), f"{item!r} in {expr!r} is not an increasing range"
            names += [f"{m['prefix']}{i:0{len(lo)}d}" for i in range(int(lo), int(hi) + 1)]
    return names


PREFIXES = st.sampled_from(["tbox-", "gpu-", "stor-", "n", "a1b", "x-0", "", "head-", "r1-c"])
NUMBERED = st.builds(lambda p, n, w: f"{p}{n:0{w}d}", PREFIXES, st.integers(0, 1200),
                     st.integers(0, 4))
PLAIN = st.sampled_from(["head", "login", "mgmt-a", "x-"])
HOSTNAMES = st.lists(st.one_of(NUMBERED, PLAIN), max_size=40)


@settings(max_examples=300, deadline=None)
@given(names=HOSTNAMES)
def test_hostlist_compress_round_trips(names: list[str]) -> None:
    expr = compress(names)
    expanded = expand(expr)
    assert set(expanded) == set(names), expr


@settings(max_examples=150, deadline=None)
@given(names=st.lists(st.one_of(NUMBERED, PLAIN), unique=True, max_size=40))
def test_hostlist_compress_lists_each_distinct_name_once(names: list[str]) -> None:
    expanded = expand(compress(names))
    assert sorted(expanded) == sorted(names), compress(names)


@pytest.mark.parametrize(("names", "expr"), [
    (["tbox-001", "tbox-002", "tbox-003"], "tbox-[001-003]"),
    (["n8", "n9", "n10"], "n[8-10]"),
    (["tbox-098", "tbox-099", "tbox-100"], "tbox-[098-100]"),
    (["a1", "a3", "a4", "head"], "a[1,3-4],head"),
    ([], ""),
])
def test_hostlist_examples(names: list[str], expr: str) -> None:
    assert compress(names) == expr
    assert sorted(expand(expr)) == sorted(names)
