"""The position-tracking YAML loader (fleet.yamlsrc): values, positions, and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet.inventory.load import parse
from fleet.problems import InventoryError, Pos, Problem
from fleet.yamlsrc import Source, YamlLoadError, load

FILE = "f.yaml"


def at(text: str, needle: str, nth: int = 0) -> Pos:
    """1-based position of the ``nth`` occurrence of ``needle`` in ``text``."""
    offset = -1
    for _ in range(nth + 1):
        offset = text.index(needle, offset + 1)
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Pos(FILE, line, col)


def ok(text: str) -> Source:
    return load(text, FILE)


def fails(text: str) -> list[Problem]:
    with pytest.raises(YamlLoadError) as info:
        load(text, FILE)
    problems = info.value.problems
    assert problems, "YamlLoadError without problems"
    return problems


# --- duplicate keys ---------------------------------------------------------------------


@pytest.mark.parametrize(("text", "path", "key"), [
    ("a: 1\nb: 2\na: 3\n", "a", "a"),
    ("top:\n  inner: {x: 1, y: 2, x: 3}\n", "top.inner.x", "x"),  # nested, in a flow map
])
def test_duplicate_key_is_an_error_naming_both_positions(text: str, path: str,
                                                         key: str) -> None:
    [p] = fails(text)
    assert p.code == "duplicate_key"
    assert p.path == path
    assert p.pos == at(text, key, nth=1)
    assert f"first defined at {at(text, key)}" in p.message


def test_duplicate_key_message() -> None:
    [p] = fails("a: 1\nb: 2\na: 3\n")
    assert str(p).startswith(f"{FILE}:3:1: a: duplicate key 'a' (first defined at {FILE}:1:1)")


def test_duplicate_key_inside_list_item() -> None:
    text = "items:\n  - name: a\n    name: b\n"
    [p] = fails(text)
    assert p.path == "items[0].name"
    assert p.pos == at(text, "name", nth=1)
    assert str(at(text, "name")) in p.message


def test_every_duplicate_key_is_reported_in_one_run() -> None:
    text = "a: 1\na: 2\nb:\n  c: 1\n  c: 2\n"
    problems = fails(text)
    assert [(p.path, p.pos) for p in problems] == [
        ("a", at(text, "a", nth=1)),
        ("b.c", at(text, "c", nth=1)),
    ]


def test_duplicate_key_surfaces_through_parse_as_inventory_error(small_text: str) -> None:
    old = "  stor-2: {serial: STOR0002,"
    assert small_text.count(old) == 1
    text = small_text.replace(old, "  stor-1: {serial: STOR0009}\n" + old)
    with pytest.raises(InventoryError) as info:
        parse(text, FILE)
    [p] = info.value.problems
    assert p.code == "duplicate_key"
    assert p.path == "nodes.stor-1"
    assert p.pos == at(text, "stor-1: {serial: STOR0009}")
    assert f"first defined at {at(text, 'stor-1: {serial: STOR0001')}" in p.message


# --- YAML 1.1 surprises stay text ------------------------------------------------------


@pytest.mark.parametrize("mac", ["10:25:30:12:34:56", "00:11:22:33:44:55", "52:54:00:00:00:97"])
def test_unquoted_all_digit_mac_stays_a_string(mac: str) -> None:
    # PyYAML would read these as base-60 integers (10:25:30:12:34:56 == 2287763096).
    assert ok(f"mac: {mac}\n").data == {"mac": mac}


def test_unquoted_all_digit_mac_is_accepted_by_the_inventory(small_text: str) -> None:
    old = 'mac: "52:54:00:00:00:97"'
    assert small_text.count(old) == 1
    inv = parse(small_text.replace(old, "mac: 52:54:00:00:00:97"), FILE)
    assert inv.nodes["stor-1"].mac == "52:54:00:00:00:97"


@pytest.mark.parametrize("value", [
    "2024-01-02",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    "2002-12-14",
    "1:30",
    "1:30.5",
    "190:20:30",
])
def test_timestamps_and_sexagesimals_stay_strings(value: str) -> None:
    assert ok(f"v: {value}\n").data == {"v": value}


@pytest.mark.parametrize("value", ["0644", "0755", "00", "0123456789", "-0644", "0o17", "0b101",
                                   "1_000"])
def test_ambiguous_numbers_stay_text(value: str) -> None:
    assert ok(f"v: {value}\n").data == {"v": value}


@pytest.mark.parametrize(("text", "value"), [
    ("0", 0), ("42", 42), ("-7", -7), ("+3", 3), ("0x1f", 31), ("3.5", 3.5), ("1.0e+3", 1000.0),
    ("true", True), ("false", False), ("~", None), ("null", None), ("", None),
])
def test_plain_scalars_that_are_unambiguous_keep_their_type(text: str, value: object) -> None:
    data = ok(f"v: {text}\n").data
    assert data == {"v": value}
    assert type(data["v"]) is type(value)


@pytest.mark.parametrize("quoted", ["'0644'", '"0644"', "'yes'", '"null"', "'42'", '"1:30"'])
def test_quoted_scalars_are_always_strings(quoted: str) -> None:
    assert ok(f"v: {quoted}\n").data == {"v": quoted[1:-1]}


# --- refused constructs ----------------------------------------------------------------


def test_merge_key_is_rejected_at_its_position() -> None:
    text = "base: &b {x: 1}\nchild:\n  <<: *b\n  y: 2\n"
    [p] = fails(text)
    assert p.code == "yaml_merge"
    assert p.path == "child"
    assert p.pos == at(text, "<<")
    assert "'<<'" in p.message


def test_merge_key_rejected_alongside_other_problems() -> None:
    text = "base: &b {x: 1}\nchild: {<<: *b, y: 1, y: 2}\n"
    problems = fails(text)
    assert sorted(p.code for p in problems) == ["duplicate_key", "yaml_merge"]


def test_non_scalar_mapping_key_is_rejected() -> None:
    text = "? [a, b]\n: 1\n"
    [p] = fails(text)
    assert p.code == "yaml_key"
    assert p.pos == at(text, "[a, b]")


# --- syntax errors -----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "needle"), [
    ("a: [1, 2\nb: 3\n", "3\n"),            # where the parser noticed the missing ']'
    ("a:\n  b: 1\n  c\n  d: 2\n", "d: 2"),  # a key without its ':'
])
def test_syntax_error_reports_file_line_col(text: str, needle: str) -> None:
    [p] = fails(text)
    assert p.code == "yaml_syntax"
    assert p.path == ""
    assert (p.pos.file, p.pos.line) == (FILE, at(text, needle).line)
    assert str(p).startswith(f"{p.pos}: YAML syntax error: ")


# --- the common mistakes, in plain words ----------------------------------------------------


@pytest.mark.parametrize(("text", "needle"), [
    ("a:\n\tb: 1\n", "\tb"),                 # a tab where the indentation goes
    ("a:\n  b: 1\n\tc: 2\n", "\tc"),          # libyaml: "found a tab character that violates"
    ("a:\n  \tb: 1\n", "\tb"),               # after spaces
    ("a: 1\nb:\n\tc: 2\n", "\tc"),
])
def test_a_tab_says_tab_where_and_how_to_fix_it(text: str, needle: str) -> None:
    [p] = fails(text)
    assert (p.code, p.pos) == ("yaml_syntax", at(text, needle))
    assert p.message.startswith("a tab: YAML indents with spaces only")
    assert p.hint is not None and "replace the tab with spaces" in p.hint


@pytest.mark.parametrize(("text", "needle", "says"), [
    # indented more than a key whose value is written: at the line that moved
    ("a:\n  b: 1\n    c: 2\n", "c: 2", ["`c:` is indented more than `b:` on line 2",
                                          "indent `c:` 2 spaces, like `b:`"]),
    ("a: 1\n  b: 2\n", "b: 2", ["`b:` is indented more than `a:` on line 1"]),
    ("a:\n  - b: 1\n      c: 2\n", "c: 2", ["`c:` is indented more than `b:`",
                                               "4 spaces"]),
    # a line moved left between two that did not: that line, not the one after it
    ("x:\n  a:\n    b: 1\n  c: 2\n    d: 3\n", "c: 2", [
        "`c:` is indented 2 spaces, less than the lines around it (lines 3 and 5, 4 spaces)",
        "indent it 4 spaces, like `b:`"]),
    ("p:\n  q:\n    a: 1\n  x:\n      y: 1\n    b: 2\n", "x:", [
        "`x:` is indented 2 spaces, less than the lines around it (lines 3 and 6, 4 spaces)",
        "indent it 4 spaces, like `a:` on line 3"]),
    # a block's first line indented unlike the rest: that first line
    ("x:\n  a:\n    b: 1\nnodes:\n    h: 1\n  t: 2\n", "h: 1", [
        "`h:` is indented 4 spaces, the lines after it 2 spaces",
        "indent `h:` 2 spaces, like `t:` on line 6"]),  # not `nodes:`, which ends x's block
    ("p:\n  q:\n     a: 1\n    b: 2\n", "a: 1", [
        "`a:` is indented 5 spaces, the lines after it 4 spaces",
        "indent `a:` 4 spaces, like `b:` on line 4"]),
    ("a:\n  b: 1\n c: 2\n  d: 3\n", "c: 2", ["`c:` is indented 1 space, which lines up",
                                               "indent it 0 or 2 spaces"]),
    # a level no key above has
    ("a:\n    b: 1\n  c: 2\n", "c: 2", ["`c:` is indented 2 spaces, which lines up with "
                                          "nothing above it", "indent it 0 or 4 spaces"]),
    ("a:\n  - x\n - y\n", "- y", ["list item is indented 1 space", "indent it 2 spaces"]),
    ("a:\n  b: 1\n  - c\n", "- c", ["a list item among the keys of a mapping"]),
    ("a: b: c\n", ": c", ["a second `: ` on one line", "quote the value"]),
])
def test_bad_indentation_points_at_the_line_that_moved(text: str, needle: str,
                                                       says: list[str]) -> None:
    [p] = fails(text)
    assert (p.code, p.pos) == ("yaml_syntax", at(text, needle))
    for words in says:
        assert words in str(p), str(p)
    assert "YAML syntax error" not in p.message


def test_a_field_indented_as_a_new_entry_is_one_error_at_that_key(small_text: str) -> None:
    """`nics:` moved left out of its node group reads as a node group called `nics`: one
    error at that key saying so, not one per field the `nics` group lacks."""
    old = "    place: {racks: [r1]}\n    nics:\n"
    assert small_text.count(old) == 1
    text = small_text.replace(old, "    place: {racks: [r1]}\n  nics:\n")
    with pytest.raises(InventoryError) as info:
        parse(text, FILE)
    [p] = info.value.problems
    assert (p.code, p.path) == ("indentation", "node_groups.nics")
    assert p.pos == at(text, "nics:\n      prov: {network: prov, ip_base: 10.1.0.100")
    assert "`nics:` is indented 2 spaces, as an entry of node_groups beside `part-a`" \
        in p.message
    assert p.hint is not None and "2 more spaces" in p.hint


def test_a_scalar_field_indented_as_a_new_entry_is_one_error(small_text: str) -> None:
    """The last field of a group moved left: a node group called `mkv_array`."""
    old = "    mkv_array: data\n"
    start = small_text.index("    place: {racks: [r2], first_unit: 1}\n    nics:\n")
    rest = small_text[start:small_text.index("\nslurm:")]  # the group's last fields
    text = small_text.replace(old + rest, rest + "  mkv_array: data\n")
    assert text != small_text
    with pytest.raises(InventoryError) as info:
        parse(text, FILE)
    [p] = info.value.problems
    assert (p.code, p.path, p.pos) == ("indentation", "node_groups.mkv_array",
                                       at(text, "mkv_array: data"))
    assert "a field of `storage`" in p.message


def test_a_field_moved_left_between_two_others_is_named(small_text: str) -> None:
    old = "    slurm_partition: tbox1\n"
    text = small_text.replace(old, "  slurm_partition: tbox1\n")
    [p] = fails(text)
    assert (p.code, p.pos) == ("yaml_syntax", at(text, "slurm_partition: tbox1"))
    assert p.message.startswith("`slurm_partition:` is indented 2 spaces, less than the lines "
                                "around it")


# --- tags --------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "needle", "shown"), [
    ("a: !include other.yaml\n", "!include", "!include"),
    ("a: !!binary aGk=\n", "!!binary", "!!binary"),
    ("a: !foo {b: 1}\n", "!foo", "!foo"),
    ("a: [1, !!python/object:os.system x]\n", "!!python", "!!python/object:os.system"),
    ("a: !!set {x}\n", "!!set", "!!set"),
    ("!foo k: 1\n", "!foo", "!foo"),
])
def test_a_yaml_tag_is_refused_at_its_position(text: str, needle: str, shown: str) -> None:
    [p] = fails(text)
    assert (p.code, p.pos) == ("yaml_tag", at(text, needle))
    assert f"YAML tags are not used in the inventory; remove `{shown}`" in p.message


def test_include_is_refused_in_the_inventory(small_text: str) -> None:
    old = "    profile: gpu\n"
    text = small_text.replace(old, "    profile: !include gpu.yaml\n", 1)
    with pytest.raises(InventoryError) as info:
        parse(text, FILE)
    [p] = info.value.problems
    assert (p.code, p.pos) == ("yaml_tag", at(text, "!include"))
    assert p.path.endswith(".profile") and "nothing is included" in str(p.hint)


def test_the_tags_yaml_itself_gives_stay_allowed() -> None:
    assert ok("a: !!str 12\nb: !!int 7\nc: ! x\nd: !!map {e: 1}\n").data == {
        "a": "12", "b": 7, "c": "x", "d": {"e": 1}}


def test_a_byte_that_is_not_utf8_is_reported_at_its_line_and_column(tmp_path: Path) -> None:
    from fleet.inventory.load import load_inventory

    path = tmp_path / "inventory.yaml"
    path.write_bytes("site:\n  name: café\n".encode() + b"  note: caf\xe9 au lait\n")
    with pytest.raises(InventoryError) as info:
        load_inventory(path)
    [p] = info.value.problems
    assert (p.pos.line, p.pos.col) == (3, 12)
    assert p.message == "byte 0xe9 is not UTF-8 text" and "save the file as UTF-8" in str(p.hint)


def test_unclosed_flow_sequence_points_past_the_sequence() -> None:
    text = "a: [1, 2\nb: 3\n"
    [p] = fails(text)
    assert p.code == "yaml_syntax"
    assert p.pos.file == FILE
    assert p.pos.line == 2  # where the parser noticed the missing ']'
    assert p.pos.col >= 1
    assert "']'" in p.message


def test_unterminated_quote() -> None:
    text = "a: 1\nb: 'open\n"
    [p] = fails(text)
    assert p.code == "yaml_syntax"
    assert p.pos.line >= 2
    assert p.pos.col >= 1


def test_several_documents_are_refused() -> None:
    text = "a: 1\n---\nb: 2\n"
    [p] = fails(text)
    assert p.code == "yaml_syntax"
    assert p.pos == at(text, "---")


def test_empty_document_loads_as_none_and_parse_rejects_it() -> None:
    assert ok("").data is None
    assert ok("# only a comment\n").data is None
    with pytest.raises(InventoryError) as info:
        parse("", FILE)
    [p] = info.value.problems
    assert (p.pos.line, p.pos.col) == (1, 1)
    assert "mapping" in p.message


def test_non_mapping_document_is_rejected_by_parse() -> None:
    with pytest.raises(InventoryError) as info:
        parse("- a\n- b\n", FILE)
    [p] = info.value.problems
    assert p.code == "type"
    assert (p.pos.line, p.pos.col) == (1, 1)


# --- positions ---------------------------------------------------------------------------

DOC = """\
# a comment line to start with
top:
  nested:
    leaf: value
    num: 42
  items:
    - first
    - {k: v, n: [1, 2]}
    - key: deep
      other: "quoted"
