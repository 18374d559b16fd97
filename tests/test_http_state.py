"""The HTTP server's state seams in memory (the default), question ids, and the
request authenticator hook in the endpoint (issues 15 and 16).

The in-memory state must behave as the server always has (every other HTTP test runs
on it); here its parts are checked one by one, and the hook that an OAuth resource
server plugs into is driven by a tiny authenticator written for the test.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import anyio
import httpx2
import pytest
import trio
from http_support import (
    PATIENCE_SECONDS,
    POST_HEADERS,
    first_result,
    initialize_params,
    raw_initialize,
    read_events,
    rpc,
    serve,
    session_headers,
)
from http_support.apps import tagged_server
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from answerback.jsonrpc import JSONObject
from answerback.server import Context, MCPServer
from answerback.transports.http import (
    AuthInfo,
    InMemoryEventStore,
    InMemoryState,
    RedisState,
    StreamableHTTPApp,
)
from answerback.transports.http._message_bus import CallOwner, Forwarded, InMemoryMessageBus
from answerback.transports.http._question_ids import QuestionIds
from answerback.transports.http._redis_client import redis_asyncio, safe_url
from answerback.transports.http._replication import Replication
from answerback.transports.http._sessions import InMemorySessionManager, SessionRecord
from answerback.transports.http._state import StateUnavailable
from answerback.types import BUSY

pytestmark = pytest.mark.anyio

INIT: JSONObject = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}


# -- the in-memory seams -----------------------------------------------------------------


async def test_in_memory_session_records_keep_state_until_ended() -> None:
    sessions = InMemorySessionManager()
    await sessions.create(SessionRecord("s1", "2025-11-25", INIT, principal="p"), 60.0)
    level: JSONObject = {"jsonrpc": "2.0", "method": "logging/setLevel", "params": {}}
    news: JSONObject = {"jsonrpc": "2.0", "method": "resources/subscribe", "params": {}}
    await sessions.set_state("s1", "level", level)
    await sessions.set_state("s1", "resource:news", news)
    await sessions.set_state("s1", "resource:news", None)
    await sessions.set_state("gone", "level", level)  # no such record: nothing kept
    record = await sessions.touch("s1", 60.0)
    assert record is not None
    assert (record.protocol_version, record.principal) == ("2025-11-25", "p")
    assert record.state == {"level": level}
    await sessions.end("s1")
    assert await sessions.touch("s1", 60.0) is None
    assert len(sessions) == 0


async def test_in_memory_bus_owns_calls_once_and_answers_once() -> None:
    bus = InMemoryMessageBus("me")
    owner = CallOwner("me", 7, "stream-1")
    assert await bus.open_call("s1", owner)
    assert not await bus.open_call("s1", CallOwner("me", 7, "stream-2"))  # id in use
    assert await bus.open_call("s2", CallOwner("me", 7, None))  # another session's id 7
    assert await bus.call_by_stream("s1", "stream-1") == owner
    assert await bus.call_by_request("s1", 7) == owner
    assert await bus.close_call("s1", 7) == owner
    assert await bus.close_call("s1", 7) is None  # only one closer wins
    assert await bus.call_by_stream("s1", "stream-1") is None
    await bus.end_call("s2", 7)
    assert await bus.call_by_request("s2", 7) is None

    await bus.expect_answer("s1", "q1", 60.0)
    assert not await bus.claim_answer("s2", "q1")  # another session
    assert await bus.claim_answer("s1", "q1")
    assert not await bus.claim_answer("s1", "q1")  # a duplicate


async def test_in_memory_bus_inbox_and_other_replicas() -> None:
    bus = InMemoryMessageBus("me")
    message: JSONObject = {"jsonrpc": "2.0", "id": 1, "result": {}}
    with pytest.raises(RuntimeError, match="inbox"):
        await bus.send("me", "s1", message)  # nobody reads the inbox yet
    inbox = bus.inbox()
    reading = anext(inbox)
    with pytest.raises(ValueError, match="RedisState"):
        await bus.send("someone-else", "s1", message)
    # The inbox opens on the first read; send once it is open.
    got: list[tuple[str, JSONObject]] = []
    async with anyio.create_task_group() as tg:

        async def read() -> None:
            got.append(await reading)

        tg.start_soon(read)
        await anyio.wait_all_tasks_blocked()
        await bus.send("me", "s1", message)
    assert got == [("s1", message)]
    await inbox.aclose()


async def test_in_memory_bus_forwards_only_the_first_answer() -> None:
    bus = InMemoryMessageBus("me")
    answer: JSONObject = {"jsonrpc": "2.0", "id": 1, "result": {}}
    await bus.expect_answer("s1", "q1", 60.0)
    inbox = bus.inbox()
    reading = anext(inbox)
    got: list[tuple[str, JSONObject]] = []
    async with anyio.create_task_group() as tg:

        async def read() -> None:
            got.append(await reading)

        tg.start_soon(read)
        await anyio.wait_all_tasks_blocked()
        assert await bus.forward_answer("me", "s1", "q1", answer, answer) is Forwarded.SENT
        duplicate = await bus.forward_answer("me", "s1", "q1", answer, answer)
        assert duplicate is Forwarded.REFUSED
    assert got == [("s1", answer)]
    await inbox.aclose()


def test_question_ids_are_bound_to_their_session_and_key() -> None:
    ids = QuestionIds("replica-a", b"k" * 32)
    wire = ids.mint("session-1", 42)
    assert ids.read("session-1", wire) == ("replica-a", 42)
    assert ids.read("session-2", wire) is None  # another session's id
    assert ids.read("session-1", wire[:-1] + ("A" if wire[-1] != "A" else "B")) is None
    assert QuestionIds("replica-b", b"x" * 32).read("session-1", wire) is None  # other key
    assert ids.read("session-1", 42) is None
    assert ids.read("session-1", "ab1.replica-a.42") is None
    with pytest.raises(ValueError, match="replica_id"):
        QuestionIds("a.b", b"k")


def test_question_ids_keep_accepting_the_keys_used_before_a_switch() -> None:
    """The deployment's key changed (Redis lost it): ids minted with the old key, by
    this replica or another that used it, are still genuine; new ones use the new key."""
    old, new, others = b"o" * 32, b"n" * 32, b"x" * 32
    ids = QuestionIds("replica-a", old)
    before = ids.mint("s", 1)
    elsewhere = QuestionIds("replica-b", others).mint("s", 2)
    assert ids.read("s", elsewhere) is None
    ids.use(new, frozenset({new, others}))
    assert ids.key == new
    assert ids.read("s", before) == ("replica-a", 1)
    assert ids.read("s", elsewhere) == ("replica-b", 2)
    after = ids.mint("s", 3)
    assert QuestionIds("replica-c", new).read("s", after) == ("replica-a", 3)
    assert QuestionIds("replica-c", old).read("s", after) is None


def test_state_and_event_store_are_one_or_the_other() -> None:
    with pytest.raises(ValueError, match="either state= or event_store="):
        StreamableHTTPApp(tagged_server(), state=InMemoryState(), event_store=InMemoryEventStore())
    store = InMemoryEventStore()
    assert StreamableHTTPApp(tagged_server(), event_store=store).event_store is store


async def test_in_memory_state_is_the_default_and_serves_as_before() -> None:
    app = StreamableHTTPApp(tagged_server())
    assert isinstance(app.state, InMemoryState)
    assert not app.state.shared
    async with serve(app) as running, httpx2.AsyncClient() as http:
        session_id, _ = await raw_initialize(http, running.url)
        assert session_id in app.sessions
        records = app.state.sessions
        assert isinstance(records, InMemorySessionManager)
        assert len(records) == 1
        deleted = await http.delete(running.url, headers=session_headers(session_id))
        assert deleted.status_code == 200
        assert len(records) == 0


# -- RedisState's optional import and URL hygiene ------------------------------------------


def test_missing_redis_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis.asyncio", None)
    with pytest.raises(ImportError, match=r"answerback\[redis\]"):
        redis_asyncio()


def test_passwords_stay_out_of_messages() -> None:
    assert safe_url("redis://user:secret@host:6379/0") == "redis://user:***@host:6379/0"
    assert safe_url("redis://:secret@host/0") == "redis://***@host/0"
    assert safe_url("redis://host:6379/0") == "redis://host:6379/0"
    assert "secret" not in repr(RedisState("redis://:secret@127.0.0.1:1/0"))


def test_redis_state_is_refused_on_trio() -> None:
    """redis-py's asyncio client cannot run on trio: starting says so, clearly."""
    state = RedisState("redis://127.0.0.1:1/0")

    async def start() -> None:
        async with state.running():
            raise AssertionError("RedisState started on trio")

    with pytest.raises(RuntimeError, match="needs asyncio"):
        trio.run(start)


