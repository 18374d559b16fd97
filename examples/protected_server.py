"""A protected MCP server: every request needs an access token from your authorization server.

Each user keeps their own notes (keyed by who their token says they are, never by what the
client claims); ``forget_everyone`` also needs the ``admin`` scope, so a token without it
gets 403 ``insufficient_scope`` and a client steps up.

Run it against any OAuth 2.1 authorization server that signs JWT access tokens whose
audience is this server's URL (RFC 8707 ``resource``)::

    python examples/protected_server.py --issuer https://auth.example.com [--port 8000]

Clients find the authorization server from the server's protected resource metadata at
``http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp``; see
``examples/connect_protected.py`` for one. The tests run it against
``tests/servers/oauth_server.py``.
"""

from __future__ import annotations

import argparse

from answerback.server import Context, JWTVerifier, MCPServer, ResourceServer

mcp = MCPServer("Protected notes")
notes: dict[str, list[str]] = {}


def user_of(ctx: Context) -> str:
    """Whose notes: the token's issuer and subject (``ResourceServer`` guarantees one)."""
    assert ctx.auth is not None, "served without a ResourceServer"
    return ctx.auth.principal


@mcp.tool()
def add_note(ctx: Context, text: str) -> str:
    """Keep a note for the calling user."""
    notes.setdefault(user_of(ctx), []).append(text)
    return f"Noted for {ctx.auth.subject if ctx.auth else 'nobody'}."


@mcp.tool()
def my_notes(ctx: Context) -> list[str]:
    """The calling user's notes (nobody else's)."""
    return notes.get(user_of(ctx), [])


@mcp.tool(scopes=["admin"])
def forget_everyone() -> str:
    """Drop every user's notes (needs the admin scope)."""
    count = len(notes)
    notes.clear()
    return f"Forgot the notes of {count} users."


def main() -> None:
    parser = argparse.ArgumentParser(description="A protected MCP server (streamable HTTP).")
    parser.add_argument("--issuer", required=True, help="the authorization server's issuer URL")
    parser.add_argument("--port", type=int, default=8000)
    options = parser.parse_args()
    resource = f"http://127.0.0.1:{options.port}/mcp"
    auth = ResourceServer(
        resource,
        [options.issuer],
        JWTVerifier(issuer=options.issuer),  # keys from the issuer's metadata; aud = resource
        scopes=["mcp"],
        resource_name="Protected notes",
    )
    mcp.run(transport="streamable-http", port=options.port, auth=auth)


if __name__ == "__main__":
    main()
