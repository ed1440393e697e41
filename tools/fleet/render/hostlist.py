"""Slurm hostlist expressions: ``tbox-001, tbox-002, tbox-003`` -> ``tbox-[001-003]``."""

from __future__ import annotations

import re
from collections.abc import Iterable

_NAME = re.compile(r"^(?P<prefix>.*?)(?P<num>\d+)$")


def compress(names: Iterable[str]) -> str:
    """Compress hostnames into Slurm's bracket syntax, keeping the input's first-seen order
    of prefixes and zero padding; names without a trailing number are listed as they are."""
    groups: dict[tuple[str, int], list[int]] = {}
    plain: list[str] = []
    order: list[tuple[str, int] | str] = []
    for name in names:
        m = _NAME.match(name)
        if not m:
            plain.append(name)
            order.append(name)
            continue
        num = m["num"]
        width = len(num) if num.startswith("0") else 0
        if width == 0 and (m["prefix"], len(num)) in groups:
            width = len(num)  # tbox-100 after tbox-001..099 joins the padded run
        key = (m["prefix"], width)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(int(num))
    parts: list[str] = []
    for item in order:
        if isinstance(item, str):
            parts.append(item)
            continue
        prefix, width = item
        nums = sorted(set(groups[item]))
        if len(nums) == 1:
            parts.append(f"{prefix}{nums[0]:0{width}d}")
            continue
        ranges: list[str] = []
        start = prev = nums[0]
        for n in [*nums[1:], None]:
            if n is not None and n == prev + 1:
                prev = n
                continue
            ranges.append(f"{start:0{width}d}" if start == prev
                          else f"{start:0{width}d}-{prev:0{width}d}")
            if n is not None:
                start = prev = n
        parts.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(parts)
