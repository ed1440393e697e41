"""A swarm of real minions (tests/swarm): the master configured as provisioning.master
renders it, SWARM_SIZE minion processes of the real inventory's ids, all started at once.

Run by `make test-swarm` (part of `make test`); plain `pytest` skips it unless
FLEET_SWARM=1, because it starts ~40 processes of ~80 MB each."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import beds, swarmconf
from support.swarm import Swarm

SIZE = int(os.environ.get("FLEET_SWARM_SIZE", "40"))
READY_TIMEOUT = 300.0  # 40 minion start-ups share 2 CPUs


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    beds.skip_unless(os.environ.get("FLEET_SWARM") == "1",
                     "swarm tests run with FLEET_SWARM=1 (make test-swarm)",
                     Path(__file__).resolve().parent, items)


def wait_ready(swarm: Swarm, ids: list[str], timeout: float) -> float:
    """Seconds until every minion answered test.ping (polled, with a deadline)."""
    import salt.client
    import salt.config
    import salt.exceptions

    opts = salt.config.client_config(str(swarm.config_dir / "master"))
    client = salt.client.LocalClient(mopts=opts)
    t0 = time.monotonic()
    seen: set[str] = set()
    try:
        while True:
            left = [m for m in ids if m not in seen]
            # the master, busy with the sign-ins, may not take the publish in time
            with contextlib.suppress(salt.exceptions.SaltClientError):
                seen.update(client.cmd(left, "test.ping", tgt_type="list", timeout=10))
            if seen >= set(ids):
                return time.monotonic() - t0
            if time.monotonic() - t0 > timeout:
                raise RuntimeError(f"{len(ids) - len(seen)} minions never answered within "
                                   f"{timeout:g}s: {sorted(set(ids) - seen)[:10]}")
    finally:
        client.destroy()


@pytest.fixture(scope="session")
def swarm() -> Iterator[Swarm]:
    tmp = Path(tempfile.mkdtemp(prefix="fleet-swarm-", dir="/tmp"))
    try:
        conf = swarmconf.render(tmp)
        ids = swarmconf.spread(conf.ids, SIZE)
        sw = Swarm(root=tmp / "s", ids=ids, master_conf=conf.master_conf,
                   minion_conf=conf.minion_conf, bin_dir=Path(swarmconf.ROOT / ".venv" / "bin"),
                   key_store=Path("/tmp/fleet-swarm-keys"))
        sw.write()
        with sw:
            sw.start_master()
            sw.start_minions()
            wait_ready(sw, ids, READY_TIMEOUT)
            yield sw
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
