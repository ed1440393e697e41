"""Values that every node of one batch shares, computed once per batch instead of once per
node: the site-wide parts of a node's files (its late-commands' site files, the minion
config's sizing lines, the admins' users) and the parts of one profile.

:func:`fleet.render.node_files` renders a batch of nodes of one inventory inside
:func:`shared`; there :func:`once` keeps what ``make`` returned under ``key``, which names
the value and whatever it depends on besides that inventory (a profile, an OS suite).
Outside a batch (one node's render, a test) :func:`once` is ``make()``: the same values.
What it returns is shared by many nodes' data: read it, never change it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

_T = TypeVar("_T")

_VALUES: ContextVar[dict[Hashable, Any] | None] = ContextVar("fleet_render_batch",
                                                             default=None)


@contextmanager
def shared() -> Iterator[None]:
    """A batch: :func:`once` keeps its values until the block ends."""
    token = _VALUES.set({})
    try:
        yield
    finally:
        _VALUES.reset(token)


def once(key: Hashable, make: Callable[[], _T]) -> _T:
    values = _VALUES.get()
    if values is None:
        return make()
    try:
        value: _T = values[key]
    except KeyError:
        value = values[key] = make()
    return value
