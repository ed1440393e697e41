"""The Salt master as ``fleet apply`` uses it, through Salt's own Python client (imported
only here): accepted keys, asynchronous publish, the master's event bus, the job cache,
``saltutil.find_job``.

Only interfaces that Salt has kept since 2015 are used (``LocalClient.run_job`` /
``cmd``, ``MasterEvent.get_event``, the job cache returner's ``get_jid``, which
``salt-run jobs.lookup_jid`` reads, and ``salt.key``), so the collection does not depend
on Salt's batch mode or on the CLI's own gathering of returns (which gives up on a minion
that misses ``gather_job_timeout``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from fleet.master.salt import MasterError

PUBLISH_TIMEOUT, PUBLISH_TRIES = 30.0, 4


@dataclass(frozen=True, slots=True)
class Keys:
    accepted: frozenset[str]
    pending: frozenset[str]
    rejected: frozenset[str]   # rejected or denied


@dataclass(frozen=True, slots=True)
class Return:
    jid: str
    node: str
    ret: Any
    retcode: int | None


class Master(Protocol):
    def keys(self) -> Keys: ...

    def publish(self, nodes: list[str], fun: str, args: list[str],
                kwargs: dict[str, Any]) -> tuple[str, list[str]]:
        """Publish asynchronously; the job id and the minions the master expects."""
        ...

    def events(self, wait: float) -> list[Return]:
        """Job returns that arrived on the event bus within ``wait`` seconds."""
        ...

    def lookup(self, jid: str) -> dict[str, Return]:
        """The returns the job cache holds for ``jid``."""
        ...

    def running(self, jid: str, nodes: list[str], timeout: float) -> dict[str, bool]:
        """``saltutil.find_job``: True = still running it, False = answered and not
        running it; absent = did not answer."""
        ...

    def close(self) -> None: ...


class SaltMaster:
    """The master whose config file is ``config_dir/master`` (``salt -c``)."""

    def __init__(self, config_dir: Path) -> None:
        import salt.client  # type: ignore[import-untyped]  # heavy: only for apply
        import salt.config  # type: ignore[import-untyped]
        import salt.exceptions  # type: ignore[import-untyped]

        conf = config_dir / "master"
        if not conf.is_file():
            raise MasterError(f"{conf}: no Salt master config there (--salt-config)")
        # Salt logs connection trouble at ERROR on the root logger; we report it ourselves
        logging.getLogger("salt").setLevel(logging.CRITICAL)
        self._exc = salt.exceptions
        try:
            self.opts = salt.config.client_config(str(conf))
            self.client = salt.client.LocalClient(mopts=self.opts)
        except (salt.exceptions.SaltException, OSError) as exc:
            raise MasterError(f"{conf}: {exc}") from exc
        self._get_jid: Any = None

    def keys(self) -> Keys:
        from fleet.master.keys import listed

        k = listed(self.opts)
        return Keys(accepted=frozenset(k.get("minions", [])),
                    pending=frozenset(k.get("minions_pre", [])),
                    rejected=frozenset(k.get("minions_rejected", []))
                    | frozenset(k.get("minions_denied", [])))

    def publish(self, nodes: list[str], fun: str, args: list[str],
                kwargs: dict[str, Any]) -> tuple[str, list[str]]:
        import salt.utils.jid  # type: ignore[import-untyped]

        # Our own job id, so that a publish whose answer timed out (a master busy with a
        # sign-in storm) can be sent again as the same job: a minion runs a jid only once
        # (its jid queue), so a repeat never runs the highstate twice.
        jid = salt.utils.jid.gen_jid(self.opts)
        for attempt in range(1, PUBLISH_TRIES + 1):
            try:
                pub = self.client.run_job(nodes, fun, arg=args, kwarg=kwargs or None,
                                          tgt_type="list", listen=True, jid=jid,
                                          timeout=PUBLISH_TIMEOUT)
                break
            except (self._exc.SaltException, OSError) as exc:
                if attempt == PUBLISH_TRIES:
                    raise MasterError(f"publish of {fun} failed {attempt} times: "
                                      f"{exc}") from exc
        if not pub or "jid" not in pub:
            raise MasterError(f"the master did not accept the publish of {fun} "
                              "(is salt-master running, with this config?)")
        return str(pub["jid"]), sorted(pub.get("minions", []))

    def events(self, wait: float) -> list[Return]:
        out: list[Return] = []
        ev = self.client.event.get_event(wait=wait, tag="salt/job/", match_type="startswith",
                                         full=True)
        while ev is not None:
            r = _ret_event(ev)
            if r is not None:
                out.append(r)
            ev = self.client.event.get_event(wait=0.01, tag="salt/job/",
                                             match_type="startswith", full=True)
            if ev is None:
                break
        return out

    def lookup(self, jid: str) -> dict[str, Return]:
        """The master job cache's returner (``master_job_cache``, local_cache unless the
        site says otherwise), loaded once: what ``salt-run jobs.lookup_jid`` reads, with
        the retcode that it drops."""
        if self._get_jid is None:
            import salt.loader  # type: ignore[import-untyped]

            cache = self.opts.get("master_job_cache", "local_cache")
            self._get_jid = salt.loader.returners(self.opts, {})[f"{cache}.get_jid"]
        try:
            data = self._get_jid(jid)
        except (self._exc.SaltException, OSError) as exc:
            raise MasterError(f"job cache lookup of {jid} failed: {exc}") from exc
        out: dict[str, Return] = {}
        for node, entry in (data or {}).items():
            if isinstance(entry, dict) and "return" in entry:
                rc = entry.get("retcode")
                out[node] = Return(jid=jid, node=node, ret=entry["return"],
                                   retcode=rc if isinstance(rc, int) else None)
        return out

    def running(self, jid: str, nodes: list[str], timeout: float) -> dict[str, bool]:
        try:
            got = self.client.cmd(nodes, "saltutil.find_job", [jid], tgt_type="list",
                                  timeout=timeout)
        except (self._exc.SaltException, OSError):
            return {}
        return {n: bool(v) for n, v in got.items() if isinstance(v, dict)}

    def close(self) -> None:
        self.client.destroy()


def _ret_event(ev: dict[str, Any]) -> Return | None:
    tag = str(ev.get("tag", ""))
    parts = tag.split("/")  # salt/job/<jid>/ret/<minion>
    if len(parts) != 5 or parts[3] != "ret":
        return None
    data = ev.get("data") or {}
    if not isinstance(data, dict) or "return" not in data:
        return None
    rc = data.get("retcode")
    return Return(jid=parts[2], node=parts[4], ret=data["return"],
                  retcode=rc if isinstance(rc, int) else None)
