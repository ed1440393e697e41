"""The context every cross-object rule of :mod:`fleet.inventory.checks` reads."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from fleet.inventory import schema
from fleet.inventory.model import Node
from fleet.problems import Problem, Reporter
from fleet.yamlsrc import Source


@dataclass(frozen=True)
class Ctx(Reporter):
    raw: schema.Inventory
    nodes: dict[str, Node]
    src: Source


Rule = Callable[[Ctx], Iterator[Problem]]