# -- the request authenticator hook ------------------------------------------------------


class BearerNames:
    """``Authorization: Bearer <name>`` is user ``<name>``; ``tools/call`` of ``secret``
    needs the name ``root``; a metadata route is served without authentication."""

    @property
    def routes(self) -> Sequence[BaseRoute]:
        async def metadata(_: Request) -> Response:
            return PlainTextResponse("metadata")

        return [Route("/.well-known/test-metadata", metadata)]

    async def authenticate(self, request: Request) -> AuthInfo | Response:
        scheme, _, name = request.headers.get("authorization", "").partition(" ")
        if scheme != "Bearer" or not name:
            return JSONResponse({"error": "invalid_token"}, status_code=401)
        return AuthInfo(subject=name, issuer="https://issuer.test")

    async def authorize(self, info: AuthInfo, message: Mapping[str, Any]) -> Response | None:
        params: Any = message.get("params") or {}
        name = params.get("name")
        if message.get("method") == "tools/call" and name == "secret" and info.subject != "root":
            return JSONResponse({"error": "insufficient_scope"}, status_code=403)
        return None


def guarded_server() -> MCPServer:
    mcp = MCPServer("guarded")

    @mcp.tool()
    def secret() -> str:
        """Only root may call this."""
        return "42"

    return mcp


