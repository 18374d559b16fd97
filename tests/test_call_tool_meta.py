"""``call_tool(..., meta=...)``: a host attaches its own ``_meta`` (trace context, say)
to a tool call. The server's handler reads it as ``ctx.meta`` in both eras and in every
2026-07-28 round; a key the client sets there itself is refused before anything is
sent."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.types import (
    META_CLIENT_INFO,
    META_PROTOCOL_VERSION,
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
)

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
INVALID_REQUEST_CODE = -32600
TRACE = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}


class Name(BaseModel):
    name: str


def tracing_server(seen: list[dict[str, Any] | None]) -> MCPServer:
    mcp = MCPServer("Tracing")

    @mcp.tool()
    def plain(ctx: Context) -> str:
        seen.append(ctx.meta)
        return "done"

    @mcp.tool()
    async def asking(ctx: Context) -> str:
        seen.append(ctx.meta)  # 2026-07-28: once per round
        answer = await ctx.elicit("Your name?", Name)
        return answer.action

    return mcp


async def accept(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


@pytest.mark.parametrize("mode", ERAS)
async def test_the_tool_sees_the_meta_of_its_call(mode: str) -> None:
    seen: list[dict[str, Any] | None] = []
    async with Client(tracing_server(seen), mode=mode) as client:
        await client.call_tool("plain", meta=TRACE)
        await client.call_tool("plain")
    (with_meta, without) = seen
    assert with_meta is not None
    assert with_meta["traceparent"] == TRACE["traceparent"]
    assert without is None or "traceparent" not in without
    if mode == "2026-07-28":  # merged with what the era requires, not replacing it
        assert with_meta[META_PROTOCOL_VERSION] == "2026-07-28"


@pytest.mark.parametrize("mode", ERAS)
async def test_every_round_of_a_call_carries_the_meta(mode: str) -> None:
    seen: list[dict[str, Any] | None] = []
    async with Client(tracing_server(seen), mode=mode, elicitation_callback=accept) as client:
        progress: list[float] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append(value)

        result = await client.call_tool("asking", meta=TRACE, progress_callback=on_progress)
    assert result.text == "accept"
    assert len(seen) == (2 if mode == "2026-07-28" else 1)
    for meta in seen:
        assert meta is not None
        assert meta["traceparent"] == TRACE["traceparent"]
        assert "progressToken" in meta  # the client's own key is still there


@pytest.mark.parametrize("key", ["progressToken", META_PROTOCOL_VERSION, META_CLIENT_INFO])
@pytest.mark.parametrize("mode", ERAS)
async def test_a_key_the_client_sets_itself_is_refused_before_sending(mode: str, key: str) -> None:
    seen: list[dict[str, Any] | None] = []
    async with Client(tracing_server(seen), mode=mode) as client:
        with pytest.raises(ValueError, match=f"sets {key!r}, which the client sets in _meta"):
            await client.call_tool("plain", meta={**TRACE, key: "mine"})
    assert seen == []


async def test_meta_that_is_not_a_json_object_is_refused() -> None:
    seen: list[dict[str, Any] | None] = []
    async with Client(tracing_server(seen), mode="legacy") as client:
        with pytest.raises(TypeError, match="must be a dict of _meta keys"):
            await client.call_tool("plain", meta=["traceparent"])  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="keys must be strings, got 1"):
            await client.call_tool("plain", meta={1: "x"})  # type: ignore[dict-item]
        with pytest.raises(TypeError, match="cannot be sent as JSON"):
            await client.call_tool("plain", meta={"when": object()})
    assert seen == []


async def test_each_round_driven_by_hand_carries_the_meta_given_to_it() -> None:
    """``call_tool_round`` takes ``meta=`` as ``call_tool`` does: a host driving the
    rounds itself (across processes, say) keeps its trace context on each round."""
    seen: list[dict[str, Any] | None] = []
    async with Client(
        tracing_server(seen), mode="2026-07-28", elicitation_callback=accept
    ) as client:
        first = await client.call_tool_round("asking", meta=TRACE)
        assert isinstance(first, InputRequiredResult)
        answers = await client.answer_input_requests(first)
        done = await client.call_tool_round(
            "asking", input_responses=answers, request_state=first.request_state, meta=TRACE
        )
    assert isinstance(done, CallToolResult)
    assert done.text == "accept"
    assert len(seen) == 2
    for meta in seen:
        assert meta is not None
        assert meta["traceparent"] == TRACE["traceparent"]
        assert meta[META_PROTOCOL_VERSION] == "2026-07-28"


async def test_a_round_by_hand_refuses_a_key_the_client_sets_itself() -> None:
    seen: list[dict[str, Any] | None] = []
    async with Client(tracing_server(seen), mode="2026-07-28") as client:
        with pytest.raises(
            ValueError, match=r"call_tool_round\(meta=\.\.\.\) sets 'progressToken'"
        ):
            await client.call_tool_round("plain", meta={"progressToken": 1})
    assert seen == []


def server_asking_by_request() -> MCPServer:
    """A 2026-07-28 server whose tool fails as the official SDK's ``ctx.elicit`` does
    there: -32600, naming the server-to-client request it could not send."""
    mcp = MCPServer("Official-like")

    @mcp.tool()
    def ask_name() -> str:
        raise MCPError(
            INVALID_REQUEST_CODE,
            "Cannot send 'elicitation/create': this transport context has no back-channel.",
        )

    return mcp


@pytest.mark.parametrize("by_round", [False, True], ids=["call_tool", "call_tool_round"])
async def test_a_tool_that_asks_by_request_gets_the_same_advice_either_way(by_round: bool) -> None:
    async with Client(server_asking_by_request(), mode="2026-07-28") as client:
        call = client.call_tool_round if by_round else client.call_tool
        with pytest.raises(MCPError) as caught:
            await call("ask_name")
    assert caught.value.code == INVALID_REQUEST_CODE
    assert caught.value.message.startswith("Cannot send 'elicitation/create'")
    assert 'connect to this server with Client(..., mode="legacy")' in caught.value.message
    assert isinstance(caught.value.__cause__, MCPError)
