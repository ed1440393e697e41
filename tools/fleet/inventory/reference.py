"""docs/inventory-reference.md, generated from the schema (:mod:`fleet.inventory.schema`):
every field of ``inventory.yaml`` with its type, default, constraints and description.
``python -m fleet.inventory.reference --check FILE`` exits 3 when FILE is stale
(`make check`); ``--write FILE`` regenerates it (`make docs`).
"""

from __future__ import annotations

import argparse
import ast
import functools
import inspect
import itertools
import operator
import sys
import textwrap
import types
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import BaseModel, StringConstraints
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from fleet.inventory import schema

HEADER = """# Inventory reference

Generated from `tools/fleet/inventory/schema/` by `make docs`; `make check` fails when
it is stale. Do not edit. `<name>` stands for a key the inventory chooses (a node group's
name, a network's name...), `[]` for the items of a list. How the sections fit together,
and the rules between fields: [inventory.md](inventory.md).
"""


@dataclass(frozen=True)
class Row:
    path: str
    type: str
    default: str
    constraints: str
    description: str


def _first_line(obj: Any) -> str:
    doc = (getattr(obj, "__doc__", None) or "").strip()
    return " ".join(doc.split("\n\n", 1)[0].split())


# (metadata type, what it says, the attribute that holds its value)
_BOUNDS: tuple[tuple[type, str, str], ...] = (
    (annotated_types.Ge, ">= {}", "ge"),
    (annotated_types.Gt, "> {}", "gt"),
    (annotated_types.Le, "<= {}", "le"),
    (annotated_types.Lt, "< {}", "lt"),
    (annotated_types.MinLen, "at least {} item(s)", "min_length"),
    (annotated_types.MaxLen, "at most {} item(s)", "max_length"),
)
_STRING_BOUNDS = (("pattern `{}`", "pattern"), ("length >= {}", "min_length"),
                  ("length <= {}", "max_length"))


def _constraints(metadata: Sequence[Any]) -> list[str]:
    out: list[str] = []
    for m in metadata:
        bound = next((b for b in _BOUNDS if isinstance(m, b[0])), None)
        if isinstance(m, StringConstraints):
            out += [text.format(getattr(m, attr)) for text, attr in _STRING_BOUNDS
                    if getattr(m, attr) is not None]
        elif bound is not None:
            out.append(bound[1].format(getattr(m, bound[2])))
        elif type(m).__name__ in ("AfterValidator", "BeforeValidator", "PlainValidator"):
            text = _first_line(m.func)
            out.append(text or f"checked by `{m.func.__name__}`")
        elif hasattr(m, "pattern") and getattr(m, "pattern", None):
            out.append(f"pattern `{m.pattern}`")
    return out


def _strip(tp: Any) -> tuple[Any, list[str]]:
    """The type without ``Annotated`` and ``None``, with the constraints it carried."""
    found: list[str] = []
    while typing.get_origin(tp) is typing.Annotated:
        tp, *meta = typing.get_args(tp)
        found += _constraints(meta)
    return tp, found


def _optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) < len(typing.get_args(tp)):
            return (args[0] if len(args) == 1 else functools.reduce(operator.or_, args)), True
    return tp, False


def type_name(tp: Any) -> str:
    tp, _ = _strip(tp)
    tp, opt = _optional(tp)
    tp, _ = _strip(tp)
    origin = typing.get_origin(tp)
    if origin is typing.Literal:
        name = " \\| ".join(f"`{a}`" for a in typing.get_args(tp))
    elif origin in (list, tuple, set, frozenset):
        name = f"list of {type_name(typing.get_args(tp)[0])}"
    elif origin is dict:
        name = f"map of {type_name(typing.get_args(tp)[1])}"
    elif origin in (typing.Union, types.UnionType):
        name = " or ".join(type_name(a) for a in typing.get_args(tp))
    elif isinstance(tp, type) and issubclass(tp, BaseModel):
        name = f"{tp.__name__} (mapping)"
    elif isinstance(tp, type) and issubclass(tp, Enum):
        name = " \\| ".join(f"`{m.value}`" for m in tp)
    elif isinstance(tp, type):
        name = {"str": "string", "int": "integer", "bool": "boolean", "float": "number",
                "IPv4Address": "IPv4 address", "IPv4Network": "IPv4 network (CIDR)"
                }.get(tp.__name__, tp.__name__)
    else:
        name = str(tp)
    return f"{name} or null" if opt else name


