"""Forms as peers send them, and what a refusal says about a key that is not there.

FastMCP before 4.2 sent an untitled multi-select as ``"items": {"enum": [...]}``, without the
``"type": "string"`` the specification requires; answerback takes it as it takes titled
choices without one, when every choice is a string. A refusal says a key is missing
rather than calling it null, and the client's log line names the server mid-sentence.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from support import PATIENCE_SECONDS, client_with_hand_driven_server

from answerback.client import ClientRequestContext
from answerback.forms import FieldError, MultiSelectField, Option, UnsupportedForm, parse_form
from answerback.types import ElicitRequestParams, ElicitResult

UNTYPED_CHOICES: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"type": "array", "items": {"enum": ["a", "b", "c"]}}},
    "required": ["value"],
}


def refusal(schema: Any) -> list[str]:
    with pytest.raises(UnsupportedForm) as caught:
        parse_form(schema)
    return [str(error) for error in caught.value.errors]


def test_an_untitled_multi_select_without_items_type_is_a_multi_select_of_strings() -> None:
    form = parse_form(UNTYPED_CHOICES)
    field = form["value"]
    assert field == MultiSelectField(
        name="value", required=True, options=(Option("a"), Option("b"), Option("c"))
    )
    assert field.check(["a", "c"]) == ["a", "c"]
    # Written back as the specification spells it.
    assert field.schema()["items"] == {"type": "string", "enum": ["a", "b", "c"]}


@pytest.mark.parametrize(
    ("items", "expected"),
    [
        ({"enum": [1, 2]}, '"items.enum" must hold strings only'),
        (
            {"type": "number", "enum": ["1"]},
            '"items.type" of choices may only be "string", not "number"',
        ),
        ({"type": None, "enum": ["a"]}, '"items.type" of choices may only be "string", not null'),
    ],
    ids=["numbers without a type", "number type", "null type"],
)
def test_choices_that_are_not_strings_are_still_refused(items: Any, expected: str) -> None:
    schema = {"type": "object", "properties": {"value": {"type": "array", "items": items}}}
    [message] = refusal(schema)
    assert expected in message


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"properties": {}}, '"type" must be "object", but it is missing'),
        ({"type": None, "properties": {}}, '"type" must be "object", not null'),
        ({"type": "object"}, '"properties" must be an object of fields, but it is missing'),
        (
            {"type": "object", "properties": None},
            '"properties" must be an object of fields, not null',
        ),
    ],
    ids=["type missing", "type null", "properties missing", "properties null"],
)
def test_a_missing_key_is_called_missing_and_a_null_one_null(
    schema: dict[str, Any], expected: str
) -> None:
    assert refusal(schema) == [str(FieldError(None, expected))]


@pytest.mark.anyio
async def test_the_client_accepts_the_peer_spelling_and_logs_a_refusal_mid_sentence(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def choose(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"value": ["b"]})

    nested = {"type": "object", "properties": {"where": {"type": "object"}}}
    with anyio.fail_after(PATIENCE_SECONDS), caplog.at_level(logging.WARNING):
        async with client_with_hand_driven_server(elicitation_callback=choose) as (_, peer, _):
            answers: list[Any] = []
            for request_id, schema in ((1, UNTYPED_CHOICES), (2, nested)):
                params = {"mode": "form", "message": "Pick", "requestedSchema": schema}
                await peer.send(
                    {
                        "jsonrpc": "2.0",
                        "id": request_id,
                        "method": "elicitation/create",
                        "params": params,
                    }
                )
                answers.append(await peer.receive_until(lambda m, i=request_id: m.get("id") == i))
    assert answers[0]["result"] == {"action": "accept", "content": {"value": ["b"]}}
    assert answers[1]["error"]["code"] == -32602
    assert "refused a form from the server 'hand-driven' 0: " in caplog.text
