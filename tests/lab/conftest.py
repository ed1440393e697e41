"""The lab integration tests (`make test-lab`, docs/lab.md): the real inventory through
lab/overlay.yaml as systemd containers, converged by the lab's Salt master.

One session fixture brings the lab up (`fleet lab up` reuses the cached image, the
running containers and master of an existing lab), applies the highstate twice and
keeps both results; every test then reads the running nodes through testinfra's
``podman://`` backend or the lab master. Nothing here sleeps a fixed time: every wait
polls with a timeout.

These tests run only with FLEET_LAB=1 (`make test-lab` sets it): under plain `pytest`
or `make test` they are reported as skipped with that reason.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from labtools import ENABLED, ROOT, SKIP_REASON, Lab

from fleet.lab import highstate
from fleet.lab import lab as lab_mod
from fleet.lab import master as lab_master
from fleet.lab import nodes as lab_nodes
from fleet.lab import podman as pm
from fleet.lab.paths import Paths
from fleet.lab.plan import load as load_plan
from support import beds


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ENABLED:
        # the reinstall tests recreate nodes: they run after every test that reads the
        # lab as the first highstate left it
        # (the parallel ones last: they reinstall the nodes that test_reinstall.py leaves);
        # before them the master's restore, which recreates head-01
        last = {"test_master_restore.py": 1, "test_reinstall.py": 2,
                "test_reinstall_parallel.py": 3}
        items.sort(key=lambda item: last.get(Path(str(item.path)).name, 0))
    beds.skip_unless(ENABLED, SKIP_REASON, Path(__file__).resolve().parent, items)


@pytest.fixture(scope="session")
def lab(pytestconfig: pytest.Config) -> Iterator[Lab]:
    paths = Paths(ROOT)
    # testinfra's podman:// backend calls plain `podman`: give it the lab's config
    os.environ["CONTAINERS_CONF"] = str(pm.ensure_conf(paths))
    tr = pytestconfig.pluginmanager.get_plugin("terminalreporter")

    def say(text: str) -> None:
        if tr is not None:
            tr.write_line(text)

    # a lab that was up before the tests stays up; one the tests bring up goes down at
    # the end (keeping the cached image), unless FLEET_LAB_KEEP=1
    was_up = bool(lab_master.pid(paths) or lab_nodes.all_lab_containers(paths))
    say("\n[lab] fleet lab up (reuses the image, containers and master that exist), "
        "highstate")
    t0 = time.monotonic()
    timings, results = lab_mod.up(paths)
    t1 = time.monotonic()
    say(highstate.format_results(results, timings.steps.get("highstate", 0.0)))
    say("[lab] second highstate (must change nothing)")
    second_results, took = highstate.apply(paths, [n.hostname for n in load_plan(paths).nodes])
    say(highstate.format_results(second_results, took))
    timings.steps["second highstate"] = took
    timings.steps["bring-up + first highstate"] = t1 - t0
    timings.steps["fixture"] = time.monotonic() - t0
    say("[lab] " + ", ".join(f"{k} {v:.1f}s" for k, v in timings.steps.items()))
    (paths.lab / "test-timings.json").write_text(json.dumps(timings.steps, indent=2))
    yield Lab(paths, load_plan(paths), {r.node: r for r in results},
              {r.node: r for r in second_results}, timings.steps)
    if not was_up and os.environ.get("FLEET_LAB_KEEP") != "1":
        say("\n[lab] fleet lab down (the tests brought it up; FLEET_LAB_KEEP=1 keeps it)")
        lab_mod.down(paths)
