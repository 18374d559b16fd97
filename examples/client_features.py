"""The callback is the capability: one server, three clients, three declarations.

The Library server's ``client_features`` tool reports which optional features the
connected client declared. This script connects three times over stdio, with only an
elicitation callback, with all three server-request callbacks, and with none, and
prints the tool's ``structured_content`` each time::

    {'result': ['elicitation']}
    {'result': ['elicitation', 'sampling', 'roots']}
    {'result': []}
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio

from answerback import Client, StdioServer
from answerback.client import ClientRequestContext
from answerback.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    TextContent,
)

SERVER = Path(__file__).with_name("library_server.py")


async def handle_elicitation(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    return ElicitResult(action="decline")


async def handle_sampling(
    context: ClientRequestContext, params: CreateMessageRequestParams
) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(text="The answer is 42."), model="my-llm"
    )


async def handle_list_roots(context: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[])


async def features(**callbacks: Any) -> dict[str, Any] | None:
    """Connect with the given callbacks and ask the server what it sees."""
    server = StdioServer(sys.executable, [str(SERVER)])
    async with Client(server, mode="legacy", **callbacks) as client:
        result = await client.call_tool("client_features")
        return result.structured_content


async def main() -> None:
    print(await features(elicitation_callback=handle_elicitation))
    print(
        await features(
            elicitation_callback=handle_elicitation,
            sampling_callback=handle_sampling,
            list_roots_callback=handle_list_roots,
        )
    )
    print(await features())


if __name__ == "__main__":
    anyio.run(main)
