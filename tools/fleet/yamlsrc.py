"""Load YAML into plain Python values plus a map of source positions.

PyYAML's composer gives every node a start mark; we build values ourselves from the
node tree so that we can (a) reject duplicate keys, which PyYAML silently drops, and tags
(``!include``, ``!!binary``) other than those YAML itself resolves to, (b) keep YAML 1.1
surprises as strings (timestamps, base-60 integers such as the all-digit MAC
``10:25:30:12:34:56``), and (c) record where each value came from. Syntax errors are said
in plain words where :mod:`fleet.yamlwords` recognizes them.

A valid, plain document (the usual case) is built straight from the parser's events,
which is several times faster than composing a node tree first; at the first thing that
might be a problem (an anchor, an alias, a merge or complex key, a duplicate key, a
syntax error) the document is loaded again through the node tree, whose messages are
the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from fleet.problems import Pos, Problem
from fleet.yamlwords import plain

try:  # libyaml is ~10x faster; the pure-Python loader is a correct fallback.
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader

Path = tuple[str | int, ...]

_BOOL = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


# The top-level keys whose positions a valid document is loaded without (10,000 of an
# inventory's 14,000 lines at 10,000 nodes): read again only for a problem or a warning there.
UNREAD = frozenset({"nodes"})


class Source:
    """A loaded YAML document: its value and where each part of it came from (a plain
    class: a dataclass compiles its methods at import, on every run that loads one)."""

    def __init__(self, file: str, data: Any, unread: str | None = None) -> None:
        self.file = file
        self.data = data
        # A valid document is loaded without the positions under its UNREAD keys (they
        # are wanted only to say where a problem is): ``unread`` is its text, read again
        # for them when first asked.
        self._unread = unread
        self._values: dict[Path, Pos] = {}
        self._keys: dict[Path, Pos] = {}
        self._texts: dict[Path, str] = {}  # scalars as written

    @property
    def values(self) -> dict[Path, Pos]:
        self._read_positions()
        return self._values

    @property
    def keys(self) -> dict[Path, Pos]:
        self._read_positions()
        return self._keys

    @property
    def texts(self) -> dict[Path, str]:
        self._read_positions()
        return self._texts

    def pos(self, path: Path, *, key: bool = False) -> Pos:
        """Position of ``path``, or of its nearest ancestor that exists."""
        if path and path[0] in UNREAD:
            self._read_positions()
        table = self._keys if key else self._values
        p = tuple(path)
        while p:
            if p in table:
                return table[p]
            if not key and p in self._keys:
                return self._keys[p]
            p = p[:-1]
        return self._values.get((), Pos(self.file, 1, 1))

    def _read_positions(self) -> None:
        if self._unread is not None:
            again = _load_events(self._unread, self.file, record=True)
            self._unread = None
            self._values, self._keys, self._texts = again._values, again._keys, again._texts


class YamlLoadError(Exception):
    """Raised with every problem found while loading (syntax, duplicate keys)."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def _mark(file: str, node: yaml.Node) -> Pos:
    return Pos(file, node.start_mark.line + 1, node.start_mark.column + 1)


def _scalar(node: yaml.ScalarNode) -> Any:
    return _convert(node.value, node.style, node.tag)


_QUOTED = frozenset(("'", '"', "|", ">"))  # styles whose value is its text, whatever its tag


def _convert(value: str, style: str | None, tag: str) -> Any:
    """The Python value of a scalar written as ``value`` in ``style``, resolved to ``tag``."""
    if style in _QUOTED:
        return value
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        return _BOOL.get(value.lower(), value)  # `!!bool maybe`: keep the text
    if tag == "tag:yaml.org,2002:int":
        if ":" in value or "_" in value:  # YAML 1.1 base-60 (MACs, times): keep text
            return value
        text = value.lower()
        try:
            if text.startswith(("0x", "-0x", "+0x")):
                return int(text, 16)
            if text.startswith(("0o", "-0o", "+0o")):
                return int(text, 8)
            if len(text.lstrip("+-")) > 1 and text.lstrip("+-").startswith("0"):
                return value  # YAML 1.1 octal such as 0644: keep text, never guess
            return int(text, 10)
        except ValueError:
            return value
    if tag == "tag:yaml.org,2002:float":
        if ":" in value:
            return value
        try:
            return float(value.replace("_", ""))
        except ValueError:
            return value
    return value  # str, timestamps and anything else stay text


