"""A browser stand-in for OAuth logins against the test authorization server, and an
answerback MCP server protected by ``ResourceServer`` for it to log in to.

A person's browser opens the login page, the person logs in, and the authorization
server redirects the browser back to the client's loopback listener. Here the "person"
is named in the URL (``user=``: the test server approves that user without a page to
click through), and the "browser" follows the redirect with plain HTTP, as a browser
would. ``follow_login`` is the function a test hands to ``BrowserLogin(open_browser=)``;
run as a program (``python tests/login_support.py URL``), it is the browser command a
CLI test sets in ``$BROWSER`` (with the user from ``$LOGIN_USER``, and ``$LOGIN_DENY=1``
to refuse the login).
"""

from __future__ import annotations

import asyncio
import os
import socket
import stat
import sys
import threading
from collections.abc import Callable, Generator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import httpx2
import uvicorn

from answerback.server import Context, MCPServer, ResourceServer, TokenVerifier
from answerback.transports.http import uvicorn_server


def follow_login(url: str, *, user: str | None = None, deny: bool = False) -> httpx2.Response:
    """Open the login page as ``user`` (the server's default user if ``None``), follow
    the redirect back to the client, and return the page the client answered with."""
    extra: dict[str, str] = {}
    if user is not None:
        extra["user"] = user
    if deny:
        extra["deny"] = "1"
    if extra:
        url += ("&" if urlsplit(url).query else "?") + urlencode(extra)
    with httpx2.Client() as http:
        page = http.get(url)
        if page.status_code not in (302, 303):
            raise AssertionError(f"the login page did not redirect: {page.status_code} {page.text}")
        return http.get(page.headers["location"])


def browser_program(directory: Path) -> Path:
    """An executable that ``$BROWSER`` can name (Python's ``webbrowser`` runs it with the
    URL as its one argument): this module's ``main`` under the test's interpreter."""
    program = directory / "follow-login"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{Path(__file__)}" "$1"\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    return program


def opens_as(user: str | None = None, *, deny: bool = False) -> Callable[[str], bool]:
    """``open_browser`` for ``BrowserLogin``: logs in as ``user`` and reports success."""

    def open_browser(url: str) -> bool:
        follow_login(url, user=user, deny=deny)
        return True

    return open_browser


def protected_mcp() -> MCPServer:
    mcp = MCPServer("protected")

    @mcp.tool()
    async def whoami(ctx: Context) -> str:
        """Who the token says the caller is."""
        assert ctx.auth is not None
        return ctx.auth.subject or "nobody"

    @mcp.tool(scopes=["admin"])
    async def purge(ctx: Context) -> str:
        """Needs the admin scope on top of the server's own."""
        assert ctx.auth is not None
        return f"purged by {ctx.auth.subject} with {' '.join(sorted(ctx.auth.scopes))}"

    return mcp


@contextmanager
def serving_protected(issuer: str, verifier_for: Callable[[str], TokenVerifier]) -> Generator[str]:
    """The protected MCP server under uvicorn, in a thread with an asyncio loop of its own
    (uvicorn runs only on asyncio; the tests run on both backends); its URL.

    The socket is bound first: the resource URL (with its port) is part of the
    ResourceServer's configuration and of every token's audience.
    """
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listening.getsockname()[1]}/mcp"
    verifier = verifier_for(url)
    mcp = protected_mcp()
    resource_server = ResourceServer(url, [issuer], verifier, scopes=["mcp"])
    started = threading.Event()
    server = uvicorn_server(mcp.http_app(auth=resource_server), on_started=started.set)
    with serving_in_a_thread(server, listening, started, "the protected server"):
        yield url


@contextmanager
def serving_in_a_thread(
    server: uvicorn.Server, listening: socket.socket, started: threading.Event, what: str
) -> Generator[None]:
    """``server`` serving on ``listening`` in a thread with an asyncio loop of its own
    (uvicorn runs only on asyncio; the tests run on both backends) once ``started`` is
    set, until the block ends; then stopped, and the socket closed."""
    thread = threading.Thread(target=asyncio.run, args=(server.serve([listening]),))
    thread.start()
    try:
        assert started.wait(30), f"{what} did not start"
        yield
    finally:
        server.should_exit = True
        thread.join(30)
        listening.close()


def main() -> int:
    page = follow_login(
        sys.argv[1], user=os.environ.get("LOGIN_USER"), deny=os.environ.get("LOGIN_DENY") == "1"
    )
    return 0 if page.status_code in (200, 400) else 1


if __name__ == "__main__":
    sys.exit(main())
