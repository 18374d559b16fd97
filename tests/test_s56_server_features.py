"""Stop 56 fixes to everyday server features: what older clients are sent, query
templates, ``listen()`` on an unknown URI, and list cursors that survive a removal."""

from __future__ import annotations

import base64
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import pytest
from support import PATIENCE_SECONDS, RawPeer, peer_pair

from answerback import Client, MCPError
from answerback.server import MCPServer
from answerback.types import AudioContent, ResourceLink, ResourceNotFoundError, TextContent

pytestmark = pytest.mark.anyio

WAV = base64.b64encode(b"RIFF....WAVE").decode()


def mixed_content_server() -> MCPServer:
    mcp = MCPServer("Mixed")

    @mcp.tool()
    def mixed() -> list[TextContent | ResourceLink | AudioContent]:
        """Text, a link and a recording."""
        return [
            TextContent(text="see"),
            ResourceLink(uri="books://dune", name="dune", title="Dune", mime_type="text/plain"),
            AudioContent(data=WAV, mime_type="audio/wav"),
        ]

    @mcp.prompt()
    def listen_to() -> list[ResourceLink | AudioContent]:
        return [
            ResourceLink(uri="books://dune", name="dune", description="The novel"),
            AudioContent(data=WAV, mime_type="audio/wav"),
        ]

    @mcp.prompt()
    def review(book: str) -> str:
        return f"Review {book}."

    @mcp.completion()
    async def complete(ref: object, argument: object, context: object) -> list[str]:
        return []

    return mcp


@asynccontextmanager
async def initialized(mcp: MCPServer, version: str) -> AsyncGenerator[tuple[RawPeer, Any]]:
    """A raw client of ``version``, and the server's initialize result."""
    with peer_pair() as (server_side, peer), anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(mcp.serve_connection, *server_side)
            params = {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "older", "version": "0"},
            }
            await peer.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
            opened = (await peer.receive())["result"]
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield peer, opened
            peer.write_stream.close()


async def asked(peer: RawPeer, request_id: int, method: str, params: Any) -> Any:
    await peer.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    return (await peer.receive())["result"]


# -- F1: what a client of an older protocol version is sent -----------------------------


@pytest.mark.parametrize(
    ("version", "kinds"),
    [
        ("2024-11-05", ["text", "text", "text"]),
        ("2025-03-26", ["text", "text", "audio"]),
        ("2025-06-18", ["text", "resource_link", "audio"]),
        ("2025-11-25", ["text", "resource_link", "audio"]),
    ],
)
async def test_content_a_version_lacks_is_told_as_text(version: str, kinds: list[str]) -> None:
    """A strict client of 2024-11-05 or 2025-03-26 parses every block of a result:
    links (2025-06-18) and audio (2025-03-26) reach it as text saying what they were."""
    async with initialized(mixed_content_server(), version) as (peer, _):
        call = await asked(peer, 1, "tools/call", {"name": "mixed", "arguments": {}})
        prompt = await asked(peer, 2, "prompts/get", {"name": "listen_to"})
    content = call["content"]
    assert [block["type"] for block in content] == kinds
    assert [m["content"]["type"] for m in prompt["messages"]] == kinds[1:]
    if kinds[1] == "text":
        assert content[1] == {
            "type": "text",
            "text": "Resource link: books://dune (Dune; text/plain)",
        }
        told = prompt["messages"][0]["content"]["text"]
        assert told == "Resource link: books://dune (dune; The novel)"
    if kinds[2] == "text":
        assert content[2]["text"] == (
            "[audio/wav audio left out: protocol version 2024-11-05 has no audio content]"
        )
    else:
        assert content[2] == {"type": "audio", "data": WAV, "mimeType": "audio/wav"}


@pytest.mark.parametrize(("version", "declared"), [("2024-11-05", False), ("2025-03-26", True)])
async def test_the_completions_capability_waits_for_its_version(
    version: str, declared: bool
) -> None:
    """2025-03-26 added the ``completions`` capability; ``completion/complete`` is older
    and still answered."""
    async with initialized(mixed_content_server(), version) as (peer, opened):
        completed = await asked(
            peer,
            1,
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "review"},
                "argument": {"name": "book", "value": ""},
            },
        )
    assert ("completions" in opened["capabilities"]) is declared
    assert completed["completion"]["values"] == []


async def test_the_current_era_gets_every_block() -> None:
    async with Client(mixed_content_server(), mode="2026-07-28") as client:
        result = await client.call_tool("mixed", {})
        prompt = await client.get_prompt("listen_to")
    assert [block.type for block in result.content] == ["text", "resource_link", "audio"]
    assert [message.content.type for message in prompt.messages] == ["resource_link", "audio"]


# -- F3: RFC 6570 form-style query templates -----------------------------------------


def searching_server() -> MCPServer:
    mcp = MCPServer("Search")

    @mcp.resource("search://items{?q,limit}")
    def search(q: str = "", limit: int = 10) -> str:
        return f"{q}|{limit}"

    @mcp.resource("shelf://{kind}{?name}")
    def shelf(kind: str, name: str) -> str:
        return f"{kind}/{name}"

    @mcp.resource("list://all?sort=asc{&page}")
    def listing(page: int = 1) -> str:
        return f"page {page}"

    return mcp


