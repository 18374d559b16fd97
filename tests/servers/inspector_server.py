"""A server for the MCP Inspector's command-line mode (tests/test_interop_inspector.py):
tools whose arguments are of several types, one with structured output, prompts with
arguments, resources and a resource template.

``python tests/servers/inspector_server.py`` serves over stdio;
``python tests/servers/inspector_server.py PORT`` over streamable HTTP on
http://127.0.0.1:PORT/mcp.
"""

from __future__ import annotations

import sys
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from answerback.server import Context, MCPServer

mcp = MCPServer("Inspected", version="1.2.3")


@mcp.tool()
def book_room(
    name: str,
    guests: int,
    member: bool,
    room: Literal["quiet", "group"],
    hours: float = 1.0,
) -> str:
    """Book a study room; the answer shows each argument's Python type."""
    return f"name={name!r} guests={guests!r} member={member!r} room={room!r} hours={hours!r}"


class Loan(BaseModel):
    title: str
    weeks: int
    renewable: bool


@mcp.tool()
def lend(title: Annotated[str, Field(description="The book's title")], weeks: int = 3) -> Loan:
    """Lend a book: structured output."""
    return Loan(title=title, weeks=weeks, renewable=weeks < 4)


@mcp.tool()
async def announce(ctx: Context, text: str) -> str:
    """Send ``text`` as an info log message, and return it."""
    await ctx.info(text)
    return text


@mcp.prompt(title="Review a book")
def review(book: str, tone: Literal["friendly", "stern"] = "friendly", sentences: int = 3) -> str:
    """Ask for a review of a book."""
    return f"Write a {tone} review of {book} in {sentences} sentences."


@mcp.resource("library://hours", title="Opening hours")
def hours() -> str:
    """When the library is open."""
    return "Monday to Friday, 9 to 17"


@mcp.resource("books://{book_id}", mime_type="application/json")
def book(book_id: str) -> dict[str, str]:
    """One book of the catalogue."""
    return {"id": book_id, "title": book_id.title()}


if __name__ == "__main__":
    if len(sys.argv) > 1:
        mcp.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        mcp.run()
