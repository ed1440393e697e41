"""Fixtures: the fake BMCs of fakes.py, one per test, stopped afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from support.bmcfakes import Catcher, FakeBmcProcess, start_fake_ipmi, start_fake_redfish


@pytest.fixture
def fake_redfish(tmp_path: Path) -> Iterator[FakeBmcProcess]:
    fake = start_fake_redfish(tmp_path)
    yield fake
    fake.stop()


@pytest.fixture
def fake_redfish_on(tmp_path: Path) -> Iterator[FakeBmcProcess]:
    fake = start_fake_redfish(tmp_path, power="On")
    yield fake
    fake.stop()


@pytest.fixture
def fake_ipmi() -> Iterator[FakeBmcProcess]:
    fake = start_fake_ipmi()
    yield fake
    fake.stop()


@pytest.fixture
def catcher() -> Iterator[Catcher]:
    """Another origin, recording what reaches it (nothing should)."""
    server = Catcher.start()
    yield server
    server.stop()
