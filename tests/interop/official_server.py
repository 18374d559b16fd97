"""An MCP server built with the official SDK (`mcp` on PyPI), used as a real peer in tests.

Every tool here makes the server ask the client something, so answerback's client can be
checked against an implementation we did not write.

The plain tools (`ask_name`, `ask_model`, `list_my_roots`, `log_things`) use the SDK's
request-time API (`ctx.elicit`, `ctx.session.create_message`, ...). That API sends real
server-to-client requests, so it works only on a handshake-era (legacy) connection; on a
2026-07-28 connection the SDK refuses it. The `*_mrtr` twins use the SDK's resolver API
(`Resolve` + `Elicit` / `Sample` / `ListRoots`), which the SDK turns into mid-call requests
on a legacy connection and into an `InputRequiredResult` on a 2026-07-28 connection, so they
exercise the modern multi-round-trip path.

Usage:
    python official_server.py              # stdio
    python official_server.py --http PORT  # streamable HTTP on http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import argparse
import warnings
from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, ListRoots, Resolve, Sample
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.types import (
    CreateMessageResult,
    ListRootsResult,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel

# Sampling, roots and logging are deprecated in 2026-07-28; this peer uses them on purpose.
warnings.filterwarnings("ignore", category=MCPDeprecationWarning)

QUESTION = "What is your name?"
SAMPLING_PROMPT = "What is 6 x 7?"

mcp = MCPServer("official-peer")


# No docstring: pydantic would put it in the JSON Schema the client sees as `description`.
class Person(BaseModel):
    name: str


def _sampled_text(result: CreateMessageResult) -> str:
    """The text of a sampling result, or a marker saying what else came back."""
    content = result.content
    if isinstance(content, TextContent):
        return content.text
    return f"<non-text sampling content: {content.type}>"


def _root_uris(result: ListRootsResult) -> list[str]:
    """Root URIs as plain strings, in the order the client listed them."""
    return [str(root.uri) for root in result.roots]


@mcp.tool()
async def ask_name(ctx: Context) -> str:
    """Elicit a name through a real `elicitation/create` request (legacy connections)."""
    answer = await ctx.elicit(QUESTION, schema=Person)
    if answer.action == "accept":
        return f"Hello, {answer.data.name}."
    return "No name."


@mcp.tool()
async def ask_model(ctx: Context) -> str:
    """Sample the client's model through `sampling/createMessage` (legacy connections)."""
    result = await ctx.session.create_message(  # pyright: ignore[reportDeprecated]
        [SamplingMessage(role="user", content=TextContent(type="text", text=SAMPLING_PROMPT))],
        max_tokens=50,
        # Ties the request to this tool call, so on HTTP it rides the call's own stream.
        related_request_id=ctx.request_id,
    )
    return _sampled_text(result)


@mcp.tool()
async def list_my_roots(ctx: Context) -> list[str]:
    """Fetch the client's roots through `roots/list` (legacy connections)."""
    return _root_uris(await ctx.session.list_roots())  # pyright: ignore[reportDeprecated]


@mcp.tool()
async def log_things(ctx: Context) -> str:
    """Send an info and a warning `notifications/message` to the client, then finish."""
    await ctx.info("starting the things")  # pyright: ignore[reportDeprecated]
    await ctx.warning("the things are getting loud")  # pyright: ignore[reportDeprecated]
    return "logged"


def _want_name() -> Elicit[Person]:
    """Resolver: ask the client for a name."""
    return Elicit(QUESTION, Person)


def _want_sample() -> Sample:
    """Resolver: ask the client's model the sampling question."""
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=SAMPLING_PROMPT))],
        max_tokens=50,
    )


def _want_roots() -> ListRoots:
    """Resolver: ask the client for its roots."""
    return ListRoots()


@mcp.tool()
async def ask_name_mrtr(
    answer: Annotated[ElicitationResult[Person], Resolve(_want_name)],
) -> str:
    """`ask_name` for both eras: an InputRequiredResult on 2026-07-28, a request before."""
    if answer.action == "accept":
        return f"Hello, {answer.data.name}."
    return "No name."


@mcp.tool()
async def ask_model_mrtr(result: Annotated[CreateMessageResult, Resolve(_want_sample)]) -> str:
    """`ask_model` for both eras."""
    return _sampled_text(result)


@mcp.tool()
async def list_my_roots_mrtr(result: Annotated[ListRootsResult, Resolve(_want_roots)]) -> list[str]:
    """`list_my_roots` for both eras."""
    return _root_uris(result)


def main() -> None:
    """Serve over stdio, or over streamable HTTP at 127.0.0.1:PORT/mcp with `--http PORT`."""
    parser = argparse.ArgumentParser(description="Official-SDK MCP peer server for interop tests.")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    args = parser.parse_args()
    if args.http is None:
        mcp.run()
    else:
        mcp.run(
            transport="streamable-http",
            host="127.0.0.1",
            port=args.http,
            streamable_http_path="/mcp",
        )


if __name__ == "__main__":
    main()
