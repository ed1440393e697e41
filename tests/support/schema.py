"""A small JSON Schema checker for docs/output.schema.json: the keywords it uses (type,
required, properties, items, enum), no more. The project has no jsonschema dependency;
a schema that uses another keyword is refused, so the check cannot silently weaken."""

from __future__ import annotations

from typing import Any

KNOWN = {"$schema", "$id", "title", "description", "type", "required", "properties",
         "items", "enum"}
TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
    "integer": (int,), "number": (int, float), "null": (type(None),)}


def problems(schema: dict[str, Any], value: Any, where: str = "$") -> list[str]:
    unknown = set(schema) - KNOWN
    if unknown:
        raise ValueError(f"{where}: the checker does not know {sorted(unknown)}")
    kinds = schema.get("type")
    if kinds is not None:
        names = [kinds] if isinstance(kinds, str) else kinds
        ok = any(isinstance(value, TYPES[n]) and not (n in ("integer", "number")
                                                       and isinstance(value, bool))
                 for n in names)
        if not ok:
            return [f"{where}: {value!r} is not {' or '.join(names)}"]
    out: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, dict):
        out += [f"{where}: no {key!r}" for key in schema.get("required", ())
                if key not in value]
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                out += problems(sub, value[key], f"{where}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            out += problems(schema["items"], item, f"{where}[{i}]")
    return out
