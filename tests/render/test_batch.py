"""Values shared by the nodes of one batch (fleet.render.batch): computed once inside
a batch, every time outside one, and gone when the batch ends."""

from __future__ import annotations

from collections.abc import Callable

from fleet.render import batch


def _maker(calls: list[str], key: str) -> Callable[[], str]:
    def make() -> str:
        calls.append(key)
        return key.upper()

    return make


def test_outside_a_batch_every_call_computes() -> None:
    calls: list[str] = []
    assert [batch.once("k", _maker(calls, "k")) for _ in range(3)] == ["K"] * 3
    assert calls == ["k"] * 3


def test_inside_a_batch_once_per_key() -> None:
    calls: list[str] = []
    with batch.shared():
        got = [batch.once(k, _maker(calls, k)) for k in ("a", "b", "a", "b")]
    assert got == ["A", "B", "A", "B"]
    assert calls == ["a", "b"]


def test_a_new_batch_starts_empty() -> None:
    calls: list[str] = []
    for _ in range(2):
        with batch.shared():
            batch.once("k", _maker(calls, "k"))
            batch.once("k", _maker(calls, "k"))
    assert calls == ["k", "k"]
    batch.once("k", _maker(calls, "k"))  # after the batches: computed again
    assert calls == ["k"] * 3
