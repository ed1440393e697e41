"""fleet apply's pure parts: the target syntax and the reading of Salt's returns."""

from __future__ import annotations

import pytest

from fleet.inventory.target import TargetError, resolve
from fleet.master.highstate import Status, classify, classify_plain

NODES = ["head-01", "tbox-001", "tbox-002", "tbox-003", "tbox-010", "stor-01", "stor-02"]


@pytest.mark.parametrize(("target", "want"), [
    ("*", NODES),
    ("tbox-002", ["tbox-002"]),
    ("tbox-[001-003]", ["tbox-001", "tbox-002", "tbox-003"]),
    ("stor-*,head-01", ["head-01", "stor-01", "stor-02"]),
    ("tbox-00?", ["tbox-001", "tbox-002", "tbox-003"]),
    ("tbox-003, tbox-001", ["tbox-001", "tbox-003"]),  # inventory order, not typed order
])
def test_resolve(target: str, want: list[str]) -> None:
    assert resolve(target, NODES) == want


@pytest.mark.parametrize(("target", "msg"), [
    ("tbox-999", "tbox-999: no such node"),
    ("gpu-*", "gpu-*: matches no node"),
    ("tbox-[001-005]", "not in the inventory: tbox-004, tbox-005"),
    ("tbox-[005-001]", "is empty"),
    ("tbox-001,,tbox-002", "empty item"),
    ("", "empty target"),
])
def test_resolve_refuses(target: str, msg: str) -> None:
    with pytest.raises(TargetError, match=msg.replace("[", r"\[").replace("*", r"\*")):
        resolve(target, NODES)


def _st(sid: str, result: bool | None, changes: dict[str, object] | None = None,
        comment: str = "", run: int = 0, fn: str = "file_|-{}_|-/etc/x_|-managed") -> tuple[
            str, dict[str, object]]:
    return fn.format(sid), {"__id__": sid, "result": result, "changes": changes or {},
                            "comment": comment, "name": "/etc/x", "__sls__": "base.x",
                            "__run_num__": run, "duration": 12.5}


def test_all_true_no_changes_is_ok() -> None:
    ret = dict([_st("a", True, run=0), _st("b", True, run=1)])
    r = classify("n1", ret, 0, test=False)
    assert (r.status, r.states, r.changed, r.run_s) == (Status.OK, 2, 0, 0.025)


def test_changes_are_changed_and_test_none_counts_as_would_change() -> None:
    ret = dict([_st("a", True, {"diff": "x"}), _st("b", None, run=1)])
    assert classify("n1", ret, 0, test=False).status is Status.CHANGED
    assert classify("n1", ret, 0, test=True).changed == 2


def test_failed_state_is_named_with_its_comment() -> None:
    ret = dict([_st("base-apt-file-managed-sources", False, comment="Source file not found",
                    run=1), _st("a", True)])
    r = classify("n1", ret, 2, test=False)
    assert r.status is Status.FAILED
    assert [(f.state_id, f.function, f.comment) for f in r.failed] == [
        ("base-apt-file-managed-sources", "file.managed", "Source file not found")]
    assert r.summary().startswith("base-apt-file-managed-sources (file.managed): Source file")


def test_render_error_list_is_failed() -> None:
    r = classify("n1", ["Rendering SLS 'base:base.apt' failed: Jinja variable 'x' is undefined"],
                 1, test=False)
    assert r.status is Status.FAILED and "Jinja variable" in r.summary()


def test_nonzero_retcode_without_a_false_state_is_failed() -> None:
    assert classify("n1", dict([_st("a", True)]), 2, test=False).status is Status.FAILED


def test_plain_returns() -> None:
    assert classify_plain("n", True, 0).status is Status.OK
    assert classify_plain("n", False, None).status is Status.FAILED
    assert classify_plain("n", "'test.pong' is not available.", 254).status is Status.FAILED
