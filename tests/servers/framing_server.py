"""A test server for the edges of stdio framing: a message limit of the test's choosing,
answers that cannot be sent (too large, holding Infinity or a lone surrogate), and a choice
of backend.

Run over stdio: ``python tests/servers/framing_server.py [--max-bytes N] [--backend trio]``.
"""

from __future__ import annotations

import argparse
import asyncio
from functools import partial

import anyio

from answerback.server import MCPServer
from answerback.transports import stdio_server_streams
from answerback.transports._framing import DEFAULT_MAX_MESSAGE_BYTES
from answerback.types import Annotations, TextContent

mcp = MCPServer("Framing")


@mcp.tool()
def echo(text: str) -> str:
    """``text``, unchanged."""
    return text


@mcp.tool()
def text_of_size(size: int) -> str:
    """A text of ``size`` bytes, to make an answer as large as a test needs."""
    return "x" * size


@mcp.tool()
def infinity() -> float:
    """A number JSON cannot carry, which the tool layer refuses as an error result."""
    return float("inf")


@mcp.tool()
def infinite_priority() -> TextContent:
    """A content block holding Infinity: sent as built, past the tool layer, so only the
    transport's strict JSON stops it. ``Annotations`` refuses Infinity when validated, so
    the test builds it unvalidated (``model_construct``), as a careless caller could."""
    unchecked = Annotations.model_construct(priority=float("inf"))
    return TextContent(text="unsendable", annotations=unchecked)


NOT_UTF8_NAME = b"caf\xe9.txt".decode("utf-8", "surrogateescape")
"""A file name that is not UTF-8, as ``os.listdir`` gives it: text with a lone surrogate,
which UTF-8 (and so JSON on the wire) cannot write."""


@mcp.tool()
def listed_name() -> str:
    """Such a file name, returned as the tool's text."""
    return NOT_UTF8_NAME


@mcp.tool()
def missing_file() -> str:
    """Fails with such a name in its message, which becomes the error result's text."""
    raise FileNotFoundError(f"no such file: {NOT_UTF8_NAME}")


@mcp.tool()
async def event_loop() -> str:
    """Whether this server runs on asyncio ("asyncio") or another backend ("other")."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return "other"
    return "asyncio"


async def serve(max_message_bytes: int) -> None:
    async with stdio_server_streams(max_message_bytes=max_message_bytes) as streams:
        await mcp.serve_connection(*streams, answer_after_input_ends=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_MESSAGE_BYTES)
    parser.add_argument("--backend", default="asyncio")
    options = parser.parse_args()
    anyio.run(partial(serve, options.max_bytes), backend=options.backend)
