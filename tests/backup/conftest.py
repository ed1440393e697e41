"""The master every backup test starts from (support.backupmaster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.backupmaster import Master, make_master


@pytest.fixture
def master(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Master:
    return make_master(tmp_path, monkeypatch)
