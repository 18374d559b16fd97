"""What a host shows: the server's title, description, website and icons (its
``serverInfo``), and the icons and ``_meta`` of a tool, a prompt and a resource.

The server is in this process; a client connects in each protocol generation and prints
what it was told. Run: ``python examples/icons_and_meta.py``. It prints::

    legacy: Library (The Library): Lends books. https://example.com/library
      icons: https://example.com/library.png (image/png, 48x48)
      tool lend: icon image/svg+xml, _meta {'com.example/cost': 'free'}
      prompt review: icon image/png, _meta {'com.example/kind': 'review'}
      resource catalogue: icon image/png, _meta {'com.example/rows': 120}
    2026-07-28: Library (The Library): Lends books. https://example.com/library
      ... (the same again)
    refused: Invalid argument for mcp.tool(): meta has the key 'io.modelcontextprotocol/cost', ...

All of it is the server's own text, which a hostile server could fill with escape
sequences that retitle the window or clear the screen, or a bidi override that reorders
the line: ``clean`` writes those out (``\\x1b``, ``\\u202e``) before the terminal sees them.

A ``_meta`` key takes the form the specification gives (an optional reverse-DNS prefix
ending in ``/``, then a name): ``com.example/cost``, not ``cost (EUR)``; a prefix such as
``io.modelcontextprotocol/`` is MCP's own, so the last line shows one refused.
"""

from __future__ import annotations

import anyio

from answerback import Client
from answerback.interact import clean
from answerback.server import MCPServer
from answerback.types import Icon, Prompt, Resource, Tool

LOGO = Icon(src="https://example.com/library.png", mime_type="image/png", sizes=["48x48"])
BOOK = Icon(src="data:image/svg+xml;base64,PHN2Zy8+", mime_type="image/svg+xml")

mcp = MCPServer(
    "Library",
    title="The Library",
    description="Lends books.",
    website_url="https://example.com/library",
    icons=[LOGO],
)


@mcp.tool(icons=[BOOK], meta={"com.example/cost": "free"})
def lend(title: str) -> str:
    """Lend a book."""
    return f"Lent {title}."


@mcp.prompt(icons=[LOGO], meta={"com.example/kind": "review"})
def review(title: str) -> str:
    """Ask for a review of a book."""
    return f"Write a short review of {title}."


@mcp.resource("books://catalogue", icons=[LOGO], meta={"com.example/rows": 120})
def catalogue() -> str:
    """Every book on the shelves."""
    return "Dune\nEmma"


def say(text: str) -> None:
    """Print a line that quotes the server, on one line and with nothing a terminal obeys."""
    print(clean(text, newlines=False))


async def show(server: MCPServer) -> None:
    """What a client is told of ``server`` in each protocol generation."""
    for mode in ("legacy", "2026-07-28"):
        async with Client(server, mode=mode) as client:
            info = client.server_info
            say(f"{mode}: {info.name} ({info.title}): {info.description} {info.website_url}")
            for icon in info.icons or []:
                say(f"  icons: {icon.src} ({icon.mime_type}, {', '.join(icon.sizes or [])})")
            listed: list[tuple[str, Tool | Prompt | Resource]] = [
                *(("tool", t) for t in await client.list_all_tools()),
                *(("prompt", p) for p in (await client.list_prompts()).prompts),
                *(("resource", r) for r in (await client.list_resources()).resources),
            ]
            for kind, item in listed:
                icons = ", ".join(str(icon.mime_type) for icon in item.icons or [])
                say(f"  {kind} {item.name}: icon {icons}, _meta {item.meta}")


async def main() -> None:
    await show(mcp)
    try:
        mcp.tool(meta={"io.modelcontextprotocol/cost": "free"})
    except ValueError as refused:
        print(f"refused: {refused}")


if __name__ == "__main__":
    anyio.run(main)
