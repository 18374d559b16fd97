"""Learning which arguments a tool mirrors into ``Mcp-Param-*`` headers.

On 2026-07-28 over HTTP a call repeats in headers the arguments its tool's input schema
marks with ``x-mcp-header``, so before the first call of a tool it has not seen the
client lists the tools. The host never asked for that listing, so it must neither cost
without bound nor fail a call that would work: it stops at the bounds of every listing
(``_pages.MAX_PAGES`` pages, ``MAX_ITEMS`` tools, ``MAX_BYTES`` bytes) and keeps no page
it has read. When it
fails, is malformed or runs past its bounds, the call is sent without headers after a
warning, and so are later calls until the tool list changes (unless the listing only
failed on its way, a timeout or a connection or HTTP failure: the next call lists
again). A server that needs no headers answers such a call as it would in the
handshake era; one that refuses it for a missing header gets a ``HeaderMismatchError``
that says why the headers were missing (``explain_header_refusal``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import pydantic_core

from answerback.client import _pages as pages
from answerback.client._session import describe_server
from answerback.jsonrpc import JSONObject
from answerback.types import (
    ConnectionClosedError,
    HeaderMismatchError,
    Implementation,
    MCPError,
    RequestTimeoutError,
)

logger = logging.getLogger("answerback.client")


class UnlearnedMarks(Exception):
    """The hidden listing could not learn the marks; ``reason`` says why. ``lasting``
    unless the request failed on its way (a timeout, a connection or HTTP failure),
    which the next call's listing may not meet."""

    def __init__(self, reason: str, *, lasting: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.lasting = lasting


async def learn_marks(
    server: Implementation | None,
    fetch: Callable[[str | None], Awaitable[JSONObject]],
    learn: Callable[[JSONObject], str | None],
) -> None:
    """List every page with ``fetch(cursor)`` (a raw ``tools/list`` result), handing
    each to ``learn``, which keeps its marks and returns the next cursor.

    Raises ``UnlearnedMarks`` if the listing fails or runs past a bound.
    """
    tools = size = 0
    seen: set[str] = set()
    cursor: str | None = None
    try:
        for _ in range(pages.MAX_PAGES):
            raw = await fetch(cursor)
            size += len(pydantic_core.to_json(raw))
            listed = raw.get("tools")
            tools += len(listed) if isinstance(listed, list) else 0  # pyright: ignore[reportUnknownArgumentType]
            if size > pages.MAX_BYTES or tools > pages.MAX_ITEMS:
                raise UnlearnedMarks(
                    f"the list ran past {pages.MAX_ITEMS} tools or {pages.MAX_BYTES} bytes "
                    f"({tools} tools, {size} bytes in {len(seen) + 1} pages)"
                )
            cursor = learn(raw)
            if not cursor:
                return
            if cursor in seen:
                raise UnlearnedMarks(f"the server sent the cursor of page {len(seen)} again")
            seen.add(cursor)
    except MCPError as exc:
        passing = isinstance(exc, ConnectionClosedError | RequestTimeoutError)
        raise UnlearnedMarks(f"listing failed: {exc.message}", lasting=not passing) from exc
    raise UnlearnedMarks(f"the list ran past {pages.MAX_PAGES} pages ({tools} tools)")


def warn_unlearned(server: Implementation | None, reason: str, *, lasting: bool) -> None:
    """The warning of a hidden listing that failed (once, if it is ``lasting``)."""
    logger.warning(
        "%s: could not learn which tool arguments go in Mcp-Param-* headers from "
        "'tools/list' (%s); %s. A tool that needs them is refused by the server.",
        describe_server(server),
        reason,
        "calls are sent without those headers until the tool list changes"
        if lasting
        else "this call is sent without those headers, and the next one lists again",
    )


def explain_header_refusal(
    server: Implementation | None, name: str, reason: str, exc: HeaderMismatchError
) -> HeaderMismatchError:
    """The error of a call sent without headers that the server refused for a header."""
    return HeaderMismatchError(
        f"{describe_server(server)} refused the call of tool {name!r} for its headers "
        f"({exc.message}). The client sends the Mcp-Param-* headers a tool's input schema "
        f"asks for, but could not learn them: {reason}. Report the broken 'tools/list' to "
        "the server's authors; meanwhile, list_tools() the page that holds the tool (the "
        "client learns its headers from any listing) and call it again.",
        exc.data,
    )
