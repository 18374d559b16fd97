"""What a tool's returned content becomes: content blocks, with or without structured content.

A tool returning an image the obvious way (``-> list[ContentBlock]``, ``-> list[object]``)
once declared an output schema and sent no structured content, so every client (answerback,
the official SDK, the TypeScript SDK, the Inspector) refused the result. A list mixing blocks
and strings went out as one JSON text whose blocks carried ``"annotations": null``. A tool
that forgot its ``return`` under ``-> str`` got pydantic's message about strings.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Any

import anyio
import pytest
from pydantic import WithJsonSchema
from support import PATIENCE_SECONDS, REPO

from answerback import Client, StdioServer
from answerback.server import MCPServer
from answerback.types import (
    AudioContent,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)

pytestmark = pytest.mark.anyio

IMAGE = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
IMAGE_WIRE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
CAPTION_WIRE = {"type": "text", "text": "caption"}


def _tool(mcp: MCPServer, name: str) -> Any:
    return mcp._registry.tools[name]  # pyright: ignore[reportPrivateUsage]


def test_annotations_that_name_content_declare_no_output_schema() -> None:
    """``ContentBlock`` (whose union holds ``UnknownContent``), a list or union with a block
    in it: content is what the model reads, so no schema makes clients demand more."""
    mcp = MCPServer("Content")

    @mcp.tool()
    def block_list() -> list[ContentBlock]:
        return [IMAGE]

    @mcp.tool()
    def one_block() -> ContentBlock:
        return IMAGE

    @mcp.tool()
    def sequence() -> Sequence[ContentBlock]:
        return [IMAGE]

    @mcp.tool()
    def image_or_nothing() -> ImageContent | None:
        return None

    @mcp.tool()
    def image_and_words() -> list[ImageContent | str]:
        return [IMAGE, "caption"]

    @mcp.tool()
    def result_or_blocks() -> list[ContentBlock] | CallToolResult:
        return [IMAGE]

    for name in (
        "block_list",
        "one_block",
        "sequence",
        "image_or_nothing",
        "image_and_words",
        "result_or_blocks",
    ):
        assert _tool(mcp, name).definition.output_schema is None, name


def _content_server() -> MCPServer:
    mcp = MCPServer("Content")

    @mcp.tool()
    def as_block_list() -> list[ContentBlock]:
        return [IMAGE, TextContent(text="caption")]

    @mcp.tool()
    def as_object_list() -> list[object]:
        return [IMAGE, TextContent(text="caption")]

    @mcp.tool()
    def as_any() -> Any:
        return IMAGE

    return mcp


async def test_content_under_any_annotation_reaches_answerbacks_client() -> None:
    """``-> list[object]`` and ``-> Any`` keep their schema, and the blocks also go into
    the structured content, as written on the wire; answerback's client, which checks
    structured content against the schema, accepts every one."""
    async with Client(_content_server()) as client:
        block_list = await client.call_tool("as_block_list")
        object_list = await client.call_tool("as_object_list")
        single = await client.call_tool("as_any")
    assert [block.type for block in block_list.content] == ["image", "text"]
    assert block_list.structured_content is None
    assert [block.type for block in object_list.content] == ["image", "text"]
    assert object_list.structured_content == {"result": [IMAGE_WIRE, CAPTION_WIRE]}
    assert single.content == [IMAGE]
    assert single.structured_content == {"result": IMAGE_WIRE}


_STDIO_SERVER = """
from answerback.server import MCPServer
from answerback.types import ContentBlock, ImageContent, TextContent

mcp = MCPServer("Content")
IMAGE = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")


@mcp.tool()
def as_block_list() -> list[ContentBlock]:
    return [IMAGE, TextContent(text="caption")]


@mcp.tool()
def as_object_list() -> list[object]:
    return [IMAGE, TextContent(text="caption")]


@mcp.tool()
def mixed() -> list[object]:
    return [IMAGE, "caption"]


