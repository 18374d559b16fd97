"""The client checks a tool's structured result against the output schema it was listed
with, as the specification says clients SHOULD.

A listed tool's successful result must carry ``structuredContent`` that fits its
``outputSchema``, or the call fails with ``InvalidServerResultError`` naming the server,
the tool and the problems; a tool never listed, and a failed result, are not checked. The
schema is the server's: its patterns run with a deadline, and one the client cannot use
is skipped with a warning instead of failing every call.

An answerback server checks the same before it sends (``test_server_output_check.py``),
so the results that break their schema come from a server the test plays by hand.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Annotated

import anyio
import pytest
from pydantic import BaseModel, Field
from support import PATIENCE_SECONDS, RawPeer
from test_client_robustness import answer_next, call_against, hand_driven

from answerback import Client
from answerback.client import IncomingMessage, InvalidServerResultError
from answerback.forms._json_schema import PROBLEMS_KEPT
from answerback.forms._patterns import PATTERN_SECONDS
from answerback.jsonrpc import JSONObject
from answerback.server import MCPServer
from answerback.types import CallToolResult, TextContent

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]


class Point(BaseModel):
    x: int
    y: int


class Code(BaseModel):
    code: Annotated[str, Field(pattern=r"^(a|aa)+$")]


mcp = MCPServer("Shapes", version="1.0")


@mcp.tool()
def point() -> Point:
    """A point that fits the schema."""
    return Point(x=1, y=2)


@mcp.tool()
def failed_point() -> Point | CallToolResult:
    """A failure: it owes no structured content."""
    return CallToolResult(content=[TextContent(text="no point")], is_error=True)


async def listed(client: Client) -> None:
    with anyio.fail_after(PATIENCE_SECONDS):
        await client.list_all_tools()


@asynccontextmanager
async def listing(mode: str, schema: JSONObject) -> AsyncGenerator[tuple[Client, RawPeer], None]:
    """A client that has listed one tool, ``anything``, with ``schema`` as its output
    schema, from a server the test plays by hand."""
    async with hand_driven(mode) as (client, peer):
        tool: JSONObject = {
            "name": "anything",
            "inputSchema": {"type": "object"},
            "outputSchema": schema,
        }
        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_next, peer, "tools/list", {"tools": [tool]})
            await listed(client)
        yield client, peer


POINT_SCHEMA: JSONObject = Point.model_json_schema()
WRONG_POINT: JSONObject = {
    "content": [{"type": "text", "text": "?"}],
    "structuredContent": {"x": "one"},
}


@pytest.mark.parametrize("mode", MODES)
async def test_a_result_that_fits_its_schema_passes(mode: str) -> None:
    async with Client(mcp, mode=mode) as client:
        await listed(client)
        result = await client.call_tool("point")
    assert result.structured_content == {"x": 1, "y": 2}


@pytest.mark.parametrize("mode", MODES)
async def test_structured_content_that_breaks_the_schema_fails_the_call(mode: str) -> None:
    async with listing(mode, POINT_SCHEMA) as (client, peer):
        with pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, WRONG_POINT)
    error = caught.value
    assert str(error) == (
        "The server 'hand-driven' 0 sent structuredContent for tool 'anything' that does not "
        "fit the tool's outputSchema: structuredContent.x: 'one' is not of type 'integer'; "
        "structuredContent: 'y' is a required property. The server breaks its own schema; "
        "report it to its authors."
    )
    assert error.data == {
        "server": {"name": "hand-driven", "version": "0"},
        "method": "tools/call",
        "tool": "anything",
        "problems": [
            "structuredContent.x: 'one' is not of type 'integer'",
            "structuredContent: 'y' is a required property",
        ],
    }


async def test_the_problems_collected_from_one_result_are_bounded() -> None:
    """A hostile result cannot make the client collect (and time patterns for) every
    problem it holds: ``PROBLEMS_KEPT`` are kept, and the message names how many more."""
    schema: JSONObject = {
        "type": "object",
        "properties": {"result": {"type": "object", "additionalProperties": {"type": "integer"}}},
        "required": ["result"],
    }
    words = {f"count{number:02}": "many" for number in range(50)}
    tally: JSONObject = {"content": [], "structuredContent": {"result": words}}
    async with listing("legacy", schema) as (client, peer):
        with pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, tally)
    problems = caught.value.data["problems"]
    assert len(problems) == PROBLEMS_KEPT
    assert all(
        problem.startswith("structuredContent.result.count")
        and problem.endswith(": 'many' is not of type 'integer'")
        for problem in problems
    )
    assert f"; and {PROBLEMS_KEPT - 3} more. The server breaks" in str(caught.value)


@pytest.mark.parametrize("mode", MODES)
async def test_missing_structured_content_fails_the_call(mode: str) -> None:
    text_only: JSONObject = {"content": [{"type": "text", "text": "(1, 2)"}]}
    async with listing(mode, POINT_SCHEMA) as (client, peer):
        with pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, text_only)
    assert str(caught.value) == (
        "The server 'hand-driven' 0 sent a CallToolResult for tool 'anything' without "
        "structuredContent, which the tool's outputSchema requires. The server breaks the "
        "MCP specification; report it to its authors."
    )
    assert caught.value.data["problems"] == ["structuredContent: missing"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_tool_never_listed_is_not_checked(mode: str) -> None:
    async with hand_driven(mode) as (client, peer):
        result = await call_against(client, peer, WRONG_POINT)
    assert result.structured_content == {"x": "one"}


@pytest.mark.parametrize("mode", MODES)
async def test_a_failed_result_is_not_checked(mode: str) -> None:
    async with Client(mcp, mode=mode) as client:
        await listed(client)
        result = await client.call_tool("failed_point")
    assert result.is_error
    assert result.structured_content is None


async def test_a_round_driven_by_hand_is_checked_too() -> None:
    async with listing("2026-07-28", POINT_SCHEMA) as (client, peer):
        with pytest.raises(InvalidServerResultError, match="tool 'anything'"):
            await call_against(client, peer, WRONG_POINT, by_round=True)


@pytest.mark.parametrize("mode", MODES)
async def test_a_backtracking_pattern_is_reported_not_run_for_minutes(mode: str) -> None:
    slow: JSONObject = {"content": [], "structuredContent": {"code": "a" * 60 + "!"}}
    async with listing(mode, Code.model_json_schema()) as (client, peer):
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, slow)
    assert caught.value.data["problems"] == [
        f"structuredContent.code: '{'a' * 56}... could not be checked against the "
        f"pattern ^(a|aa)+$ within {PATTERN_SECONDS:g} s: the server's pattern backtracks "
        "too much to check 61 characters"
    ]


async def test_a_changed_tool_list_forgets_the_old_schemas() -> None:
    """After ``tools/list_changed`` a tool may return another shape: the schema it was
    listed with no longer judges it (until it is listed again)."""
    changing = MCPServer("Changing", version="1.0")

    @changing.tool()
    def shape() -> Point:
        """A point, for now."""
        return Point(x=1, y=2)

    changed = anyio.Event()

    async def message_handler(message: IncomingMessage) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            changed.set()

    async with Client(changing, mode="legacy", message_handler=message_handler) as client:
        await listed(client)
        changing.remove_tool("shape")

        @changing.tool(name="shape")
        def shape_now() -> str:
            """A name instead."""
            return "circle"

        await changing.notify_tools_changed()
        with anyio.fail_after(PATIENCE_SECONDS):
            await changed.wait()
        result = await client.call_tool("shape")
    assert result.structured_content == {"result": "circle"}


# -- schemas the client cannot use ------------------------------------------------


RESULT: JSONObject = {"content": [], "structuredContent": {"x": 1}}


@pytest.mark.parametrize("mode", MODES)
async def test_an_invalid_schema_is_skipped_with_one_warning(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    schema: JSONObject = {"type": "object", "properties": {"x": {"type": "whole number"}}}
    with caplog.at_level(logging.WARNING, logger="answerback.client"):
        async with listing(mode, schema) as (client, peer):
            first = await call_against(client, peer, RESULT)
            second = await call_against(client, peer, RESULT)
    assert first.structured_content == second.structured_content == {"x": 1}
    (warning,) = [
        record.getMessage() for record in caplog.records if "outputSchema" in record.getMessage()
    ]
    assert warning.startswith("The server 'hand-driven' 0 listed tool 'anything' with an ")
    assert "outputSchema this client cannot use ('whole number' is not valid" in warning
    assert warning.endswith("; its results are not checked")


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"$ref": "#"}, "the schema refers to itself without end, or the result nests too deeply"),
        (
            {"$ref": "https://example.com/schema.json"},
            "Unresolvable: https://example.com/schema.json",
        ),
    ],
    ids=["ref-loop", "remote-ref"],
)
async def test_a_schema_that_cannot_be_applied_is_skipped_with_one_warning(
    schema: JSONObject,
    reason: str,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fetched: list[object] = []

    def no_network(*args: object, **kwargs: object) -> None:
        fetched.append(args)
        raise OSError("no network in tests")

    monkeypatch.setattr("urllib.request.urlopen", no_network)
    with caplog.at_level(logging.WARNING, logger="answerback.client"):
        async with listing("legacy", schema) as (client, peer):
            first = await call_against(client, peer, RESULT)
            second = await call_against(client, peer, RESULT)
    assert first.structured_content == second.structured_content == {"x": 1}
    assert fetched == []
    (warning,) = [
        record.getMessage() for record in caplog.records if "outputSchema" in record.getMessage()
    ]
    assert warning == (
        "The server 'hand-driven' 0 listed tool 'anything' with an outputSchema that could not "
        f"be applied ({reason}); its results are not checked"
    )


@pytest.mark.parametrize(
    "schema",
    [
        {"$schema": "https://example.com/my-dialect", "type": "object"},
        {
            "type": "object",
            "patternProperties": {"^(a|aa)+$": {}},
            "unevaluatedProperties": False,
        },
    ],
    ids=["unknown-dialect", "patterns-without-deadline"],
)
async def test_a_schema_the_client_will_not_run_is_skipped(
    schema: JSONObject, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="answerback.client"):
        async with listing("legacy", schema) as (client, peer):
            result = await call_against(client, peer, RESULT)
    assert result.structured_content == {"x": 1}
    assert any("this client cannot use" in record.getMessage() for record in caplog.records)


async def test_property_names_are_matched_with_a_deadline() -> None:
    schema: JSONObject = {
        "type": "object",
        "patternProperties": {"^(a|aa)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    result: JSONObject = {"content": [], "structuredContent": {"a" * 60 + "!": 1, "aa": "two"}}
    async with listing("legacy", schema) as (client, peer):
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, result)
    problems = caught.value.data["problems"]
    assert "structuredContent.aa: 'two' is not of type 'integer'" in problems
    slow = [problem for problem in problems if "could not be checked" in problem]
    assert len(slow) == 2  # by patternProperties and by additionalProperties
    assert all(problem.startswith("structuredContent: the property 'aaa") for problem in slow)


async def test_the_schema_dialect_decides_the_rules() -> None:
    # Draft 4's exclusiveMinimum is a boolean that makes "minimum" exclusive.
    schema: JSONObject = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"x": {"type": "integer", "minimum": 1, "exclusiveMinimum": True}},
    }
    async with listing("legacy", schema) as (client, peer):
        with pytest.raises(InvalidServerResultError) as caught:
            await call_against(client, peer, RESULT)
    assert caught.value.data["problems"] == [
        "structuredContent.x: 1 is less than or equal to the minimum of 1"
    ]
