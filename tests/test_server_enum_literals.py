"""A tool argument or a resource template placeholder annotated with a ``Literal`` of
plain ``Enum`` members (``Literal[Color.RED]``, ``RED = "red"``) takes the value its
schema lists, ``"red"``, and the function receives the member; a value not listed is
refused as before. (Prompt arguments: tests/test_server_prompt_checks.py.)"""

from __future__ import annotations

from enum import Enum
from typing import Literal

import pytest

from answerback import Client, MCPError
from answerback.server import MCPServer

pytestmark = pytest.mark.anyio


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Size(Enum):
    SMALL = 1
    LARGE = 2


def painting_server() -> MCPServer:
    server = MCPServer("Paint")

    @server.tool()
    def paint(
        color: Literal[Color.RED, Color.BLUE], size: Literal[Size.SMALL, Size.LARGE] | None = None
    ) -> str:
        return f"{color!r} {size!r}"

    @server.resource("paint://{color}/{size}")
    def swatch(color: Literal[Color.RED, Color.BLUE], size: Literal[Size.SMALL, Size.LARGE]) -> str:
        return f"{color!r} {size!r}"

    return server


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_tool_takes_the_values_its_schema_lists(mode: str) -> None:
    async with Client(painting_server(), mode=mode) as client:
        (tool,) = (await client.list_tools()).tools
        filled = await client.call_tool("paint", {"color": "blue", "size": 2})
        refused = await client.call_tool("paint", {"color": "green"})
        not_a_size = await client.call_tool("paint", {"color": "red", "size": True})
    properties = tool.input_schema["properties"]
    assert properties["color"]["enum"] == ["red", "blue"]
    assert (filled.is_error, filled.text) == (False, "<Color.BLUE: 'blue'> <Size.LARGE: 2>")
    assert refused.is_error
    assert "color: Input should be <Color.RED: 'red'> or <Color.BLUE: 'blue'>" in refused.text
    assert not_a_size.is_error  # true is no size, though it equals the value 1


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_resource_template_takes_the_values_as_text(mode: str) -> None:
    async with Client(painting_server(), mode=mode) as client:
        read = await client.read_resource("paint://red/1")
        with pytest.raises(MCPError) as refused:
            await client.read_resource("paint://green/1")
    assert [getattr(content, "text", None) for content in read.contents] == [
        "<Color.RED: 'red'> <Size.SMALL: 1>"
    ]
    assert "gives the template's 'color' the value 'green'" in str(refused.value)
