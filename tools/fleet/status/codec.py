"""The collected sources' values as the collector's cache keeps them (JSON) and back: power,
bmc_hardware, boot, key, minion (presence), slurm, alerts. A value that does not decode
makes its whole column unknown (:class:`ValueError`): the cache is this host's, but read
as untrusted."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from fleet.status.sources import BmcHardware, Power, Presence, Slurm

COLLECTED = ("power", "bmc_hardware", "boot", "key", "minion", "slurm", "alerts")


class UnreadableError(Exception):
    """A node's value its source could not read (a boot mode), kept as its reason."""


def encode(source: str, values: dict[str, Any]) -> dict[str, Any]:
    if source == "power":
        return {n: {"state": p.state, "error": p.error} for n, p in values.items()}
    if source == "bmc_hardware":
        return {n: {"drifts": [d.as_json() for d in h.drifts], "observed": h.observed,
                    "error": h.error} for n, h in values.items()}
    if source == "boot":
        return {n: {"error": str(v)} if isinstance(v, Exception) else v
                for n, v in values.items()}
    if source == "minion":
        return {n: p.connected for n, p in values.items()}
    if source == "slurm":
        return {n: {"state": s.state, "reason": s.reason} for n, s in values.items()}
    if source == "alerts":
        return {n: [asdict(a) for a in v] for n, v in values.items()}
    return dict(values)  # key: words


def _str(v: Any, none: bool = False) -> Any:
    if isinstance(v, str) or (none and v is None):
        return v
    raise ValueError(f"not a string: {type(v).__name__}")


def decode(source: str, values: dict[str, Any]) -> dict[str, Any]:
    """The typed values of ``source``; ValueError for anything the collector never wrote."""
    from fleet.monitoring.alerts import Alert

    try:
        if source == "power":
            return {n: Power(_str(v["state"], True), _str(v["error"], True))
                    for n, v in values.items()}
        if source == "bmc_hardware":
            return {n: _bmc_hardware(v) for n, v in values.items()}
        if source == "boot":
            return {n: UnreadableError(_str(v["error"])) if isinstance(v, dict) else _str(v)
                    for n, v in values.items()}
        if source == "minion":
            if not all(isinstance(v, bool) for v in values.values()):
                raise ValueError("not a bool")
            return {n: Presence(v) for n, v in values.items()}
        if source == "slurm":
            return {n: Slurm(_str(v["state"]), _str(v["reason"])) for n, v in values.items()}
        if source == "alerts":
            return {n: [Alert(**{k: _str(a[k]) for k in ("name", "state", "node", "severity",
                                                         "summary", "active_at")},
                              labels={_str(k): _str(x) for k, x in a["labels"].items()})
                        for a in v] for n, v in values.items()}
        return {n: _str(v) for n, v in values.items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a {source} value the collector writes ({exc})") from None


def _bmc_hardware(v: dict[str, Any]) -> BmcHardware:
    from fleet.discover.drift import Drift

    observed = v["observed"]
    if not (observed is None or isinstance(observed, dict)):
        raise ValueError("observed: not an object")
    return BmcHardware([Drift(_str(d["fact"]), _str(d["inventory"]), _str(d["found"]))
                        for d in v["drifts"]], observed, _str(v["error"], True))
