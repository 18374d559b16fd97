"""Following a server's list cursors to the end, and no further.

A listing ends when a page comes without ``nextCursor``; the server decides when that
is. A server that hands back a cursor it gave before, or one whose cursors never end or
whose pages are huge, would otherwise keep the client listing (and collecting) until
memory runs out, so a listing refuses a repeated cursor and stops past ``MAX_PAGES``
pages, ``MAX_ITEMS`` items or ``MAX_BYTES`` bytes. The bounds are shared by every
listing the client makes: the host's ``list_all_*`` and the hidden one that learns a
2026-07-28 tool's header marks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

import pydantic_core

from answerback.client._session import InvalidServerResultError, describe_server
from answerback.types import Implementation

ItemT = TypeVar("ItemT")
PageT = TypeVar("PageT", bound="Page")

MAX_PAGES = 100
"""Pages one listing follows (a real server's whole list fits in a few)."""
MAX_ITEMS = 10_000
"""Items one listing collects, all pages together."""
MAX_BYTES = 32 * 1024 * 1024
"""Bytes of results one listing reads, all pages together."""

_ONE_PAGE = {
    "tools/list": "list_tools",
    "prompts/list": "list_prompts",
    "resources/list": "list_resources",
    "resources/templates/list": "list_resource_templates",
}
"""The client method that fetches one page of each list, named in the advice."""


class Page(Protocol):
    @property
    def next_cursor(self) -> str | None: ...

    def to_wire(self) -> dict[str, Any]: ...


async def every_page(
    method: str,
    server: Implementation | None,
    fetch: Callable[[str | None], Awaitable[PageT]],
    items: Callable[[PageT], Sequence[ItemT]],
) -> list[ItemT]:
    """The items of every page of ``method``'s list, from ``fetch(cursor)`` in turn.

    Raises ``InvalidServerResultError`` if the server repeats a cursor (its paging
    goes round in circles) or the list runs past a bound.
    """
    collected: list[ItemT] = []
    seen: set[str] = set()
    size = 0
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        collected.extend(items(page))
        size += len(pydantic_core.to_json(page.to_wire()))
        if len(collected) > MAX_ITEMS or size > MAX_BYTES:
            raise _too_long(
                method,
                server,
                f"past {MAX_ITEMS} items or {MAX_BYTES} bytes ({len(collected)} items, "
                f"{size} bytes in {len(seen) + 1} pages)",
            )
        cursor = page.next_cursor
        if not cursor:
            return collected
        if cursor in seen:
            shown = cursor if len(cursor) <= 40 else cursor[:37] + "..."
            raise InvalidServerResultError(
                f"{describe_server(server)} sent the {method!r} cursor {shown!r} a second "
                f"time, after {len(seen)} pages: its paging goes round in circles, so the "
                "list was not followed further. Report it to the server's authors.",
                {"server": _wire(server), "method": method},
            )
        seen.add(cursor)
    raise _too_long(method, server, f"past {MAX_PAGES} pages ({len(collected)} items)")


def _too_long(method: str, server: Implementation | None, bound: str) -> InvalidServerResultError:
    one_page = _ONE_PAGE.get(method, "the one-page method")
    return InvalidServerResultError(
        f"{describe_server(server)} listed {method!r} {bound} and was not followed "
        f"further. If the list is really that long, fetch its pages yourself with "
        f"{one_page}(cursor=...), passing each page's next_cursor, and keep what you need.",
        {"server": _wire(server), "method": method},
    )


def _wire(server: Implementation | None) -> object:
    return server.to_wire() if server is not None else None
