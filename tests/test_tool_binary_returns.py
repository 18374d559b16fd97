"""A tool's return value that has no JSON form: never sent as its Python repr unnoticed.

Binary data (``bytes``, ``bytearray``, ``memoryview``) is an error result saying what to
return instead, and a ``-> bytes`` annotation (or any that allows only binary data) is
refused when the tool is registered, since every call would be; ``-> str | bytes`` and
``-> list[bytes]`` are not, since a value of them may be sent. A value of a class of the
author's own is still sent as its ``str()``, as documented, and the author is warned
once per tool and type.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from answerback import Client
from answerback.server import MCPServer
from answerback.types import ImageContent

pytestmark = pytest.mark.anyio

ADVICE = (
    "which a tool result cannot hold: return an ImageContent or AudioContent (the data as "
    "base64), an EmbeddedResource holding a BlobResourceContents, or text"
)


class Picture:
    """A class with no JSON form, like another SDK's image helper."""

    def __str__(self) -> str:
        return "a picture"


class Sound:
    def __str__(self) -> str:
        return "a sound"


def make_server() -> MCPServer:
    server = MCPServer("Returns")

    @server.tool()
    def jpeg():  # type: ignore[no-untyped-def]  # unannotated, as code moved from elsewhere
        return b"\xff\xd8\xff\xe0JFIF"

    @server.tool()
    def ascii_bytes():  # type: ignore[no-untyped-def]
        return b"plain"

    @server.tool()
    def buffer():  # type: ignore[no-untyped-def]
        return bytearray(b"\x00\x01")

    @server.tool()
    def view():  # type: ignore[no-untyped-def]
        return memoryview(b"\x00\x01")

    @server.tool()
    def anything() -> Any:
        return b"plain"

    @server.tool()
    def mixed():  # type: ignore[no-untyped-def]
        return [ImageContent(data="AAAA", mime_type="image/png"), b"\xff"]

    @server.tool()
    def nested():  # type: ignore[no-untyped-def]
        return {"name": "photo.jpg", "data": b"\xff\xd8"}

    @server.tool()
    def picture(kind: str = "picture"):  # type: ignore[no-untyped-def]
        return Picture() if kind == "picture" else Sound()

    @server.tool()
    def album() -> Picture:
        return Picture()

    return server


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize(
    ("tool", "kind"),
    [
        ("jpeg", "bytes"),
        ("ascii_bytes", "bytes"),
        ("buffer", "bytearray"),
        ("view", "memoryview"),
        ("anything", "bytes"),
        ("mixed", "bytes"),
        ("nested", "bytes that are not UTF-8 text, inside a dict"),
    ],
)
async def test_binary_data_is_an_error_saying_what_to_return(
    mode: str, tool: str, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, "answerback.server"):
        async with Client(make_server(), mode=mode) as client:
            result = await client.call_tool(tool)
    assert result.is_error
    assert result.text == f"Tool {tool!r} returned binary data ({kind}), {ADVICE}."
    assert [record.getMessage() for record in caplog.records] == [
        f"tool {tool!r} returned binary data ({kind}), which it cannot send"
    ]


async def test_an_object_with_no_json_form_is_its_str_with_one_warning_per_type(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, "answerback.server"):
        async with Client(make_server(), mode="legacy") as client:
            texts = [
                (await client.call_tool("picture", {"kind": kind})).text
                for kind in ("picture", "picture", "sound", "picture")
            ]
            texts.append((await client.call_tool("album")).text)
    assert texts == ["a picture", "a picture", "a sound", "a picture", "a picture"]
    warned = [record.getMessage() for record in caplog.records]
    assert [message.split(", which")[0] for message in warned] == [
        "tool 'picture' returned a value of type Picture",
        "tool 'picture' returned a value of type Sound",
        "tool 'album' returned a value of type Picture",
    ]
    assert warned[0].endswith(
        "so it is sent as its str(); if the model should read something else, return a "
        "JSON value, a pydantic model, a dataclass or content blocks (said once per type)"
    )


def _declares_bytes() -> bytes:
    return b""


def _declares_optional_buffer() -> bytearray | None:
    return None


def _declares_a_union_of_buffers() -> bytes | memoryview | None:
    return None


def _declares_annotated_bytes() -> Annotated[bytes, Field(description="the file")]:
    return b""


@pytest.mark.parametrize(
    ("function", "shown"),
    [
        (_declares_bytes, "bytes"),
        (_declares_optional_buffer, "bytearray | None"),
        (_declares_a_union_of_buffers, "bytes | memoryview | None"),
        (_declares_annotated_bytes, "typing.Annotated[bytes, FieldInfo("),
    ],
)
@pytest.mark.parametrize("structured_output", [None, False])
def test_a_binary_return_annotation_is_refused_at_registration(
    function: Any, shown: str, structured_output: bool | None
) -> None:
    server = MCPServer("Registration")
    line = function.__code__.co_firstlineno
    with pytest.raises(TypeError) as raised:
        server.tool(structured_output=structured_output)(function)
    message = str(raised.value)
    assert message.startswith(
        f"tool {function.__name__!r} ({Path(__file__).name}, line {line}): its return "
        f"annotation {shown}"
    )
    assert message.endswith(f"allows only binary data, {ADVICE}")


def text_or_binary_server() -> MCPServer:
    server = MCPServer("Maybe binary")

    @server.tool()
    def read(binary: bool = False) -> str | bytes:
        return b"\xff" if binary else "text"

    @server.tool()
    def lines(binary: bool = False) -> list[str] | bytes:
        return b"\xff" if binary else ["a", "b"]

    @server.tool()
    def chunks(utf8: bool = True) -> list[bytes]:
        return [b"abc"] if utf8 else [b"\xff"]

    return server


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_an_annotation_that_may_be_text_registers_and_refuses_only_binary(
    mode: str,
) -> None:
    """A union with something else in (``str | bytes``) is not refused at registration:
    the text it returns is sent as always, the binary data it returns is refused."""
    async with Client(text_or_binary_server(), mode=mode) as client:
        text = await client.call_tool("read")
        lines = await client.call_tool("lines")
        binary = await client.call_tool("read", {"binary": True})
    assert (text.is_error, text.text) == (False, "text")
    assert (lines.is_error, lines.structured_content) == (False, {"result": ["a", "b"]})
    assert binary.is_error
    assert binary.text == f"Tool 'read' returned binary data (bytes), {ADVICE}."


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_bytes_inside_a_list_are_text_when_utf8_as_inside_any_value(mode: str) -> None:
    """``-> list[bytes]`` registers, as a model with a ``bytes`` field does: UTF-8 bytes
    inside a value are sent as text, any others refused when returned."""
    async with Client(text_or_binary_server(), mode=mode) as client:
        utf8 = await client.call_tool("chunks")
        other = await client.call_tool("chunks", {"utf8": False})
    assert (utf8.is_error, utf8.structured_content) == (False, {"result": ["abc"]})
    assert other.is_error
    assert other.text == (
        f"Tool 'chunks' returned a value JSON cannot hold (bytes that are not UTF-8 text): "
        f"{ADVICE.removeprefix('which a tool result cannot hold: ')}."
    )
