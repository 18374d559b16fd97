"""One ``listen()`` loop hears list changes and resource updates in either protocol
generation: on 2026-07-28 they come on a ``subscriptions/listen`` stream; a legacy
server sends them on the session, and the client subscribes the URIs asked for (and
unsubscribes them when the block ends).

The server is in this process; a client listens in each generation.
Run: ``python examples/listen_both_eras.py``. It prints::

    legacy: heard notifications/tools/list_changed
    legacy: heard notifications/resources/updated for library://news
    2026-07-28: heard notifications/tools/list_changed
    2026-07-28: heard notifications/resources/updated for library://news

The block ends with ``ConnectionClosedError`` if the server goes away: over HTTP, on
a legacy connection, once the client has failed to reach it for
``connect_timeout_seconds``.
"""

from __future__ import annotations

import anyio

from answerback import Client
from answerback.server import MCPServer
from answerback.types import ResourceUpdatedNotification

NEWS = "library://news"

mcp = MCPServer("Library")


@mcp.resource(NEWS)
def news() -> str:
    return "The library opens at 9."


@mcp.tool()
def add_shelf() -> str:
    """A tool, so the server offers tools (and says when their list changes)."""
    return "added"


async def main() -> None:
    for mode in ("legacy", "2026-07-28"):
        async with (
            Client(mcp, mode=mode) as client,
            client.listen(tools_list_changed=True, resource_subscriptions=[NEWS]) as stream,
        ):
            # Stands in for whatever changes the server: here, the server itself.
            await mcp.notify_tools_changed()
            await mcp.notify_resource_updated(NEWS)
            heard = 0
            async for notification in stream:
                about = ""
                if isinstance(notification, ResourceUpdatedNotification):
                    about = f" for {notification.params.uri}"
                print(f"{mode}: heard {notification.method}{about}")
                heard += 1
                if heard == 2:
                    break


if __name__ == "__main__":
    anyio.run(main)
