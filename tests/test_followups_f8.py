"""Follow-ups of the pattern budget, and HTTP serving from a trio program.

- A server's own tool result whose output-schema patterns spend the whole budget is
  refused as too slow to check, not as content that does not fit (it may well fit), and
  never sent unchecked.
- The terminal's field hints write a huge bound as the forms' messages do (``1e+308``),
  not in 309 digits.
- uvicorn needs asyncio: its entry points called in a trio program, and the blocking
  ones called inside any running event loop, raise a ``RuntimeError`` at once that says
  what to do, where uvicorn and anyio failed deep inside or said only "Already running".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Literal

import anyio
import pytest
from pydantic import BaseModel, Field

from answerback import Client
from answerback.forms import FormField, parse_form
from answerback.forms._patterns import BUDGET_WORDS
from answerback.interact.terminal._text import field_hint
from answerback.server import MCPServer
from answerback.transports.http import run_uvicorn, serve_uvicorn, uvicorn_server
from answerback.types import CallToolResult, TextContent

SLOW_PATTERN = "^(?:(a|a)*b|[ac]*)$"
"""Backtracks for a few milliseconds on ``SLOW_VALUE``, then matches: far under one
value's deadline, so only the budget of the whole result stops the check."""

SLOW_VALUE = "a" * 14 + "c"

SLOW_ITEMS = 2000
"""Enough slow strings to spend the budget many times over on a fast machine."""


class Codes(BaseModel):
    codes: list[Annotated[str, Field(pattern=SLOW_PATTERN)]]


class LooseCodes(BaseModel):
    """Any string fits; a slow pattern's branch that runs out of budget fails quietly."""

    codes: list[Annotated[str, Field(pattern=SLOW_PATTERN)] | str]


mcp = MCPServer("Codes")


@mcp.tool()
def codes() -> Annotated[CallToolResult, Codes]:
    """Every code matches: a check that finished would find nothing wrong."""
    structured = {"codes": [SLOW_VALUE] * SLOW_ITEMS}
    return CallToolResult(content=[TextContent(text="codes")], structured_content=structured)


@mcp.tool()
def loose_codes() -> Annotated[CallToolResult, LooseCodes]:
    structured = {"codes": [SLOW_VALUE] * SLOW_ITEMS}
    return CallToolResult(content=[TextContent(text="codes")], structured_content=structured)


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_tool_result_past_the_pattern_budget_is_refused_as_too_slow_to_check(
    mode: Literal["legacy", "2026-07-28"],
) -> None:
    async with Client(mcp, mode=mode) as client:
        result = await client.call_tool("codes")
    assert result.is_error
    assert result.structured_content is None
    (block,) = result.content
    assert isinstance(block, TextContent)
    assert block.text.startswith(
        "Tool 'codes' returned structured_content that is too slow to check against its "
        "output schema: its patterns took more than the time one result may spend on them "
        f"({BUDGET_WORDS}; "
    )
    assert block.text.endswith(
        "Give the output schema patterns that do not backtrack, or fewer of them."
    )
    assert "does not fit" not in block.text


@pytest.mark.anyio
async def test_a_result_whose_check_was_cut_short_without_a_problem_is_not_sent() -> None:
    """The budget ran out inside ``anyOf``, whose other branch then passed: nothing was
    found wrong, but the result was not checked whole, so it is not sent as checked."""
    async with Client(mcp) as client:
        result = await client.call_tool("loose_codes")
    assert result.is_error
    assert result.structured_content is None
    (block,) = result.content
    assert isinstance(block, TextContent)
    assert "too slow to check against its output schema" in block.text
    assert "nothing wrong before it stopped)" in block.text


def only_field(schema: dict[str, object]) -> FormField:
    (field,) = parse_form({"type": "object", "properties": {"n": schema}}).fields
    return field


@pytest.mark.parametrize(
    ("schema", "hint"),
    [
        ({"type": "number", "minimum": 1e308}, "number, at least 1e+308"),
        ({"type": "number", "maximum": -1e308}, "number, at most -1e+308"),
        (
            {"type": "integer", "minimum": 12345678901234567890123},
            "whole number, at least 1.2345678901234568e+22",
        ),
        ({"type": "integer", "minimum": 2**53 + 1}, "whole number, at least 9007199254740993"),
        ({"type": "number", "minimum": 1, "maximum": 12.5}, "number, 1 to 12.5"),
    ],
)
def test_a_field_hint_writes_a_bound_as_the_forms_messages_do(
    schema: dict[str, object], hint: str
) -> None:
    assert field_hint(only_field(schema)) == hint


def test_a_hint_and_the_error_under_it_write_a_huge_bound_the_same_way() -> None:
    field = only_field({"type": "number", "minimum": 1e308})
    assert field.problems(0) == ["must be at least 1e+308"]
    assert field_hint(field).endswith("1e+308")


ON_TRIO = "uvicorn runs on asyncio, and this program runs trio. Instead, serve the app with"
HYPERCORN_WAY = "hypercorn's trio worker (docs/transports.md, 'Serving HTTP from a trio program')"


def on_trio(serve: Callable[[], Awaitable[None]]) -> RuntimeError:
    """What running ``serve`` in a trio program raised."""
    with pytest.raises(RuntimeError) as raised:
        anyio.run(serve, backend="trio")
    return raised.value


def test_serve_uvicorn_in_a_trio_program_says_uvicorn_needs_asyncio() -> None:
    async def serve() -> None:
        await serve_uvicorn(mcp.http_app(), host="127.0.0.1", port=0)

    error = on_trio(serve)
    assert str(error).startswith(ON_TRIO)
    assert HYPERCORN_WAY in str(error)


def test_a_uvicorn_server_serving_in_a_trio_program_says_uvicorn_needs_asyncio() -> None:
    server = uvicorn_server(mcp.http_app(), host="127.0.0.1", port=0)
    assert str(on_trio(server.serve)).startswith(ON_TRIO)


def test_mcp_run_over_http_in_a_trio_program_says_what_to_do_instead() -> None:
    async def serve() -> None:
        mcp.run(transport="streamable-http", host="127.0.0.1", port=0)

    assert str(on_trio(serve)) == (
        "mcp.run() starts an event loop of its own and blocks until the server stops, so it "
        "cannot run inside the trio program already running in this thread. Instead, serve "
        f"mcp.http_app() with an ASGI server that runs on trio, such as {HYPERCORN_WAY}, or "
        "run the MCP server in a process of its own (mcp.run(transport='streamable-http'))."
    )


def test_run_uvicorn_in_async_code_points_to_serve_uvicorn() -> None:
    async def main() -> None:
        run_uvicorn(mcp.http_app(), host="127.0.0.1", port=0)

    with pytest.raises(RuntimeError) as raised:
        anyio.run(main, backend="asyncio")
    assert str(raised.value) == (
        "run_uvicorn() starts an event loop of its own and blocks until the server stops, so "
        "it cannot run inside the asyncio program already running in this thread. Instead, "
        "in async code, await answerback.transports.http.serve_uvicorn(app)."
    )
