"""The writeback thread of a cold render (fleet.render.writeback): it syncs again and
again between start and stop, and a sync that fails ends it quietly (the commit syncs)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from fleet.render import stage, writeback


def test_syncs_repeatedly_until_stopped(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[Path] = []
    twice = threading.Event()

    def fake_sync(root: Path) -> None:  # a stand-in for syncfs: records the calls
        synced.append(root)
        if len(synced) >= 2:
            twice.set()

    monkeypatch.setattr(writeback, "INTERVAL_S", 0.001)
    monkeypatch.setattr(stage, "sync", fake_sync)
    flusher = writeback.Flusher(tmp_path)
    flusher.start()
    assert twice.wait(10)
    flusher.stop()
    calls = len(synced)
    assert set(synced) == {tmp_path}
    threading.Event().wait(0.05)
    assert len(synced) == calls  # none after stop


def test_a_failing_sync_ends_the_thread(tmp_path: Path) -> None:
    flusher = writeback.Flusher(tmp_path / "gone")  # os.open of it raises
    flusher.start()
    assert flusher._thread is not None
    flusher._thread.join(10)
    assert not flusher._thread.is_alive()
    flusher.stop()


def test_stop_without_start(tmp_path: Path) -> None:
    writeback.Flusher(tmp_path).stop()
