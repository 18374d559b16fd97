"""The server checks a ``CallToolResult`` a tool builds itself against the tool's own
output schema, as the specification says servers MUST.

A tool that declares an output schema (its return annotation) owes a successful result
``structured_content`` that fits it. A hand-built result without it, or with content
that breaks the schema, becomes an error result naming the tool and the problems, and
a warning in the server's log; a failure (``is_error=True``) owes nothing and passes.
The schema is the one the client is shown, checked as it is (a wrapped ``{"result":
...}`` one included), by the same checker an answerback client uses.

The bad results are called without listing the tools first, so the client does not
check them: what the test sees is the server's own verdict.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, ConfigDict, Field
from support import PATIENCE_SECONDS

import answerback.server._tools
from answerback import Client
from answerback.server import MCPServer
from answerback.types import CallToolResult, TextContent

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]
ADVICE = (
    "return structured_content that fits the schema of its return annotation, or "
    "is_error=True for a failure."
)


class Weather(BaseModel):
    city: str
    celsius: int


class Code(BaseModel):
    code: Annotated[str, Field(pattern=r"^(a|aa)+$")]


class Tree(BaseModel):
    """Recursive: pydantic's schema for it is a bare ``$ref`` into its ``$defs``."""

    label: str
    children: list[Tree]


class Unusable(BaseModel):
    """A schema jsonschema refuses to compile (a type that does not exist)."""

    model_config = ConfigDict(json_schema_extra={"type": "nonsense"})
    x: int


def nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"label": "leaf", "children": []}
    for _ in range(depth):
        node = {"label": "node", "children": [node]}
    return node


def as_built(result: CallToolResult) -> Any:
    """A result the tool returns at run time, whatever its annotation says."""
    return result


def text_result(text: str, structured: dict[str, Any] | None = None) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=text)], structured_content=structured)


mcp = MCPServer("Forecasts")


@mcp.tool()
def forecast(city: str) -> Weather | CallToolResult:
    """Built by hand, and fitting the schema."""
    return text_result("Mild", {"city": city, "celsius": 14})


@mcp.tool()
def unknown_city(city: str) -> Weather | CallToolResult:
    """A failure owes no structured content."""
    return CallToolResult(content=[TextContent(text=f"No forecast for {city}")], is_error=True)


@mcp.tool()
def text_only() -> Weather | CallToolResult:
    """A success without the structured content its schema promises."""
    return text_result("Mild")


@mcp.tool()
def misfit() -> Weather:
    """Annotated with a model, returning a hand-built result that breaks its schema."""
    return as_built(text_result("Mild", {"city": "Oslo", "celsius": "fourteen"}))


@mcp.tool()
def readings(wrapped: bool) -> list[int] | CallToolResult:
    """A wrapped schema: the structured content must be ``{"result": [...]}`` itself."""
    return text_result("1, 2", {"result": [1, 2]} if wrapped else {"readings": [1, 2]})


@mcp.tool()
def slow_code() -> Code | CallToolResult:
    """A string the schema's backtracking pattern cannot check in time."""
    return text_result("?", {"code": "a" * 60 + "!"})


@mcp.tool()
def forecast_annotated(city: str) -> Annotated[CallToolResult, Weather]:
    """The official SDK's spelling of a hand-built result's schema."""
    fits = city != "Nowhere"
    return text_result("Mild", {"city": city, "celsius": 14 if fits else "mild"})


@mcp.tool()
def stations() -> list[Weather]:
    """A wrapped list of models: its items refer to the model's definition."""
    return [Weather(city="Oslo", celsius=14), Weather(city="Bergen", celsius=11)]


@mcp.tool()
def family() -> Tree:
    return Tree(label="root", children=[Tree(label="leaf", children=[])])


@mcp.tool()
def deep_family(depth: int) -> Annotated[CallToolResult, Tree]:
    return text_result("deep", nested(depth))


@mcp.tool()
def unusable() -> Annotated[CallToolResult, Unusable]:
    return text_result("x", {"x": "not even an integer"})


