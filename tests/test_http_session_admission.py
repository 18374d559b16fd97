"""Streamable HTTP server, handshake era: who gets a place when the server holds
``max_sessions``. Without ``auth=`` a burst of ``initialize`` requests could fill it and
have everyone else refused until its sessions had gone a minute unused; a session that
had no request after its ``initialize`` now gives its place after
``NEWCOMER_GRACE_SECONDS``, while a client that sends ``notifications/initialized``
late, within that grace, keeps its session as any used one does.

The server's clock is anyio's: a session is made to look older by moving its last use
back (``age``), so nothing here sleeps."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from pathlib import Path

import httpx2
import pytest
from http_support import (
    PATIENCE_SECONDS,
    initialize_params,
    rpc,
    serve,
    session_headers,
)
from http_support.apps import tagged_server
from scale_out.cluster import missing_for_redis, redis_server

from answerback.transports.http import RedisState, StreamableHTTPApp
from answerback.transports.http._server import MAKING_ROOM_AFTER_SECONDS, NEWCOMER_GRACE_SECONDS

pytestmark = pytest.mark.anyio

JSON_HEADERS = {"accept": "application/json", "content-type": "application/json"}


@pytest.fixture
async def http() -> AsyncGenerator[httpx2.AsyncClient, None]:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as client:
        yield client


async def initialize_only(http: httpx2.AsyncClient, url: str) -> httpx2.Response:
    """Send ``initialize`` and nothing after it, as a burst of them does."""
    init = rpc("initialize", initialize_params(), id=0)
    return await http.post(url, json=init, headers=JSON_HEADERS)


async def newcomer(http: httpx2.AsyncClient, url: str) -> str:
    response = await initialize_only(http, url)
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


async def still_served(http: httpx2.AsyncClient, url: str, session_id: str) -> None:
    ping = await http.post(url, json=rpc("ping", id=7), headers=session_headers(session_id))
    assert ping.status_code == 200, ping.text


def age(app: StreamableHTTPApp, session_id: str, seconds: float) -> None:
    """Make a session look unused for ``seconds`` more."""
    app.sessions[session_id].last_active -= seconds


async def test_sessions_left_after_their_initialize_give_their_places_after_the_grace(
    http: httpx2.AsyncClient,
) -> None:
    """A burst's sessions hold the server for ``NEWCOMER_GRACE_SECONDS``, not a minute:
    past it, the oldest of them gives its place; its client gets 404."""
    app = StreamableHTTPApp(tagged_server(), max_sessions=2)
    async with serve(app) as server:
        first = await newcomer(http, server.url)
        second = await newcomer(http, server.url)
        full = await initialize_only(http, server.url)
        assert full.status_code == 503
        age(app, first, NEWCOMER_GRACE_SECONDS + 2)
        age(app, second, NEWCOMER_GRACE_SECONDS + 1)
        third = await newcomer(http, server.url)
        assert set(app.sessions) == {second, third}
        gone = await http.post(server.url, json=rpc("ping"), headers=session_headers(first))
        assert gone.status_code == 404
        await still_served(http, server.url, third)
    message = full.json()["error"]["message"]
    assert "used in the last 60 s or opened in the last 10 s" in message, message


async def test_a_client_initialized_late_within_the_grace_keeps_its_session(
    http: httpx2.AsyncClient,
) -> None:
    """A slow client that sends ``notifications/initialized`` within the grace has used
    its session: it keeps it for the minute any used session has, while a session left
    after its ``initialize`` goes first; a newcomer still within the grace stays."""
    app = StreamableHTTPApp(tagged_server(), max_sessions=2)
    async with serve(app) as server:
        slow = await newcomer(http, server.url)
        age(app, slow, NEWCOMER_GRACE_SECONDS - 1)
        initialized = rpc("notifications/initialized", id=None)
        done = await http.post(server.url, json=initialized, headers=session_headers(slow))
        assert done.status_code == 202
        left = await newcomer(http, server.url)
        age(app, slow, MAKING_ROOM_AFTER_SECONDS - 5)
        age(app, left, NEWCOMER_GRACE_SECONDS + 1)
        fresh = await newcomer(http, server.url)
        assert set(app.sessions) == {slow, fresh}
        age(app, fresh, NEWCOMER_GRACE_SECONDS - 1)
        assert (await initialize_only(http, server.url)).status_code == 503
        age(app, slow, 10)  # a used session unused for over a minute: today's rule
        last = await newcomer(http, server.url)
        assert set(app.sessions) == {fresh, last}
        await still_served(http, server.url, fresh)


async def test_with_replicas_a_session_used_elsewhere_gives_its_place_here_only(
    http: httpx2.AsyncClient, tmp_path: Path
) -> None:
    """Without sticky routing a client's requests after its ``initialize`` may all reach
    other replicas, so the one that opened its session sees it unused: past the grace it
    gives its place there, and goes on being served by the others."""
    missing = missing_for_redis()
    if missing is not None:
        pytest.skip(missing)
    with redis_server(tmp_path) as redis:
        state = RedisState(redis.url, replica_id="here")
        here = StreamableHTTPApp(tagged_server(), state=state, max_sessions=1)
        there = StreamableHTTPApp(tagged_server(), state=RedisState(redis.url, replica_id="there"))
        async with serve(here) as opened_on, serve(there) as used_on:
            session_id = await newcomer(http, opened_on.url)
            initialized = rpc("notifications/initialized", id=None)
            headers = session_headers(session_id)
            assert (
                await http.post(used_on.url, json=initialized, headers=headers)
            ).status_code == 202
            age(here, session_id, NEWCOMER_GRACE_SECONDS + 1)
            other = await newcomer(http, opened_on.url)
            assert set(here.sessions) == {other}
            await still_served(http, used_on.url, session_id)
