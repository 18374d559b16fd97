"""An MCP client built with the official SDK (`mcp` on PyPI), used as a real peer in tests.

It plays the seed scenario against a server under test: connect, answer the server's
elicitation with `{"name": "Ada Lovelace"}`, call the tool `issue_card` (or the one named with
`--tool`), print the text of the first content item and exit 0. The SDK checks a tool's
structured content against the output schema it listed, so a schema it cannot apply fails
the run too. Any failure (connection, JSON-RPC error, a tool result with
`isError`, no text to print, a timeout) prints one line to stderr and exits non-zero, so a
test can assert on the exit code and the output alone.

Usage:
    python official_client.py MODE TARGET [--tool NAME] [--timeout SECONDS]

MODE is an SDK connect mode: `legacy` (initialize handshake), `auto` (probe `server/discover`,
fall back to initialize) or a pinned modern version such as `2026-07-28`.
TARGET is `stdio:<command line>` (split like a shell would, e.g. `stdio:python server.py`)
or an `http://` / `https://` URL of a streamable HTTP endpoint.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import cast

import anyio
from mcp import Client, StdioServerParameters
from mcp.client import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult, TextContent

ANSWER: dict[str, str | int | float | bool | list[str] | None] = {"name": "Ada Lovelace"}
TOOL = "issue_card"

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2  # also what argparse uses for a bad command line


class PeerFailure(Exception):
    """A failure worth one clear line on stderr and a non-zero exit."""


class UsageError(PeerFailure):
    """The command line itself is wrong, so a test can tell it from a protocol failure."""


async def answer_elicitation(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    """Accept every form with the seed's answer; registering this declares `elicitation`."""
    return ElicitResult(action="accept", content=ANSWER)


def parse_target(target: str) -> StdioServerParameters | str:
    """Turn TARGET into what `mcp.Client` accepts: stdio parameters or a URL string."""
    if target.startswith("stdio:"):
        argv = shlex.split(target.removeprefix("stdio:"))
        if not argv:
            raise UsageError("stdio target has no command: write it as 'stdio:<python> <script>'")
        # The SDK passes only a small allow-list of variables to the child by default; hand
        # on the whole environment so PYTHONPATH and friends reach the server under test.
        return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    if target.startswith(("http://", "https://")):
        return target
    raise UsageError(f"target {target!r} is neither 'stdio:<command>' nor an http(s) URL")


async def run(mode: str, target: str, limit_seconds: float, tool: str = TOOL) -> str:
    """Connect, call the tool and return the text of its first content item."""
    server = parse_target(target)
    try:
        client = Client(server, mode=mode, elicitation_callback=answer_elicitation)
    except ValueError as exc:  # the SDK rejects unknown modes at construction
        raise UsageError(str(exc)) from exc
    with anyio.fail_after(limit_seconds):
        async with client:
            result = await client.call_tool(tool)
    texts = [item.text for item in result.content if isinstance(item, TextContent)]
    if result.is_error:
        detail = " ".join(texts) or "(no text)"
        raise PeerFailure(f"tool {tool!r} returned an error result: {detail}")
    if not result.content:
        raise PeerFailure(f"tool {tool!r} returned no content")
    first = result.content[0]
    if not isinstance(first, TextContent):
        raise PeerFailure(f"tool {tool!r} returned {first.type!r} content first, not text")
    return first.text


def group_members(exc: BaseException) -> tuple[BaseException, ...]:
    """The members of an exception group, or nothing for a plain exception."""
    if not isinstance(exc, BaseExceptionGroup):
        return ()
    return cast("BaseExceptionGroup[BaseException]", exc).exceptions


def innermost(exc: BaseException) -> BaseException:
    """Unwrap the single-member exception groups anyio's task groups raise."""
    while len(members := group_members(exc)) == 1:
        exc = members[0]
    return exc


def describe(exc: BaseException) -> str:
    """One line for any failure, naming the real cause rather than its wrapper."""
    cause = innermost(exc)
    if isinstance(cause, PeerFailure):
        return str(cause)
    if isinstance(cause, TimeoutError):
        return "timed out waiting for the server"
    return f"{type(cause).__name__}: {cause}"


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the scenario, map the outcome to an exit code."""
    parser = argparse.ArgumentParser(
        description="Call a tool (`issue_card`) on an MCP server with the official SDK client."
    )
    parser.add_argument("mode", help="legacy, auto, or a modern protocol version (2026-07-28)")
    parser.add_argument("target", help="stdio:<command line> or an http(s) URL")
    parser.add_argument("--tool", default=TOOL, help="the tool to call (no arguments)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds for the whole run")
    args = parser.parse_args(argv)
    try:
        text = anyio.run(run, args.mode, args.target, args.timeout, args.tool)
    except PeerFailure as exc:
        print(f"official_client: {exc}", file=sys.stderr)
        return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_FAILED
    except (Exception, BaseExceptionGroup) as exc:
        print(f"official_client: {describe(exc)}", file=sys.stderr)
        return EXIT_FAILED
    print(text)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
