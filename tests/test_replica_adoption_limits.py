"""Streamable HTTP server with replicas sharing sessions in Redis: what a replica may do
to a session another one opened. A full replica taking a session's place ends that
session everywhere only if no replica has seen it used lately (the shared record says
when it last was); a session taken up here counts against its caller's share as a new
one does, and stops counting once the session is deleted through another replica; and a
DELETE for a session never served here ends it without building a connection for it
first.

Two apps run under uvicorn on 127.0.0.1, each with its own ``RedisState`` on one real
redis-server. The apps' clock is anyio's: a session is made to look unused here by
moving its last use back (``age``), and unused everywhere by moving the shared record's
last use back (``age_shared``), so nothing here sleeps."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import pytest
from http_support import PATIENCE_SECONDS, initialize_params, rpc, serve, session_headers
from http_support.apps import tagged_server
from redis import Redis as SyncRedis
from scale_out.cluster import missing_for_redis, redis_server
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute

from answerback.server import MCPServer
from answerback.transports.http import AuthInfo, RedisState, StreamableHTTPApp
from answerback.transports.http._server import MAKING_ROOM_AFTER_SECONDS, NEWCOMER_GRACE_SECONDS
from answerback.transports.http._sessions import InMemorySessionManager, SessionRecord

pytestmark = pytest.mark.anyio

JSON_HEADERS = {"accept": "application/json", "content-type": "application/json"}
INITIALIZED = rpc("notifications/initialized", id=None)


@pytest.fixture
async def http() -> AsyncGenerator[httpx2.AsyncClient, None]:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as client:
        yield client


@pytest.fixture
def redis_url(tmp_path: Path) -> Any:
    missing = missing_for_redis()
    if missing is not None:
        pytest.skip(missing)
    with redis_server(tmp_path) as redis:
        yield redis.url


def replica(redis_url: str, name: str, server: MCPServer | None = None, **options: Any) -> Any:
    state = RedisState(redis_url, replica_id=name)
    return StreamableHTTPApp(server or tagged_server(), state=state, **options)


async def newcomer(http: httpx2.AsyncClient, url: str, user: str | None = None) -> str:
    init = rpc("initialize", initialize_params(), id=0)
    response = await http.post(url, json=init, headers=JSON_HEADERS | _bearer(user))
    assert response.status_code == 200, response.text
    return response.headers["mcp-session-id"]


async def ping(
    http: httpx2.AsyncClient, url: str, session_id: str, user: str | None = None
) -> httpx2.Response:
    headers = session_headers(session_id) | _bearer(user)
    return await http.post(url, json=rpc("ping", id=7), headers=headers)


def _bearer(user: str | None) -> dict[str, str]:
    return {} if user is None else {"authorization": f"Bearer {user}"}


def age(app: StreamableHTTPApp, session_id: str, seconds: float) -> None:
    """Make a session look unused on this replica for ``seconds`` more."""
    app.sessions[session_id].last_active -= seconds


async def age_shared(redis_url: str, session_id: str, seconds: float) -> None:
    """Make a session's shared record say it was last used ``seconds`` earlier (the
    record keeps that time, in microseconds of Redis's clock, in its ``used`` field).
    Through redis-py's blocking client in a thread: the test may run on trio."""

    def move_back() -> None:
        with SyncRedis.from_url(redis_url) as redis:  # pyright: ignore[reportUnknownMemberType]
            key = f"answerback:session:{session_id}"
            used = int(cast(bytes, redis.hget(key, "used")))
            redis.hset(key, "used", str(used - int(seconds * 1_000_000)))

    await anyio.to_thread.run_sync(move_back)


class NamedBearer:
    """``Authorization: Bearer <name>`` is the caller ``<name>``."""

    @property
    def routes(self) -> Sequence[BaseRoute]:
        return []

    async def authenticate(self, request: Request) -> AuthInfo | Response:
        scheme, _, name = request.headers.get("authorization", "").partition(" ")
        if scheme != "Bearer" or not name:
            return JSONResponse({"error": "invalid_token"}, status_code=401)
        return AuthInfo(subject=name, issuer="https://issuer.test")

    async def authorize(self, info: AuthInfo, message: Mapping[str, Any]) -> Response | None:
        return None


