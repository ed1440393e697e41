"""Every lab node converges, and a second highstate changes nothing."""

from __future__ import annotations

import pytest
from labtools import Lab, node_ids


@pytest.mark.parametrize("node", node_ids())
def test_highstate_succeeds(lab: Lab, node: str) -> None:
    r = lab.first[node]
    assert not r.status.bad, "\n".join(r.problems())
    assert r.states > 0, f"{node} applied no states"


@pytest.mark.parametrize("node", node_ids())
def test_second_highstate_zero_changes(lab: Lab, node: str) -> None:
    r = lab.second[node]
    assert not r.status.bad, "\n".join(r.problems())
    assert r.changed == 0, f"{node} changed on re-apply: {r.changes}"
