"""The output schema a tool advertises describes the JSON it sends.

Hosts on the TypeScript SDK assert every ``format`` of that schema against the tool's
structured content, so here each value is checked the same way: with a format-asserting
validator, against the schema the tool listed.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any

import pytest
from jsonschema import Draft202012Validator, SchemaError
from pydantic import AwareDatetime, BaseModel, Field
from support import SERVERS, schema_errors, server_object

from answerback import Client
from answerback.forms._json_schema import compile_schema
from answerback.server import MCPServer
from answerback.types import CallToolResult, TextContent

pytestmark = pytest.mark.anyio


STRUCTURED = server_object(SERVERS / "structured_server.py")
"""The interop test's server (tests/servers/structured_server.py): its tools return the
models whose schemas other SDKs' clients once refused."""


# id: (return annotation, the value returned, the listed schema of the value, its JSON)
SHAPES: dict[str, tuple[Any, Any, dict[str, Any], Any]] = {
    "naive datetime": (
        datetime,
        datetime(2026, 1, 1, 8),
        {"type": "string"},
        "2026-01-01T08:00:00",
    ),
    "aware value of a datetime": (
        datetime,
        datetime(2026, 1, 1, 8, tzinfo=UTC),
        {"type": "string"},
        "2026-01-01T08:00:00Z",
    ),
    "AwareDatetime keeps its format": (
        AwareDatetime,
        datetime(2026, 1, 1, 8, tzinfo=UTC),
        {"type": "string", "format": "date-time"},
        "2026-01-01T08:00:00Z",
    ),
    "naive time": (time, time(9, 30), {"type": "string"}, "09:30:00"),
    "date keeps its format": (
        date,
        date(2026, 1, 1),
        {"type": "string", "format": "date"},
        "2026-01-01",
    ),
    "negative timedelta": (timedelta, timedelta(minutes=-2), {"type": "string"}, "-PT2M"),
    "timedelta never negative keeps its format": (
        Annotated[timedelta, Field(ge=timedelta(0))],
        timedelta(minutes=2),
        {"type": "string", "format": "duration"},
        "PT2M",
    ),
}


def _strict(schema: dict[str, Any]) -> Draft202012Validator:
    """A validator asserting formats, as the TypeScript SDK's client does."""
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _listed_schema(annotation: Any, value: Any) -> tuple[dict[str, Any], Any]:
    mcp = MCPServer("shapes")

    def shape() -> None:
        return value

    shape.__annotations__["return"] = annotation
    mcp.tool()(shape)
    definition = mcp._registry.tools["shape"]  # pyright: ignore[reportPrivateUsage]
    schema = definition.definition.output_schema
    assert schema is not None
    return schema, definition.to_result(value)


@pytest.mark.parametrize(("annotation", "value", "described", "sent"), SHAPES.values(), ids=SHAPES)
def test_the_listed_schema_describes_the_value_sent(
    annotation: Any, value: Any, described: dict[str, Any], sent: Any
) -> None:
    schema, result = _listed_schema(annotation, value)
    assert schema["properties"]["result"] == described
    assert result["structuredContent"] == {"result": sent}
    assert schema_errors(_strict(schema), result["structuredContent"]) == []


def _served(tool: str) -> tuple[dict[str, Any], Any]:
    """The listed schema of one of ``STRUCTURED``'s tools, and the result it sends."""
    registered = STRUCTURED._registry.tools[tool]  # pyright: ignore[reportPrivateUsage]
    schema = registered.definition.output_schema
    assert schema is not None
    return schema, registered.to_result(registered.function())


def test_a_naive_datetime_inside_a_model_is_described_without_its_format() -> None:
    schema, result = _served("departures")
    assert schema["$defs"]["Departure"]["properties"]["leaves"] == {
        "title": "Leaves",
        "type": "string",
    }
    assert schema_errors(_strict(schema), result["structuredContent"]) == []


def test_a_computed_field_is_described_where_extra_fields_are_forbidden() -> None:
    schema, result = _served("fare")
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["adults", "total"]
    assert result["structuredContent"] == {"adults": 2, "total": 180}
    assert schema_errors(_strict(schema), result["structuredContent"]) == []


def test_a_field_serializer_is_described_by_what_it_returns() -> None:
    schema, result = _served("stamped")
    assert schema["properties"]["at"] == {"title": "At", "type": "integer"}
    assert result["structuredContent"] == {"at": 1767225600}


async def test_answerbacks_client_checks_such_content_without_complaint(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with Client(STRUCTURED) as client:
        await client.list_all_tools()  # so the client checks the results
        listed = await client.call_tool("departures", {})
        priced = await client.call_tool("fare", {})
    assert listed.structured_content == {
        "result": [{"train": "Bergensbanen", "leaves": "2026-12-06T08:25:00"}]
    }
    assert priced.structured_content == {"adults": 2, "total": 180}
    assert not [record for record in caplog.records if record.levelname == "WARNING"]


class Name(BaseModel):
    name: Annotated[str, Field(pattern=r"^\p{Lu}\p{Ll}+$")]


async def test_a_unicode_property_pattern_is_checked_not_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """JSON Schema's patterns are ECMA-262, where ``\\p{Lu}`` is a capital letter; pydantic
    and zod write such patterns. Python's ``re`` refuses them, and the client once called
    such a schema unusable and left the content unchecked."""
    mcp = MCPServer("names")

    @mcp.tool()
    def named(name: str) -> Name | CallToolResult:
        return CallToolResult(content=[TextContent(text=name)], structured_content={"name": name})

    async with Client(mcp) as client:
        await client.list_all_tools()
        good = await client.call_tool("named", {"name": "Ørjan"})
        bad = await client.call_tool("named", {"name": "ørjan"})
    assert good.structured_content == {"name": "Ørjan"}
    assert bad.is_error  # the server checks what its tool built, with the same checker
    assert bad.content == [
        TextContent(
            text="Tool 'named' returned structured_content that does not fit its output "
            "schema (structured_content.name: 'ørjan' does not match '^\\\\p{Lu}\\\\p{Ll}+$'): "
            "return structured_content that fits the schema of its return annotation, or "
            "is_error=True for a failure."
        )
    ]
    assert not [r for r in caplog.records if "cannot use" in r.getMessage()]


def test_a_pattern_that_is_not_ecma_262_still_makes_the_schema_unusable() -> None:
    """``(?i)`` is Python's, not ECMA-262's (which has no inline flags): checking with it
    would fail every value, so the schema is refused, as before. ``[^]`` (any character,
    in ECMA-262) is now run as ECMA-262 means it (tests/test_ecma_patterns.py)."""
    with pytest.raises(SchemaError, match=r"'\(\?i\)a' is not a 'regex'"):
        compile_schema({"type": "string", "pattern": "(?i)a"})
