"""A server that stops resets every kept-alive connection the client's pool holds, but
the resets do not all reach the pool at once: a request sent again after one reset can
go out on another of those connections, which then closes without an answer. That is
one more stale connection, not a server that read the request: it is sent again too, so
the caller learns what is true now (here, the answer).

``_send`` is driven through httpx2's ``MockTransport``: the order of the failures is the
test's, not the kernel's (the real race failed ``test_http_client_dead_server.py`` on
trio now and then, saying "the server closed the connection" for a server that was gone).
"""

from __future__ import annotations

import httpx2
import pytest

from answerback.transports.http import StreamableHTTPTransport

pytestmark = pytest.mark.anyio

URL = "http://127.0.0.1:9/mcp"


def failing_then_answering(failures: list[Exception]) -> tuple[httpx2.AsyncClient, list[int]]:
    """A client whose first requests fail with ``failures``, in order, then are answered."""
    tries: list[int] = []

    def handle(request: httpx2.Request) -> httpx2.Response:
        tries.append(len(tries) + 1)
        if failures:
            raise failures.pop(0)
        return httpx2.Response(200, json={"jsonrpc": "2.0", "id": 1, "result": {}})

    return httpx2.AsyncClient(transport=httpx2.MockTransport(handle)), tries


def reset() -> httpx2.ReadError:
    error = httpx2.ReadError("[Errno 104] Connection reset by peer")
    error.__cause__ = ConnectionResetError(104, "Connection reset by peer")
    return error


def closed_unanswered() -> httpx2.RemoteProtocolError:
    return httpx2.RemoteProtocolError("Server disconnected without sending a response.")


async def send(client: httpx2.AsyncClient, *, resend_after_reset: bool = True) -> int:
    transport = StreamableHTTPTransport(URL, http_client=client)
    response = await transport._send(  # pyright: ignore[reportPrivateUsage]
        client,
        "POST",
        httpx2.URL(URL),
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}',
        {"content-type": "application/json"},
        httpx2.Timeout(5.0),
        resend_after_reset,
    )
    await response.aclose()
    return response.status_code


async def test_a_stale_connection_closing_unanswered_after_a_reset_is_sent_again() -> None:
    client, tries = failing_then_answering([reset(), closed_unanswered()])
    async with client:
        assert await send(client) == 200
    assert tries == [1, 2, 3]


async def test_closing_unanswered_with_no_reset_before_is_the_callers() -> None:
    """Without a reset first it may be a server that read the request and died: whether
    it did its work is unknown, so it is not sent again."""
    client, tries = failing_then_answering([closed_unanswered()])
    async with client:
        with pytest.raises(httpx2.RemoteProtocolError):
            await send(client)
    assert tries == [1]


async def test_what_must_not_be_repeated_is_not_sent_again_after_a_reset() -> None:
    client, tries = failing_then_answering([reset(), closed_unanswered()])
    async with client:
        with pytest.raises(httpx2.ReadError):
            await send(client, resend_after_reset=False)
    assert tries == [1]


async def test_stale_connections_are_tried_a_bounded_number_of_times() -> None:
    stale: list[Exception] = [closed_unanswered() for _ in range(10)]
    client, tries = failing_then_answering([reset(), *stale])
    async with client:
        with pytest.raises(httpx2.RemoteProtocolError):
            await send(client)
    assert len(tries) == 5  # the first try and four more (_RESETS_RESENT)