def as_user(name: str, session_id: str | None = None) -> dict[str, str]:
    headers = {**POST_HEADERS, "authorization": f"Bearer {name}"}
    if session_id is not None:
        headers |= {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    return headers


async def test_authenticator_guards_the_endpoint_and_binds_sessions() -> None:
    app = StreamableHTTPApp(guarded_server(), auth=BearerNames())
    async with serve(app) as running, httpx2.AsyncClient() as http:
        url = running.url
        init = rpc("initialize", initialize_params(), id=0)
        refused = await http.post(url, json=init, headers=POST_HEADERS)
        assert refused.status_code == 401
        assert refused.json() == {"error": "invalid_token"}
        metadata = await http.get(url.replace("/mcp", "/.well-known/test-metadata"))
        assert metadata.text == "metadata"  # the authenticator's routes need no token

        async with http.stream("POST", url, json=init, headers=as_user("alice")) as opened:
            assert opened.status_code == 200
            session_id = opened.headers["mcp-session-id"]
            await first_result(opened)
        assert app.sessions[session_id].principal == "https://issuer.test alice"

        listed = await http.post(
            url, json=rpc("tools/list", id=1), headers=as_user("alice", session_id)
        )
        assert listed.status_code == 200
        # Another user presenting alice's session id finds no such session.
        stolen = await http.post(
            url, json=rpc("tools/list", id=2), headers=as_user("mallory", session_id)
        )
        assert stolen.status_code == 404
        assert "Session not found" in stolen.json()["error"]["message"]

        call = rpc("tools/call", {"name": "secret", "arguments": {}}, id=3)
        forbidden = await http.post(url, json=call, headers=as_user("alice", session_id))
        assert forbidden.status_code == 403
        assert forbidden.json() == {"error": "insufficient_scope"}


async def test_authenticated_callers_reach_the_2026_path_with_their_info() -> None:
    app = StreamableHTTPApp(guarded_server(), auth=BearerNames())
    discover = rpc(
        "server/discover",
        {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
        id=1,
    )
    headers = {"mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"}
    async with serve(app) as running, httpx2.AsyncClient() as http:
        anonymous = await http.post(running.url, json=discover, headers=POST_HEADERS | headers)
        assert anonymous.status_code == 401
        found = await http.post(running.url, json=discover, headers=as_user("bob") | headers)
        assert found.status_code == 200, found.text
        assert "result" in await first_result(found)


# -- who a legacy SSE request comes from -----------------------------------------------


def from_far_away(app: StreamableHTTPApp) -> Any:
    """The app as a client on another machine reaches it (its address is not loopback)."""

    async def wrapped(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope = {**scope, "client": ("203.0.113.7", 40000)}
        await app(scope, receive, send)

    return wrapped


async def test_a_remote_legacy_sse_call_gets_no_exception_text() -> None:
    """The handler of a call answered on an SSE stream sees the HTTP request's client
    address too, so ``error_details="local"`` redacts for remote legacy clients."""
    mcp = MCPServer("leaky")

    @mcp.tool()
    async def leak(ctx: Context) -> str:
        """Log (so the answer comes on an SSE stream), then fail with a secret."""
        await ctx.info("about to fail")
        raise RuntimeError("postgres://admin:hunter2@db")

    app = mcp.http_app()
    async with serve(from_far_away(app)) as running, httpx2.AsyncClient() as http:
        session_id, _ = await raw_initialize(http, running.url)
        call = rpc("tools/call", {"name": "leak", "arguments": {}}, id=1)
        async with http.stream(
            "POST", running.url, json=call, headers=session_headers(session_id)
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            result = await first_result(response)
    text = result["result"]["content"][0]["text"]
    assert result["result"]["isError"]
    assert "hunter2" not in text
    assert "the server logged the details under reference" in text


async def test_one_caller_holds_at_most_its_share_of_the_request_bytes() -> None:
    """The requests being answered share one budget of bytes (every session's and every
    2026-07-28 request's), so one caller whose large calls wait could have had everyone
    else refused. An authenticated caller holds at most its share: past it only its own
    requests are refused (the handshake era's and 2026-07-28's alike), others are
    served, and an answer gives the share back."""
    app = StreamableHTTPApp(
        tagged_server(),
        auth=BearerNames(),
        max_request_bytes_in_flight=2000,
        max_request_bytes_per_principal=1000,
    )
    mallory = "https://issuer.test mallory"

    def discover(padding: int) -> JSONObject:
        meta: JSONObject = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "pad": "p" * padding,
        }
        return rpc("server/discover", {"_meta": meta}, id=7)

    modern = {"mcp-protocol-version": "2026-07-28", "mcp-method": "server/discover"}
    async with serve(app) as running, httpx2.AsyncClient() as http:
        url = running.url
        init = rpc("initialize", initialize_params(elicitation={}), id=0)
        async with http.stream("POST", url, json=init, headers=as_user("mallory")) as opened:
            session_id = opened.headers["mcp-session-id"]
            await first_result(opened)
        initialized = rpc("notifications/initialized", id=None)
        await http.post(url, json=initialized, headers=as_user("mallory", session_id))
        call = rpc("tools/call", {"name": "echo_elicit", "arguments": {"tag": "x" * 700}}, id=1)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream(
                "POST", url, json=call, headers=as_user("mallory", session_id)
            ) as waiting:  # hung up once the question comes: the call waits on
                async for event in read_events(waiting):
                    if event.message is not None:
                        break
        held = app.request_bytes.held_by(mallory)
        assert 700 < held < 1000
        assert app.request_bytes.held == held

        small = await http.post(url, json=discover(0), headers=as_user("mallory") | modern)
        assert "result" in await first_result(small)  # within the share
        over = discover(1000 - held)
        over_in_session = rpc("ping", {"_meta": {"pad": "p" * (1000 - held)}}, id=8)
        for message, headers in (
            (over, as_user("mallory") | modern),
            (over_in_session, as_user("mallory", session_id)),
        ):
            refused = await http.post(url, json=message, headers=headers)
            error = (await first_result(refused))["error"]
            assert error["code"] == BUSY
            assert error["message"].startswith(f"Busy: your requests being answered hold {held}")
            assert "past the 1000 bytes one caller's requests may hold" in error["message"]
        others = await http.post(url, json=over, headers=as_user("alice") | modern)
        assert "result" in await first_result(others)

        cancel = rpc("notifications/cancelled", {"requestId": 1}, id=None)
        sent = await http.post(url, json=cancel, headers=as_user("mallory", session_id))
        assert sent.status_code == 202
        with anyio.fail_after(PATIENCE_SECONDS):  # the cancellation lands after its 202
            while app.request_bytes.held:  # noqa: ASYNC110 (the server has no event to await)
                await anyio.sleep(0.01)
        assert app.request_bytes.held_by(mallory) == 0
        again = await http.post(url, json=over, headers=as_user("mallory") | modern)
        assert "result" in await first_result(again)


async def test_one_caller_holds_at_most_its_share_of_the_sessions() -> None:
    """``max_sessions`` is every caller's together, so one caller opening sessions could
    have everyone else refused: an authenticated caller holds at most its share, and
    ending a session gives its place back at once."""
    app = StreamableHTTPApp(
        guarded_server(), auth=BearerNames(), max_sessions=4, max_sessions_per_principal=2
    )
    init = rpc("initialize", initialize_params(), id=0)

    async with serve(app) as running, httpx2.AsyncClient() as http:

        async def open_session(user: str) -> httpx2.Response:
            async with http.stream("POST", running.url, json=init, headers=as_user(user)) as r:
                await r.aread()
                return r

        mallorys = [(await open_session("mallory")).headers["mcp-session-id"] for _ in range(2)]
        refused = await open_session("mallory")
        assert refused.status_code == 503
        assert "mcp-session-id" not in refused.headers
        error = refused.json()["error"]
        assert error["message"] == (
            "Service Unavailable: you already hold 2 sessions, the most one caller may "
            "hold on this server. DELETE sessions you no longer need, then try again."
        )
        assert (await open_session("alice")).status_code == 200
        ended = await http.delete(running.url, headers=as_user("mallory", mallorys[0]))
        assert ended.status_code == 200
        assert (await open_session("mallory")).status_code == 200
        for session_id in list(app.sessions):
            principal = app.sessions[session_id].principal
            assert principal is not None
            user = principal.rpartition(" ")[2]
            await http.delete(running.url, headers=as_user(user, session_id))
        # a DELETE gives the place back before it answers, not when the session's run ends
        assert not app._sessions_of  # pyright: ignore[reportPrivateUsage]


async def test_a_lapsed_beat_is_checked_at_the_next_one_if_its_check_failed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The beat that lapsed is the only one that says so: when the check of the calls
    owned here then failed (the shared state unreachable), the next beat read as kept
    and the check was never done, leaving calls another replica ended waiting."""
    state = InMemoryState()
    replication = Replication(state, b"k" * 32)
    lapsed = iter([False, True, True])
    checks: list[str] = []
    checked_twice = anyio.Event()

    async def beat(replica_id: str) -> bool:
        return next(lapsed, True)

    async def check_owned_calls() -> None:
        checks.append("check")
        if len(checks) == 1:
            raise StateUnavailable("Redis at redis://127.0.0.1:1 failed: refused")
        checked_twice.set()

    monkeypatch.setattr(state.replicas, "beat", beat)
    monkeypatch.setattr(state.replicas, "_heartbeat_seconds", 0.001)
    monkeypatch.setattr(replication, "_check_owned_calls", check_owned_calls)
    async with anyio.create_task_group() as group:
        group.start_soon(replication.heartbeat)
        with anyio.fail_after(PATIENCE_SECONDS):
            await checked_twice.wait()
        group.cancel_scope.cancel()
    assert checks == ["check", "check"]
