"""Read ``inventory.yaml``: YAML -> schema -> expansion -> cross-object rules.

Every stage collects problems; :func:`load_inventory` raises one
:class:`~fleet.problems.InventoryError` holding all of them, or returns a valid
:class:`~fleet.inventory.model.Inventory`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from fleet.inventory import checks, roles, schema
from fleet.inventory.advice import password_problems, warnings
from fleet.inventory.expand import expand, expand_hosts
from fleet.inventory.model import Inventory, Node
from fleet.inventory.outdent import said_once
from fleet.inventory.overlay import ONLY_NODES
from fleet.inventory.overlay import apply as apply_overlay
from fleet.inventory.types import PATTERN_HINTS
from fleet.problems import InventoryError, Pos, Problem, dotted, short
from fleet.yamlsrc import Source, YamlLoadError, load

if TYPE_CHECKING:
    from fleet.forks import Later

_HINTS = {
    "extra_forbidden": "remove it, or check its spelling",
    "missing": None,
}


_PATTERNS = {
    schema.NAME_PATTERN: "names are lower-case letters, digits and '-', starting with a letter",
    schema.HOST_PATTERN: "expected a hostname or a range such as tbox-[001-038]",
}


def _schema_problems(exc: ValidationError, src: Source) -> list[Problem]:
    problems: list[tuple[tuple[str | int, ...], Problem]] = []
    for err in exc.errors(include_url=False):
        raw_loc = err["loc"]
        is_key = bool(raw_loc) and raw_loc[-1] == "[key]"
        loc = tuple(_plain_loc(raw_loc[:-1] if is_key else raw_loc, src))
        kind = err["type"]
        msg = err["msg"]
        pattern = (err.get("ctx") or {}).get("pattern")
        if pattern in _PATTERNS:
            msg = _PATTERNS[pattern]
        elif pattern in PATTERN_HINTS:
            msg = PATTERN_HINTS[pattern]
        if kind in ("string_too_long", "too_long"):
            limit = (err.get("ctx") or {}).get("max_length")
            msg = f"longer than {limit} {'characters' if kind == 'string_too_long' else 'items'}"
        if msg.startswith("Value error, "):  # our validators name the value themselves
            msg = msg[len("Value error, "):]
        if is_key:
            pos = src.pos(loc, key=True)
            msg = f"{short(loc[-1])}: {msg}" if loc and kind != "value_error" else msg
        elif kind == "extra_forbidden":
            pos = src.pos(loc, key=True)
            msg = f"unknown field {short(loc[-1])}" if loc else msg
        elif kind == "missing":
            pos = src.pos(loc[:-1]) if loc else src.pos(())
            msg = f"required field {loc[-1]!r} is missing" if loc else msg
        else:
            pos = src.pos(loc)
            value = err.get("input")
            if _is_scalar(value) and kind != "value_error":  # our validators name the value
                shown = short(src.texts[loc]) if isinstance(value, bool) and loc in src.texts \
                    else short(value)
                msg = f"{shown}: {msg[0].lower()}{msg[1:]}" if msg else shown
        if msg.startswith("Value error, "):
            msg = msg[len("Value error, "):]
        problems.append((loc, Problem(pos, dotted(loc), msg, code=kind, hint=_HINTS.get(kind))))
    return said_once(src, problems)


def _is_scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def _plain_loc(loc: tuple[Any, ...], src: Source) -> list[str | int]:
    """Drop pydantic-only segments (union member names, tags) absent from the YAML."""
    out: list[str | int] = []
    for part in loc:
        candidate = (*out, part)
        if candidate in src.values or candidate in src.keys or part not in _PYDANTIC_TAGS:
            out.append(part)
    return out


_PYDANTIC_TAGS = {"str", "int", "float", "bool", "IPv4Address", "IPv4Network", "list", "dict"}


def _yaml(text: str, file: str) -> Source:
    try:
        src = load(text, file)
    except YamlLoadError as exc:
        raise InventoryError(exc.problems) from None
    if not isinstance(src.data, dict):
        raise InventoryError([Problem(src.pos(()), "", "expected a YAML mapping (site, "
                                      "networks, profiles, node_groups, nodes, ...)",
                                      code="type")])
    return src


def _selection(only: Any, osrc: Source | None) -> tuple[list[str] | None, list[Problem]]:
    if only is None or osrc is None:
        return None, []
    if not isinstance(only, list) or not all(isinstance(h, str) for h in only):
        return None, [Problem(osrc.pos((ONLY_NODES,)), ONLY_NODES,
                              "expected a list of hostnames", code="type")]
    return only, []


def _trim(raw: schema.Inventory, keep: set[str]) -> schema.Inventory:
    """Drop node groups with no selected host, and the facts of machines in no kept group."""
    groups = {}
    hosts: set[str] = set()
    for name, group in raw.node_groups.items():
        try:
            members = {h for h, _ in expand_hosts(group.hosts)}
        except ValueError:
            members = set()
        if members & keep or not members:
            groups[name] = group
            hosts |= members
    nodes = {h: f for h, f in raw.nodes.items() if h in hosts or h in keep}
    return raw.model_copy(update={"node_groups": groups, "nodes": nodes})


def _apply_selection(raw: schema.Inventory, nodes: dict[str, Node], only: list[str],
                     osrc: Source) -> tuple[dict[str, Node], list[Problem]]:
    problems = []
    for i, host in enumerate(only):
        if host not in raw.nodes:
            problems.append(Problem(osrc.pos((ONLY_NODES, i)), f"{ONLY_NODES}[{i}]",
                                    f"unknown node {short(host)}", code="unknown_ref"))
    needed = {raw.site.provisioning_host: "the provisioning host",
              raw.site.salt.master: "the Salt master"}
    if raw.site.salt.standby is not None:
        needed.setdefault(raw.site.salt.standby.host, "the standby Salt master")
    if raw.slurm is not None:
        needed[raw.slurm.controller] = "the Slurm controller"
    if raw.mkv is not None:
        for name, array in raw.mkv.arrays.items():
            needed.setdefault(array.master, f"the master of mkv array {name}")
    for host, what in needed.items():
        if host not in only:
            problems.append(Problem(osrc.pos((ONLY_NODES,)), ONLY_NODES,
                                    f"{host} ({what}) must be selected", code="missing"))
    keep = set(only)
    return {h: n for h, n in nodes.items() if h in keep}, problems


Overlay = tuple[str, str]  # (text, file name for messages)


def parse(text: str, file: str, overlay: Overlay | Sequence[Overlay] | None = None, *,
          secrets: Path | None = None, advise: Path | None = None) -> Inventory:
    """Validate inventory ``text`` (named ``file`` in messages), with optional overlays
    given as ``(text, file)`` and applied in order; with ``secrets``, also that store's
    BMC passwords; with ``advise``, a store whose missing passwords are warnings only."""
    inv, _known = parse_pending(text, file, overlay, secrets=secrets, advise=advise,
                                behind=False)
    return inv


class Verdict:
    """An inventory's verdict: the problems found before the cross-object rules, the
    rules' (perhaps still being found by a forked child: :func:`checks.checking`) and the
    secrets store's. :meth:`wait` raises them as one :class:`InventoryError`, or returns."""

    def __init__(self, before: list[Problem], checking: Later[list[Problem]],
                 after: list[Problem]) -> None:
        self._before = before
        self._checking = checking
        self._after = after

    @property
    def pending(self) -> bool:
        return self._checking.pending

    def wait(self) -> None:
        problems = [*self._before, *self._checking.result(), *self._after]
        if problems:
            raise InventoryError(problems)

    def close(self) -> None:
        """Stop a check not waited for (the caller failed first)."""
        self._checking.close()


