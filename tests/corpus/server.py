"""The server the hostile-input corpus is thrown at: one of each thing a request can
name (a tool, a prompt, a fixed resource and a template, completions), so that every
method's params reach a real handler.

Run over stdio: ``python tests/corpus/server.py``.
"""

from __future__ import annotations

from answerback.server import MCPServer

mcp = MCPServer("Corpus")


@mcp.tool()
def echo(text: str) -> str:
    """``text``, unchanged: the valid call made after every hostile message."""
    return text


@mcp.prompt()
def greeting(name: str) -> str:
    """A greeting for ``name``."""
    return f"Say hello to {name}."


@mcp.resource("notes://readme", mime_type="text/plain")
def readme() -> str:
    return "Read me."


@mcp.resource("notes://{name}")
def note(name: str) -> str:
    return f"A note called {name}."


@mcp.completion()
async def complete(ref: object, argument: object, context: object) -> list[str]:
    return ["Ada", "Grace"]


if __name__ == "__main__":
    mcp.run()
