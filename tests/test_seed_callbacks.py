"""The seed's client-callback story, in-process and over stdio (legacy era).

Each test runs twice: against the Library server object in this process, and against
the same script started as a subprocess (``StdioServer``). Outputs are compared with
exactly what the seed document says they print.
"""

from __future__ import annotations

from typing import Any

import pytest
from support import LIBRARY_SERVER, client_with_hand_driven_server, target

from answerback import Client, MCPError
from answerback.client import ClientRequestContext, ClientSession
from answerback.types import (
    INTERNAL_ERROR,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    ListRootsResult,
    ListToolsResult,
    TextContent,
)

pytestmark = pytest.mark.anyio

SEED_SCHEMA = {
    "properties": {"name": {"title": "Name", "type": "string"}},
    "required": ["name"],
    "title": "CardHolder",
    "type": "object",
}


@pytest.fixture(params=["memory", "stdio"])
def library(request: pytest.FixtureRequest) -> Any:
    """The seed's Library server, reached in-process or as a stdio subprocess."""
    return target(request.param, LIBRARY_SERVER)


async def accept_ada(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada Lovelace"})


async def answer_42(
    context: ClientRequestContext, params: CreateMessageRequestParams
) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(text="The answer is 42."), model="my-llm"
    )


async def no_roots(context: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[])


async def test_issue_card_returns_the_seed_content(library: Any) -> None:
    """Accepting the form with Ada's name issues her card, printed as the seed shows."""
    async with Client(library, mode="legacy", elicitation_callback=accept_ada) as client:
        result = await client.call_tool("issue_card")
    assert repr(result.content) == "[TextContent(type='text', text='Card issued to Ada Lovelace.')]"
    assert result.is_error is False


