"""The flags of an array's mkv master, from the inventory. mkv's ``rebuild`` and
``rebalance`` must run with the array's own ``-volumes``, ``-replicas`` and ``-subvolumes``:
with upstream's defaults (3 replicas, 10 subvolumes) they place keys where the volumes
have no disk (``svNN`` directories on the OS disk) and rewrite the replica count."""

from __future__ import annotations

from dataclasses import dataclass

from fleet.inventory.model import Inventory

VERBS = ("server", "rebuild", "rebalance")


@dataclass(frozen=True)
class ArrayFlags:
    name: str
    master: str  # the host that runs this array's mkv master
    port: int
    volumes: tuple[str, ...]  # host:port, as placement hashes them
    replicas: int
    subvolumes: int
    index_path: str

    @property
    def unit(self) -> str:
        return f"mkv-{self.name}.service"

    def argv(self, binary: str, verb: str) -> list[str]:
        """The mkv command line for ``verb``: the same flags the master unit runs with."""
        if verb not in VERBS:
            raise ValueError(f"unknown mkv verb {verb!r}")
        return [binary, "-port", str(self.port), "-volumes", ",".join(self.volumes),
                "-replicas", str(self.replicas), "-subvolumes", str(self.subvolumes),
                "-db", self.index_path, verb]


class UnknownArrayError(LookupError):
    pass


def array_flags(inv: Inventory, name: str) -> ArrayFlags:
    mkv = inv.raw.mkv
    if mkv is None or name not in mkv.arrays:
        known = ", ".join(mkv.arrays) if mkv else "none (the inventory has no mkv section)"
        raise UnknownArrayError(f"no mkv array {name!r}; arrays: {known}")
    array = mkv.arrays[name]
    vols = inv.in_array(name)
    return ArrayFlags(name=name, master=array.master, port=array.port,
                      volumes=tuple(f"{n.hostname}:{array.volume_port}" for n in vols),
                      replicas=array.replicas,
                      subvolumes=len(vols[0].profile.data_disks) if vols else 0,
                      index_path=array.index_path)


def parse_exec_start(value: str) -> list[str]:
    """argv of ``systemctl show -p ExecStart --value`` (``{ path=... ; argv[]=a b c ; ...}``).
    The unit's flags never contain spaces (host:port lists, numbers, absolute paths)."""
    for part in value.split(";"):
        part = part.strip().lstrip("{").strip()
        if part.startswith("argv[]="):
            return part.removeprefix("argv[]=").split()
    return []
