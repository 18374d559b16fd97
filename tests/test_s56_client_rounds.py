"""A 2026-07-28 round as the client drives it: refused before anyone is asked when one of
its questions cannot be answered, and its errors naming the server and the call."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from support import PATIENCE_SECONDS, HandDrivenServer, RawPeer

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.client._session import InputRequiredRoundsExceededError
from answerback.jsonrpc import JSONObject
from answerback.types import INVALID_PARAMS, METHOD_NOT_FOUND, ElicitRequestParams, ElicitResult

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
FORM: JSONObject = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}
NESTED_FORM: JSONObject = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Nested?",
        "requestedSchema": {
            "type": "object",
            "properties": {"inner": {"type": "object", "properties": {}}},
        },
    },
}
SAMPLING: JSONObject = {
    "method": "sampling/createMessage",
    "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
        "maxTokens": 10,
    },
}
ROOTS: JSONObject = {"method": "roots/list"}


@asynccontextmanager
async def hand_driven(**options: Any) -> AsyncGenerator[tuple[Client, RawPeer], None]:
    """A 2026-07-28 client whose server ("hand-driven" 0) the test plays by hand."""
    transport = HandDrivenServer()

    async def discover() -> None:
        request = await transport.peer.receive()
        assert request["method"] == "server/discover", request
        result: JSONObject = {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "_meta": {
                "io.modelcontextprotocol/serverInfo": {"name": "hand-driven", "version": "0"}
            },
        }
        await transport.peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async with anyio.create_task_group() as tg:
        tg.start_soon(discover)
        async with Client(transport, mode=MODERN, **options) as client:
            yield client, transport.peer


async def call_against(client: Client, peer: RawPeer, *results: JSONObject) -> Any:
    """Call the tool "t" while the server answers with ``results`` in turn (an error
    raised as it is, not wrapped by the task group)."""
    failure: MCPError | None = None

    async def answer() -> None:
        for result in results:
            request = await peer.receive_until(
                lambda message: message.get("method") == "tools/call"
            )
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async with anyio.create_task_group() as tg:
        tg.start_soon(answer)
        with anyio.fail_after(PATIENCE_SECONDS):
            try:
                return await client.call_tool("t")
            except MCPError as exc:
                failure = exc
                tg.cancel_scope.cancel()
    assert failure is not None
    raise failure


class Person:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.asked.append(params.message)
        return ElicitResult(action="accept", content={"name": "Ada"})


@pytest.mark.parametrize(
    ("other", "code", "problem"),
    [
        (SAMPLING, METHOD_NOT_FOUND, "Sampling not supported"),
        (ROOTS, METHOD_NOT_FOUND, "List roots not supported"),
        (NESTED_FORM, INVALID_PARAMS, "not an MCP elicitation form"),
    ],
    ids=["undeclared-sampling", "undeclared-roots", "unshowable-form"],
)
async def test_a_round_one_question_of_which_cannot_be_answered_asks_nobody(
    other: JSONObject, code: int, problem: str
) -> None:
    """The person would fill in the good form, then lose it to the other question's
    refusal: the round is refused before the form is shown, naming the key."""
    person = Person()
    round_: JSONObject = {
        "resultType": "input_required",
        "inputRequests": {"good": FORM, "bad": other},
    }
    async with hand_driven(elicitation_callback=person.elicit) as (client, peer):
        with pytest.raises(MCPError) as caught:
            await call_against(client, peer, round_)
    assert person.asked == []
    assert caught.value.code == code
    assert problem in caught.value.message
    assert "input request 'bad' from the server 'hand-driven' 0" in caught.value.message
    assert "none of the round's questions was put to anyone" in caught.value.message


async def test_a_round_of_answerable_questions_is_still_answered() -> None:
    person = Person()
    round_: JSONObject = {"resultType": "input_required", "inputRequests": {"good": FORM}}
    async with hand_driven(elicitation_callback=person.elicit) as (client, peer):
        result = await call_against(client, peer, round_, {"content": []})
    assert result.content == []
    assert person.asked == ["Name?"]


async def test_too_many_rounds_names_the_server_and_the_tool() -> None:
    person = Person()
    rounds: list[JSONObject] = [
        {"resultType": "input_required", "inputRequests": {f"q{n}": FORM}} for n in range(3)
    ]
    async with hand_driven(elicitation_callback=person.elicit, input_required_max_rounds=2) as (
        client,
        peer,
    ):
        with pytest.raises(InputRequiredRoundsExceededError) as caught:
            await call_against(client, peer, *rounds)
    assert caught.value.message.startswith(
        "'tools/call' of 't' still needed input from the server 'hand-driven' 0 after 2 rounds"
    )
