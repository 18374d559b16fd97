"""Sampling and roots: a server that borrows the client's model and asks for its folders.

``sampling/createMessage`` lets a server ask the client's language model to complete a
conversation (``ctx.sample``, which also runs any tools the model calls); ``roots/list``
asks which directories the client lets it work in. Both are answered by client
callbacks (``sampling_callback``, ``list_roots_callback``), and registering those
callbacks is what declares the ``sampling`` and ``roots`` capabilities.

Run it as a client (it starts itself as the server, over stdio)::

    python examples/sampling_and_roots.py

``--in-process`` runs the same server inside the client's event loop instead, and
``--serve`` runs only the server on stdio, for any MCP client to connect to.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from pydantic import FileUrl

from answerback import Client, StdioServer
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ListRootsResult,
    Root,
    TextContent,
)

mcp = MCPServer("Research desk")


@mcp.tool()
async def ask_the_model(ctx: Context, question: str) -> str:
    """Ask the client's language model a question and report its answer."""
    reply = await ctx.sample(
        question, max_tokens=100, system_prompt="Answer in one short sentence."
    )
    return f"model {reply.model} said: {reply.text}"


@mcp.tool()
async def workspace(ctx: Context) -> list[str]:
    """The directories the client lets this server work in."""
    listing = await ctx.session.list_roots()
    return [f"{root.name}: {root.uri}" for root in listing.roots]


# -- the client's side -------------------------------------------------------------------


async def handle_sampling(
    context: ClientRequestContext, params: CreateMessageRequestParams
) -> CreateMessageResult:
    """Stand-in for a real model: a client would run its LLM on ``params.messages``."""
    return CreateMessageResult(
        role="assistant",
        content=TextContent(text="The answer is 42."),
        model="my-llm",
    )


async def handle_list_roots(context: ClientRequestContext) -> ListRootsResult:
    """The folders this client shares with servers."""
    notebooks = Root(uri=FileUrl("file:///home/ada/notebooks"), name="notebooks")
    return ListRootsResult(roots=[notebooks])


async def main(target: Any) -> None:
    async with Client(
        target,
        mode="legacy",
        sampling_callback=handle_sampling,
        list_roots_callback=handle_list_roots,
    ) as client:
        asked = await client.call_tool("ask_the_model", {"question": "What is six times seven?"})
        print(asked.text)
        roots = await client.call_tool("workspace")
        print(roots.structured_content)


if __name__ == "__main__":
    if "--serve" in sys.argv:
        mcp.run()
    elif "--in-process" in sys.argv:
        anyio.run(main, mcp)
    else:
        anyio.run(main, StdioServer(sys.executable, [str(Path(__file__).resolve()), "--serve"]))
