"""An answerback server whose tools return what JSON does not always write as an object,
so each result goes out wrapped as ``{"result": value}``; one returns a model, sent as
itself. FastMCP's client reads them in ``tests/interop/fastmcp_reads_data.py``.

Run over stdio: ``python tests/interop/answerback_wrapped_results.py``.
"""

from __future__ import annotations

from pydantic import BaseModel

from answerback.server import MCPServer

mcp = MCPServer("wrapped-results")


class Seat(BaseModel):
    row: int
    taken: bool


@mcp.tool()
def count() -> int:
    return 3


@mcp.tool()
def greeting() -> str:
    return "hello"


@mcp.tool()
async def names() -> list[str]:
    return ["q-0", "q-1"]


@mcp.tool()
def nothing_found() -> int | None:
    return None


@mcp.tool()
def seats() -> list[Seat]:
    """A wrapped value whose schema has ``$defs`` (moved to the root)."""
    return [Seat(row=12, taken=True)]


@mcp.tool()
def seat() -> Seat:
    """An object: sent as itself, not wrapped."""
    return Seat(row=3, taken=False)


if __name__ == "__main__":
    mcp.run()
