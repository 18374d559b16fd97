"""Prompts: a return annotation no prompt can return is refused when the prompt is
registered, and a ``Literal`` of plain ``Enum`` members is filled from the text of a
member's value, as its argument's description lists it."""

from __future__ import annotations

import collections.abc
from collections.abc import Awaitable, Sequence
from enum import Enum, IntEnum, StrEnum
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from answerback import Client, MCPError
from answerback.server import MCPServer
from answerback.types import (
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    PromptMessage,
    TextContent,
    TextResourceContents,
)

pytestmark = pytest.mark.anyio

ADVICE = (
    "which no prompt can return; return str, PromptMessage, a message dict, content "
    "blocks, a list of these, or GetPromptResult (or leave the return unannotated)"
)


class Book(BaseModel):
    title: str


def returning(value: Any, annotation: Any) -> Any:
    """A prompt function returning ``value``, annotated to return ``annotation``."""

    def prompt() -> Any:
        return value

    prompt.__annotations__["return"] = annotation
    return prompt


def awaitable_of(value: Any, annotation: Any) -> Any:
    """A prompt function whose value is awaited once more (``call`` awaits what it
    returns), annotated ``Awaitable[annotation]``."""

    async def later() -> Any:
        return value

    async def prompt() -> Any:
        return later()

    prompt.__annotations__["return"] = Awaitable[annotation]
    return prompt


TEXT = TextContent(text="Hello")
MESSAGE = PromptMessage(role="assistant", content=TEXT)
WORKING = [
    ("Hello", str),
    ("Hello", str | None),
    ("Hello", str | int),
    ("Hello", Any),
    ("Hello", object),
    ("Hello", Literal["Hello", "Bye"]),
    (MESSAGE, PromptMessage),
    ({"role": "user", "content": "Hello"}, dict[str, Any]),
    ({"role": "user", "content": "Hello"}, collections.abc.Mapping[str, str]),
    (TEXT, TextContent),
    (TEXT, TextContent | ImageContent | EmbeddedResource),
    (["Hello", MESSAGE, TEXT], list[str | PromptMessage | TextContent]),
    (["Hello"], list[Any]),
    (["Hello"], list),
    (("Hello", MESSAGE), tuple[str, PromptMessage]),
    (["Hello"], Sequence[str]),
    (["Hello"], collections.abc.Iterable[str]),
    (["Hello"], BaseModel | list[str]),
    (GetPromptResult(messages=[MESSAGE]), GetPromptResult),
    (MESSAGE, BaseModel),
]


@pytest.mark.parametrize(("value", "annotation"), WORKING, ids=lambda each: repr(each)[:40])
@pytest.mark.parametrize("make", [returning, awaitable_of], ids=["value", "awaitable"])
async def test_every_annotation_a_prompt_can_return_still_registers_and_works(
    make: Any, value: Any, annotation: Any
) -> None:
    server = MCPServer("Prompts")
    server.prompt(name="greet")(make(value, annotation))
    async with Client(server, mode="legacy") as client:
        result = await client.get_prompt("greet")
    assert result.messages


async def test_an_unannotated_prompt_still_works() -> None:
    server = MCPServer("Prompts")

    @server.prompt()
    def greet():  # type: ignore[no-untyped-def]
        return "Hello"

    async with Client(server, mode="legacy") as client:
        result = await client.get_prompt("greet")
    assert result.messages == [PromptMessage(role="user", content=TextContent(text="Hello"))]


@pytest.mark.parametrize(
    ("annotation", "shown"),
    [
        (int, "int"),
        (int | None, "int | None"),
        (None, "None"),
        (list[int], "list[int]"),
        (list[list[str]], "list[list[str]]"),
        (Book, "Book"),
        (set[str], "set[str]"),
        (bytes, "bytes"),
        (Literal[1, 2], "typing.Literal[1, 2]"),
        (Awaitable[int], "collections.abc.Awaitable[int]"),
    ],
    ids=repr,
)
def test_a_return_annotation_no_prompt_can_return_is_refused_at_registration(
    annotation: Any, shown: str
) -> None:
    server = MCPServer("Prompts")
    with pytest.raises(TypeError) as refused:
        server.prompt(name="count")(returning(3, annotation))
    assert str(refused.value) == f"prompt 'count' is annotated to return {shown}, {ADVICE}"


class Color(Enum):
    RED = "red"
    BLUE = "blue"


class Size(Enum):
    SMALL = 1
    LARGE = 2


class Tone(StrEnum):
    WARM = "warm"
    COOL = "cool"


class Level(IntEnum):
    LOW = 1
    HIGH = 2


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_literal_of_plain_enum_members_is_filled_by_their_values(mode: str) -> None:
    server = MCPServer("Choices")

    @server.prompt()
    def paint(
        color: Literal[Color.RED, Color.BLUE],
        size: Literal[Size.SMALL, Size.LARGE] | None = None,
        tone: Literal[Tone.WARM] = Tone.WARM,
    ) -> str:
        return f"{color!r} {size!r} {tone!r}"

    async with Client(server, mode=mode) as client:
        (prompt,) = (await client.list_prompts()).prompts
        filled = await client.get_prompt("paint", {"color": "blue", "size": "2", "tone": "warm"})
        defaults = await client.get_prompt("paint", {"color": "red"})
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("paint", {"color": "green"})
    assert [arg.description for arg in prompt.arguments or []] == [
        "One of: red, blue.",
        "One of: 1, 2.",
        "One of: warm.",
    ]
    assert [message.content for message in filled.messages] == [
        TextContent(text="<Color.BLUE: 'blue'> <Size.LARGE: 2> <Tone.WARM: 'warm'>")
    ]
    assert [message.content for message in defaults.messages] == [
        TextContent(text="<Color.RED: 'red'> None <Tone.WARM: 'warm'>")
    ]
    assert "'color' = 'green'" in str(refused.value)


async def test_a_prompt_returning_an_embedded_resource_list_is_unchanged() -> None:
    server = MCPServer("Prompts")
    block = EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="a"))

    @server.prompt()
    def attach() -> list[EmbeddedResource | str]:
        return [block, "Summarise it."]

    async with Client(server, mode="legacy") as client:
        result = await client.get_prompt("attach")
    assert [message.content for message in result.messages] == [
        block,
        TextContent(text="Summarise it."),
    ]


async def test_a_literal_of_numbers_or_int_enum_members_is_filled_by_their_text() -> None:
    server = MCPServer("Choices")

    @server.prompt()
    def rate(stars: Literal[1, 2, 3], level: Literal[Level.LOW, Level.HIGH] = Level.LOW) -> str:
        return f"{stars!r} {level!r}"

    async with Client(server, mode="legacy") as client:
        filled = await client.get_prompt("rate", {"stars": "3", "level": "2"})
        with pytest.raises(MCPError) as refused:
            await client.get_prompt("rate", {"stars": "4"})
    assert [message.content for message in filled.messages] == [
        TextContent(text="3 <Level.HIGH: 2>")
    ]
    assert "'stars' = '4'" in str(refused.value)
