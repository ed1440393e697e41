"""Reading the minions' answers (fleet/cabling/gather.py): a minion is untrusted, so
every odd answer becomes that node's one-line printable error, never an exception, a
hang or a neighbour made up."""

from __future__ import annotations

import json
from typing import Any

import pytest

from cabling.site import lldp_doc, run_all
from fleet.cabling.gather import MAX_ANSWER, observe, read_answer
from fleet.cabling.lldp import MAX_TEXT


def test_a_good_answer_is_its_neighbours() -> None:
    (n,) = read_answer(run_all(lldp_doc(("prov", "sw1", "ethernet1/1/7"))))
    assert (n.interface, n.chassis_name, n.port_id, n.port_id_type) == (
        "prov", "sw1", "ethernet1/1/7", "ifname")
    assert read_answer(run_all(lldp_doc())) == []


def _error(answer: Any) -> str:
    with pytest.raises(ValueError) as exc:
        read_answer(answer)
    text = str(exc.value)
    assert text.isprintable() and len(text) <= 400, repr(text)
    return text


@pytest.mark.parametrize(("answer", "says"), [
    ("Minion did not return. [No response]", "no lldpcli answer: Minion did not return"),
    (None, "no lldpcli answer"),
    (["a", "list"], "no lldpcli answer"),
    ({"stdout": "{}"}, "not a cmd.run_all answer"),
    ({"retcode": True, "stdout": "{}"}, "not a cmd.run_all answer"),
    ({"retcode": "0", "stdout": "{}"}, "not a cmd.run_all answer"),
    ({"retcode": 0, "stdout": 42}, "not a cmd.run_all answer"),
    (run_all("", 127, "/bin/sh: 1: lldpcli: not found"), "lldpcli exited 127"),
    (run_all("not json at all"), "not JSON"),
    (run_all("[1, 2]"), "expected an object"),
    (run_all('{"other": 1}'), "no 'lldp' key"),
    (run_all('{"lldp": {"interface": {"prov": {"chassis": {"a": {}, "b": {}}}}}}'),
     "expected one system name"),
    (run_all('{"lldp": {"interface": {"prov": {"port": {"id": {"value": 7}}}}}}'),
     "expected a string"),
])
def test_odd_answers_are_errors(answer: Any, says: str) -> None:
    assert says in _error(answer)


def test_a_huge_answer_is_refused_unread() -> None:
    assert f"more than {MAX_ANSWER}" in _error(run_all(" " * (MAX_ANSWER + 1)))


def test_deep_nesting_is_an_error_not_a_crash() -> None:
    assert "not JSON" in _error(run_all("[" * 100_000 + "]" * 100_000))


def test_a_long_string_is_refused() -> None:
    doc = lldp_doc(("prov", "sw1", "e" * (MAX_TEXT + 1)))
    assert f"longer than {MAX_TEXT}" in _error(run_all(doc))


def test_escapes_in_errors_are_cleaned() -> None:
    text = _error(run_all("", 3, "\x1b[2J\x1b]0;title\x07gone\r\nnext"))
    assert "\x1b" not in text and "gone" in text and "next" in text


def test_observe_sorts_answers_and_ignores_minions_not_asked() -> None:
    answers = {"a": run_all(lldp_doc(("prov", "sw1", "ethernet1/1/1"))),
               "b": run_all("oops"),
               "intruder": run_all(lldp_doc(("prov", "sw1", "ethernet1/1/9")))}
    got = observe(answers, ["a", "b", "c"])
    assert set(got.neighbours) == {"a"}
    assert set(got.errors) == {"b", "c"}
    assert got.errors["c"] == "the minion did not answer"
    assert "intruder" not in got.neighbours and "intruder" not in got.errors


def test_the_lldpd_output_shape_with_two_neighbours() -> None:
    doc = json.loads(lldp_doc(("prov", "sw1", "ethernet1/1/1"), ("data", "sw2", "ethernet1/1/3")))
    assert isinstance(doc["lldp"]["interface"], list)
    got = read_answer(run_all(json.dumps(doc)))
    assert [(n.interface, n.chassis_name) for n in got] == [("prov", "sw1"), ("data", "sw2")]
