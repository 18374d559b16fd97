"""A test server that sends people to web pages: URL-mode elicitation, error -32042 and
``notifications/elicitation/complete``.

``read_drive`` refuses until the account is connected (-32042, keeping the session of
the call it refused); ``browser_finished`` plays the connect page reporting back: it
marks the account connected and tells the client through that kept session, after the
refused call has ended, as a real server would. Account names are the tests' own, so
tests sharing this module do not meet.

Run over stdio: ``python tests/servers/url_server.py``.
"""

from __future__ import annotations

from answerback.server import Context, MCPServer, ServerSession
from answerback.types import (
    ElicitRequest,
    ElicitRequestURLParams,
    InputRequiredResult,
    URLElicitationRequiredError,
)

mcp = MCPServer("Links")

_connected: set[str] = set()
_waiting: dict[str, ServerSession] = {}
"""Elicitation id → the session of the call refused for want of it."""


@mcp.tool()
async def sign_in(ctx: Context, url: str, elicitation_id: str = "sign-in-1") -> str:
    """Ask the person to open ``url``; report which result came back."""
    answer = await ctx.elicit_url("Sign in to continue", url, elicitation_id)
    _waiting[elicitation_id] = ctx.session
    return f"{type(answer).__name__} {answer.action}"


@mcp.tool()
async def read_drive(ctx: Context, account: str) -> str:
    """The account's files, once it is connected; until then error -32042."""
    if account in _connected:
        return f"the files of {account}"
    elicitation_id = f"connect-{account}"
    _waiting[elicitation_id] = ctx.session
    connect = ElicitRequestURLParams(
        message=f"Connect the drive of {account}",
        url=f"https://drive.example.com/connect?account={account}",
        elicitation_id=elicitation_id,
    )
    raise URLElicitationRequiredError([connect])


@mcp.tool()
async def browser_finished(elicitation_id: str) -> bool:
    """What the page does when the person is done there: the account is connected and the
    client is told, on the session of the call that asked. Returns whether it was sent."""
    _connected.add(elicitation_id.removeprefix("connect-"))
    return await _waiting.pop(elicitation_id).send_elicitation_complete(elicitation_id)


@mcp.tool()
async def complete_unknown_then(elicitation_id: str) -> bool:
    """Say that an elicitation nobody asked for completed, then that ``elicitation_id``
    did, in this order, on the session of the call that asked for it."""
    session = _waiting.pop(elicitation_id)
    await session.send_elicitation_complete("never-asked")
    return await session.send_elicitation_complete(elicitation_id)


@mcp.tool()
async def never_enough(ctx: Context) -> str:
    """Always requires the same elicitation, however often the person agrees."""
    raise URLElicitationRequiredError(
        [
            ElicitRequestURLParams(
                message="Connect again",
                url="https://drive.example.com/connect?again",
                elicitation_id="never-enough",
            )
        ]
    )


@mcp.tool()
async def hand_made_link(url: str) -> InputRequiredResult:
    """2026-07-28, by hand: an input request for ``url`` (checked before it goes out)."""
    request = ElicitRequest(params=ElicitRequestURLParams(message="Open this", url=url))
    return InputRequiredResult(input_requests={"link": request})


if __name__ == "__main__":
    mcp.run()
