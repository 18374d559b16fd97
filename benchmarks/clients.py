"""Each implementation's own client talking to its own benchmark server.

``connect(impl, transport, mode)`` yields a ``Session`` whose ``echo`` and ``elicit``
make one checked ``tools/call``; the scenarios time those. The official SDK is imported
only here (and in its server), and only when its side runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Literal

from benchmarks.measure import Call
from benchmarks.procs import server_script

Impl = Literal["answerback", "official"]
Transport = Literal["inproc", "stdio", "http"]
Mode = Literal["legacy", "2026-07-28"]

IMPLS: tuple[Impl, Impl] = ("answerback", "official")
ECHO_TEXT = "hello, benchmark"
ANSWER_NAME = "Ada"
GREETING = f"Hello, {ANSWER_NAME}."


@dataclass(frozen=True, slots=True)
class Session:
    """Two checked round trips over one connected client."""

    echo: Call
    elicit: Call


def elicit_tool(impl: Impl, mode: Mode) -> str:
    """The eliciting tool each side uses in ``mode`` (see the servers' docstrings)."""
    if impl == "official" and mode != "legacy":
        return "ask_resolved"  # the SDK refuses ctx.elicit on 2026-07-28; resolvers work
    return "ask"


def _check(text: str, expected: str) -> None:
    if text != expected:
        raise RuntimeError(f"unexpected tool result {text!r}, expected {expected!r}")


@asynccontextmanager
async def connect(
    impl: Impl, transport: Transport, mode: Mode, url: str | None = None
) -> AsyncGenerator[Session, None]:
    """A connected client of ``impl`` over ``transport`` (``url`` for HTTP) in ``mode``."""
    factory = _answerback if impl == "answerback" else _official
    async with factory(transport, mode, url) as session:
        yield session


@asynccontextmanager
async def _answerback(
    transport: Transport, mode: Mode, url: str | None
) -> AsyncGenerator[Session, None]:
    import answerback
    from answerback.types import ElicitResult, TextContent

    async def answer(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": ANSWER_NAME})

    target: Any
    if transport == "inproc":
        from benchmarks.servers.answerback_server import build_server

        target = build_server()
    elif transport == "stdio":
        target = answerback.StdioServer(
            sys.executable, [server_script("answerback_server")], env=dict(os.environ)
        )
    else:
        target = url
    async with answerback.Client(target, mode=mode, elicitation_callback=answer) as client:
        tool = elicit_tool("answerback", mode)

        async def echo() -> None:
            result = await client.call_tool("echo", {"text": ECHO_TEXT})
            block = result.content[0]
            _check(block.text if isinstance(block, TextContent) else repr(block), ECHO_TEXT)

        async def elicit() -> None:
            result = await client.call_tool(tool, {})
            block = result.content[0]
            _check(block.text if isinstance(block, TextContent) else repr(block), GREETING)

        yield Session(echo=echo, elicit=elicit)


@asynccontextmanager
async def _official(
    transport: Transport, mode: Mode, url: str | None
) -> AsyncGenerator[Session, None]:
    import mcp
    from mcp.types import ElicitResult, TextContent

    async def answer(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": ANSWER_NAME})

    target: Any
    if transport == "inproc":
        from benchmarks.servers.official_server import build_server

        target = build_server()
    elif transport == "stdio":
        target = mcp.StdioServerParameters(
            command=sys.executable, args=[server_script("official_server")], env=dict(os.environ)
        )
    else:
        target = url
    async with mcp.Client(target, mode=mode, elicitation_callback=answer) as client:
        tool = elicit_tool("official", mode)

        async def echo() -> None:
            result = await client.call_tool("echo", {"text": ECHO_TEXT})
            block = result.content[0]
            _check(block.text if isinstance(block, TextContent) else repr(block), ECHO_TEXT)

        async def elicit() -> None:
            result = await client.call_tool(tool, {})
            block = result.content[0]
            _check(block.text if isinstance(block, TextContent) else repr(block), GREETING)

        yield Session(echo=echo, elicit=elicit)
