"""``MCPServer``, ``Context`` and ``ServerSession`` print as what a debugger needs: the
server's name and what it offers; the request being answered and the client behind it.
Never an argument's value, which may be a secret."""

from __future__ import annotations

import pytest

from answerback import Client
from answerback.server import Context, MCPServer
from answerback.types import Implementation

pytestmark = pytest.mark.anyio


def library() -> MCPServer:
    server = MCPServer("Library", version="2.1")

    @server.tool()
    def lend(title: str) -> str:
        return title

    @server.tool()
    def give_back(title: str) -> str:
        return title

    @server.prompt()
    def recommend() -> str:
        return "Recommend a book."

    @server.resource("library://opening-hours")
    def opening_hours() -> str:
        return "9 to 5"

    @server.resource("library://books/{isbn}")
    def book(isbn: str) -> str:
        return isbn

    return server


def test_a_server_shows_its_name_version_and_what_it_offers() -> None:
    assert repr(library()) == (
        "MCPServer('Library', version='2.1', tools=2, prompts=1, resources=1, templates=1)"
    )
    assert repr(MCPServer("empty")) == (
        "MCPServer('empty', version='0.1.0', tools=0, prompts=0, resources=0, templates=0)"
    )


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_context_and_its_session_show_the_request_and_the_client(mode: str) -> None:
    server = MCPServer("Reprs")
    seen: list[str] = []

    @server.tool()
    async def show(ctx: Context, password: str) -> str:
        seen.extend([repr(ctx), repr(ctx.session)])
        return "shown"

    @server.prompt()
    async def shown_prompt(ctx: Context) -> str:
        seen.append(repr(ctx))
        return "shown"

    async with Client(
        server, mode=mode, client_info=Implementation(name="probe", version="1")
    ) as client:
        await client.call_tool("show", {"password": "hunter2"})
        await client.get_prompt("shown_prompt")
        facts = client.session.negotiation.facts
        assert facts is not None
        protocol = facts.protocol_version
    context, session, prompt_context = seen
    assert context.startswith("Context(request_id=")
    assert context.endswith(
        f", method='tools/call', tool='show', client='probe', protocol={protocol!r})"
    )
    assert session.startswith(f"ServerSession(client='probe', protocol={protocol!r}, request_id=")
    assert ", method='prompts/get', prompt='shown_prompt', client='probe'," in prompt_context
    assert not any("hunter2" in shown for shown in seen)
