"""Arguments a tool or prompt has no parameter for are refused, naming the ones it has.

A misspelt optional argument (``limt`` for ``limit``) used to be dropped without a word,
so the call ran with the default and its caller got a wrong answer instead of an error
it could correct. Also here: a ``Literal`` or ``Enum`` prompt argument lists its values
in its description, for a host to show beside the field.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import Field

from answerback import Client, MCPError, StdioServer
from answerback.server import Context, MCPServer
from answerback.types import INVALID_PARAMS

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
SERVER = Path(__file__).parent / "servers" / "misspelt_server.py"
SEARCH_ADVICE = "Its arguments are 'query' (required), 'limit'."


def make_server() -> MCPServer:
    server = MCPServer("Names")

    @server.tool()
    def search(query: str, limit: int = 10) -> str:
        return f"{query} limit={limit}"

    @server.tool()
    def nothing() -> str:
        return "done"

    @server.tool()
    async def whoami(ctx: Context) -> str:
        return type(ctx).__name__

    return server


@pytest.mark.parametrize("mode", ERAS)
async def test_a_misspelt_argument_is_an_error_naming_the_arguments(mode: str) -> None:
    async with Client(make_server(), mode=mode) as client:
        result = await client.call_tool("search", {"query": "q", "limt": 2})
    assert result.is_error
    assert result.text == (
        f"Invalid arguments for tool 'search': unknown argument 'limt'. {SEARCH_ADVICE}"
    )


@pytest.mark.parametrize("mode", ERAS)
async def test_unknown_and_invalid_arguments_are_named_together(mode: str) -> None:
    async with Client(make_server(), mode=mode) as client:
        result = await client.call_tool("search", {"query": 3, "limt": 2, "sort": "asc"})
    assert result.is_error
    assert result.text == (
        "Invalid arguments for tool 'search': unknown arguments 'limt', 'sort'; "
        f"query: Input should be a valid string. {SEARCH_ADVICE}"
    )


async def test_a_tool_without_parameters_says_so() -> None:
    async with Client(make_server(), mode="legacy") as client:
        result = await client.call_tool("nothing", {"verbose": True})
    assert result.text == (
        "Invalid arguments for tool 'nothing': unknown argument 'verbose'. It takes no arguments."
    )


async def test_the_context_parameter_is_no_argument() -> None:
    """The parameter the server fills is no input: a client sending it is refused
    rather than overriding it."""
    async with Client(make_server(), mode="legacy") as client:
        result = await client.call_tool("whoami", {"ctx": "me"})
    assert result.text == (
        "Invalid arguments for tool 'whoami': unknown argument 'ctx'. It takes no arguments."
    )


async def test_a_wrong_type_alone_reads_as_before() -> None:
    async with Client(make_server(), mode="legacy") as client:
        result = await client.call_tool("search", {"query": "q", "limit": "many"})
    assert result.text == (
        "Invalid arguments for tool 'search': limit: Input should be a valid integer, "
        "unable to parse string as an integer"
    )


async def test_the_input_schema_refuses_other_properties() -> None:
    """Advertised too, so a model (or a client checking arguments) knows before it calls."""
    async with Client(make_server(), mode="legacy") as client:
        tools = {tool.name: tool for tool in await client.list_all_tools()}
    assert tools["search"].input_schema == {
        "type": "object",
        "properties": {
            "query": {"title": "Query", "type": "string"},
            "limit": {"default": 10, "title": "Limit", "type": "integer"},
        },
        "required": ["query"],
        "additionalProperties": False,
    }
    assert tools["nothing"].input_schema == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }


@pytest.mark.parametrize("mode", ERAS)
async def test_over_stdio_the_client_sees_the_error(mode: str) -> None:
    async with Client(StdioServer(sys.executable, [str(SERVER)]), mode=mode) as client:
        tool = await client.call_tool("search", {"query": "q", "limt": 2})
        with pytest.raises(MCPError) as raised:
            await client.get_prompt("review", {"topic": "cats", "tnoe": "detailed"})
        fine = await client.call_tool("search", {"query": "q", "limit": 2})
    assert tool.is_error
    assert tool.text == (
        f"Invalid arguments for tool 'search': unknown argument 'limt'. {SEARCH_ADVICE}"
    )
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message == (
        "Prompt 'review': unknown argument 'tnoe'. Its arguments are 'topic' (required), 'tone'."
    )
    assert not fine.is_error
    assert fine.text == "q limit=2"


class Depth(Enum):
    SHALLOW = "shallow"
    DEEP = "deep"


def make_prompt_server() -> MCPServer:
    server = MCPServer("Prompts")

    @server.prompt()
    def review(
        topic: Annotated[str, Field(description="What to review")],
        tone: Literal["brief", "detailed"] = "brief",
        depth: Annotated[Depth | None, Field(description="How far to dig")] = None,
        strict: Annotated[Literal[True, False], Field(description="Be strict?")] = False,
    ) -> str:
        return f"Review {topic}, {tone}, {depth}, {strict}."

    return server


@pytest.mark.parametrize("mode", ERAS)
async def test_a_misspelt_prompt_argument_is_invalid_params(mode: str) -> None:
    async with Client(make_prompt_server(), mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.get_prompt("review", {"tnoe": "brief"})
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message == (
        "Prompt 'review' needs the argument(s) ['topic']; unknown argument 'tnoe'. "
        "Its arguments are 'topic' (required), 'tone', 'depth', 'strict'."
    )


async def test_a_missing_argument_alone_reads_as_before() -> None:
    async with Client(make_prompt_server(), mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.get_prompt("review", {"tone": "brief"})
    assert raised.value.message == "Prompt 'review' needs the argument(s) ['topic']."


async def test_choice_arguments_list_their_values() -> None:
    async with Client(make_prompt_server(), mode="legacy") as client:
        (prompt,) = (await client.list_prompts()).prompts
    assert prompt.arguments is not None
    described: dict[str, Any] = {arg.name: arg.description for arg in prompt.arguments}
    assert described == {
        "topic": "What to review",
        "tone": "One of: brief, detailed.",
        "depth": "How far to dig. One of: shallow, deep.",
        "strict": "Be strict? One of: true, false.",
    }


def aliased_server() -> MCPServer:
    server = MCPServer("Aliases")

    @server.tool()
    def move(from_: Annotated[str, Field(alias="from")], count: int = 1) -> str:
        return f"{from_} x{count}"

    @server.prompt()
    def route(from_: Annotated[str, Field(alias="from")], via: str = "") -> str:
        return f"From {from_} via {via}."

    return server


@pytest.mark.parametrize("mode", ERAS)
async def test_an_aliased_argument_is_named_as_the_client_sends_it(mode: str) -> None:
    """The schema advertises ``from``: sent beside a misspelt neighbour, it is not called
    unknown, and the advice names it ``from``, never ``from_`` (which is refused)."""
    async with Client(aliased_server(), mode=mode) as client:
        result = await client.call_tool("move", {"from": "x", "cuont": 2})
    assert result.is_error
    assert result.text == (
        "Invalid arguments for tool 'move': unknown argument 'cuont'. "
        "Its arguments are 'from' (required), 'count'."
    )


@pytest.mark.parametrize("mode", ERAS)
async def test_the_python_name_of_an_aliased_argument_is_unknown(mode: str) -> None:
    async with Client(aliased_server(), mode=mode) as client:
        result = await client.call_tool("move", {"from_": "x"})
    assert result.is_error
    assert result.text == (
        "Invalid arguments for tool 'move': unknown argument 'from_'; from: Field required. "
        "Its arguments are 'from' (required), 'count'."
    )


@pytest.mark.parametrize("mode", ERAS)
async def test_an_aliased_prompt_argument_is_listed_and_taken_by_its_alias(mode: str) -> None:
    async with Client(aliased_server(), mode=mode) as client:
        (prompt,) = (await client.list_prompts()).prompts
        rendered = await client.get_prompt("route", {"from": "Paris", "via": "Lyon"})
        with pytest.raises(MCPError) as raised:
            await client.get_prompt("route", {"from_": "Paris"})
    assert [(arg.name, arg.required) for arg in prompt.arguments or []] == [
        ("from", True),
        ("via", False),
    ]
    assert rendered.messages[0].content.text == "From Paris via Lyon."  # type: ignore[union-attr]
    assert raised.value.code == INVALID_PARAMS
    assert raised.value.message == (
        "Prompt 'route' needs the argument(s) ['from']; unknown argument 'from_'. "
        "Its arguments are 'from' (required), 'via'."
    )


OPEN_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}, "trace_id": {"type": "string"}},
    "required": ["query"],
}


def hand_written_server() -> MCPServer:
    server = MCPServer("Hand-written")

    @server.tool(input_schema=OPEN_SCHEMA)
    def search(query: str) -> str:
        return f"found {query}"

    @server.tool(input_schema={**OPEN_SCHEMA, "additionalProperties": False})
    def strict(query: str) -> str:
        return f"found {query}"

    return server


@pytest.mark.parametrize("mode", ERAS)
async def test_a_hand_written_schema_that_allows_other_keys_is_the_contract(mode: str) -> None:
    """A key the advertised schema allows is never refused: one the function does not
    take is dropped, as before; ``additionalProperties: false`` refuses unknown keys."""
    async with Client(hand_written_server(), mode=mode) as client:
        allowed = await client.call_tool("search", {"query": "q", "trace_id": "t1"})
        other = await client.call_tool("search", {"query": "q", "colour": "red"})
        refused = await client.call_tool("strict", {"query": "q", "trace_id": "t1"})
    assert (allowed.is_error, allowed.text) == (False, "found q")
    assert (other.is_error, other.text) == (False, "found q")
    assert refused.is_error
    assert refused.text == (
        "Invalid arguments for tool 'strict': unknown argument 'trace_id'. "
        "Its arguments are 'query' (required)."
    )


class Speed(Enum):
    FAST = "fast"
    SLOW = "slow"


async def test_a_literal_of_enum_members_or_values_without_json_describes_them() -> None:
    """``Literal[Speed.FAST]`` is listed by the member's value, a value ``json.dumps``
    refuses (``bytes``) by its ``str()``: registering never fails on a description."""
    server = MCPServer("Choices")

    @server.prompt()
    def pick(speed: Literal[Speed.FAST, Speed.SLOW], raw: Literal[b"x", 2] = 2) -> str:
        return f"{speed} {raw!r}"

    async with Client(server, mode="legacy") as client:
        (prompt,) = (await client.list_prompts()).prompts
    assert [arg.description for arg in prompt.arguments or []] == [
        "One of: fast, slow.",
        "One of: b'x', 2.",
    ]
