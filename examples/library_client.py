"""The README's Library client: answer the server's question with a callback.

By default it starts ``library_server.py`` as a subprocess and talks to it over stdio::

    python examples/library_client.py

With ``--http URL`` it connects to a Library server that is already running over
streamable HTTP instead (``python examples/library_server.py --http`` serves
http://127.0.0.1:8000/mcp)::

    python examples/library_client.py --http http://127.0.0.1:8000/mcp
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import anyio

from answerback import Client, StdioServer
from answerback.client import ClientRequestContext
from answerback.types import ElicitRequestParams, ElicitResult

SERVER = Path(__file__).with_name("library_server.py")


async def handle_elicitation(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    """Answer the server's question the way a person filling in the form would.

    ``params.message`` is the question and, in form mode, ``params.requested_schema`` the
    JSON Schema of the answer; a real client would render a form from it.
    """
    return ElicitResult(action="accept", content={"name": "Ada Lovelace"})


async def main(http_url: str | None) -> None:
    target: Any = http_url if http_url else StdioServer(sys.executable, [str(SERVER)])
    # mode="legacy" pins the handshake era, so that the question arrives as an
    # elicitation/create request in the middle of the call, as it does for every client
    # of a server older than 2026-07-28. Leave it out (mode="auto", as in the README's
    # program) to speak 2026-07-28 with a server that does: the same callback answers.
    async with Client(target, mode="legacy", elicitation_callback=handle_elicitation) as client:
        result = await client.call_tool("issue_card")
        print(result.content)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="The Library client.")
    parser.add_argument("--http", metavar="URL", help="connect over streamable HTTP instead")
    anyio.run(main, parser.parse_args().http)