async def text_of(client: Client, uri: str) -> str:
    contents = (await client.read_resource(uri)).contents[0]
    return cast(Any, contents).text


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_query_template_takes_its_parameters_in_any_order(mode: str) -> None:
    async with Client(searching_server(), mode=mode) as client:
        read = [
            await text_of(client, uri)
            for uri in (
                "search://items?q=dune&limit=3",
                "search://items?limit=3&q=dune",
                "search://items?q=dune",
                "search://items",
                "search://items?q=the%20dune+book",
                "shelf://books?name=dune",
                "list://all?page=2&sort=asc",
                "list://all?sort=asc",
            )
        ]
        templates = [
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        ]
    assert read == [
        "dune|3",
        "dune|3",
        "dune|10",
        "|10",
        "the dune book|10",
        "books/dune",
        "page 2",
        "page 1",
    ]
    assert templates == [
        "search://items{?q,limit}",
        "shelf://{kind}{?name}",
        "list://all?sort=asc{&page}",
    ]


@pytest.mark.parametrize(
    "uri",
    [
        "search://items?q=dune&colour=red",  # a parameter it does not take
        "search://items?q=dune&q=arrakis",  # one given twice
        "search://other?q=dune",  # another path
        "list://all?page=2",  # the fixed pair missing
        "list://all?sort=desc&page=2",  # the fixed pair changed
    ],
)
async def test_a_query_the_template_does_not_take_is_not_served(uri: str) -> None:
    async with Client(searching_server(), mode="legacy") as client:
        with pytest.raises(ResourceNotFoundError):
            await client.read_resource(uri)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_query_parameter_without_default_or_a_bad_value_is_refused(mode: str) -> None:
    async with Client(searching_server(), mode=mode) as client:
        with pytest.raises(MCPError, match=r"gives the template no 'name'.*add name=\.\.\. to"):
            await client.read_resource("shelf://books")
        with pytest.raises(MCPError, match=r"gives the template's 'limit' the value 'many'"):
            await client.read_resource("search://items?limit=many")


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("x://a{#frag}", r"has the template expression '\{#frag\}', a form it does not serve"),
        ("x://a{/p,q}", r"'\{/p,q\}'"),
        ("x://{p,q}", r"'\{p,q\}'"),
        ("x://{p*}", r"'\{p\*\}'"),
        ("x://{?p}/more", r"'\{\?p\}'"),
        ("x://a?b=1{?p}", r"has a fixed query, so \{\?\.\.\.\} would start a second one"),
        ("x://a{&p}", r"has no fixed query for \{&\.\.\.\} to continue"),
        ("x://a?b={c}{&p}", r"has a placeholder in its fixed query"),
        ("x://a}", r"has a brace outside a placeholder"),
    ],
)
def test_an_unsupported_template_says_what_is_served(uri: str, problem: str) -> None:
    mcp = MCPServer("Refused")
    with pytest.raises(ValueError, match=problem) as refused:
        mcp.resource(uri)(lambda p="": p)
    if "fixed query" not in problem:
        assert r"a query {?a,b} (or {&a,b} after a fixed '?k=v')" in str(refused.value)


# -- F4: list cursors that survive a removal -----------------------------------------


def paged_server() -> MCPServer:
    mcp = MCPServer("Paged", page_size=3)

    def echo(x: str) -> str:
        return x

    for number in range(7):
        mcp.tool(name=f"t{number}", description="One of seven.")(lambda: "ok")
        mcp.prompt(name=f"p{number}", description="One of seven.")(lambda: "ok")
        mcp.resource(f"r://{number}", name=f"r{number}")(lambda: "ok")
        mcp.resource(f"t{number}://{{x}}", name=f"t{number}")(echo)
    return mcp


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_an_item_removed_between_pages_shifts_none_out_of_the_next(mode: str) -> None:
    mcp = paged_server()
    async with Client(mcp, mode=mode) as client:
        first = await client.list_tools()
        mcp.remove_tool("t0")
        mcp.remove_tool("t1")
        second = await client.list_tools(first.next_cursor)
        third = await client.list_tools(second.next_cursor)
        templates = await client.list_all_resource_templates()
        resources = await client.list_all_resources()
        prompts = await client.list_all_prompts()
    assert [tool.name for tool in first.tools] == ["t0", "t1", "t2"]
    assert [tool.name for tool in second.tools] == ["t3", "t4", "t5"]
    assert [tool.name for tool in third.tools] == ["t6"]
    assert third.next_cursor is None
    assert [t.uri_template for t in templates] == [f"t{n}://{{x}}" for n in range(7)]
    assert [r.uri for r in resources] == [f"r://{n}" for n in range(7)]
    assert [p.name for p in prompts] == [f"p{n}" for n in range(7)]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_cursor_that_cannot_continue_says_to_list_from_the_start(mode: str) -> None:
    mcp = paged_server()
    async with Client(mcp, mode=mode) as client:
        cursor = (await client.list_tools()).next_cursor
        assert cursor is not None
        with pytest.raises(
            MCPError, match=r"continues 'tools/list', not prompts/list; call prompts/list again"
        ) as other_list:
            await client.list_prompts(cursor)
        for made_elsewhere in ("Mw==", "not a cursor"):
            with pytest.raises(MCPError, match=r"unknown cursor .*without a cursor to list"):
                await client.list_tools(made_elsewhere)
        mcp.remove_tool("t2")  # the page's last item, which the cursor continues after
        with pytest.raises(
            MCPError, match=r"continues after 't2', which the list no longer has"
        ) as gone:
            await client.list_tools(cursor)
    assert other_list.value.code == gone.value.code == -32602
