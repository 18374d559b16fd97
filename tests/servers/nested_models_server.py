"""A test server whose tools return MCP models inside the tool's own data: a dict of
images, text blocks in a dataclass and in a TypedDict, a model under ``-> object``, and
a ``CallToolResult`` whose structured content holds one. Each model's unset optional
fields (``annotations``, ``_meta``) must be left out, as they are for top-level content,
not sent as ``null``, which the schemas do not allow.

Run over stdio: ``python tests/servers/nested_models_server.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

from typing_extensions import TypedDict

from answerback.server import MCPServer
from answerback.types import CallToolResult, ImageContent, TextContent

mcp = MCPServer("Nested models")


@dataclass
class Note:
    title: str
    lines: list[TextContent]


class Page(TypedDict):
    blocks: list[TextContent]


@mcp.tool()
def pictures() -> dict[str, ImageContent]:
    """A dict of images: sent as structured content, and as its JSON text."""
    return {"dot": ImageContent(data="iVBORw0KGgo=", mime_type="image/png")}


@mcp.tool()
def note() -> Note:
    """A dataclass holding text blocks."""
    return Note(title="hello", lines=[TextContent(text="one"), TextContent(text="two")])


@mcp.tool()
def page() -> Page:
    """A TypedDict holding text blocks."""
    return {"blocks": [TextContent(text="one")]}


@mcp.tool()
def anything() -> object:
    """A model under an annotation that names no model."""
    return {"block": TextContent(text="one")}


@mcp.tool()
def built() -> CallToolResult:
    """A result built by hand, its structured content holding a model."""
    return CallToolResult(
        content=[TextContent(text="built")],
        structured_content={"block": TextContent(text="one")},
    )


if __name__ == "__main__":
    mcp.run()
