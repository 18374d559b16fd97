"""A resource that looks a record up raises ``ResourceNotFoundError`` for one that does
not exist, so the client learns it asked for something that is not there (not that the
server failed), and can tell the person so.

The server is in this process; a client reads a book that exists and one that does not,
in each protocol generation. Run: ``python examples/missing_resource.py``. It prints::

    legacy: Emma, by Jane Austen
    legacy: no such book: {'uri': 'books://nope'} (ResourceNotFoundError -32002)
    2026-07-28: Emma, by Jane Austen
    2026-07-28: no such book: {'uri': 'books://nope'} (InvalidParamsError -32602)

A legacy server answers with -32002 and a legacy client raises it back as
``ResourceNotFoundError``; 2026-07-28 sends -32602 (invalid params), raised as
``InvalidParamsError``; both carry the URI in ``data``.
"""

from __future__ import annotations

import anyio

from answerback import Client, MCPError
from answerback.server import MCPServer
from answerback.types import ResourceNotFoundError, TextResourceContents

BOOKS = {"emma": "Emma, by Jane Austen"}

mcp = MCPServer("Library")


@mcp.resource("books://{book_id}")
def book(book_id: str) -> str:
    if book_id not in BOOKS:
        raise ResourceNotFoundError(f"books://{book_id}")
    return BOOKS[book_id]


async def main() -> None:
    for mode in ("legacy", "2026-07-28"):
        async with Client(mcp, mode=mode) as client:
            for uri in ("books://emma", "books://nope"):
                try:
                    result = await client.read_resource(uri)
                except MCPError as exc:  # ResourceNotFoundError, or 2026-07-28's -32602
                    kind = type(exc).__name__
                    print(f"{mode}: no such book: {exc.data} ({kind} {exc.code})")
                    continue
                [contents] = result.contents
                assert isinstance(contents, TextResourceContents)
                print(f"{mode}: {contents.text}")


if __name__ == "__main__":
    anyio.run(main)