def parse_pending(text: str, file: str, overlay: Overlay | Sequence[Overlay] | None = None,
                  *, secrets: Path | None = None, advise: Path | None = None,
                  behind: bool = True) -> tuple[Inventory, Verdict]:
    """:func:`parse`'s inventory, and its verdict: with ``behind``, that of a large
    inventory is still being reached by a forked child when this returns. The caller
    prints and writes nothing before :meth:`Verdict.wait` has returned (``fleet render``
    renders meanwhile: fleet.commands.render); it may :meth:`Verdict.close` instead."""
    raw, src, nodes, retired, before = _expanded(text, file, overlay)
    c = checks.Ctx(raw=raw, nodes=nodes, src=src)
    after = password_problems(raw, src, secrets) if secrets is not None else []
    try:
        # Set before a rules' child is forked (the rules do not read them): set after, in
        # this process, they would copy every page that holds a node.
        for node in nodes.values():
            node.derived_roles = roles.derived(raw, node)
        inv = Inventory(file=file, raw=raw, nodes=nodes, retired=retired,
                        warnings=tuple(sorted(warnings(raw, src, advise),
                                              key=Problem.sort_key)))
    except Exception:
        Verdict(before, checks.checking(c), after).wait()  # its problems, not what they broke
        raise
    verdict = Verdict(before, checks.checking(c, behind=behind and not (before or after)),
                      after)
    if not verdict.pending:
        verdict.wait()  # known already: an invalid inventory goes no further
    return inv, verdict