# YAML 1.1 treats these as line breaks, editors do not: positions would drift and text
# after one inside a comment would become live YAML.
_ODD_BREAKS = {"\x85": "NEL (U+0085)", "\u2028": "LINE SEPARATOR (U+2028)",
               "\u2029": "PARAGRAPH SEPARATOR (U+2029)"}


def _odd_breaks(text: str, file: str) -> list[Problem]:
    problems = []
    for lineno, line in enumerate(text.split("\n"), 1):
        for col, ch in enumerate(line, 1):
            if ch in _ODD_BREAKS:
                problems.append(Problem(Pos(file, lineno, col), "",
                                        f"{_ODD_BREAKS[ch]} is not allowed in the inventory",
                                        code="yaml_char", hint="replace it with a newline or "
                                        "a space"))
    return problems


# The inventory is at most 6 levels deep (site.images.<name>.args[i]); far deeper input is
# hostile or broken, and would exhaust the stack of the recursive builders (and Salt's).
MAX_DEPTH = 32


def _too_deep(file: str, mark: Any) -> YamlLoadError:
    return YamlLoadError([Problem(Pos(file, mark.line + 1, mark.column + 1), "",
                                  f"nested more than {MAX_DEPTH} levels deep",
                                  code="yaml_depth",
                                  hint="an inventory is a few levels of mappings and lists")])


