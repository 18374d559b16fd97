"""The README's Library server: a tool that cannot finish without asking the user.

Run it over stdio (``python examples/library_server.py``) or over HTTP
(``python examples/library_server.py --http`` serves http://127.0.0.1:8000/mcp).
"""

import sys

from pydantic import BaseModel

from answerback.server import Context, MCPServer
from answerback.types import (
    ClientCapabilities,
    ElicitationCapability,
    RootsCapability,
    SamplingCapability,
)

mcp = MCPServer("Library")


class CardHolder(BaseModel):
    name: str


@mcp.tool()
async def issue_card(ctx: Context) -> str:
    """Issue a new library card."""
    answer = await ctx.elicit("What name should go on the card?", schema=CardHolder)
    if answer.action == "accept":
        return f"Card issued to {answer.data.name}."
    return "No card issued."


@mcp.tool()
def client_features(ctx: Context) -> list[str]:
    """Which optional features the connected client declared."""
    declared = {
        "elicitation": ClientCapabilities(elicitation=ElicitationCapability()),
        "sampling": ClientCapabilities(sampling=SamplingCapability()),
        "roots": ClientCapabilities(roots=RootsCapability()),
    }
    return [
        name
        for name, capability in declared.items()
        if ctx.session.check_client_capability(capability)
    ]


if __name__ == "__main__":
    if "--http" in sys.argv:
        mcp.run(transport="streamable-http", host="127.0.0.1", port=8000, path="/mcp")
    else:
        mcp.run()
