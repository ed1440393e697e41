"""Fixtures for the Salt render check: every node rendered once per session."""

from __future__ import annotations

import os
from typing import Any

import pytest

from support import harness


@pytest.fixture(scope="session")
def renderer_and_key(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, str]:
    return harness.make_renderer(tmp_path_factory.mktemp("salt-render"))


@pytest.fixture(scope="session")
def rendered(renderer_and_key: tuple[Any, str]) -> dict[str, Any]:
    """Every node for DEFAULT_OS, plus the first node of each role for the other OSes."""
    from fleet import saltrender

    renderer, key = renderer_and_key
    roles = harness.roles_of(renderer)
    jobs = [(n, harness.DEFAULT_OS) for n in renderer.nodes()]
    jobs += sorted({(nodes[0], os_name) for nodes in roles.values()
                    for os_name in harness.OTHER_OS})
    workers = int(os.environ.get("FLEET_SALT_RENDER_WORKERS", "0")) or None
    results = saltrender.render_many(renderer, jobs, workers=workers)
    return {"renderer": renderer, "key": key, "roles": roles,
            "results": {(r.node, r.os): r for r in results}}
