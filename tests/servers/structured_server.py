"""A test server whose tools return models in the shapes whose output schemas pydantic
writes with ``$defs``: a list of models (wrapped in ``result``) and a recursive model.
Other SDKs' clients check structured content against those schemas, so the schemas'
references must resolve where they stand.

Run over stdio: ``python tests/servers/structured_server.py``.
"""

from __future__ import annotations

from pydantic import BaseModel

from answerback.server import MCPServer

mcp = MCPServer("Structured")


class Station(BaseModel):
    city: str
    celsius: int


class Region(BaseModel):
    name: str
    parts: list[Region]


@mcp.tool()
def stations() -> list[Station]:
    """Two stations: the output schema's items refer to ``#/$defs/Station``."""
    return [Station(city="Oslo", celsius=14), Station(city="Bergen", celsius=11)]


@mcp.tool()
def regions() -> Region:
    """A recursive model: pydantic writes its schema as a reference to its definition."""
    return Region(name="Norway", parts=[Region(name="Vestland", parts=[])])


if __name__ == "__main__":
    mcp.run()
