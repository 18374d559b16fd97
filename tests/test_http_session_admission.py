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


async def test_with_replicas_a_session_given_up_ends_everywhere(
    http: httpx2.AsyncClient, tmp_path: Path
) -> None:
    """A session given up for a new one, unused since its ``initialize`` on every
    replica, ends on every replica: its client gets 404 on the other one too and sets up
    a new session, and no shared record outlives the place it gave up. (One in use
    through another replica is given up here only: test_replica_adoption_limits.)"""
    missing = missing_for_redis()
    if missing is not None:
        pytest.skip(missing)
    with redis_server(tmp_path) as redis:
        state = RedisState(redis.url, replica_id="here")
        here = StreamableHTTPApp(tagged_server(), state=state, max_sessions=1)
        there = StreamableHTTPApp(tagged_server(), state=RedisState(redis.url, replica_id="there"))
        async with serve(here) as opened_on, serve(there) as elsewhere:
            session_id = await newcomer(http, opened_on.url)
            age(here, session_id, NEWCOMER_GRACE_SECONDS + 1)
            other = await newcomer(http, opened_on.url)
            assert set(here.sessions) == {other}
            headers = session_headers(session_id)
            gone = await http.post(elsewhere.url, json=rpc("ping", id=1), headers=headers)
            assert gone.status_code == 404


async def test_with_replicas_a_burst_of_initialize_keeps_no_more_records_than_places(
    http: httpx2.AsyncClient, tmp_path: Path
) -> None:
    """Each session of a burst of bare ``initialize`` requests gives its place to the
    next after the grace, and takes its shared record with it: named again, each gets
    404 (a record left behind would be taken up, or the full replica answer 503), and
    the store holds no more of them than the replica has places."""
    missing = missing_for_redis()
    if missing is not None:
        pytest.skip(missing)
    with redis_server(tmp_path) as redis:
        state = RedisState(redis.url, replica_id="here")
        app = StreamableHTTPApp(tagged_server(), state=state, max_sessions=1)
        async with serve(app) as server:
            opened: list[str] = []
            for _ in range(5):
                for session_id in opened[-1:]:
                    age(app, session_id, NEWCOMER_GRACE_SECONDS + 1)
                opened.append(await newcomer(http, server.url))
            for session_id in opened[:-1]:
                ping = rpc("ping", id=1)
                gone = await http.post(server.url, json=ping, headers=session_headers(session_id))
                assert gone.status_code == 404
            assert set(app.sessions) == set(opened[-1:])


async def test_with_replicas_taking_up_a_session_counts_against_max_sessions(
    http: httpx2.AsyncClient, tmp_path: Path
) -> None:
    """A replica builds its connection for a session another opened only within
    ``max_sessions``: full of sessions in use, it answers 503 with ``initialize``'s
    advice (the session lives on where it is); once one may give its place, it takes
    it, as a new session would. A DELETE is served even when full: it ends the session."""
    missing = missing_for_redis()
    if missing is not None:
        pytest.skip(missing)
    with redis_server(tmp_path) as redis:
        state = RedisState(redis.url, replica_id="here")
        here = StreamableHTTPApp(tagged_server(), state=state, max_sessions=1)
        there = StreamableHTTPApp(tagged_server(), state=RedisState(redis.url, replica_id="there"))
        async with serve(here) as full, serve(there) as elsewhere:
            held = await newcomer(http, full.url)
            await still_served(http, full.url, held)
            named = await newcomer(http, elsewhere.url)
            refused = await http.post(
                full.url, json=rpc("ping", id=1), headers=session_headers(named)
            )
            assert refused.status_code == 503, refused.text
            assert "used in the last 60 s" in refused.json()["error"]["message"]
            assert set(here.sessions) == {held}
            await still_served(http, elsewhere.url, named)
            deleted = await newcomer(http, elsewhere.url)
            ended = await http.delete(full.url, headers=session_headers(deleted))
            assert ended.status_code == 200, ended.text
            assert set(here.sessions) == {held}
            after = await http.post(
                elsewhere.url, json=rpc("ping", id=1), headers=session_headers(deleted)
            )
            assert after.status_code == 404
            age(here, held, MAKING_ROOM_AFTER_SECONDS + 1)
            await still_served(http, full.url, named)
            assert set(here.sessions) == {named}
            # used within the minute (its first request here), it is given up here only
            await still_served(http, elsewhere.url, held)
