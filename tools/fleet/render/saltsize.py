"""The Salt master's and the minions' sizing keys, from the number of nodes: one
definition, rendered into pillar ``site:salt:sizing`` (``provisioning.master`` and
``base.minion`` take them from there). Each value is explained in docs/salt.md
("Sizing"), from the figures of ``make bench-fanout`` (docs/benchmarks.md, "Fan-out")."""

from __future__ import annotations

import math
from typing import Any

# what one master worker process costs and carries (bench-fanout, Salt 3008.4)
MINIONS_PER_WORKER = 20
MIN_WORKERS = 5              # Salt's default
# returns and find_job answers one busy master takes in (bench-fanout: 144 pings back in
# ~1-2 s on 2 loaded cores); the timeouts below leave ample room for a slow minion
AUTH_PER_SECOND = 10         # sign-ins the master serves per second while minions start


def salt_sizing(nodes: int) -> dict[str, dict[str, Any]]:
    """``{"master": {...}, "minion": {...}}`` for a fleet of ``nodes`` minions."""
    n = max(1, nodes)
    master = {
        "worker_threads": max(MIN_WORKERS, n // MINIONS_PER_WORKER),
        "timeout": max(15, math.ceil(n / 20)),
        "gather_job_timeout": max(30, math.ceil(n / 10)),
        "job_cache": True,
        "keep_jobs_seconds": 86400 if n <= 2000 else 21600,
        "zmq_backlog": max(1000, 2 * n),
    }
    minion = {
        # spreads minion restarts after a fatal error (the only use Salt 3008 makes of it)
        "random_reauth_delay": max(10, math.ceil(n / AUTH_PER_SECOND)),
        "auth_timeout": max(10, math.ceil(n / AUTH_PER_SECOND)),
        "acceptance_wait_time": 10,
        "acceptance_wait_time_max": 60,
        "recon_default": 1000,
        "recon_max": max(10000, 100 * n),
        "recon_randomize": True,
    }
    return {"master": master, "minion": minion}
