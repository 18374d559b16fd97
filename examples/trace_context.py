"""A host passes its trace context to a tool call with ``call_tool(..., meta=...)``: it
travels in the request's ``_meta``, and the tool reads it as ``ctx.meta`` in both
protocol generations (on 2026-07-28, in every round of a call that asks questions).

The server is in this process; a client calls the tool in each generation.
Run: ``python examples/trace_context.py``. It prints::

    legacy: the tool ran under trace 4bf92f3577b34da6a3ce929d0e0e4736
    2026-07-28: the tool ran under trace 4bf92f3577b34da6a3ce929d0e0e4736

A key the client sets in ``_meta`` itself (``progressToken``, the 2026-07-28 protocol
keys) is refused with ``ValueError`` before anything is sent.
"""

from __future__ import annotations

import anyio

from answerback import Client
from answerback.server import Context, MCPServer

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

mcp = MCPServer("Traced")


@mcp.tool()
def lookup(ctx: Context) -> str:
    """Report the trace the call belongs to, as a tool would hand it to its own spans."""
    traceparent = (ctx.meta or {}).get("traceparent", "")
    trace_id = traceparent.split("-")[1] if traceparent.count("-") == 3 else "none"
    return f"the tool ran under trace {trace_id}"


async def main() -> None:
    for mode in ("legacy", "2026-07-28"):
        async with Client(mcp, mode=mode) as client:
            result = await client.call_tool("lookup", meta={"traceparent": TRACEPARENT})
        print(f"{mode}: {result.text}")


if __name__ == "__main__":
    anyio.run(main)
