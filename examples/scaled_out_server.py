"""One replica of a server that asks, scaled out through Redis (docs/deployment.md).

Run the same file several times, on different ports, against one Redis, and put a load
balancer in front (docs/deployment.md has haproxy's and nginx's configurations): a session
opened on one replica carries on on the others, and the client's answer to ``book_table``'s
question may reach any of them.

    python examples/scaled_out_server.py --port 8001 --redis redis://127.0.0.1:6379/0
    python examples/scaled_out_server.py --port 8002 --redis redis://127.0.0.1:6379/0

Each listens on 127.0.0.1 unless ``--host`` says otherwise: a balancer on another machine
needs ``--host 0.0.0.0``. Every replica must share ``state_keys`` (here from
``$ANSWERBACK_STATE_KEY``, 64 hex digits) so a 2026-07-28 retry sealed on one replica
opens on another.
"""

from __future__ import annotations

import argparse
import logging
import os

from pydantic import BaseModel

from answerback.server import Context, MCPServer
from answerback.transports.http import RedisState


class Booking(BaseModel):
    guests: int


def build_server(state_key: bytes | None) -> MCPServer:
    """The server every replica runs: the same tools everywhere."""
    mcp = MCPServer("tables", state_keys=[state_key] if state_key else None)

    @mcp.tool()
    async def book_table(ctx: Context) -> str:
        """Ask how many guests, then book (the answer may arrive at another replica)."""
        answer = await ctx.elicit("How many guests?", schema=Booking)
        if answer.action != "accept":
            return "No booking."
        return f"Booked a table for {answer.data.guests} on replica {os.getpid()}."

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1", help="0.0.0.0: every interface")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/0", help="the shared Redis")
    args = parser.parse_args()
    key_hex = os.environ.get("ANSWERBACK_STATE_KEY")
    mcp = build_server(bytes.fromhex(key_hex) if key_hex else None)
    state = RedisState(args.redis)
    logging.basicConfig(  # an operator's log needs each line's time, level and source
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    mcp.run(transport="streamable-http", host=args.host, port=args.port, state=state)


if __name__ == "__main__":
    main()
