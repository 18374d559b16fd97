"""What a server author porting from the official Python SDK writes, and how answerback
answers it.

- A content block of a type MCP does not define (``{"type": "txt"}`` read into
  ``UnknownContent``, the client's forward-compatible model) is the server's own
  mistake: a tool returning one gets an error result naming the tool and the type, a
  prompt an internal error; it is never sent to the client.
- A prompt may return message dicts (``{"role": "user", "content": "text"}``), as the
  official SDK allows; a dict that is no message is an error naming the prompt.
- ``""`` for an optional prompt argument that cannot be ``""`` (``count: int | None``)
  means "not given": the MCP Inspector sends it for a field left empty.
- A resource returning ``None`` or a value holding NaN/Infinity is an error naming the
  resource, not the JSON text ``null``.
- A resource template parameter no URI text can become (a model, a list) is refused
  when the resource is registered.
- A tool's value typed ``Any`` holding NaN/Infinity is refused as a ``float`` one is, not
  sent as ``null``; ``bytes`` that are not UTF-8 get an error result saying so.
"""

from __future__ import annotations

import datetime
import enum
import math
import uuid
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, field_serializer

from answerback import Client, MCPError
from answerback.server import Context, MCPServer
from answerback.types import (
    CallToolResult,
    GetPromptResult,
    PromptMessage,
    TextContent,
    TextResourceContents,
    UnknownContent,
)

pytestmark = pytest.mark.anyio

MODES = ["legacy", "2026-07-28"]
VALID = "text, image, audio, resource_link, resource"


def unknown(kind: str = "txt") -> UnknownContent:
    return UnknownContent.model_validate({"type": kind, "text": "hi"})


# -- 1. content of an unknown type ------------------------------------------------------


