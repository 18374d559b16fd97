"""The server half: tools from functions, results and errors, and what ``Context`` offers.

All in-process; the same server code runs behind every transport.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from support import client_with_hand_driven_server

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    ClientCapabilities,
    ElicitationCapability,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    SamplingCapability,
    SamplingToolsCapability,
    TextContent,
)

pytestmark = pytest.mark.anyio


class Point(BaseModel):
    x: int
    y: int


class CardHolder(BaseModel):
    name: str


def make_server() -> MCPServer:
    server = MCPServer("Workshop", instructions="Be nice to the tools.")

    @server.tool()
    def add(a: int, b: int = 1) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def names() -> list[str]:
        return ["Ada", "Grace"]

    @server.tool()
    def origin() -> Point:
        return Point(x=0, y=0)

    @server.tool()
    def broken() -> str:
        raise ValueError("the gears are stuck")

    @server.tool()
    def refusing() -> str:
        raise MCPError(-32042, "Open the consent page first.", {"url": "https://example.com"})

    @server.tool()
    async def wants_a_card(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", schema=CardHolder)
        return answer.action

    @server.tool()
    def declared(ctx: Context) -> list[str]:
        session = ctx.session
        checks = {
            "elicitation": session.check_client_capability(
                ClientCapabilities(elicitation=ElicitationCapability())
            ),
            "url elicitation": session.check_client_capability(
                ClientCapabilities(elicitation=ElicitationCapability(url={}))
            ),
            "sampling": session.check_client_capability(
                ClientCapabilities(sampling=SamplingCapability())
            ),
            "sampling tools": session.check_client_capability(
                ClientCapabilities(sampling=SamplingCapability(tools=SamplingToolsCapability()))
            ),
        }
        return [name for name, ok in checks.items() if ok]

    @server.tool()
    async def consent(ctx: Context) -> str:
        answer = await ctx.elicit_url(
            "Please sign in.", "https://example.com/sign-in?id=42", "elicitation-42"
        )
        return answer.action

    @server.tool()
    async def progress(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "halfway")  # nobody asked: silently skipped
        return "done"

    return server


async def accept_ada(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada Lovelace"})


async def test_tools_are_listed_with_schemas_from_their_signatures() -> None:
    """Parameters become the input schema; ``Context`` is injected, never exposed."""
    async with Client(make_server(), mode="legacy") as client:
        tools = {tool.name: tool for tool in await client.list_all_tools()}
        assert client.server_info.name == "Workshop"
        assert client.instructions == "Be nice to the tools."
    add = tools["add"]
    assert add.description == "Add two numbers."
    assert add.input_schema["properties"]["a"]["type"] == "integer"
    assert add.input_schema["required"] == ["a"]
    assert add.input_schema["properties"]["b"]["default"] == 1
    assert tools["wants_a_card"].input_schema.get("properties", {}) == {}


async def test_structured_results() -> None:
    """Plain values are wrapped as ``{"result": ...}``; models are the structure itself."""
    async with Client(make_server(), mode="legacy") as client:
        added = await client.call_tool("add", {"a": 2, "b": 40})
        listed = await client.call_tool("names")
        point = await client.call_tool("origin")
    assert added.structured_content == {"result": 42}
    assert added.content == [TextContent(text="42")]
    assert listed.structured_content == {"result": ["Ada", "Grace"]}
    assert listed.content
    assert all(isinstance(c, TextContent) for c in listed.content)
    assert point.structured_content == {"x": 0, "y": 0}


async def test_a_tool_that_raises_returns_an_error_result() -> None:
    """The model sees what went wrong as ``is_error`` content; it is not a protocol error."""
    async with Client(make_server(), mode="legacy") as client:
        result = await client.call_tool("broken")
    assert result.is_error is True
    [content] = result.content
    assert isinstance(content, TextContent)
    assert "the gears are stuck" in content.text


async def test_bad_arguments_are_an_error_result_naming_the_field() -> None:
    async with Client(make_server(), mode="legacy") as client:
        result = await client.call_tool("add", {"a": "not a number"})
    assert result.is_error is True
    [content] = result.content
    assert isinstance(content, TextContent)
    assert "a" in content.text
    assert "add" in content.text


async def test_an_mcp_error_in_a_tool_is_a_protocol_error() -> None:
    """Raising ``MCPError`` answers the ``tools/call`` with exactly that error."""
    async with Client(make_server(), mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("refusing")
    assert caught.value.code == -32042
    assert caught.value.message == "Open the consent page first."
    assert caught.value.data == {"url": "https://example.com"}


async def test_an_unknown_tool_is_invalid_params() -> None:
    async with Client(make_server(), mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("teleport")
    assert caught.value.code == INVALID_PARAMS
    assert "teleport" in caught.value.message


async def test_an_answer_that_does_not_fit_the_form_fails_the_call() -> None:
    """An accepted answer missing a required field is the client's error, caught by the
    client before it is sent, every field named (the server's own check is tested
    with a raw peer in test_forms_server.py)."""

    async def sloppy(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"nom": "Ada"})

    async with Client(make_server(), mode="legacy", elicitation_callback=sloppy) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("wants_a_card")
    assert caught.value.code == INTERNAL_ERROR
    assert "name: is required; nom: is not a field of this form" in caught.value.message


async def test_check_client_capability_looks_at_the_parts_declared() -> None:
    """An elicitation callback declares form and URL mode; sampling tools need opting in."""
    async with Client(make_server(), mode="legacy", elicitation_callback=accept_ada) as client:
        result = await client.call_tool("declared")
    assert result.structured_content == {"result": ["elicitation", "url elicitation"]}


async def test_url_mode_elicitation_reaches_the_same_callback() -> None:
    """One callback serves both modes; URL mode carries the URL and the elicitation id."""
    seen: list[ElicitRequestParams] = []

    async def agree(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        seen.append(params)
        return ElicitResult(action="accept")

    async with Client(make_server(), mode="legacy", elicitation_callback=agree) as client:
        result = await client.call_tool("consent")
    assert result.content == [TextContent(text="accept")]
    [params] = seen
    assert isinstance(params, ElicitRequestURLParams)
    assert params.mode == "url"
    assert params.message == "Please sign in."
    assert params.url == "https://example.com/sign-in?id=42"
    assert params.elicitation_id == "elicitation-42"


async def test_url_mode_needs_an_elicitation_callback() -> None:
    async with Client(make_server(), mode="legacy") as client:
        with pytest.raises(MCPError, match="not supported"):
            await client.call_tool("consent")


async def test_progress_without_a_token_is_skipped() -> None:
    """``ctx.report_progress`` when the client did not ask for progress is harmless."""
    async with Client(make_server(), mode="legacy") as client:
        result = await client.call_tool("progress")
    assert result.content == [TextContent(text="done")]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("asked", [True, False], ids=["asked", "not-asked"])
async def test_progress_that_json_cannot_carry_fails_the_tool_clearly(
    mode: str, asked: bool
) -> None:
    """NaN or Infinity in ``ctx.report_progress`` fails the tool saying so, whether
    or not the client asked for progress, and nothing is reported: the same in-process as
    on a transport (which could not have written it)."""
    server = MCPServer("Progress")

    @server.tool()
    async def stuck(ctx: Context) -> str:
        await ctx.report_progress(1, float("nan"), "halfway?")
        return "done"

    reported: list[tuple[float, float | None, str | None]] = []

    async def report(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total, message))

    async with Client(server, mode=mode) as client:
        result = await client.call_tool("stuck", progress_callback=report if asked else None)
    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text == (
        "Error executing tool: Invalid argument for ctx.report_progress(): total must be a "
        "finite number, not nan: JSON cannot carry it. Pass how far the work goes, as a "
        "number, or None."
    )
    assert reported == []


async def test_the_client_declares_exactly_its_callbacks_on_the_wire() -> None:
    """The ``initialize`` capabilities mirror the callbacks given, in the spec's shapes."""

    async def model(context: ClientRequestContext, params: Any) -> Any:
        raise AssertionError("not called")

    async def roots(context: ClientRequestContext) -> Any:
        raise AssertionError("not called")

    async with client_with_hand_driven_server(
        elicitation_callback=accept_ada,
        sampling_callback=model,
        sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()),
        list_roots_callback=roots,
    ) as (_, _, initialize):
        pass
    assert initialize["protocolVersion"] == "2025-11-25"
    assert initialize["capabilities"] == {
        "elicitation": {"form": {}, "url": {}},
        "sampling": {"tools": {}},
        "roots": {"listChanged": True},
    }

    async with client_with_hand_driven_server() as (_, _, initialize):
        pass
    assert initialize["capabilities"] == {}