flow: {a: 1, b: {c: x}}
list: [p, q]
"""


def test_positions_are_one_based_for_the_first_key() -> None:
    src = ok("a: b\n")
    assert src.keys[("a",)] == Pos(FILE, 1, 1)
    assert src.values[("a",)] == Pos(FILE, 1, 4)
    assert src.values[()] == Pos(FILE, 1, 1)


@pytest.mark.parametrize(("path", "needle", "nth"), [
    (("top",), "top", 0),
    (("top", "nested"), "nested", 0),
    (("top", "nested", "leaf"), "leaf", 0),
    (("top", "nested", "num"), "num", 0),
    (("top", "items"), "items", 0),
    (("top", "items", 1, "k"), "k: v", 0),
    (("top", "items", 1, "n"), "n: [", 0),
    (("top", "items", 2, "key"), "key: deep", 0),
    (("top", "items", 2, "other"), "other", 0),
    (("flow",), "flow", 0),
    (("flow", "a"), "a: 1", 0),
    (("flow", "b"), "b: {", 0),
    (("flow", "b", "c"), "c: x", 0),
    (("list",), "list", 0),
])
def test_key_positions(path: tuple[str | int, ...], needle: str, nth: int) -> None:
    src = ok(DOC)
    assert src.keys[path] == at(DOC, needle, nth)
    assert src.pos(path, key=True) == at(DOC, needle, nth)


@pytest.mark.parametrize(("path", "needle"), [
    (("top", "nested", "leaf"), "value"),
    (("top", "nested", "num"), "42"),
    (("top", "items", 0), "first"),
    (("top", "items", 1), "{k: v"),
    (("top", "items", 1, "k"), "v, n"),
    (("top", "items", 1, "n"), "[1, 2]"),
    (("top", "items", 1, "n", 0), "1, 2]"),
    (("top", "items", 1, "n", 1), "2]"),
    (("top", "items", 2), "key: deep"),       # a block map starts at its first key
    (("top", "items", 2, "key"), "deep"),
    (("top", "items", 2, "other"), '"quoted"'),  # a quoted scalar starts at its quote
    (("top", "nested"), "leaf"),
    (("flow",), "{a: 1"),
    (("flow", "a"), "1, b"),
    (("flow", "b"), "{c: x}"),
    (("flow", "b", "c"), "x}"),
    (("list",), "[p, q]"),
    (("list", 0), "p, q"),
    (("list", 1), "q]"),
])
def test_value_positions(path: tuple[str | int, ...], needle: str) -> None:
    src = ok(DOC)
    assert src.values[path] == at(DOC, needle)
    assert src.pos(path) == at(DOC, needle)


def test_crlf_line_endings_give_the_same_positions() -> None:
    lf, crlf = ok(DOC), ok(DOC.replace("\n", "\r\n"))
    assert crlf.data == lf.data
    assert crlf.keys == lf.keys
    assert crlf.values == lf.values


def test_byte_order_mark_does_not_shift_the_first_line() -> None:
    src = ok("\ufeffa: 1\nb: 2\n")
    assert src.keys[("a",)] == Pos(FILE, 1, 1)
    assert src.keys[("b",)] == Pos(FILE, 2, 1)


def test_block_sequence_value_starts_at_its_first_dash() -> None:
    src = ok(DOC)
    assert src.values[("top", "items")] == at(DOC, "- first")


def test_pos_falls_back_to_the_nearest_existing_ancestor() -> None:
    src = ok(DOC)
    # a missing child of a flow map -> the flow map's value
    assert src.pos(("flow", "b", "zzz")) == at(DOC, "{c: x}")
    assert src.pos(("top", "items", 1, "missing", "deeper")) == at(DOC, "{k: v")
    # key positions fall back to the nearest ancestor *key*
    assert src.pos(("flow", "b", "zzz"), key=True) == at(DOC, "b: {")
    # nothing matches at all -> the document root
    assert src.pos(("nope",)) == src.values[()]


def test_values_keep_their_structure() -> None:
    assert ok(DOC).data == {
        "top": {
            "nested": {"leaf": "value", "num": 42},
            "items": ["first", {"k": "v", "n": [1, 2]}, {"key": "deep", "other": "quoted"}],
        },
        "flow": {"a": 1, "b": {"c": "x"}},
        "list": ["p", "q"],
    }


def test_positions_in_the_small_inventory(small_text: str) -> None:
    src = load(small_text, FILE)
    line = next(i for i, s in enumerate(small_text.splitlines(), 1) if s.startswith("  gpu-02:"))
    row = small_text.splitlines()[line - 1]
    assert src.keys[("nodes", "gpu-02")] == Pos(FILE, line, 3)
    assert src.keys[("nodes", "gpu-02", "mac")] == Pos(FILE, line, row.index("mac:") + 1)
    assert src.values[("nodes", "gpu-02", "mac")] == Pos(FILE, line, row.index('"52:') + 1)


# --- known loader bugs (reported to the lead) ------------------------------------------


def test_recursive_alias_is_a_problem_not_a_crash() -> None:
    fails("a: &x [*x]\n")


def test_aliases_are_rejected_so_nothing_can_blow_up() -> None:
    problems = fails("a: &x [1, 2]\nb: *x\n")
    assert [(p.code, p.path, p.pos.line) for p in problems] == [("yaml_alias", "b", 2)]


def test_unicode_line_separators_are_rejected_at_the_editor_position() -> None:
    problems = fails("site: {}\n# note\u2028nodes: x\nnetworks: [\n")
    assert [(p.code, p.pos.line, p.pos.col) for p in problems] == [("yaml_char", 2, 7)]


def test_explicit_bool_tag_on_a_word_keeps_the_word() -> None:
    """`!!bool maybe` is no boolean: the text stays, where it was written, and a boolean
    field then refuses it there, naming it."""
    src = load("a: !!bool maybe\nb: !!bool yes\n", FILE)
    assert src.data == {"a": "maybe", "b": True}
    assert (src.values[("a",)], src.texts[("a",)]) == (Pos(FILE, 1, 4), "maybe")


# --- the event-based fast path and the node-tree loader agree ------------------------------

SAME_AS_NODES = [
    DOC,
    "",
    "# only a comment\n",
    "---\n",
    "a:\n",
    "a: ~\nb: null\nc: Null\nd: ''\n",
    "a: yes\nb: No\nc: on\nd: OFF\ne: true\nf: !!bool maybe\n",
    "a: 0x1F\nb: -0o17\nc: 0644\nd: 1_000\ne: 10:25:30\nf: +12\ng: 0\n",
    "a: 1.5\nb: .inf\nc: -.Inf\nd: .nan\ne: 1e3\nf: 1:30.5\ng: 6.02E+23\n",
    "a: 2024-01-02\nb: 2001-12-14t21:59:43.10-05:00\n",
    "a: !!str 12\nb: !!int '7'\nc: ! 12\ne: !!float 1\n",
    "'quoted key': 1\n\"dq\": 2\n? explicit\n: 3\n",
    "2: int key\ntrue: bool key\n~: null key\n1.5: float key\n",
    "a: |\n  block\n  text\nb: >\n  folded\n  text\nc: 'multi\n  line'\n",
    "- 1\n- [a, {b: c}]\n- {}\n- []\n-\n  - nested\n",
    "top:\r\n  k: v\r\n  l: [1, 2]\r\n",
    "\ufeffa: 1\n",
    "a: {b: {c: {d: [1, {e: f}]}}}\n",
    "plain scalar document\n",
    "--- \nk: v\n...\n",
]


@pytest.mark.parametrize("text", SAME_AS_NODES)
def test_event_loader_matches_the_node_loader(text: str) -> None:
    from fleet import yamlsrc

    fast, slow = yamlsrc._load_events(text, FILE), yamlsrc._load_nodes(text, FILE)
    assert (fast.data, fast.values, fast.keys, fast.texts) == (
        slow.data, slow.values, slow.keys, slow.texts)


def test_event_loader_matches_the_node_loader_on_the_inventories(small_text: str) -> None:
    from fleet import yamlsrc

    site = Path(__file__).resolve().parents[2] / "inventory.yaml"
    for text in (small_text, site.read_text("utf-8")):
        fast, slow = yamlsrc._load_events(text, FILE), yamlsrc._load_nodes(text, FILE)
        assert (fast.data, fast.values, fast.keys, fast.texts) == (
            slow.data, slow.values, slow.keys, slow.texts)


@pytest.mark.parametrize("text", [
    "a: &x 1\n", "a: &x 1\nb: *x\n", "<<: {a: 1}\n", "a: 1\na: 2\n", "? [a]\n: 1\n",
    "a: 1\n---\nb: 2\n", "a: [1\n", "!!merge <<: 1\n", "a: !custom x\n", "a: !foo {b: 1}\n",
    "!foo k: 1\n",
])
def test_event_loader_defers_anything_unusual_to_the_node_loader(text: str) -> None:
    from fleet import yamlsrc

    with pytest.raises((yamlsrc._NotPlainError, yamlsrc.yaml.YAMLError)):
        yamlsrc._load_events(text, FILE)


def test_the_positions_under_nodes_are_read_when_first_asked(
        small_text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A valid document is loaded without the positions under ``nodes:`` (yamlsrc.UNREAD);
    they are read again when a problem or a warning there asks, and are then exactly those
    of the node-tree loader, the reference."""
    from fleet import yamlsrc

    reads: list[bool] = []
    real = yamlsrc._load_events

    def counted(text: str, file: str, *, record: bool = False) -> Source:
        reads.append(record)
        return real(text, file, record=record)

    monkeypatch.setattr(yamlsrc, "_load_events", counted)
    src = load(small_text, FILE)
    ref = yamlsrc._load_nodes(small_text, FILE)
    assert reads == [False]
    assert src.pos(("site", "salt"), key=True) == ref.pos(("site", "salt"), key=True)
    assert src.pos(("networks", "prov", "cidr")) == ref.pos(("networks", "prov", "cidr"))
    assert reads == [False], "a position outside nodes: read the document again"
    assert src.pos(("nodes", "gpu-02", "mac")) == at(small_text, '"52:54:00:00:00:66"')
    assert reads == [False, True]
    assert (src.values, src.keys, src.texts) == (ref.values, ref.keys, ref.texts)
    assert reads == [False, True]
