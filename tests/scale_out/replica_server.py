"""One replica of a scaled-out MCP server, run the way a deployment runs it.

``python tests/scale_out/replica_server.py --port P --name A [--redis URL]
[--heartbeat S] [--state-key HEX] [--auth]`` serves ``http://127.0.0.1:P/mcp`` with
``mcp.run(transport="streamable-http", state=RedisState(URL))``; without ``--redis`` it
keeps its state in memory (the single-replica baseline of the benchmark). Every replica
of a deployment runs this same script, so a tool list change or a question asked on one
is the same on all; the tools name the replica that ran them, so a test can see where a
call landed. With ``--auth`` a request must say who sends it (``BearerName``), so a
session is bound to its user on every replica.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from answerback.server import Context, MCPServer
from answerback.transports.http import AuthInfo

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

SENTINEL_URI = "note://sentinel"
"""The resource ``announce`` reports updated after the tool list change: a client that
has seen it has seen everything ``announce`` sent before it (one stream, in order)."""


class Person(BaseModel):
    name: str


class BearerName:
    """A stand-in for real token checks: ``Authorization: Bearer <name>`` is user
    ``<name>``, no header is a 401. Enough to see sessions bound to their user."""

    routes: Sequence[BaseRoute] = ()

    async def authenticate(self, request: Request) -> AuthInfo | Response:
        from starlette.responses import JSONResponse

        scheme, _, name = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not name:
            return JSONResponse({"error": "invalid_token"}, status_code=401)
        return AuthInfo(subject=name, issuer="scale-out-test")

    async def authorize(self, info: AuthInfo, message: Mapping[str, Any]) -> Response | None:
        return None


def build_server(name: str, state_key: bytes | None) -> MCPServer:
    """The replica's server: every replica of a deployment builds the same one. Its
    2026-07-28 ``requestState`` is single-use, which only Redis can enforce across them."""
    keys = [state_key] if state_key else None
    mcp = MCPServer("scale-out-replica", state_keys=keys, single_use_state=True)

    @mcp.tool()
    def whoami() -> str:
        """The name of the replica that ran this call."""
        return name

    @mcp.tool()
    async def ask_name(ctx: Context) -> str:
        """Ask the client for a name (a real question on a legacy session, an
        ``InputRequiredResult`` on 2026-07-28), then greet it from this replica."""
        answer = await ctx.elicit("What is your name?", schema=Person)
        if answer.action != "accept":
            return f"No name ({answer.action}), from {name}"
        return f"Hello, {answer.data.name}, from {name}"

    @mcp.tool()
    async def roots_here(ctx: Context) -> list[str]:
        """The client's roots as this replica's ``ctx.roots()`` sees them."""
        return [str(root.uri) for root in await ctx.roots()]

    @mcp.tool()
    async def announce() -> str:
        """Tell every client the tool list changed, then that the sentinel changed."""
        await mcp.notify_tools_changed()
        await mcp.notify_resource_updated(SENTINEL_URI)
        return f"announced from {name}"

    @mcp.resource(SENTINEL_URI)
    def sentinel() -> str:
        """A resource clients subscribe to, so ``announce`` can mark its end."""
        return "sentinel"

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description="one replica of the scale-out tests")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--name", default=f"replica-{os.getpid()}")
    parser.add_argument("--redis", help="Redis URL (omit: state in this process's memory)")
    parser.add_argument("--heartbeat", type=float, default=1.0, help="seconds between beats")
    parser.add_argument("--state-key", help="hex of the shared requestState key (32 bytes)")
    parser.add_argument("--auth", action="store_true", help="require Authorization: Bearer NAME")
    args = parser.parse_args()
    key = bytes.fromhex(args.state_key) if args.state_key else None
    mcp = build_server(args.name, key)
    if args.redis is None:
        mcp.run(transport="streamable-http", host="127.0.0.1", port=args.port)
        return
    from answerback.transports.http import RedisState

    state = RedisState(args.redis, replica_id=args.name, heartbeat_seconds=args.heartbeat)
    auth = BearerName() if args.auth else None
    mcp.run(transport="streamable-http", host="127.0.0.1", port=args.port, state=state, auth=auth)


if __name__ == "__main__":
    main()
