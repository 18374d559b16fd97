"""Canonical JSON and the state binding built on it: one text per value, whatever the
order its objects' keys were built in, so a later round (or another replica) reproduces
a question's key and a state's binding."""

from __future__ import annotations

from decimal import Decimal

import pytest

from answerback.server._canonical import canonical_json
from answerback.server._request_state import RequestStateSealer, StateSeal
from answerback.types import InvalidParamsError


def test_keys_are_sorted_at_every_depth_and_the_text_is_compact() -> None:
    value = {"b": [{"d": 1, "c": (2, {"f": 3, "e": 4})}], "a": "é\n"}
    assert canonical_json(value) == '{"a":"\\u00e9\\n","b":[{"c":[2,{"e":4,"f":3}],"d":1}]}'


def test_what_json_cannot_hold_is_written_as_its_str() -> None:
    assert canonical_json({"amount": Decimal("1.50"), "kind": object}) == (
        '{"amount":"1.50","kind":"<class \'object\'>"}'
    )


ARGUMENTS = {"city": "Oslo", "filters": {"max": 3, "tags": [{"z": 1, "a": 2}]}}
REORDERED = {"filters": {"tags": [{"a": 2, "z": 1}], "max": 3}, "city": "Oslo"}


def seal_for(arguments: object, principal: str | None = None) -> StateSeal:
    return StateSeal(SEALER, "tools/call", "weather", arguments, principal)


SEALER = RequestStateSealer([b"k" * 32])


def test_a_state_opens_for_the_same_arguments_built_in_another_order() -> None:
    token = seal_for(ARGUMENTS).seal({"answers": {}})
    assert seal_for(REORDERED).open(token)["answers"] == {}


@pytest.mark.parametrize(
    "other",
    [
        seal_for({**ARGUMENTS, "city": "Bergen"}),
        seal_for(ARGUMENTS, principal="mallory"),
        StateSeal(SEALER, "tools/call", "forecast", ARGUMENTS),
        StateSeal(SEALER, "prompts/get", "weather", ARGUMENTS),
    ],
    ids=["other arguments", "another caller", "another tool", "another method"],
)
def test_a_state_opens_for_nothing_else(other: StateSeal) -> None:
    token = seal_for(ARGUMENTS).seal({"answers": {}})
    with pytest.raises(InvalidParamsError, match="Invalid requestState"):
        other.open(token)
