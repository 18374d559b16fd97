"""Roots, live on the client and enforced on the server.

The client keeps one ``Roots`` list (the directories the person grants) and changes it
while connected; the server reads files only through ``ctx.resolve_path``, which
refuses ``..`` that climbs out of a root, a symbolic link that leads outside, and any
path outside every root. Both protocol generations run: on 2025-11-25 the change is
announced (``notifications/roots/list_changed``) and the server asks again; on
2026-07-28 the next request simply gets the current list.

Run it as a client (it starts itself as the server, over stdio)::

    python examples/roots_guard.py

``--in-process`` runs the same server inside the client's event loop instead, and
``--serve`` runs only the server on stdio, for any MCP client to connect to.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio

from answerback import Client, StdioServer
from answerback.interact import Roots
from answerback.server import Context, MCPServer
from answerback.types import TextContent

mcp = MCPServer("Notebook")


@mcp.tool()
async def read_note(ctx: Context, path: str) -> str:
    """A file from the client's roots (a relative path starts at the first root)."""
    return (await ctx.resolve_path(path)).read_text(encoding="utf-8")


# -- the client's side -------------------------------------------------------------------


async def read(client: Client, path: str, shown: str) -> None:
    """Ask for ``path`` and print the answer (the roots, which vary, left out)."""
    result = await client.call_tool("read_note", {"path": path})
    [content] = result.content
    assert isinstance(content, TextContent)
    answer = content.text.removeprefix("Error executing tool: ").split(" (the roots are")[0]
    print(f"  {shown}: {answer.replace(path, shown)}")


def make_tree(home: str) -> tuple[Path, Path]:
    """work/ (a note, and a link to shared/) and shared/ (a plan)."""
    work, shared = Path(home, "work"), Path(home, "shared")
    (work / "notes").mkdir(parents=True)
    shared.mkdir()
    (work / "notes" / "today.md").write_text("Tea at four.", encoding="utf-8")
    (shared / "plan.md").write_text("Ship on Friday.", encoding="utf-8")
    (work / "shortcut").symlink_to(shared, target_is_directory=True)
    return work, shared


async def main(target: Any) -> None:
    with tempfile.TemporaryDirectory() as home:
        work, shared = make_tree(home)
        plan = str(shared / "plan.md")
        roots = Roots([work])
        for mode in ("legacy", "2026-07-28"):
            async with Client(target, mode=mode, list_roots_callback=roots.list_roots) as client:
                roots.attach(client)
                print(f"{mode}, roots: work")
                await read(client, "notes/today.md", "notes/today.md")
                await read(client, "../shared/plan.md", "../shared/plan.md")
                await read(client, "shortcut/plan.md", "shortcut/plan.md")
                await roots.add(shared)
                print(f"{mode}, roots: work, shared")
                await read(client, plan, "shared/plan.md")
                await read(client, "shortcut/plan.md", "shortcut/plan.md")
                await roots.remove(shared)
                print(f"{mode}, roots: work")
                await read(client, plan, "shared/plan.md")


if __name__ == "__main__":
    if "--serve" in sys.argv:
        mcp.run()
    elif "--in-process" in sys.argv:
        anyio.run(main, mcp)
    else:
        anyio.run(main, StdioServer(sys.executable, [str(Path(__file__).resolve()), "--serve"]))