def _nested(tp: Any) -> tuple[type[BaseModel] | None, str]:
    """The model a field holds (directly, in a list or as map values) and the path suffix."""
    tp, _ = _strip(tp)
    tp, _ = _optional(tp)
    tp, _ = _strip(tp)
    origin = typing.get_origin(tp)
    suffix = ""
    if origin in (list, tuple):
        tp, suffix = typing.get_args(tp)[0], "[]"
    elif origin is dict:
        tp, suffix = typing.get_args(tp)[1], ".<name>"
    tp, _ = _strip(tp)
    tp, _ = _optional(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return tp, suffix
    return None, ""


def _default(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    factory = info.default_factory
    value = factory() if factory is not None else info.default  # type: ignore[call-arg]
    if value is None:
        return "null"
    if value is PydanticUndefined:
        return ""
    if isinstance(value, BaseModel):
        return "(its defaults)"
    if isinstance(value, (list, dict)) and not value:
        return "empty"
    if isinstance(value, bool):
        return "true" if value else "false"
    return f"`{value}`"


def _inner_constraints(tp: Any) -> list[str]:
    """Constraints on a list's items, a map's keys and a map's values (``list[Name]``...)."""
    tp, _ = _strip(tp)
    tp, _ = _optional(tp)
    origin = typing.get_origin(tp)
    if origin not in (list, dict):
        return []
    labels = ("keys", "each") if origin is dict else ("each",)
    return [f"{label}: {c}" for label, arg in zip(labels, typing.get_args(tp), strict=False)
            for c in _strip(arg)[1]]


def rows(model: type[BaseModel] = schema.Inventory, prefix: str = "") -> Iterator[Row]:
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        tp = info.annotation
        constraints = _constraints(info.metadata) + _strip(tp)[1] + _inner_constraints(tp)
        yield Row(path, type_name(tp), _default(info), "; ".join(constraints),
                  " ".join((info.description or _field_doc(model, name)).split()))
        nested, suffix = _nested(tp)
        if nested is not None:
            yield from rows(nested, f"{path}{suffix}.")


def _field_doc(model: type[BaseModel], name: str) -> str:
    """The docstring under field ``name`` in the class that declares it (the schema's
    models leave pydantic's ``use_attribute_docstrings`` off: it parses their source at
    every import)."""
    for klass in model.__mro__:
        if name in vars(klass).get("__annotations__", {}):
            return _attribute_docs(klass).get(name, "")
    return ""


@functools.cache
def _attribute_docs(klass: type) -> dict[str, str]:
    """``{attribute: docstring}`` of a class: a string literal right under an annotated
    assignment of its body."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
    body = next(n for n in tree.body if isinstance(n, ast.ClassDef)).body
    docs = {}
    for stmt, after in itertools.pairwise(body):
        if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            docs[stmt.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ") if "\\|" not in text else text


def render() -> str:
    lines = [HEADER, "| field | type | default | constraints | description |",
             "|---|---|---|---|---|"]
    for r in rows():
        lines.append(f"| `{r.path}` | {_cell(r.type)} | {r.default} | "
                     f"{_cell(r.constraints)} | {_cell(r.description)} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m fleet.inventory.reference",
                                description="docs/inventory-reference.md from the schema")
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", type=Path, metavar="FILE",
                      help="exit 3 if FILE is not what the schema generates")
    mode.add_argument("--write", type=Path, metavar="FILE", help="(re)generate FILE")
    args = p.parse_args(argv)
    text = render()
    if args.write:
        if not args.write.exists() or args.write.read_text(encoding="utf-8") != text:
            args.write.write_text(text, encoding="utf-8")
        return 0
    current = args.check.read_text(encoding="utf-8") if args.check.exists() else ""
    if current != text:
        print(f"{args.check} is out of date with tools/fleet/inventory/schema/; run "
              "`make docs` and commit the result", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
