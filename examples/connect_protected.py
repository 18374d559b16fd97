"""Connect to a protected MCP server as a person at this computer: log in once, in the browser.

Start the server (examples/protected_server.py) against your authorization server, then::

    python examples/connect_protected.py http://127.0.0.1:8000/mcp [--admin]

The first run finds the server's authorization server, registers with it, and opens its
login page in your browser (the page's address is judged first, like any link a server
hands out); the browser comes back to a listener on 127.0.0.1 and the program goes on.
The tokens are kept in a private file, so the next run does not log in again (it
refreshes them when they expire). ``--admin`` also calls ``forget_everyone``, which needs
the ``admin`` scope: the server answers 403 ``insufficient_scope`` and the client sends
you to log in again for that scope (a step-up), then retries the call.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio

from answerback import Client
from answerback.client import AuthorizationError, FileTokenStore, OAuth
from answerback.interact import BrowserLogin, clean
from answerback.types import TextContent


def text_of(blocks: list[object]) -> str:
    return " ".join(block.text for block in blocks if isinstance(block, TextContent))


async def main(url: str, tokens: Path, admin: bool) -> None:
    async with BrowserLogin(tell=print) as login:
        auth = OAuth(
            redirect_uri=login.redirect_uri,
            authorize=login,
            store=FileTokenStore(tokens),
            client_name="answerback example",
        )
        async with Client(url, auth=auth) as client:
            added = await client.call_tool("add_note", {"text": "buy tea"})
            print(text_of(list(added.content)))
            mine = await client.call_tool("my_notes")
            print("My notes:", text_of(list(mine.content)))
            if admin:
                forgot = await client.call_tool("forget_everyone")
                print(text_of(list(forgot.content)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Log in to a protected MCP server and use it.")
    parser.add_argument("url", help="the server's MCP endpoint, e.g. http://127.0.0.1:8000/mcp")
    parser.add_argument(
        "--tokens",
        type=Path,
        default=Path.home() / ".config" / "answerback-example" / "tokens.json",
        help="where the tokens are kept (created 0600)",
    )
    parser.add_argument("--admin", action="store_true", help="also call forget_everyone")
    options = parser.parse_args()
    try:
        anyio.run(main, options.url, options.tokens, options.admin)
    except AuthorizationError as exc:
        sys.exit(f"Could not log in: {clean(str(exc))}")  # it quotes the servers
