"""A server that takes a tool, a prompt and a resource away while clients are
connected (``mcp.remove_tool``, ``remove_prompt``, ``remove_resource``), and tells them
the lists changed, so they list again.

The server is in this process. A handshake-era client hears of each change at its
``message_handler``; a 2026-07-28 client, on a ``client.listen(...)`` stream it opened.
Run: ``python examples/retiring_features.py``. It prints::

    legacy: told the tools, prompts, resources changed
    legacy: now lists tools ['search'], prompts [], resources []
    legacy: calling lend fails: Unknown tool 'lend'
    2026-07-28: told the tools, prompts, resources changed
    2026-07-28: now lists tools ['search'], prompts [], resources []
    2026-07-28: calling lend fails: Unknown tool 'lend'

Removing tells no one by itself: the ``notify_*_changed()`` calls do. A call already
running when its tool goes finishes; a later one fails as for a tool that never was.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import anyio

from answerback import Client, MCPError
from answerback.server import MCPServer
from answerback.types import ServerNotification

CHANGES = (
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
)


def library() -> MCPServer:
    """A fresh server for each client, so each sees the features go."""
    mcp = MCPServer("Library")

    @mcp.tool()
    def search(words: str) -> list[str]:
        return [title for title in ("Dune", "Emma") if words.lower() in title.lower()]

    @mcp.tool()
    def lend(title: str) -> str:
        return f"Lent {title}."

    @mcp.prompt()
    def review(title: str) -> str:
        return f"Write a short review of {title}."

    @mcp.resource("books://catalogue")
    def catalogue() -> str:
        return "Dune\nEmma"

    return mcp


async def retire(mcp: MCPServer) -> None:
    """The lending desk closes: its tool, prompt and resource go, and clients are told."""
    mcp.remove_tool("lend")
    mcp.remove_prompt("review")
    mcp.remove_resource("books://catalogue")
    await mcp.notify_tools_changed()
    await mcp.notify_prompts_changed()
    await mcp.notify_resources_changed()


async def what_is_left(mode: str, client: Client, told: Sequence[str]) -> None:
    print(f"{mode}: told the {', '.join(method.split('/')[1] for method in told)} changed")
    tools = [tool.name for tool in await client.list_all_tools()]
    prompts = [prompt.name for prompt in (await client.list_prompts()).prompts]
    resources = [str(resource.uri) for resource in (await client.list_resources()).resources]
    print(f"{mode}: now lists tools {tools}, prompts {prompts}, resources {resources}")
    try:
        await client.call_tool("lend", {"title": "Dune"})
    except MCPError as exc:
        print(f"{mode}: calling lend fails: {exc.message.split(';')[0]}")


async def handshake_era() -> None:
    mcp = library()
    told: list[str] = []
    all_told = anyio.Event()

    async def on_message(message: ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            # A transport's error (over stdio, a line the server printed by mistake):
            # skipped, the connection goes on, so it is logged, not raised.
            logging.warning("%s", message)
            return
        if message.method in CHANGES:
            told.append(message.method)
        if len(told) == len(CHANGES):
            all_told.set()

    async with Client(mcp, mode="legacy", message_handler=on_message) as client:
        await retire(mcp)
        await all_told.wait()
        await what_is_left("legacy", client, told)


async def modern_era() -> None:
    mcp = library()
    async with Client(mcp, mode="2026-07-28") as client:
        async with client.listen(
            tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
        ) as notifications:
            await retire(mcp)
            told = [(await notifications.receive()).method for _ in CHANGES]
        await what_is_left("2026-07-28", client, told)


async def main() -> None:
    await handshake_era()
    await modern_era()


if __name__ == "__main__":
    anyio.run(main)
