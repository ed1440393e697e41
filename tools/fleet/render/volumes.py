"""Storage consequences of an inventory change: volumes that leave an mkv array.

The previous state is the committed render in the output directory (its
``pillar/mkv.sls``, each array's ``volumes``). A volume listed there and not in the new
render (its node retired, moved to another array or out of the group) makes the keys it
holds unreachable with ``replicas: 1`` and leaves fewer copies otherwise: ``fleet render``
refuses it unless the array acknowledges it (``mkv.arrays.<array>.volumes_removed``), and
every message names the ``fleet mkv`` run that must follow the apply.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import yaml

from fleet.inventory.model import Inventory

MKV_SLS = Path("pillar") / "mkv.sls"
_SAFE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Removal(NamedTuple):
    array: str
    hosts: tuple[str, ...]
    replicas: int
    moved: dict[str, str]  # host -> the array it is a volume of now
    acknowledged: bool

    @property
    def field(self) -> str:
        return f"mkv.arrays.{self.array}.volumes_removed"

    def text(self) -> str:
        hosts = ", ".join(self.hosts)
        where = "; ".join(f"{h} is now a volume of {a}" for h, a in self.moved.items())
        loss = ("replicas 1: the keys stored on them become unreachable (their data stays "
                "on the disks)" if self.replicas == 1 else
                f"replicas {self.replicas}: their keys keep fewer copies until rebalanced")
        after = (f"`fleet mkv rebuild {self.array}`" if self.replicas == 1 else
                 f"`fleet mkv rebuild {self.array}`, then `fleet mkv rebalance {self.array}`")
        return (f"mkv array {self.array}: volume(s) {hosts} leave the array"
                + (f" ({where})" if where else "") + f"; {loss}; after the render and the "
                f"apply of mkv.master run {after}")


def previous_volumes(root: Path) -> dict[str, list[str]] | None:
    """Each array's volume hosts in the committed render under ``root`` (None: there is
    none, e.g. a first render or an empty output directory)."""
    path = root / MKV_SLS
    try:
        # a safe loader (libyaml's where built in: the file has one line per volume)
        data: Any = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    arrays = data.get("mkv", {}).get("arrays") if isinstance(data, dict) else None
    if not isinstance(arrays, dict):
        return None
    out: dict[str, list[str]] = {}
    for name, array in arrays.items():
        vols = array.get("volumes") if isinstance(array, dict) else None
        if isinstance(vols, list):
            out[str(name)] = [str(v).rsplit(":", 1)[0] for v in vols]
    return out


def removals(inv: Inventory, before: dict[str, list[str]] | None) -> list[Removal]:
    """The volumes that leave an array against the last render (``before``: its
    :func:`previous_volumes`)."""
    if not before:
        return []
    arrays = inv.raw.mkv.arrays if inv.raw.mkv is not None else {}
    now = {n.hostname: n.mkv_array for n in inv.nodes.values() if n.mkv_array is not None}
    out = []
    for name, hosts in before.items():
        gone = tuple(h for h in hosts if now.get(h) != name)
        if not gone:
            continue
        array = arrays.get(name)
        acked = set(array.volumes_removed) if array is not None else set()
        replicas = array.replicas if array is not None else 1
        moved = {h: a for h in gone if (a := now.get(h)) is not None}
        # a whole array removed from the inventory has nothing to acknowledge it with
        out.append(Removal(name, gone, replicas, moved,
                           array is not None and set(gone) <= acked))
    return out