@pytest.mark.parametrize("mode", MODES)
async def test_a_wrapped_schema_keeps_its_definitions_where_its_references_point(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``-> list[Weather]`` refers to ``#/$defs/Weather``: the definitions belong at the
    root of the output schema, not inside ``result``, or every client would find the
    reference pointing nowhere (and a strict one refuse the tool list)."""
    with caplog.at_level(logging.WARNING):
        async with Client(mcp, mode=mode) as client:
            tools = {tool.name: tool for tool in await client.list_all_tools()}
            result = await client.call_tool("stations")
    schema = tools["stations"].output_schema
    assert schema is not None
    assert schema["$defs"] == {"Weather": Weather.model_json_schema()}
    assert schema["properties"]["result"] == {
        "type": "array",
        "items": {"$ref": "#/$defs/Weather"},
    }
    checker: Any = Draft202012Validator(schema)  # jsonschema's own verdict, untyped
    assert checker.is_valid({"result": [{"city": "Oslo", "celsius": 14}]})
    assert not checker.is_valid({"result": [{"city": "Oslo", "celsius": "mild"}]})
    assert not result.is_error
    assert result.structured_content == {
        "result": [{"city": "Oslo", "celsius": 14}, {"city": "Bergen", "celsius": 11}]
    }
    assert caplog.records == [], "the client could apply the schema and found it kept"


@pytest.mark.parametrize("mode", MODES)
async def test_a_recursive_model_is_the_structured_content_itself(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A recursive model's schema is a bare reference to its definition; it is read as
    the object schema it refers to, so the model is not wrapped in ``result``."""
    with caplog.at_level(logging.WARNING):
        async with Client(mcp, mode=mode) as client:
            tools = {tool.name: tool for tool in await client.list_all_tools()}
            result = await client.call_tool("family")
    schema = tools["family"].output_schema
    assert schema is not None
    assert schema["type"] == "object"
    assert schema["required"] == ["label", "children"]
    assert schema["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    checker: Any = Draft202012Validator(schema)
    assert checker.is_valid(nested(3))
    assert not checker.is_valid({"label": "x", "children": [{"label": 1}]})
    assert not result.is_error
    assert result.structured_content == {
        "label": "root",
        "children": [{"label": "leaf", "children": []}],
    }
    assert caplog.records == []


@pytest.mark.parametrize("mode", MODES)
async def test_content_nested_too_deeply_to_check_is_an_error(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Failing closed: content the check cannot descend into is refused, not sent
    unchecked (it could not be serialised at that depth either)."""
    with caplog.at_level(logging.WARNING, logger="answerback.server"):
        async with Client(mcp, mode=mode) as client:
            shallow = await client.call_tool("deep_family", {"depth": 3})
            deep = await client.call_tool("deep_family", {"depth": 400})
    assert not shallow.is_error
    assert deep.is_error
    (block,) = deep.content
    assert isinstance(block, TextContent)
    assert block.text.startswith(
        "Tool 'deep_family' returned structured_content that could not be checked against "
        "its output schema (maximum recursion depth exceeded"
    )
    assert block.text.endswith("): return content nested less deeply.")
    assert [record.getMessage()[:77] for record in caplog.records] == [
        "tool 'deep_family' returned structured_content its output schema could not be"
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_an_output_schema_that_cannot_be_compiled_leaves_results_unchecked(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The server's own schema, never expected to fail: its results go out as built,
    with one warning, rather than every call failing for the server's mistake."""
    server = MCPServer("Unusable")
    server.tool(name="unusable")(unusable)
    with caplog.at_level(logging.WARNING, logger="answerback.server"):
        async with Client(server, mode=mode) as client:
            first = await client.call_tool("unusable")
            second = await client.call_tool("unusable")
    assert not first.is_error
    assert first.structured_content == second.structured_content == {"x": "not even an integer"}
    messages = [record.getMessage() for record in caplog.records]
    assert len(messages) == 1, "compiled once, so warned once"
    assert messages[0].startswith("tool 'unusable': its output schema cannot be checked (")
    assert messages[0].endswith("); the results it builds itself are sent unchecked")


@pytest.mark.parametrize("mode", MODES)
async def test_annotated_call_tool_result_declares_its_model(mode: str) -> None:
    """``-> Annotated[CallToolResult, Weather]`` (how the official SDK declares a
    hand-built result's schema) declares Weather's schema, which the result must fit;
    it was read as content blocks, with no schema at all."""
    async with Client(mcp, mode=mode) as client:
        tools = {tool.name: tool for tool in await client.list_all_tools()}
        fits = await client.call_tool("forecast_annotated", {"city": "Oslo"})
    async with Client(mcp, mode=mode) as client:  # unlisted: the server's verdict
        misfit = await client.call_tool("forecast_annotated", {"city": "Nowhere"})
    assert tools["forecast_annotated"].output_schema == Weather.model_json_schema()
    assert (fits.is_error, fits.structured_content) == (False, {"city": "Oslo", "celsius": 14})
    assert misfit.is_error
    assert misfit.content == [
        TextContent(
            text="Tool 'forecast_annotated' returned structured_content that does not fit its "
            "output schema (structured_content.celsius: 'mild' is not of type 'integer'): " + ADVICE
        )
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_a_hand_built_result_that_fits_passes(mode: str) -> None:
    """``-> Weather | CallToolResult`` declares Weather's schema, which the client is
    shown (and checks, having listed it) and the hand-built result fits."""
    async with Client(mcp, mode=mode) as client:
        tools = {tool.name: tool for tool in await client.list_all_tools()}
        result = await client.call_tool("forecast", {"city": "Oslo"})
    assert tools["forecast"].output_schema == Weather.model_json_schema()
    assert not result.is_error
    assert result.structured_content == {"city": "Oslo", "celsius": 14}
    assert result.content == [TextContent(text="Mild")]


@pytest.mark.parametrize("mode", MODES)
async def test_a_failure_without_structured_content_passes(mode: str) -> None:
    async with Client(mcp, mode=mode) as client:
        tools = {tool.name: tool for tool in await client.list_all_tools()}
        result = await client.call_tool("unknown_city", {"city": "Atlantis"})
    assert tools["unknown_city"].output_schema == Weather.model_json_schema()
    assert result.is_error
    assert result.content == [TextContent(text="No forecast for Atlantis")]
    assert result.structured_content is None


@pytest.mark.parametrize("mode", MODES)
async def test_a_success_without_structured_content_is_an_error(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="answerback.server"):
        async with Client(mcp, mode=mode) as client:
            result = await client.call_tool("text_only")
    assert result.is_error
    assert result.content == [
        TextContent(
            text="Tool 'text_only' returned a CallToolResult without structured_content, "
            f"which its output schema requires: {ADVICE}"
        )
    ]
    assert result.structured_content is None
    assert [record.getMessage() for record in caplog.records] == [
        "tool 'text_only' returned a CallToolResult without the structured_content its "
        "output schema requires"
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_structured_content_that_breaks_the_schema_is_an_error(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Checked as JSON Schema, as the client would: no coercion of ``"fourteen"``."""
    with caplog.at_level(logging.WARNING, logger="answerback.server"):
        async with Client(mcp, mode=mode) as client:
            result = await client.call_tool("misfit")
    problem = "structured_content.celsius: 'fourteen' is not of type 'integer'"
    assert result.is_error
    assert result.content == [
        TextContent(
            text="Tool 'misfit' returned structured_content that does not fit its output "
            f"schema ({problem}): {ADVICE}"
        )
    ]
    assert result.structured_content is None
    assert [record.getMessage() for record in caplog.records] == [
        f"tool 'misfit' returned structured_content its output schema does not allow: {problem}"
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_a_wrapped_schema_is_checked_as_declared(mode: str) -> None:
    async with Client(mcp, mode=mode) as client:
        fits = await client.call_tool("readings", {"wrapped": True})
        unwrapped = await client.call_tool("readings", {"wrapped": False})
    assert not fits.is_error
    assert fits.structured_content == {"result": [1, 2]}
    assert unwrapped.is_error
    assert unwrapped.content == [
        TextContent(
            text="Tool 'readings' returned structured_content that does not fit its output "
            f"schema (structured_content: 'result' is a required property): {ADVICE}"
        )
    ]


async def test_the_schema_patterns_run_with_a_deadline() -> None:
    async with Client(mcp) as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("slow_code")
    (block,) = result.content
    assert result.is_error
    assert isinstance(block, TextContent)
    assert "structured_content.code: 'aaaa" in block.text
    assert "could not be checked against the pattern ^(a|aa)+$ within" in block.text


async def test_the_schema_is_compiled_once_per_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[object] = []
    compile_schema = answerback.server._tools.compile_schema

    def counted(schema: dict[str, Any]) -> Any:
        compiled.append(schema)
        return compile_schema(schema)

    monkeypatch.setattr(answerback.server._tools, "compile_schema", counted)
    server = MCPServer("Once")
    server.tool(name="forecast")(forecast)
    server.tool(name="misfit")(misfit)
    async with Client(server) as client:
        for name in ("forecast", "misfit", "forecast", "misfit"):
            await client.call_tool(name, {"city": "Oslo"} if name == "forecast" else None)
    assert compiled == [Weather.model_json_schema()] * 2
