"""Following a server's list cursors to the end, and no further.

A listing ends when a page comes without ``nextCursor``; the server decides when that
is. A server that hands back a cursor it gave before, or one whose cursors never end,
would otherwise keep the client listing (and collecting) until memory runs out, so a
listing refuses a repeated cursor and stops after ``MAX_PAGES`` pages.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol, TypeVar

from answerback.client._session import InvalidServerResultError, describe_server
from answerback.types import Implementation

ItemT = TypeVar("ItemT")
PageT = TypeVar("PageT", bound="Page")

MAX_PAGES = 1000
"""Pages one listing follows: far more than any real list needs (a server pages by
dozens or hundreds of items), few enough that a server cannot page a client to death."""


class Page(Protocol):
    @property
    def next_cursor(self) -> str | None: ...


async def every_page(
    method: str,
    server: Implementation | None,
    fetch: Callable[[str | None], Awaitable[PageT]],
    items: Callable[[PageT], Sequence[ItemT]],
) -> list[ItemT]:
    """The items of every page of ``method``'s list, from ``fetch(cursor)`` in turn.

    Raises ``InvalidServerResultError`` if the server repeats a cursor (its paging
    goes round in circles) or the list runs past ``MAX_PAGES`` pages.
    """
    collected: list[ItemT] = []
    seen: set[str] = set()
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await fetch(cursor)
        collected.extend(items(page))
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
    raise InvalidServerResultError(
        f"{describe_server(server)} listed {method!r} for more than {MAX_PAGES} pages "
        f"({len(collected)} items) and was not followed further. Fetch the pages yourself "
        "(with the cursor of each) if the list is really that long.",
        {"server": _wire(server), "method": method},
    )


def _wire(server: Implementation | None) -> object:
    return server.to_wire() if server is not None else None