mcp.run()
"""
_TOOLS = ("as_block_list", "as_object_list", "mixed")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_answerbacks_client_takes_them_over_stdio(mode: str) -> None:
    server = StdioServer(sys.executable, args=["-c", _STDIO_SERVER], cwd=str(REPO))
    with anyio.fail_after(PATIENCE_SECONDS * 3):
        async with Client(server, mode=mode) as client:
            results = [await client.call_tool(name) for name in _TOOLS]
    for result in results:
        assert not result.is_error
        assert [block.type for block in result.content] == ["image", "text"]


@pytest.mark.interop
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_official_sdk_client_takes_them_over_stdio(mode: str) -> None:
    """The official SDK refused ``as_object_list`` ("has an output schema but did not
    return structured content") and ``as_block_list`` (whose schema held
    ``UnknownContent``); it checks the structured content against the schema too."""
    from mcp import Client as OfficialClient
    from mcp import StdioServerParameters

    server = StdioServerParameters(
        command=sys.executable, args=["-c", _STDIO_SERVER], cwd=str(REPO)
    )
    with anyio.fail_after(PATIENCE_SECONDS * 3):
        async with OfficialClient(server, mode=mode) as client:  # type: ignore[arg-type]
            results = [await client.call_tool(name, {}) for name in _TOOLS]
    for name, result in zip(_TOOLS, results, strict=True):
        assert not result.is_error, name
        assert [block.type for block in result.content] == ["image", "text"], name
    assert results[1].structured_content == {"result": [IMAGE_WIRE, CAPTION_WIRE]}
    assert results[2].structured_content == {"result": [IMAGE_WIRE, "caption"]}


async def test_content_its_annotation_refuses_is_an_error_naming_the_tool() -> None:
    """Content under ``-> str`` or ``-> dict[str, Any]`` once went out without the
    structured content the declared schema requires; now the server says so itself."""
    mcp = MCPServer("Careless")

    @mcp.tool()
    def caption() -> str:
        return IMAGE  # type: ignore[return-value]

    @mcp.tool()
    def gallery() -> dict[str, Any]:
        return [IMAGE]  # type: ignore[return-value]

    async with Client(mcp) as client:
        for name in ("caption", "gallery"):
            result = await client.call_tool(name)
            assert result.is_error
            text = result.content[0]
            assert isinstance(text, TextContent)
            assert text.text.startswith(f"Tool {name!r} returned a value that does not fit")
            assert "change the annotation" in text.text


async def test_structured_content_its_schema_refuses_is_never_sent() -> None:
    """The last check: the structured content built for returned content is checked
    against the schema listed, even where the annotation's values (``object``) and its
    schema (strings, by ``WithJsonSchema``) part ways."""
    mcp = MCPServer("Odd")

    @mcp.tool()
    def pictures() -> list[Annotated[object, WithJsonSchema({"type": "string"})]]:
        return [IMAGE]

    async with Client(mcp) as client:
        result = await client.call_tool("pictures")
    assert result.is_error
    text = result.content[0]
    assert isinstance(text, TextContent)
    assert text.text.startswith(
        "Tool 'pictures' returned structured_content that does not fit its output schema"
    )
    assert "-> list[ContentBlock]" in text.text


def _wire(returns: Any, value: object, *, annotated: bool = True) -> dict[str, Any]:
    """What tool ``shape`` returning ``value`` sends, as the dict written on the wire."""
    mcp = MCPServer("Wire")

    def shape() -> Any:
        return value

    if annotated:
        shape.__annotations__["return"] = returns
    else:
        del shape.__annotations__["return"]
    mcp.tool()(shape)
    return _tool(mcp, "shape").to_result(value)


MIXED: list[object] = [
    IMAGE,
    AudioContent(data="UklGRg==", mime_type="audio/wav"),
    EmbeddedResource(resource=TextResourceContents(uri="notes://a", text="milk")),
    "and a plain string",
    {"n": 1},
    None,
]
MIXED_CONTENT = [
    IMAGE_WIRE,
    {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
    {"type": "resource", "resource": {"uri": "notes://a", "text": "milk"}},
    {"type": "text", "text": "and a plain string"},
    {"type": "text", "text": '{"n": 1}'},
]


def test_a_mixed_list_is_sent_item_by_item() -> None:
    """Each item its own block, as the official SDK sends it: a block as it is, a ``str``
    as text, anything else as its JSON text, ``None`` as nothing; and no block carries a
    ``null`` ``annotations`` or ``_meta`` (the schema wants objects there, or nothing)."""
    plain = _wire(None, MIXED, annotated=False)
    assert plain == {"content": MIXED_CONTENT, "isError": False}
    typed = _wire(list[object], MIXED)
    assert typed["content"] == MIXED_CONTENT
    assert typed["structuredContent"] == {
        "result": [*MIXED_CONTENT[:3], "and a plain string", {"n": 1}, None]
    }


def test_lists_of_plain_values_keep_their_structured_content() -> None:
    assert _wire(list[int], [1, 2]) == {
        "content": [{"type": "text", "text": "[1, 2]"}],
        "structuredContent": {"result": [1, 2]},
        "isError": False,
    }
    assert _wire(list[object], ["a", 2]) == {
        "content": [{"type": "text", "text": '["a", 2]'}],
        "structuredContent": {"result": ["a", 2]},
        "isError": False,
    }


def test_nan_beside_content_is_refused_as_for_any_value() -> None:
    result = _wire(list[object], [IMAGE, float("nan")])
    assert result["isError"] is True
    assert "NaN or Infinity" in result["content"][0]["text"]


@pytest.mark.parametrize(
    ("returns", "value", "sent"),
    [
        (None, None, []),  # `-> None`: nothing to say
        (str | None, None, [{"type": "text", "text": "null"}]),
        (ImageContent | None, None, []),
    ],
)
def test_none_is_empty_content_where_the_annotation_allows_it(
    returns: Any, value: object, sent: list[object]
) -> None:
    assert _wire(returns, value)["content"] == sent
    assert _wire(returns, value)["isError"] is False


def test_none_with_no_annotation_is_empty_content() -> None:
    """As the official SDK and FastMCP send it: a tool that acts and has nothing to say."""
    assert _wire(None, None, annotated=False) == {"content": [], "isError": False}


@pytest.mark.parametrize("returns", [str, ImageContent, list[ContentBlock], CallToolResult])
def test_none_the_annotation_does_not_allow_names_the_forgotten_return(returns: Any) -> None:
    result = _wire(returns, None)
    assert result["isError"] is True
    assert result["content"][0]["text"] == (
        "Tool 'shape' returned None, which its return annotation does not allow: add the "
        "missing return, or annotate the tool `-> ... | None` if it may have nothing to return."
    )
