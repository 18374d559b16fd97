"""A test server for values nested deeper than a JSON reader parses (its limit is 200).

Run over stdio: ``python tests/servers/deep_server.py``.
"""

from __future__ import annotations

from typing import Any, cast

from answerback.server import MCPServer

mcp = MCPServer("Deep")


@mcp.tool()
def depth(value: list[Any]) -> int:
    """How deeply ``value``'s lists nest: a request carrying it must have been read."""
    levels = 0
    inner: list[Any] | object = value
    while isinstance(inner, list) and inner:
        levels += 1
        inner = cast(list[object], inner)[0]
    return levels


@mcp.tool()
def nested(levels: int) -> dict[str, Any]:
    """A value whose lists nest ``levels`` deep, to make an answer as deep as a test needs."""
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return {"value": value}


if __name__ == "__main__":
    mcp.run()