def _check_depth(text: str, file: str) -> None:
    """Raise at the first collection nested deeper than MAX_DEPTH (iterative: any depth)."""
    depth = 0
    loader = _Loader(text)
    try:
        while True:
            try:
                ev = loader.get_event()
            except yaml.YAMLError:
                return  # the composer reports syntax errors exactly
            if ev is None or isinstance(ev, yaml.StreamEndEvent):
                return
            if isinstance(ev, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    raise _too_deep(file, ev.start_mark)
            elif isinstance(ev, yaml.CollectionEndEvent):
                depth -= 1
    finally:
        loader.dispose()


def load(text: str, file: str) -> Source:
    """Parse ``text`` (named ``file`` in messages) into a :class:`Source`."""
    if any(ch in text for ch in _ODD_BREAKS):
        raise YamlLoadError(_odd_breaks(text, file))
    try:
        return _load_events(text, file)
    except (_NotPlainError, yaml.YAMLError):
        _check_depth(text, file)  # before the recursive composer sees it
        return _load_nodes(text, file)  # the same document, or its exact problems


class _NotPlainError(Exception):
    """The document holds something only the node-tree loader reports exactly."""


_MERGE_TAG = "tag:yaml.org,2002:merge"
_CORE = "tag:yaml.org,2002:"
# The tags YAML itself gives an untagged value (and so those that may be written out, as in
# `!!str 12`): any other (`!include`, `!!binary`, `!!python/...`) is a feature the
# inventory does not use, refused where it is written.
_PLAIN_TAGS = frozenset(_CORE + t for t in (
    "str", "int", "float", "bool", "null", "seq", "map", "timestamp", "merge", "value"))


def _tag_problem(file: str, node: yaml.Node, path: Path) -> Problem:
    tag = str(node.tag)
    shown = "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag
    hint = ("the inventory is one file: nothing is included into it" if shown == "!include"
            else "a value is written as itself; quote it to keep it text")
    return Problem(_mark(file, node), _dotted(path), f"YAML tags are not used in the "
                   f"inventory; remove `{shown}`", code="yaml_tag", hint=hint)
_resolve: Callable[[type, str, tuple[bool, bool]], str] = yaml.resolver.Resolver().resolve
_tags: dict[tuple[str, tuple[bool, bool]], str] = {}


def _tag(value: str, implicit: tuple[bool, bool]) -> str:
    """The tag the composer gives an untagged scalar (cached: values repeat a lot)."""
    key = (value, implicit)
    tag = _tags.get(key)
    if tag is None:
        tag = _tags[key] = _resolve(yaml.ScalarNode, value, implicit)
    return tag


# complexity 20 on purpose: docs/architecture.md, "Long functions"
def _load_events(text: str, file: str, *, record: bool = False) -> Source:  # noqa: C901
    """:func:`load` for a plain, valid document, from parser events; raises _NotPlainError or
    a YAML error at anything else. The positions under :data:`UNREAD` are read only with
    ``record``; else when first asked (:class:`Source`): a third less time at 10,000
    nodes."""
    src = Source(file=file, data=None, unread=None if record else text)
    values, keys, texts = src._values, src._keys, src._texts
    skip = frozenset() if record else UNREAD
    loader = _Loader(text)
    get = loader.get_event
    scalar_event, mapping_end, sequence_end = (yaml.ScalarEvent, yaml.MappingEndEvent,
                                               yaml.SequenceEndEvent)
    mapping_start, sequence_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
    plain_tags = _PLAIN_TAGS
    quoted = _QUOTED
    new = tuple.__new__  # a Pos without NamedTuple's __new__ frame: 110,000 at 10,000 nodes

    def tag_of(ev: Any) -> str:
        tag: str | None = ev.tag
        if tag is None or tag == "!":
            return _tag(ev.value, ev.implicit)
        if tag not in plain_tags:
            raise _NotPlainError
        return tag

    def key_of(kev: Any) -> str | int:
        if type(kev) is not scalar_event or kev.anchor is not None:
            raise _NotPlainError
        if kev.style in quoted and kev.tag is None:  # text, never a merge key
            return kev.value
        ktag = tag_of(kev)
        if ktag == _MERGE_TAG:
            raise _NotPlainError
        key = _convert(kev.value, kev.style, ktag)
        return key if isinstance(key, str | int) else str(key)

    def mapping(path: Path, depth: int, placed: bool) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        while True:
            kev: Any = get()
            if type(kev) is mapping_end:
                return out
            key = key_of(kev)
            if key in out:
                raise _NotPlainError
            if placed:
                kpath = (*path, key)
                kmark: Any = kev.start_mark
                keys[kpath] = new(Pos, (file, kmark.line + 1, kmark.column + 1))
                out[key] = build(get(), kpath, depth + 1, depth > 0 or key not in skip)
            else:
                out[key] = build(get(), path, depth + 1, False)

    def build(ev: Any, path: Path, depth: int, placed: bool) -> Any:  # path: only where placed
        if ev.anchor is not None:
            raise _NotPlainError
        kind = type(ev)
        if depth >= MAX_DEPTH and kind is not scalar_event:
            raise _too_deep(file, ev.start_mark)
        if placed:
            mark = ev.start_mark
            values[path] = new(Pos, (file, mark.line + 1, mark.column + 1))
        if kind is scalar_event:
            value = ev.value
            if placed:
                texts[path] = value
            if ev.style in quoted and ev.tag is None:  # text whatever its tag: no resolving
                return value
            return _convert(value, ev.style, tag_of(ev))
        if ev.tag is not None and ev.tag not in plain_tags:
            raise _NotPlainError
        if kind is mapping_start:
            return mapping(path, depth, placed)
        if kind is sequence_start:
            items: list[Any] = []
            while True:
                iev: Any = get()
                if type(iev) is sequence_end:
                    return items
                items.append(build(iev, (*path, len(items)), depth + 1, placed))
        raise _NotPlainError  # an alias

    try:
        get()  # StreamStart
        ev = get()
        if isinstance(ev, yaml.StreamEndEvent):
            return src
        src.data = build(get(), (), 0, True)
        get()  # DocumentEnd
        if not isinstance(get(), yaml.StreamEndEvent):
            raise _NotPlainError  # a second document
    finally:
        loader.dispose()
    return src


def _load_nodes(text: str, file: str) -> Source:
    """:func:`load` through PyYAML's node tree: every document, and the reference for
    every problem."""
    src = Source(file=file, data=None)
    root = _compose(text, file)
    if root is None:
        src.data = None
        return src
    tree = _Tree(src)
    src.data = tree.build(root, ())
    if tree.problems:
        raise YamlLoadError(tree.problems)
    return src


def _compose(text: str, file: str) -> yaml.Node | None:
    """PyYAML's node tree of ``text``; a syntax error as the one problem of a YamlLoadError."""
    try:
        node: yaml.Node | None = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        msg = exc.problem or str(exc)
        said = plain(text, line - 1, col - 1, msg)
        if said is not None:
            raise YamlLoadError([Problem(Pos(file, said.line, said.col), "", said.message,
                                         code="yaml_syntax", hint=said.hint)]) from None
        raise YamlLoadError(
            [Problem(Pos(file, line, col), "", f"YAML syntax error: {msg}", code="yaml_syntax")]
        ) from None
    except yaml.YAMLError as exc:
        raise YamlLoadError(
            [Problem(Pos(file, 1, 1), "", f"YAML error: {exc}", code="yaml_syntax")]
        ) from None
    return node


class _Tree:
    """Values (and their positions into ``src``) built from a node tree, with every
    problem found on the way."""

    def __init__(self, src: Source) -> None:
        self.src, self.file = src, src.file
        self.problems: list[Problem] = []
        self.seen: set[int] = set()

    def build(self, node: yaml.Node, path: Path) -> Any:
        src = self.src
        src.values[path] = _mark(self.file, node)
        if id(node) in self.seen:  # the composer hands out the same node again for an alias
            self.problems.append(Problem(
                src.keys.get(path, src.values[path]), _dotted(path),
                "YAML anchors and aliases are not supported; use a profile "
                "or node group to share settings", code="yaml_alias"))
            return None
        self.seen.add(id(node))
        if node.tag not in _PLAIN_TAGS:
            self.problems.append(_tag_problem(self.file, node, path))
        if isinstance(node, yaml.ScalarNode):
            src.texts[path] = node.value
            return _scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(child, (*path, i)) for i, child in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path)
        raise AssertionError(f"unknown YAML node {node!r}")  # pragma: no cover

    def _mapping(self, node: yaml.MappingNode, path: Path) -> dict[Any, Any]:
        file, problems = self.file, self.problems
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                problems.append(
                    Problem(_mark(file, key_node), _dotted(path),
                            "YAML merge keys ('<<') are not supported; "
                            "use a profile or node group instead", code="yaml_merge")
                )
                continue
            if not isinstance(key_node, yaml.ScalarNode):
                problems.append(
                    Problem(_mark(file, key_node), _dotted(path),
                            "mapping keys must be plain scalars", code="yaml_key")
                )
                continue
            key = _scalar(key_node)
            key = key if isinstance(key, str | int) else str(key)
            kpath = (*path, key)
            if key_node.tag not in _PLAIN_TAGS:
                problems.append(_tag_problem(file, key_node, kpath))
            if key in out:
                first = self.src.keys[kpath]
                problems.append(
                    Problem(_mark(file, key_node), _dotted(kpath),
                            f"duplicate key {key!r} (first defined at {first}); "
                            "YAML keeps only one of them, so remove or rename one",
                            code="duplicate_key")
                )
                continue
            self.src.keys[kpath] = _mark(file, key_node)
            out[key] = self.build(value_node, kpath)
        return out


def _dotted(path: Path) -> str:
    from fleet.problems import dotted

    return dotted(path)