def unknown_content_server() -> MCPServer:
    mcp = MCPServer("Shapes")

    @mcp.tool()
    def built() -> CallToolResult:
        return CallToolResult(content=[TextContent(text="ok"), {"type": "txt", "text": "hi"}])  # type: ignore[list-item]

    @mcp.tool()
    def failed() -> CallToolResult:
        return CallToolResult(content=[{"type": "txt", "text": "hi"}], is_error=True)  # type: ignore[list-item]

    @mcp.tool()
    def listed() -> list[Any]:
        return [TextContent(text="ok"), unknown("markdown")]

    @mcp.tool()
    def single() -> Any:
        return unknown()

    @mcp.prompt()
    def message() -> PromptMessage:
        return PromptMessage(role="user", content={"type": "txt", "text": "hi"})  # type: ignore[arg-type]

    @mcp.prompt()
    def whole() -> GetPromptResult:
        return GetPromptResult(messages=[PromptMessage(role="user", content=unknown())])

    @mcp.prompt()
    def block() -> list[Any]:
        return ["fine", unknown()]

    return mcp


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("tool", "kind"),
    [("built", "txt"), ("failed", "txt"), ("listed", "markdown"), ("single", "txt")],
)
async def test_a_tool_returning_content_of_an_unknown_type_gets_an_error_result(
    mode: str, tool: str, kind: str
) -> None:
    async with Client(unknown_content_server(), mode=mode) as client:
        result = await client.call_tool(tool, {})
    assert result.is_error
    assert result.content == [
        TextContent(
            text=f"Tool {tool!r} returned content of the unknown type {kind!r}: build each "
            f"content block as one of the types MCP defines ({VALID})."
        )
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("prompt", "where"), [("message", ""), ("whole", " 0"), ("block", " 1")])
async def test_a_prompt_returning_content_of_an_unknown_type_is_an_internal_error(
    mode: str, prompt: str, where: str
) -> None:
    async with Client(unknown_content_server(), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt(prompt, {})
    assert caught.value.code == -32603
    assert caught.value.message == (
        f"Internal error: TypeError: prompt {prompt!r} returned a message{where} with "
        f"content of the unknown type 'txt'; build each content block as one of the "
        f"types MCP defines ({VALID})"
    )


def test_the_shared_content_model_still_keeps_unknown_types() -> None:
    """The client reads a newer server's content into ``UnknownContent``; the server's
    check does not make the wire model strict."""
    result = CallToolResult.model_validate({"content": [{"type": "txt", "text": "hi"}]})
    assert isinstance(result.content[0], UnknownContent)


# -- 2. prompt message dicts ------------------------------------------------------------


def dict_prompt_server() -> MCPServer:
    mcp = MCPServer("Shapes")

    @mcp.prompt()
    def plain() -> dict[str, Any]:
        return {"role": "user", "content": "text"}

    @mcp.prompt()
    def blocks() -> list[dict[str, Any]]:
        return [
            {"role": "user", "content": {"type": "text", "text": "Summarise this."}},
            {
                "role": "assistant",
                "content": {"type": "image", "data": "AA==", "mimeType": "image/png"},
            },
            {"role": "assistant", "content": "Here is my summary:"},
        ]

    @mcp.prompt()
    def roleless() -> list[Any]:
        return ["fine", {"content": "text"}]

    @mcp.prompt()
    def bad_role() -> dict[str, Any]:
        return {"role": "system", "content": "text"}

    return mcp


@pytest.mark.parametrize("mode", MODES)
async def test_a_prompt_may_return_message_dicts(mode: str) -> None:
    async with Client(dict_prompt_server(), mode=mode) as client:
        plain = await client.get_prompt("plain")
        blocks = await client.get_prompt("blocks")
    assert plain.messages == [PromptMessage(role="user", content=TextContent(text="text"))]
    assert [(m.role, m.content.type) for m in blocks.messages] == [
        ("user", "text"),
        ("assistant", "image"),
        ("assistant", "text"),
    ]
    assert blocks.messages[2].content == TextContent(text="Here is my summary:")


@pytest.mark.parametrize(
    ("prompt", "message"),
    [
        (
            "roleless",
            "prompt 'roleless' returned a list whose item 1 is a dict that is no prompt "
            "message (role: Field required)",
        ),
        (
            "bad_role",
            "prompt 'bad_role' returned a dict that is no prompt message (role: Input "
            "should be 'user' or 'assistant')",
        ),
    ],
)
async def test_a_dict_that_is_no_prompt_message_is_named(prompt: str, message: str) -> None:
    async with Client(dict_prompt_server()) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt(prompt)
    assert caught.value.code == -32603
    assert caught.value.message == (
        f"Internal error: TypeError: {message}; a message dict has a 'role' ('user' or "
        "'assistant') and a 'content' (a string, or a content block dict)"
    )


# -- 3. "" for an optional argument -----------------------------------------------------


def optional_prompt_server() -> MCPServer:
    mcp = MCPServer("Shapes")

    @mcp.prompt()
    def options(
        topic: str,
        count: int | None = None,
        loud: bool = False,
        tags: list[str] | None = None,
        note: str | None = None,
        title: str = Field("untitled", min_length=1),
    ) -> str:
        return repr((topic, count, loud, tags, note, title))

    @mcp.prompt()
    def needs(count: int) -> str:
        return repr(count)

    return mcp


@pytest.mark.parametrize("mode", MODES)
async def test_an_empty_optional_argument_that_cannot_be_empty_is_not_given(mode: str) -> None:
    arguments = {"topic": "tea", "count": "", "loud": "", "tags": "", "note": "", "title": ""}
    async with Client(optional_prompt_server(), mode=mode) as client:
        result = await client.get_prompt("options", arguments)
        given = await client.get_prompt("options", {"topic": "", "count": "2", "loud": "true"})
    assert result.messages[0].content == TextContent(
        text=repr(("tea", None, False, None, "", "untitled"))
    )
    assert given.messages[0].content == TextContent(
        text=repr(("", 2, True, None, None, "untitled"))
    )


async def test_an_empty_required_argument_that_cannot_be_empty_is_still_refused() -> None:
    async with Client(optional_prompt_server()) as client:
        with pytest.raises(MCPError) as caught:
            await client.get_prompt("needs", {"count": ""})
    assert caught.value.code == -32602
    assert caught.value.message == (
        "Invalid params: prompt 'needs' cannot use the argument 'count' = '': Input should "
        "be a valid integer, unable to parse string as an integer."
    )


# -- 4, 5. resource values JSON text would misstate -------------------------------------


def resource_server() -> MCPServer:
    mcp = MCPServer("Shapes")

    @mcp.resource("values://none")
    def nothing() -> Any:
        return None

    @mcp.resource("values://{kind}")
    def odd(kind: str) -> Any:
        return {"nan": {"x": math.nan}, "inf": [1.0, math.inf], "neg": -math.inf}.get(kind)

    @mcp.resource("values://reading/model")
    def model() -> Any:
        return Reading(value=math.nan)

    @mcp.resource("values://zero")
    def zero() -> Any:
        return {"x": 0.0, "missing": None}

    return mcp


class Reading(BaseModel):
    value: float


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("uri", ["values://none", "values://other"])
async def test_a_resource_returning_none_is_an_error_naming_it(mode: str, uri: str) -> None:
    async with Client(resource_server(), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert caught.value.code == -32603
    assert caught.value.message == (
        f"Internal error: TypeError: resource {uri!r} returned None; return its contents "
        "(str, bytes, JSON data, or TextResourceContents / BlobResourceContents), or raise "
        "an MCPError to say why there are none"
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "uri", ["values://nan", "values://inf", "values://neg", "values://reading/model"]
)
async def test_a_resource_returning_nan_or_infinity_is_an_error_naming_it(
    mode: str, uri: str
) -> None:
    async with Client(resource_server(), mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource(uri)
    assert caught.value.code == -32603
    assert caught.value.message == (
        f"Internal error: ValueError: resource {uri!r} returned NaN or Infinity, which "
        "JSON cannot carry; return None or a string in its place"
    )


async def test_json_null_inside_a_resource_value_is_still_served() -> None:
    async with Client(resource_server()) as client:
        [contents] = (await client.read_resource("values://zero")).contents
    assert contents == TextResourceContents(
        uri="values://zero", mime_type="application/json", text='{"x": 0.0, "missing": null}'
    )


# -- 6. template parameters no URI text can become --------------------------------------


class Shelf(BaseModel):
    row: int


@dataclass
class Spot:
    row: int


class Colour(enum.Enum):
    RED = "red"


@pytest.mark.parametrize(
    ("annotation", "shown"),
    [
        (Shelf, "shelf (Shelf)"),
        (Spot, "shelf (Spot)"),
        (list[str], "shelf (list[str])"),
        (dict[str, int], "shelf (dict[str, int])"),
        (Shelf | None, "shelf (__main__.Shelf | None)"),
    ],
    ids=["model", "dataclass", "list", "dict", "optional-model"],
)
def test_a_template_parameter_no_uri_text_can_become_is_refused_at_registration(
    annotation: Any, shown: str
) -> None:
    mcp = MCPServer("Shapes")

    def stack(shelf: Any, title: str) -> str:
        return title

    stack.__annotations__["shelf"] = annotation
    with pytest.raises(TypeError) as caught:
        mcp.resource("shelves://{shelf}/{title}")(stack)
    shown = shown.replace("__main__", __name__)
    assert str(caught.value) == (
        f"resource template 'shelves://{{shelf}}/{{title}}': no URI text can become {shown}; "
        "annotate each with str, or a type read from text (int, float, bool, an Enum, a "
        "Literal)"
    )


@pytest.mark.parametrize("mode", MODES)
async def test_template_parameters_of_text_types_still_register(mode: str) -> None:
    mcp = MCPServer("Shapes")

    @mcp.resource("things://{a}/{b}/{c}/{d}/{e}/{f}/{g}/{h}")
    def things(
        a: int | None,
        b: Colour,
        c: Literal["x", 1],
        d: datetime.date,
        e: uuid.UUID,
        f: Decimal,
        g: float,
        h: Any,
    ) -> str:
        return repr((a, b, c, d, e, f, g, h))

    uid = "12345678-1234-5678-1234-567812345678"
    async with Client(mcp, mode=mode) as client:
        uri = f"things://3/red/x/2024-01-02/{uid}/1.5/2.5/raw"
        [contents] = (await client.read_resource(uri)).contents
    assert isinstance(contents, TextResourceContents)
    assert contents.text == repr(
        (3, Colour.RED, "x", datetime.date(2024, 1, 2), uuid.UUID(uid), Decimal("1.5"), 2.5, "raw")
    )


# -- 7. tool values JSON cannot hold --------------------------------------------------------


def unwritable_server() -> MCPServer:
    mcp = MCPServer("Unwritable")

    @mcp.tool()
    def anything() -> Any:
        return {"reading": math.nan}

    @mcp.tool()
    def readings() -> dict[str, Any]:
        return {"peak": math.inf}

    @mcp.tool()
    def untyped():  # type: ignore[no-untyped-def]  # pyright: ignore[reportUnknownParameterType]
        return {"reading": math.nan}

    @mcp.tool()
    def raw() -> dict[str, Any]:
        return {"png": b"\x89PNG"}

    @mcp.tool()
    def text_bytes() -> dict[str, Any]:
        return {"name": "Jörg".encode()}

    return mcp


@pytest.mark.parametrize("tool", ["anything", "readings"])
async def test_nan_in_a_value_typed_any_is_refused_not_sent_as_null(tool: str) -> None:
    async with Client(unwritable_server()) as client:
        result = await client.call_tool(tool)
    assert result.is_error
    assert result.structured_content is None
    assert result.content == [
        TextContent(
            text=f"Tool {tool!r} returned NaN or Infinity, which JSON cannot carry: have it "
            "return None or a string instead."
        )
    ]


async def test_nan_in_an_untyped_value_is_kept_in_its_text() -> None:
    """No schema, so the value goes out as text only, which can say NaN."""
    async with Client(unwritable_server()) as client:
        result = await client.call_tool("untyped")
    assert not result.is_error
    assert result.content == [TextContent(text='{"reading": NaN}')]


async def test_bytes_that_are_not_text_get_an_error_result_saying_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with Client(unwritable_server()) as client:
        refused = await client.call_tool("raw")
        sent = await client.call_tool("text_bytes")
    assert refused.is_error
    assert refused.content == [
        TextContent(
            text="Tool 'raw' returned a value JSON cannot hold (bytes that are not UTF-8 "
            "text): return an ImageContent or AudioContent (the data as base64), an "
            "EmbeddedResource holding a BlobResourceContents, or text."
        )
    ]
    assert not [record for record in caplog.records if record.exc_info], "no traceback"
    assert sent.structured_content == {"name": "Jörg"}


# -- 8. pinging the client -----------------------------------------------------------------


def pinging_server() -> MCPServer:
    mcp = MCPServer("Pinging")

    @mcp.tool()
    async def still_there(ctx: Context) -> str:
        await ctx.session.ping()
        return "the client answered"

    return mcp


async def test_a_legacy_server_pings_its_client() -> None:
    """The specification lets either side ping; the official SDK's servers can."""
    async with Client(pinging_server(), mode="legacy") as client:
        result = await client.call_tool("still_there")
    assert result.content == [TextContent(text="the client answered")]


async def test_a_2026_server_cannot_ping_and_says_why() -> None:
    async with Client(pinging_server(), mode="2026-07-28") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("still_there")
    assert (caught.value.code, caught.value.message) == (-32601, "Ping not supported")
    assert caught.value.data == {
        "reason": "protocol version 2026-07-28 has no requests from the server outside a "
        "request's rounds"
    }


class Uncalibrated(BaseModel):
    value: float

    @field_serializer("value")
    def rounded(self, value: float) -> float:
        raise ValueError("the sensor is not calibrated")


async def test_a_serializer_that_fails_gets_an_error_result_naming_the_tool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The author's own serializer raising is not "Error executing tool" with a
    traceback: the value was returned, and could not be written as JSON."""

    mcp = MCPServer("Serializing")

    @mcp.tool()
    def reading() -> Uncalibrated:
        return Uncalibrated(value=1.5)

    async with Client(mcp) as client:
        result = await client.call_tool("reading")
    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text.startswith("Tool 'reading' returned a value JSON cannot hold (")
    assert "the sensor is not calibrated" in block.text
    assert block.text.endswith(
        "): return an ImageContent or AudioContent (the data as base64), an "
        "EmbeddedResource holding a BlobResourceContents, or text."
    )
    assert not [record for record in caplog.records if record.exc_info], "no traceback"