async def test_elicitation_callback_sees_the_form_request(library: Any) -> None:
    """The callback gets form mode, the tool's question and exactly the seed's schema."""
    seen: list[ElicitRequestParams] = []

    async def record(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async with Client(library, mode="legacy", elicitation_callback=record) as client:
        await client.call_tool("issue_card")
    [params] = seen
    assert params.mode == "form"
    assert params.message == "What name should go on the card?"
    assert params.requested_schema == SEED_SCHEMA


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_declining_or_cancelling_issues_no_card(library: Any, action: str) -> None:
    """Anything but "accept" makes the tool say no card was issued."""

    async def refuse(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action=action)  # type: ignore[arg-type]

    async with Client(library, mode="legacy", elicitation_callback=refuse) as client:
        result = await client.call_tool("issue_card")
    assert result.content == [TextContent(text="No card issued.")]


async def test_callback_context_carries_session_request_id_and_meta(library: Any) -> None:
    """The context is the live session, the server's request id and the request's _meta."""
    contexts: list[ClientRequestContext] = []

    async def record(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        contexts.append(context)
        return ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async with Client(library, mode="legacy", elicitation_callback=record) as client:
        await client.call_tool("issue_card")
        await client.call_tool("issue_card")
        [first, second] = contexts
        assert first.session is client.session
        assert isinstance(first.session, ClientSession)
    assert isinstance(first.request_id, int)
    assert first.request_id != second.request_id
    assert first.meta is None  # the Library server attaches no _meta


async def test_a_callback_can_call_the_server_back_mid_request(library: Any) -> None:
    """While the server waits for the answer, the callback uses the live session itself."""
    tool_names: list[str] = []

    async def look_around(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        tools = await context.session.send_request("tools/list", None, ListToolsResult)
        tool_names.extend(tool.name for tool in tools.tools)
        return ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async with Client(library, mode="legacy", elicitation_callback=look_around) as client:
        result = await client.call_tool("issue_card")
    assert result.content == [TextContent(text="Card issued to Ada Lovelace.")]
    assert {"issue_card", "client_features"} <= set(tool_names)


async def test_context_request_id_and_meta_are_the_servers_own() -> None:
    """``request_id`` is exactly the id the server chose and ``meta`` its ``_meta``."""
    contexts: list[ClientRequestContext] = []

    async def record(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        contexts.append(context)
        return ElicitResult(action="decline")

    async with client_with_hand_driven_server(elicitation_callback=record) as (client, server, _):
        await server.send(
            {
                "jsonrpc": "2.0",
                "id": "srv-7",
                "method": "elicitation/create",
                "params": {
                    "_meta": {"trace": "abc"},
                    "mode": "form",
                    "message": "Name?",
                    "requestedSchema": {"type": "object", "properties": {}},
                },
            }
        )
        answer = await server.receive()
        [context] = contexts
        assert context.session is client.session
    assert answer == {"jsonrpc": "2.0", "id": "srv-7", "result": {"action": "decline"}}
    assert context.request_id == "srv-7"
    assert context.meta == {"trace": "abc"}


async def test_an_input_requests_key_and_meta_reach_the_callback() -> None:
    """2026-07-28: ``request_id`` is the input request's key and ``meta`` its ``_meta``,
    unknown members included, as the server wrote them; no ``_meta``, no ``meta``."""
    contexts: list[ClientRequestContext] = []

    async def record(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        contexts.append(context)
        return ElicitResult(action="decline")

    def question(meta: dict[str, Any] | None) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        params: dict[str, Any] = {"mode": "form", "message": "Name?", "requestedSchema": schema}
        if meta is not None:
            params["_meta"] = meta
        return {"method": "elicitation/create", "params": params}

    needed = InputRequiredResult.model_validate(
        {
            "inputRequests": {
                "with-meta": question({"trace": "abc", "progressToken": 5}),
                "bare": question(None),
            },
            "requestState": "opaque",
        }
    )
    async with Client(
        target("memory", LIBRARY_SERVER), mode="2026-07-28", elicitation_callback=record
    ) as client:
        answers = await client.answer_input_requests(needed)
    assert answers == {"with-meta": {"action": "decline"}, "bare": {"action": "decline"}}
    assert [(c.request_id, c.meta) for c in contexts] == [
        ("with-meta", {"trace": "abc", "progressToken": 5}),
        ("bare", None),
    ]


@pytest.mark.parametrize(
    ("callbacks", "expected"),
    [
        ({"elicitation_callback": accept_ada}, ["elicitation"]),
        (
            {
                "elicitation_callback": accept_ada,
                "sampling_callback": answer_42,
                "list_roots_callback": no_roots,
            },
            ["elicitation", "sampling", "roots"],
        ),
        ({}, []),
    ],
    ids=["elicitation-only", "all-three", "none"],
)
async def test_client_features_reports_the_callbacks_given(
    library: Any, callbacks: dict[str, Any], expected: list[str]
) -> None:
    """Registering a callback is the capability declaration the server sees."""
    async with Client(library, mode="legacy", **callbacks) as client:
        result = await client.call_tool("client_features")
    assert result.structured_content == {"result": expected}


async def test_without_elicitation_callback_the_call_fails(library: Any) -> None:
    """No callback, no capability: the server's question fails the call with MCPError."""
    async with Client(library, mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("issue_card")
        assert str(caught.value) == "Elicitation not supported"
        assert caught.value.message == "Elicitation not supported"


async def test_the_refusal_escapes_the_client_block_as_mcp_error(library: Any) -> None:
    """Uncaught inside the block, the refusal is still the plain ``MCPError`` outside it,
    so the seed's ``MCPError: Elicitation not supported`` is what a script shows (then
    a note on which callback to register)."""
    with pytest.raises(MCPError) as caught:
        async with Client(library, mode="legacy") as client:
            await client.call_tool("issue_card")
    assert str(caught.value) == "Elicitation not supported"
    assert "pass elicitation_callback= to Client" in caught.value.__notes__[0]


async def test_error_data_from_the_callback_fails_the_call_verbatim(library: Any) -> None:
    """An ``ErrorData`` answer refuses the request; the tool call fails with that error."""

    async def refuse(context: ClientRequestContext, params: ElicitRequestParams) -> ErrorData:
        return ErrorData(code=-1, message="The user will not say.", data={"why": "privacy"})

    async with Client(library, mode="legacy", elicitation_callback=refuse) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("issue_card")
    assert caught.value.code == -1
    assert caught.value.message == "The user will not say."
    assert caught.value.data == {"why": "privacy"}


async def test_a_raising_callback_fails_the_call_and_the_session_survives(
    library: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug in the callback is an internal error for that call only; the server is told
    a reference to the client's log, which holds the exception (its text may hold what
    the host keeps from servers)."""
    calls = 0

    async def flaky(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("the form renderer crashed")
        return ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async with Client(library, mode="legacy", elicitation_callback=flaky) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("issue_card")
        assert caught.value.code == INTERNAL_ERROR
        assert "the client logged the details under reference" in caught.value.message
        assert "the form renderer crashed" not in caught.value.message
        assert "the form renderer crashed" in caplog.text
        again = await client.call_tool("issue_card")
    assert again.content == [TextContent(text="Card issued to Ada Lovelace.")]


async def test_a_callback_returning_the_wrong_type_is_reported_clearly() -> None:
    """A callback must return the result model or ``ErrorData``; a dict is a bug, named."""

    async def sloppy(context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        return {"action": "accept", "content": {"name": "Ada Lovelace"}}

    async with Client(
        target("memory", LIBRARY_SERVER), mode="legacy", elicitation_callback=sloppy
    ) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("issue_card")
    assert caught.value.code == INTERNAL_ERROR
    assert "elicitation_callback returned dict" in caught.value.message
