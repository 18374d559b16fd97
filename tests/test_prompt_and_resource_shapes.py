"""Prompts and resources take the values their functions declare, and say clearly when
they cannot.

Prompt arguments are strings on the wire: each is converted to its parameter's
annotation (``"3"`` to ``3``, ``"false"`` to ``False``, an ``Enum`` by its value, a
model or list from JSON text), and one that does not convert is -32602 naming the
argument; before, the function received the raw text (``"false"`` for a ``bool``, which
is true). A parameter no text can become is refused at registration, naming it, and a
listed argument carries the ``Field(description=...)`` of its annotation.

A resource template's values are percent-decoded before conversion, as the URI
template's expansion encoded them. A parameter no URI text can become is refused at
registration with a ``TypeError`` naming it (it was pydantic's own error, or, for a
callable, accepted and refused at every read). A resource value JSON cannot hold is an
internal error naming the resource, not pydantic's serialisation error.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

from answerback import Client, MCPError
from answerback.server import MCPServer
from answerback.types import TextContent, TextResourceContents

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]


class Tone(enum.Enum):
    WARM = "warm"
    DRY = "dry"


class Outline(BaseModel):
    points: int


class Shelf:
    """A class of the server's own, which pydantic cannot build from text."""


def prompt_server() -> MCPServer:
    mcp = MCPServer("Shapes")

    @mcp.prompt()
    def typed(
        count: int,
        loud: bool,
        tone: Tone,
        length: Literal["short", "long"],
        outline: Outline,
        tags: list[str],
        topic: Annotated[str, Field(description="What to write about")],
        limit: int | None = None,
    ) -> str:
        return repr((count, loud, tone, length, outline, tags, topic, limit))

    @mcp.prompt()
    def listing(items: list[Any]) -> list[Any]:
        return items

    return mcp


