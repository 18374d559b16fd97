"""A tool returning a ``dict`` sends it as its structured content, unwrapped.

Structured content is a JSON object, and a ``dict`` is written as one whatever its keys
(pydantic writes every key as a string), so ``-> dict[str, X]`` declares the schema of
that object (``additionalProperties``: X's schema) and sends the dict itself, as the
official SDK does (which still wraps ``dict[int, X]``: here its keys go out as the
strings JSON has, as they would inside a wrapper). What may be something else (a list,
a scalar, ``None``) is still wrapped as ``{"result": value}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from answerback import Client
from answerback.server import MCPServer

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]


class Seat(BaseModel):
    row: int
    taken: bool


def mapping_server() -> MCPServer:
    mcp = MCPServer("Mappings")

    @mcp.tool()
    def seats() -> dict[str, Seat]:
        return {"12A": Seat(row=12, taken=True), "12B": Seat(row=12, taken=False)}

    @mcp.tool()
    def counts() -> dict[str, int]:
        return {"tea": 2, "coffee": 0}

    @mcp.tool()
    def anything() -> dict[str, Any]:
        return {"nested": {"ok": [1, None]}}

    @mcp.tool()
    def bare() -> dict:  # pyright: ignore[reportMissingTypeArgument, reportUnknownParameterType]
        return {"a": 1}  # pyright: ignore[reportUnknownVariableType]

    @mcp.tool()
    def read_only() -> Mapping[str, int]:
        return {"x": 1}

    @mcp.tool()
    def by_number() -> dict[int, str]:
        return {1: "one", 2: "two"}

    @mcp.tool()
    def maybe() -> dict[str, int] | None:
        return None

    @mcp.tool()
    def either() -> dict[str, int] | list[int]:
        return [1, 2]

    @mcp.tool()
    def several() -> list[dict[str, int]]:
        return [{"a": 1}]

    return mcp


SEAT = {
    "properties": {
        "row": {"title": "Row", "type": "integer"},
        "taken": {"title": "Taken", "type": "boolean"},
    },
    "required": ["row", "taken"],
    "title": "Seat",
    "type": "object",
}

# tool: (output schema, structured content)
SENT: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "seats": (
        {
            "type": "object",
            "additionalProperties": {"$ref": "#/$defs/Seat"},
            "$defs": {"Seat": SEAT},
        },
        {"12A": {"row": 12, "taken": True}, "12B": {"row": 12, "taken": False}},
    ),
    "counts": (
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"tea": 2, "coffee": 0},
    ),
    "anything": (
        {"type": "object", "additionalProperties": True},
        {"nested": {"ok": [1, None]}},
    ),
    "bare": ({"type": "object", "additionalProperties": True}, {"a": 1}),
    "read_only": ({"type": "object", "additionalProperties": {"type": "integer"}}, {"x": 1}),
    "by_number": (
        {"type": "object", "additionalProperties": {"type": "string"}},
        {"1": "one", "2": "two"},
    ),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("tool", list(SENT))
async def test_a_dict_is_the_structured_content_itself(tool: str, mode: str) -> None:
    schema, content = SENT[tool]
    async with Client(mapping_server(), mode=mode) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool(tool)
    assert listed[tool].output_schema == schema
    assert result.is_error is False
    assert result.structured_content == content


@pytest.mark.parametrize(
    ("tool", "inner", "content"),
    [
        (
            "maybe",
            {
                "anyOf": [
                    {"additionalProperties": {"type": "integer"}, "type": "object"},
                    {"type": "null"},
                ]
            },
            None,
        ),
        (
            "either",
            {
                "anyOf": [
                    {"additionalProperties": {"type": "integer"}, "type": "object"},
                    {"items": {"type": "integer"}, "type": "array"},
                ]
            },
            [1, 2],
        ),
        (
            "several",
            {
                "items": {"additionalProperties": {"type": "integer"}, "type": "object"},
                "type": "array",
            },
            [{"a": 1}],
        ),
    ],
    ids=["optional-dict", "dict-or-list", "list-of-dicts"],
)
async def test_what_may_not_be_an_object_is_still_wrapped(
    tool: str, inner: dict[str, Any], content: object
) -> None:
    async with Client(mapping_server()) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool(tool)
    assert listed[tool].output_schema == {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
        "x-fastmcp-wrap-result": True,
    }
    assert result.structured_content == {"result": content}


async def test_a_dict_that_breaks_its_annotation_is_an_error_result() -> None:
    """Unwrapped or not, the value is checked against the annotation before it is sent."""
    mcp = MCPServer("Mappings")

    @mcp.tool()
    def counts() -> dict[str, int]:
        return {"tea": "two"}  # type: ignore[dict-item]

    async with Client(mcp) as client:
        result = await client.call_tool("counts")
    assert result.is_error is True
    assert result.structured_content is None
