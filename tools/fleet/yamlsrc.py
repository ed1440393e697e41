"""Load YAML into plain Python values plus a map of source positions.

PyYAML's composer gives every node a start mark; we build values ourselves from the
node tree so that we can (a) reject duplicate keys, which PyYAML silently drops,
(b) keep YAML 1.1 surprises as strings (timestamps, base-60 integers such as the
all-digit MAC ``10:25:30:12:34:56``), and (c) record where each value came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import yaml

from fleet.problems import Problem

try:  # libyaml is ~10x faster; the pure-Python loader is a correct fallback.
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on how PyYAML was built
    _Loader = yaml.SafeLoader

Path = tuple[str | int, ...]

_BOOL = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}


class Pos(NamedTuple):
    """A 1-based position in a source file (a tuple: cheap to make by the hundred thousand)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass
class Source:
    """A loaded YAML document: its value and where each part of it came from."""

    file: str
    data: Any
    values: dict[Path, Pos] = field(default_factory=dict)
    keys: dict[Path, Pos] = field(default_factory=dict)
    texts: dict[Path, str] = field(default_factory=dict)  # scalars as written

    def pos(self, path: Path, *, key: bool = False) -> Pos:
        """Position of ``path``, or of its nearest ancestor that exists."""
        table = self.keys if key else self.values
        p = tuple(path)
        while p:
            if p in table:
                return table[p]
            if not key and p in self.keys:
                return self.keys[p]
            p = p[:-1]
        return self.values.get((), Pos(self.file, 1, 1))


class YamlLoadError(Exception):
    """Raised with every problem found while loading (syntax, duplicate keys)."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = problems


def _mark(file: str, node: yaml.Node) -> Pos:
    return Pos(file, node.start_mark.line + 1, node.start_mark.column + 1)


def _scalar(node: yaml.ScalarNode) -> Any:
    value: str = node.value
    if node.style in ("'", '"', "|", ">"):
        return value
    tag = node.tag
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


def load(text: str, file: str) -> Source:
    """Parse ``text`` (named ``file`` in messages) into a :class:`Source`."""
    src = Source(file=file, data=None)
    problems: list[Problem] = []
    if any(ch in text for ch in _ODD_BREAKS):
        raise YamlLoadError(_odd_breaks(text, file))
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        msg = exc.problem or str(exc)
        raise YamlLoadError(
            [Problem(Pos(file, line, col), "", f"YAML syntax error: {msg}", code="yaml_syntax")]
        ) from None
    except yaml.YAMLError as exc:
        raise YamlLoadError(
            [Problem(Pos(file, 1, 1), "", f"YAML error: {exc}", code="yaml_syntax")]
        ) from None
    if root is None:
        src.data = None
        return src

    seen: set[int] = set()

    def build(node: yaml.Node, path: Path) -> Any:
        src.values[path] = _mark(file, node)
        if id(node) in seen:  # the composer hands out the same node again for an alias
            problems.append(Problem(src.keys.get(path, src.values[path]), _dotted(path),
                                    "YAML anchors and aliases are not supported; use a profile "
                                    "or node group to share settings", code="yaml_alias"))
            return None
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            src.texts[path] = node.value
            return _scalar(node)
        if isinstance(node, yaml.SequenceNode):
            return [build(child, (*path, i)) for i, child in enumerate(node.value)]
        if isinstance(node, yaml.MappingNode):
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
                if key in out:
                    first = src.keys[kpath]
                    problems.append(
                        Problem(_mark(file, key_node), _dotted(kpath),
                                f"duplicate key {key!r} (first defined at {first}); "
                                "YAML keeps only one of them, so remove or rename one",
                                code="duplicate_key")
                    )
                    continue
                src.keys[kpath] = _mark(file, key_node)
                out[key] = build(value_node, kpath)
            return out
        raise AssertionError(f"unknown YAML node {node!r}")  # pragma: no cover

    src.data = build(root, ())
    if problems:
        raise YamlLoadError(problems)
    return src


def _dotted(path: Path) -> str:
    from fleet.problems import dotted

    return dotted(path)