@pytest.mark.parametrize("mode", MODES)
async def test_prompt_arguments_are_converted_to_their_annotations(mode: str) -> None:
    arguments = {
        "count": "3",
        "loud": "false",
        "tone": "dry",
        "length": "short",
        "outline": '{"points": 2}',
        "tags": '["a", "b"]',
        "topic": "tea",
    }
    async with Client(prompt_server(), mode=mode) as client:
        result = await client.get_prompt("typed", arguments)
    expected = (3, False, Tone.DRY, "short", Outline(points=2), ["a", "b"], "tea", None)
    assert result.messages[0].content == TextContent(text=repr(expected))


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("argument", "value", "problem"),
    [
        ("count", "three", "Input should be a valid integer, unable to parse string as an integer"),
        ("loud", "maybe", "Input should be a valid boolean, unable to interpret input"),
        ("tone", "sweet", "Input should be 'warm' or 'dry'"),
        ("length", "epic", "Input should be 'short' or 'long'"),
        ("outline", "two points", "Input should be a valid dictionary or instance of Outline"),
    ],
)
async def test_a_prompt_argument_that_does_not_convert_is_invalid_params(
    mode: str, argument: str, value: str, problem: str
) -> None:
    arguments = {
        "count": "3",
        "loud": "true",
        "tone": "warm",
        "length": "long",
        "outline": '{"points": 1}',
        "tags": "[]",
        "topic": "tea",
        argument: value,
    }
    async with Client(prompt_server(), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("typed", arguments)
    assert caught.value.code == -32602
    assert caught.value.message == (
        f"Invalid params: prompt 'typed' cannot use the argument {argument!r} = {value!r}: "
        f"{problem}."
    )


async def test_a_problem_inside_a_json_argument_says_where() -> None:
    arguments = {
        "count": "3",
        "loud": "true",
        "tone": "warm",
        "length": "long",
        "outline": '{"points": "many"}',
        "tags": "[]",
        "topic": "tea",
    }
    async with Client(prompt_server()) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("typed", arguments)
    assert caught.value.message == (
        "Invalid params: prompt 'typed' cannot use the argument 'outline' = "
        '\'{"points": "many"}\' (at points): Input should be a valid integer, unable to '
        "parse string as an integer."
    )


async def test_listed_prompt_arguments_carry_required_flags_and_descriptions() -> None:
    async with Client(prompt_server()) as client:
        [typed, _] = (await client.list_prompts()).prompts
    assert [(a.name, a.required, a.description) for a in typed.arguments or []] == [
        ("count", True, None),
        ("loud", True, None),
        ("tone", True, "One of: warm, dry."),
        ("length", True, "One of: short, long."),
        ("outline", True, None),
        ("tags", True, None),
        ("topic", True, "What to write about"),
        ("limit", False, None),
    ]


async def test_a_field_default_is_the_value_not_the_field() -> None:
    mcp = MCPServer("Shapes")

    @mcp.prompt()
    def greet(name: str = Field("friend", description="Who to greet")) -> str:
        return f"Hello, {name}"

    async with Client(mcp) as client:
        [prompt] = (await client.list_prompts()).prompts
        result = await client.get_prompt("greet")
    assert [(a.name, a.required, a.description) for a in prompt.arguments or []] == [
        ("name", False, "Who to greet")
    ]
    assert result.messages[0].content == TextContent(text="Hello, friend")


@pytest.mark.parametrize(
    ("annotation", "shown"),
    [(Shelf, "shelf (Shelf)"), (Callable[[], int], "shelf (collections.abc.Callable[[], int])")],
    ids=["own-class", "callable"],
)
def test_a_prompt_parameter_no_text_can_become_is_refused_at_registration(
    annotation: Any, shown: str
) -> None:
    mcp = MCPServer("Shapes")

    def stack(shelf: Any, title: str) -> str:
        return title

    stack.__annotations__["shelf"] = annotation
    with pytest.raises(TypeError) as caught:
        mcp.prompt()(stack)
    assert str(caught.value) == (
        f"prompt 'stack': a client cannot send {shown} as a prompt argument, which is a "
        "string; annotate each with str, or a type read from text (int, float, bool, an "
        "Enum, a Literal, a pydantic model or a list read from JSON text)"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_prompt_item_of_the_wrong_kind_is_named_with_its_place(mode: str) -> None:
    async with Client(prompt_server(), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("listing", {"items": '["fine", null]'})
    assert caught.value.code == -32603
    assert caught.value.message == (
        "Internal error: TypeError: prompt 'listing' returned a list whose item 1 is None; "
        "return str, PromptMessage, a message dict, content blocks, a list of these, or "
        "GetPromptResult"
    )


def resource_server() -> MCPServer:
    mcp = MCPServer("Shapes")

    @mcp.resource("users://{user_id}/notes/{title}")
    def notes(user_id: int, title: str) -> str:
        return f"{user_id!r} {title!r}"

    @mcp.resource("files://{+path}")
    def files(path: str) -> str:
        return path

    @mcp.resource("shelves://main")
    def shelf() -> Any:
        return Shelf()

    return mcp


@pytest.mark.parametrize("mode", MODES)
async def test_template_values_are_percent_decoded(mode: str) -> None:
    async with Client(resource_server(), mode=mode) as client:
        [note] = (await client.read_resource("users://%34%32/notes/J%C3%B6rg%2Fdraft")).contents
        [file] = (await client.read_resource("files://my%20docs/a%2Bb.txt")).contents
    assert note == TextResourceContents(
        uri="users://%34%32/notes/J%C3%B6rg%2Fdraft", mime_type="text/plain", text="42 'Jörg/draft'"
    )
    assert isinstance(file, TextResourceContents)
    assert file.text == "my docs/a+b.txt"


@pytest.mark.parametrize(
    ("annotation", "shown"),
    [(Shelf, "shelf (Shelf)"), (Callable[[], int], "shelf (collections.abc.Callable[[], int])")],
    ids=["own-class", "callable"],
)
def test_a_template_parameter_no_text_can_become_is_refused_at_registration(
    annotation: Any, shown: str
) -> None:
    mcp = MCPServer("Shapes")

    def stack(shelf: Any) -> str:
        return "books"

    stack.__annotations__["shelf"] = annotation
    with pytest.raises(TypeError) as caught:
        mcp.resource("shelves://{shelf}")(stack)
    assert str(caught.value) == (
        f"resource template 'shelves://{{shelf}}': no URI text can become {shown}; "
        "annotate each with str, or a type read from text (int, float, bool, an Enum, a "
        "Literal)"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_a_resource_value_json_cannot_hold_is_named(mode: str) -> None:
    async with Client(resource_server(), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("shelves://main")
    assert caught.value.code == -32603
    assert caught.value.message == (
        "Internal error: TypeError: resource 'shelves://main' returned Shelf, which JSON "
        "cannot hold; return str, bytes, JSON data (a dict, a list, a pydantic model...), "
        "or TextResourceContents / BlobResourceContents"
    )
