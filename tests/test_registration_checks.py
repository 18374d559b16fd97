"""Signatures that cannot mean what they say are refused when registered, not when called.

An unannotated ``ctx`` would otherwise be a required input that no client knows to send,
and the mistake would show only as a failed call. Other unannotated parameters are
inputs that accept any JSON value.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest

from answerback import Client
from answerback.server import Context, MCPServer
from answerback.types import TextContent

pytestmark = pytest.mark.anyio


class OtherContext:
    """A class named ``Context`` from somewhere else (code moved from another SDK)."""


OtherContext.__name__ = OtherContext.__qualname__ = "Context"


def test_an_unannotated_ctx_is_refused_when_the_tool_is_registered() -> None:
    mcp = MCPServer("checks")

    def search(ctx, query: str) -> str:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
        return query

    with pytest.raises(TypeError) as caught:
        mcp.tool()(search)  # pyright: ignore[reportUnknownArgumentType]
    message = str(caught.value)
    assert "'test_an_unannotated_ctx_is_refused_when_the_tool_is_registered.<locals>.search'" in (
        message
    )
    assert "parameter 'ctx' has no annotation" in message
    assert "`ctx: Context`" in message


def test_an_unannotated_context_is_refused_for_prompts_and_resources_too() -> None:
    mcp = MCPServer("checks")

    def outline(context, topic: str) -> str:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
        return topic

    def page(name: str, ctx) -> str:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
        return name

    with pytest.raises(TypeError, match=r"parameter 'context' has no annotation.*`context: "):
        mcp.prompt()(outline)  # pyright: ignore[reportUnknownArgumentType]
    with pytest.raises(TypeError, match=r"parameter 'ctx' has no annotation"):
        mcp.resource("page://{name}")(page)  # pyright: ignore[reportUnknownArgumentType]


@pytest.mark.parametrize(
    ("annotation", "shown"),
    [
        (OtherContext, f"{__name__}.Context"),
        (list[Context], "list[answerback.server.Context]"),
    ],
    ids=["another-librarys-context", "context-inside-another-type"],
)
def test_a_context_the_server_cannot_pass_is_refused(annotation: Any, shown: str) -> None:
    mcp = MCPServer("checks")

    def search(query: str, ctx: Any) -> str:
        return query

    search.__annotations__["ctx"] = annotation
    with pytest.raises(TypeError) as caught:
        mcp.tool()(search)
    assert f"parameter 'ctx' is annotated {shown}" in str(caught.value)
    assert "from answerback.server import Context" in str(caught.value)


def test_two_context_parameters_are_refused() -> None:
    mcp = MCPServer("checks")

    def search(query: str, ctx: Context, again: Annotated[Context, "twice"]) -> str:
        return query

    with pytest.raises(TypeError, match=r"'ctx' and 'again' both take the Context"):
        mcp.tool()(search)


async def test_an_optional_context_is_passed_and_plain_parameters_take_any_value() -> None:
    """``ctx: Context | None`` receives the context; an unannotated ``x`` is an input
    whose schema allows any JSON value."""
    mcp = MCPServer("checks")

    @mcp.tool()
    def describe(x, ctx: Context | None = None) -> str:  # pyright: ignore[reportMissingParameterType, reportUnknownParameterType]
        given: object = x  # pyright: ignore[reportUnknownVariableType]
        return f"{given!r} with context: {isinstance(ctx, Context)}"

    async with Client(mcp, mode="legacy") as client:
        [tool] = (await client.list_tools()).tools
        result = await client.call_tool("describe", {"x": [1, "two"]})
    assert tool.input_schema["required"] == ["x"]
    assert "type" not in tool.input_schema["properties"]["x"]
    assert "ctx" not in tool.input_schema["properties"]
    [content] = result.content
    assert isinstance(content, TextContent)
    assert content.text == "[1, 'two'] with context: True"
