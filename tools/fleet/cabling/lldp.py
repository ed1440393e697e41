"""Read ``lldpcli -f json show neighbors`` (lldpd's default "json" format, not "json0").

Its shape varies with the count of things (lldpd issue 236): ``lldp.interface`` is an
object ``{"eth0": {...}}`` when there is one neighbour and a list of such one-key objects
when there are more (two neighbours on one port: the same key twice in that list); a
chassis with a system name is ``{"<name>": {"id": ...}}``, one without is
``{"id": ..., ...}``; no neighbour at all is ``{"lldp": {}}``. The output comes from a
node and what its neighbours sent, neither trusted: anything else is refused with what
was wrong, and no string longer than :data:`MAX_TEXT` is kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

MAX_TEXT = 255  # an LLDP TLV's string is at most 255 octets
MAX_NEIGHBOURS = 4096


class LldpFormatError(ValueError):
    """The document is not lldpcli's JSON as documented above."""


@dataclass(frozen=True, slots=True)
class Neighbour:
    interface: str  # the node's own interface it was heard on
    chassis_name: str | None  # the neighbour's system name (SysName)
    chassis_id: str | None  # its chassis ID (usually a MAC)
    port_id: str | None  # the neighbour's port ID
    port_id_type: str | None  # ifname, mac, local, ...
    port_descr: str | None  # the neighbour's port description


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise LldpFormatError(f"{where}: expected a string, not {type(value).__name__}")
    if len(value) > MAX_TEXT:
        raise LldpFormatError(f"{where}: longer than {MAX_TEXT} characters")
    return value


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise LldpFormatError(f"{where}: expected an object, not {type(value).__name__}")
    return value


def _id(value: Any, where: str) -> tuple[str | None, str | None]:
    """(value, type) of an ``id`` object; absent: (None, None)."""
    if value is None:
        return None, None
    ident = _object(value, where)
    kind = ident.get("type")
    return (_text(ident.get("value"), f"{where}.value"),
            None if kind is None else _text(kind, f"{where}.type"))


def _chassis(value: Any, where: str) -> tuple[str | None, str | None]:
    """(system name, chassis id)."""
    if value is None:
        return None, None
    chassis = _object(value, where)
    if isinstance(chassis.get("id"), dict) and "type" in chassis["id"]:  # no system name
        return None, _id(chassis["id"], f"{where}.id")[0]
    if len(chassis) != 1:
        raise LldpFormatError(f"{where}: expected one system name, found {len(chassis)} keys")
    ((name, body),) = chassis.items()
    body = _object(body, f"{where}.{name}")
    return _text(name, f"{where} name"), _id(body.get("id"), f"{where}.{name}.id")[0]


def _neighbour(interface: str, value: Any) -> Neighbour:
    where = f"lldp.interface.{interface}"
    entry = _object(value, where)
    name, chassis_id = _chassis(entry.get("chassis"), f"{where}.chassis")
    port = _object(entry.get("port", {}), f"{where}.port")
    port_id, port_type = _id(port.get("id"), f"{where}.port.id")
    descr = port.get("descr")
    return Neighbour(_text(interface, f"{where} interface name"), name, chassis_id, port_id,
                     port_type, None if descr is None else _text(descr, f"{where}.port.descr"))


def neighbours(doc: Any) -> list[Neighbour]:
    """The neighbours in one node's ``lldpcli -f json show neighbors`` (parsed JSON), in
    the order listed."""
    top = _object(doc, "document")
    lldp = top.get("lldp")
    if lldp is None:
        raise LldpFormatError("document: no 'lldp' key (not lldpcli -f json output)")
    if lldp == [] or lldp == [{}]:  # older releases print an empty list for no neighbour
        return []
    interfaces = _object(lldp, "lldp").get("interface")
    if interfaces is None:
        return []
    entries = interfaces if isinstance(interfaces, list) else [interfaces]
    if len(entries) > MAX_NEIGHBOURS:
        raise LldpFormatError(f"lldp.interface: more than {MAX_NEIGHBOURS} neighbours")
    out: list[Neighbour] = []
    for i, item in enumerate(entries):
        for name, body in _object(item, f"lldp.interface[{i}]").items():
            out.append(_neighbour(name, body))
    return out