class ConnectionCounting(MCPServer):
    """Counts the connections the HTTP app runs it on: one for the 2026-07-28 requests,
    and one more for each session taken up from another replica, on which it replays
    the session's ``initialize``."""

    connections = 0

    async def serve_connection(self, read_stream: Any, write_stream: Any, **options: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        self.connections += 1
        await super().serve_connection(read_stream, write_stream, **options)


# -- a full replica ends a session everywhere only if it is idle everywhere -------------


async def test_a_session_used_only_through_another_replica_is_given_up_here_only(
    http: httpx2.AsyncClient, redis_url: str
) -> None:
    """Opened here, then used only through the other replica: here it looks like a
    newcomer past its grace, yet its client is working with it. The full replica lets
    its connection go for a new session, and the session lives on (no 404)."""
    here = replica(redis_url, "here", max_sessions=1)
    there = replica(redis_url, "there")
    async with serve(here) as opened_on, serve(there) as used_on:
        session_id = await newcomer(http, opened_on.url)
        headers = session_headers(session_id)
        sent = await http.post(used_on.url, json=INITIALIZED, headers=headers)
        assert sent.status_code == 202
        age(here, session_id, NEWCOMER_GRACE_SECONDS + 1)
        other = await newcomer(http, opened_on.url)
        assert set(here.sessions) == {other}
        assert (await ping(http, used_on.url, session_id)).status_code == 200


async def test_a_session_idle_here_but_used_through_another_replica_lives_on(
    http: httpx2.AsyncClient, redis_url: str
) -> None:
    """Used here, then for over a minute only through the other replica: the full
    replica gives its place to a new session without ending it there."""
    here = replica(redis_url, "here", max_sessions=1)
    there = replica(redis_url, "there")
    async with serve(here) as full, serve(there) as elsewhere:
        session_id = await newcomer(http, full.url)
        assert (await ping(http, full.url, session_id)).status_code == 200
        assert (await ping(http, elsewhere.url, session_id)).status_code == 200
        age(here, session_id, MAKING_ROOM_AFTER_SECONDS + 1)
        other = await newcomer(http, full.url)
        assert set(here.sessions) == {other}
        assert (await ping(http, elsewhere.url, session_id)).status_code == 200


async def test_a_session_idle_everywhere_still_ends_everywhere(
    http: httpx2.AsyncClient, redis_url: str
) -> None:
    """The bound the shared store relies on stays: a session no replica has seen used
    for a minute gives its place and its shared record; named anywhere, it is gone."""
    here = replica(redis_url, "here", max_sessions=1)
    there = replica(redis_url, "there")
    async with serve(here) as full, serve(there) as elsewhere:
        session_id = await newcomer(http, full.url)
        assert (await ping(http, elsewhere.url, session_id)).status_code == 200
        await age_shared(redis_url, session_id, MAKING_ROOM_AFTER_SECONDS + 1)
        age(here, session_id, MAKING_ROOM_AFTER_SECONDS + 1)
        other = await newcomer(http, full.url)
        assert set(here.sessions) == {other}
        assert (await ping(http, elsewhere.url, session_id)).status_code == 404


async def test_a_client_connected_through_another_replica_is_using_its_session(
    http: httpx2.AsyncClient, redis_url: str
) -> None:
    """A client that only listens on a GET stream held by the other replica sends no
    request for minutes; that replica notes its session as used meanwhile, so the full
    one does not end it everywhere."""
    here = replica(redis_url, "here", max_sessions=1)
    there = replica(redis_url, "there")
    async with serve(here) as full, serve(there) as elsewhere:
        session_id = await newcomer(http, full.url)
        listen = session_headers(session_id) | {"accept": "text/event-stream"}
        async with http.stream("GET", elsewhere.url, headers=listen) as stream:
            assert stream.status_code == 200
            await age_shared(redis_url, session_id, MAKING_ROOM_AFTER_SECONDS + 1)
            await elsewhere.call(there._mark_connected_sessions_used)  # pyright: ignore[reportPrivateUsage]
            age(here, session_id, MAKING_ROOM_AFTER_SECONDS + 1)
            other = await newcomer(http, full.url)
            assert set(here.sessions) == {other}
            assert (await ping(http, elsewhere.url, session_id)).status_code == 200


# -- a session taken up counts against its caller's share ------------------------------


async def test_taking_up_a_session_counts_against_the_callers_share(
    http: httpx2.AsyncClient, redis_url: str
) -> None:
    """A caller holding its share here cannot hold more by opening sessions on another
    replica and naming them here: it gets the refusal a new session would get, until
    it ends one of its sessions here. Other callers are taken up as before."""
    options: dict[str, Any] = {"auth": NamedBearer(), "max_sessions": 4}
    here = replica(redis_url, "here", max_sessions_per_principal=1, **options)
    there = replica(redis_url, "there", **options)
    async with serve(here) as limited, serve(there) as elsewhere:
        held = await newcomer(http, limited.url, "mallory")
        opened_elsewhere = await newcomer(http, elsewhere.url, "mallory")
        refused = await ping(http, limited.url, opened_elsewhere, "mallory")
        assert refused.status_code == 503, refused.text
        assert refused.json()["error"]["message"] == (
            "Service Unavailable: you already hold 1 sessions, the most one caller may "
            "hold on this server. DELETE sessions you no longer need, then try again."
        )
        assert set(here.sessions) == {held}
        assert (await ping(http, elsewhere.url, opened_elsewhere, "mallory")).status_code == 200

        alices = await newcomer(http, elsewhere.url, "alice")
        assert (await ping(http, limited.url, alices, "alice")).status_code == 200
        headers = session_headers(held) | _bearer("mallory")
        assert (await http.delete(limited.url, headers=headers)).status_code == 200
        assert (await ping(http, limited.url, opened_elsewhere, "mallory")).status_code == 200
        assert set(here.sessions) == {alices, opened_elsewhere}


async def test_another_callers_session_is_not_taken_up(
    http: httpx2.AsyncClient, redis_url: str
) -> None:
    """A session named by someone other than its opener is not found on a replica that
    never served it, as on the one that did, and no connection is built for it."""
    counting = ConnectionCounting("counted")
    here = replica(redis_url, "here", counting, auth=NamedBearer())
    there = replica(redis_url, "there", auth=NamedBearer())
    async with serve(here) as taking_up, serve(there) as opened_on:
        started = counting.connections
        session_id = await newcomer(http, opened_on.url, "alice")
        stranger = await ping(http, taking_up.url, session_id, "mallory")
        assert stranger.status_code == 404
        assert counting.connections == started
        assert (await ping(http, taking_up.url, session_id, "alice")).status_code == 200
        assert counting.connections == started + 1


async def test_a_session_deleted_through_another_replica_no_longer_counts_here(
    http: httpx2.AsyncClient, redis_url: str
) -> None:
    """A DELETE through one replica ends only the shared record: a replica that had
    taken the session up must not go on counting it against its caller's share, and
    refuse that caller's live session for a session the client has ended."""
    here = replica(redis_url, "here", auth=NamedBearer())
    there = replica(redis_url, "there", auth=NamedBearer(), max_sessions_per_principal=1)
    async with serve(here) as opened_on, serve(there) as limited:
        first = await newcomer(http, opened_on.url, "alice")
        assert (await ping(http, limited.url, first, "alice")).status_code == 200
        headers = session_headers(first) | _bearer("alice")
        assert (await http.delete(opened_on.url, headers=headers)).status_code == 200
        second = await newcomer(http, opened_on.url, "alice")
        answer = await ping(http, limited.url, second, "alice")
        assert answer.status_code == 200, answer.text
        assert set(there.sessions) == {second}


async def test_a_new_session_is_not_refused_for_one_deleted_through_another_replica(
    http: httpx2.AsyncClient, redis_url: str
) -> None:
    """The same for ``initialize``: the caller's share here is what it still holds."""
    here = replica(redis_url, "here", auth=NamedBearer())
    there = replica(redis_url, "there", auth=NamedBearer(), max_sessions_per_principal=1)
    async with serve(here) as deleting_on, serve(there) as limited:
        first = await newcomer(http, limited.url, "alice")
        headers = session_headers(first) | _bearer("alice")
        assert (await http.delete(deleting_on.url, headers=headers)).status_code == 200
        second = await newcomer(http, limited.url, "alice")
        assert set(there.sessions) == {second}


async def test_the_marking_sweep_ends_sessions_deleted_through_another_replica(
    http: httpx2.AsyncClient, redis_url: str
) -> None:
    """A GET stream that only listens never reads its session's record, and an unused
    session taken up here is never named again: the sweep that notes connected sessions
    as used finds both records gone, ends both here, and the stream closes."""
    here = replica(redis_url, "here")
    there = replica(redis_url, "there")
    async with serve(here) as deleting_on, serve(there) as listening_on:
        listened = await newcomer(http, deleting_on.url)
        unused = await newcomer(http, deleting_on.url)
        assert (await ping(http, listening_on.url, unused)).status_code == 200
        listen = session_headers(listened) | {"accept": "text/event-stream"}
        async with http.stream("GET", listening_on.url, headers=listen) as stream:
            assert stream.status_code == 200
            for session_id in (listened, unused):
                deleted = await http.delete(deleting_on.url, headers=session_headers(session_id))
                assert deleted.status_code == 200
            await listening_on.call(there._mark_connected_sessions_used)  # pyright: ignore[reportPrivateUsage]
            assert not there.sessions
            with anyio.fail_after(PATIENCE_SECONDS):  # keepalives would hold it open
                async for _ in stream.aiter_bytes():
                    pass  # until the stream ends


async def test_a_connection_given_up_late_does_not_uncount_its_successor() -> None:
    """A session given up here only and taken up again at once has two connections
    under one id for a moment: the first one's run ending must not stop the second
    counting against its caller's share."""
    app = StreamableHTTPApp(tagged_server(), max_sessions_per_principal=1)
    given_up = app._new_session("s1", "alice")  # pyright: ignore[reportPrivateUsage]
    app._new_session("s1", "alice")  # pyright: ignore[reportPrivateUsage]
    app._give_back_share(given_up)  # pyright: ignore[reportPrivateUsage]
    assert app._over_share("alice", None) is not None  # pyright: ignore[reportPrivateUsage]


# -- a DELETE for a session never served here ------------------------------------------


async def test_a_delete_for_a_session_never_served_here_ends_it_without_taking_it_up(
    http: httpx2.AsyncClient, redis_url: str
) -> None:
    """The replica that gets the DELETE ends the session's shared record without
    building a connection for it (which replayed its ``initialize`` only to end it);
    the replica serving it finds it gone at its next request."""
    counting = ConnectionCounting("counted")
    here = replica(redis_url, "here", counting)
    there = replica(redis_url, "there")
    async with serve(here) as deleting_on, serve(there) as served_on:
        started = counting.connections
        session_id = await newcomer(http, served_on.url)
        assert (await ping(http, served_on.url, session_id)).status_code == 200
        older = session_headers(session_id, "2025-06-18")
        wrong_version = await http.delete(deleting_on.url, headers=older)
        assert wrong_version.status_code == 400, wrong_version.text
        assert "is not the version this session negotiated" in wrong_version.text
        ended = await http.delete(deleting_on.url, headers=session_headers(session_id))
        assert ended.status_code == 200, ended.text
        assert counting.connections == started
        assert (await ping(http, served_on.url, session_id)).status_code == 404
        assert session_id not in there.sessions
        again = await http.delete(deleting_on.url, headers=session_headers(session_id))
        assert again.status_code == 404


async def test_the_in_memory_store_says_when_a_session_was_last_used() -> None:
    """The one-process store answers the same questions as Redis's: not used since its
    ``initialize`` until a request names it or a client is noted connected; forgotten
    when it ends."""
    sessions = InMemorySessionManager()
    await sessions.create(SessionRecord("s1", "2025-11-25", rpc("initialize")), 60.0)
    assert await sessions.unused_for("s1") is None
    assert await sessions.touch("s1", 60.0) is not None
    first = await sessions.unused_for("s1")
    assert first is not None
    assert first >= 0
    assert await sessions.mark_used(["s1", "never-opened"], 60.0) == {"never-opened"}
    assert await sessions.unused_for("never-opened") is None
    assert await sessions.ended(["s1", "never-opened"]) == {"never-opened"}
    await sessions.end("s1")
    assert await sessions.unused_for("s1") is None