def _expanded(text: str, file: str, overlay: Overlay | Sequence[Overlay] | None
              ) -> tuple[schema.Inventory, Source, dict[str, Node], dict[str, Node],
                         list[Problem]]:
    """The schema-valid document, its source, the nodes in service and the retired ones,
    and the problems found so far (the cross-object rules not yet run)."""
    overlays: list[Overlay] = ([] if overlay is None else
                               [overlay] if isinstance(overlay, tuple) else list(overlay))
    for body, name in ((text, file), *overlays):
        if len(body) > MAX_INPUT_BYTES:
            raise InventoryError([Problem(_nowhere(name), "", f"more than the limit of "
                                          f"{MAX_INPUT_BYTES:,} characters for an inventory",
                                          code="io")])
    src = _yaml(text, file)
    osrc: Source | None = None  # the overlay that selects the nodes (the last that does)
    only: Any = None
    for body, name in overlays:
        one = _yaml(body, name)
        src, selected = apply_overlay(src, one)
        if selected is not None:
            only, osrc = selected, one
    selection, problems = _selection(only, osrc)
    if problems:
        raise InventoryError(problems)
    try:
        raw = schema.Inventory.model_validate(src.data)
    except ValidationError as exc:
        raise InventoryError(_schema_problems(exc, src)) from None
    if selection is not None:
        raw = _trim(raw, set(selection))
    nodes, problems = expand(raw, src)
    if selection is not None and osrc is not None:
        nodes, more = _apply_selection(raw, nodes, selection, osrc)
        problems += more
    # retired machines keep their slot in their group (so their neighbours keep their ports)
    # and nothing else: no rule sees them, no renderer writes them
    retired = {h: n for h, n in nodes.items() if n.state == "retired"}
    nodes = {h: n for h, n in nodes.items() if n.state != "retired"}
    return raw, src, nodes, retired, problems


# The real inventory is 40 kB and a generated 10,000-node one about 2 MB: anything near
# this is a mistake (a log, an image, /dev/zero), refused before it is read whole.
MAX_INPUT_BYTES = 32 * 1024 * 1024


def _io_error(path: Path, message: str) -> InventoryError:
    return InventoryError([Problem(_nowhere(str(path)), "", message, code="io")])


def _read(path: Path) -> str:
    """The file's text: a regular file only (a FIFO would block, a device never end), at
    most MAX_INPUT_BYTES, UTF-8."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _io_error(path, f"cannot read: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else
                    "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else
                    "a directory" if stat.S_ISDIR(st.st_mode) else
                    "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
            raise _io_error(path, f"cannot read: {kind}, not a regular file")
        if st.st_size > MAX_INPUT_BYTES:
            raise _io_error(path, f"{st.st_size:,} bytes is more than the limit of "
                            f"{MAX_INPUT_BYTES:,} for an inventory")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            data = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise _io_error(path, f"cannot read: {exc.strerror}") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > MAX_INPUT_BYTES:  # it grew while being read
        raise _io_error(path, f"more than the limit of {MAX_INPUT_BYTES:,} bytes for an "
                        "inventory")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, data, exc.start) from None


def _not_utf8(path: Path, data: bytes, at: int) -> InventoryError:
    """The first byte that is not UTF-8, at its line and column (in characters)."""
    start = data.rfind(b"\n", 0, at) + 1
    col = len(data[start:at].decode("utf-8", errors="replace")) + 1
    return InventoryError([Problem(
        Pos(str(path), data.count(b"\n", 0, at) + 1, col), "",
        f"byte 0x{data[at]:02x} is not UTF-8 text", code="encoding",
        hint="save the file as UTF-8 (an editor's Latin-1 or Windows-1252 'é' is one byte "
             "there, two in UTF-8)")])


def read_text(path: str | os.PathLike[str]) -> str:
    """An inventory file's text, read as :func:`load_inventory` reads it (an editor of the
    file, fleet discover accept, reads it so too)."""
    return _read(Path(path))


def load_inventory(path: str | os.PathLike[str],
                   overlay: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
                   | None = None, *, secrets: Path | None = None,
                   advise: Path | None = None) -> Inventory:
    """The inventory at ``path`` with the overlay file(s), applied in order (``secrets``,
    ``advise``: as :func:`parse`)."""
    inv, _known = load_pending(path, overlay, secrets=secrets, advise=advise, behind=False)
    return inv


def load_pending(path: str | os.PathLike[str],
                 overlay: str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
                 | None = None, *, secrets: Path | None = None, advise: Path | None = None,
                 behind: bool = True) -> tuple[Inventory, Verdict]:
    """:func:`load_inventory`, its verdict perhaps still pending (:func:`parse_pending`)."""
    text = _read(Path(path))
    files = ([] if overlay is None else
             [overlay] if isinstance(overlay, (str, os.PathLike)) else list(overlay))
    extra = [(_read(Path(f)), os.fspath(f)) for f in files]
    return parse_pending(text, os.fspath(path), extra, secrets=secrets, advise=advise,
                         behind=behind)


def _nowhere(file: str) -> Any:
    return Pos(file, 1, 1)
