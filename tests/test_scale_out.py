"""Scale-out for real: three uvicorn replicas sharing a redis-server, and haproxy.

The replicas are ``tests/scale_out/replica_server.py`` processes on loopback, each its
own uvicorn with ``state=RedisState(url)``. Most tests reach them through
``ReplicaRouter``, a client-side balancer that sends the answer to a question and the
GET resuming a broken stream anywhere but to the replica that owns the call; the last
ones go through a real haproxy with ``balance roundrobin`` and no cookies, with
answerback's ordinary ``Client``. The refusal cases speak raw JSON-RPC (``RawSession``).

The tests run on asyncio only: what is under test is the servers, separate processes,
and one client backend is enough to drive them (the client's trio path is covered by
the rest of the suite); the module shares one deployment, and the tests that break
theirs (``kill -9``, Redis stopped) start their own.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.to_thread
import httpx2
import pytest
from scale_out.cluster import (
    REPLICA_NAMES,
    Cluster,
    ReplicaOptions,
    cluster,
    missing_for_haproxy,
    missing_for_redis,
    replicas,
)
from scale_out.fixtures import asyncio_only
from scale_out.raw import LEGACY_VERSION, RawSession, answer, error_of
from scale_out.replica_server import SENTINEL_URI
from scale_out.router import ReplicaRouter, Route, routed_transport

from answerback import Client, MCPError
from answerback.client import (
    ClientRequestContext,
    ElicitationCallback,
    IncomingMessage,
    MessageHandler,
)
from answerback.interact import Roots
from answerback.transports.http import StreamableHTTPTransport
from answerback.types import (
    CONNECTION_CLOSED,
    CallToolResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    ResourceUpdatedNotification,
    TextContent,
    ToolListChangedNotification,
)

pytestmark = [
    pytest.mark.anyio,
    asyncio_only,
    pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis())),
]
needs_haproxy = pytest.mark.skipif(
    missing_for_haproxy() is not None, reason=str(missing_for_haproxy())
)

PATIENCE_SECONDS = 30.0
"""A safety net so a broken test fails instead of hanging; never a claim about speed."""
OWNER_DEATH_SECONDS = 10.0
"""How long the client may wait for the error after its call's owner is killed: the
replicas beat every second and count as dead after three missed beats, plus the client's
resume delay (1 s)."""
MODERN: Final = "2026-07-28"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Generator[Cluster, None, None]:
    """Redis, replicas A, B and C, and haproxy in front of them when it is installed."""
    workdir = tmp_path_factory.mktemp("scale-out")
    with cluster(workdir, with_proxy=missing_for_haproxy() is None) as running:
        yield running


async def answer_ada(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


def text_of(result: CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent), block
    return block.text


def calls(router: ReplicaRouter) -> list[Route]:
    return [r for r in router.routes if r.method == "tools/call" and r.kind != "answer"]


@asynccontextmanager
async def routed_client(
    router: ReplicaRouter,
    *,
    modern: bool = False,
    elicitation_callback: ElicitationCallback | None = None,
    message_handler: MessageHandler | None = None,
    roots: Roots | None = None,
) -> AsyncGenerator[Client, None]:
    """answerback's Client, every HTTP request placed by ``router``."""
    async with httpx2.AsyncClient(transport=router) as http:
        transport = routed_transport(router, http)
        async with Client(
            transport,
            mode=MODERN if modern else "legacy",
            elicitation_callback=elicitation_callback,
            message_handler=message_handler,
            list_roots_callback=roots.list_roots if roots is not None else None,
        ) as client:
            yield client


@asynccontextmanager
async def proxied_client(
    url: str,
    listening: anyio.Event,
    *,
    message_handler: MessageHandler | None = None,
) -> AsyncGenerator[Client, None]:
    """answerback's ordinary Client, given an httpx2 client only to learn when its GET
    stream is open (a notification sent before that has nowhere to go)."""

    async def on_response(response: httpx2.Response) -> None:
        if response.request.method == "GET":
            listening.set()

    async with httpx2.AsyncClient(
        limits=httpx2.Limits(max_connections=None), event_hooks={"response": [on_response]}
    ) as http:
        transport = StreamableHTTPTransport(url, http_client=http)
        async with Client(transport, mode="legacy", message_handler=message_handler) as client:
            yield client


# -- the adversarial router --------------------------------------------------------------


async def test_initialize_on_one_replica_call_on_others(deployment: Cluster) -> None:
    router = ReplicaRouter(deployment.ports)
    async with routed_client(router) as client:
        results = [text_of(await client.call_tool("whoami")) for _ in range(3)]
    [opened] = router.routed("initialize")
    routed = calls(router)
    assert results == [REPLICA_NAMES[r.replica] for r in routed]
    assert routed[0].replica != opened.replica
    assert set(results) == set(REPLICA_NAMES)
    assert router.routed("delete"), "the client ended its session (on whichever replica)"


async def test_question_asked_on_owner_answered_via_another(deployment: Cluster) -> None:
    router = ReplicaRouter(deployment.ports)
    async with routed_client(router, elicitation_callback=answer_ada) as client:
        results = [text_of(await client.call_tool("ask_name")) for _ in range(3)]
    owners = calls(router)
    assert results == [f"Hello, Ada, from {REPLICA_NAMES[r.replica]}" for r in owners]
    answers = router.routed("answer")
    assert len(answers) == 3
    assert all(a.owners and a.replica not in a.owners for a in answers)


async def test_dropped_stream_resumed_on_a_third_replica(deployment: Cluster) -> None:
    router = ReplicaRouter(deployment.ports, drop_after_question=True)
    async with routed_client(router, elicitation_callback=answer_ada) as client:
        result = text_of(await client.call_tool("ask_name"))
    [call] = calls(router)
    [answered] = router.routed("answer")
    resumes = router.routed("resume")
    assert result == f"Hello, Ada, from {REPLICA_NAMES[call.replica]}"
    assert resumes, "the broken stream was resumed"
    assert {call.replica, answered.replica, resumes[0].replica} == {0, 1, 2}
    assert router.to_owners() == []


async def test_owner_killed_mid_question(tmp_path: Path) -> None:
    """The client hears about its call promptly from a surviving replica, and the
    answer to the dead owner's question is refused when it finally comes."""
    with cluster(tmp_path) as running:
        router = ReplicaRouter(running.ports)
        asked = anyio.Event()
        questions: list[Any] = []

        async def never_answer(
            context: ClientRequestContext, params: ElicitRequestParams
        ) -> ElicitResult:
            questions.append(context.request_id)
            asked.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        failures: list[MCPError] = []
        finished = anyio.Event()
        async with httpx2.AsyncClient(transport=router) as http:
            transport = routed_transport(router, http)
            async with Client(transport, mode="legacy", elicitation_callback=never_answer) as c:

                async def call() -> None:
                    try:
                        await c.call_tool("ask_name")
                    except MCPError as exc:
                        failures.append(exc)
                    finished.set()

                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    with anyio.fail_after(PATIENCE_SECONDS):
                        await asked.wait()
                    [owned] = calls(router)
                    running.replicas[owned.replica].kill()
                    router.down.add(owned.replica)
                    with anyio.fail_after(OWNER_DEATH_SECONDS):
                        await finished.wait()
                session_id = transport.session_id
            assert len(failures) == 1, running.logs()
            failure = failures[0]
            # A surviving replica's error, not the client giving up on the stream
            # ("Connection failed: ..."), though both use the connection-closed code.
            assert failure.code == CONNECTION_CLOSED
            assert "stopped before answering" in failure.message, running.logs()
            assert router.to_owners() == []
            survivor = router.live()[0]
            raw = RawSession(http, [running.url(i) for i in range(3)])
            raw.session_id = session_id
            late = await raw.post(survivor, answer(questions[0]))
        assert 400 <= late.status_code < 500, late.text
        assert error_of(late)["message"]


async def test_listener_whose_replica_died_hears_changes_on_a_survivor(tmp_path: Path) -> None:
    """The replica holding a session's GET stream is killed: the client resumes the
    stream (``Last-Event-ID``) on a survivor, which carries it on live, so a list
    change announced afterwards reaches the client."""
    with cluster(tmp_path) as running:
        router = ReplicaRouter(running.ports)
        router.listen_on = 0
        resumed = anyio.Event()
        heard = [anyio.Event(), anyio.Event()]

        async def on_response(response: httpx2.Response) -> None:
            request = response.request
            resuming = request.method == "GET" and "last-event-id" in request.headers
            if resuming and response.status_code == 200:
                resumed.set()

        async def handle(message: IncomingMessage) -> None:
            if isinstance(message, ToolListChangedNotification):
                for event in heard:
                    if not event.is_set():
                        event.set()
                        break

        async with httpx2.AsyncClient(
            transport=router, event_hooks={"response": [on_response]}
        ) as http:
            transport = routed_transport(router, http)
            async with Client(transport, mode="legacy", message_handler=handle) as client:
                with anyio.fail_after(PATIENCE_SECONDS):
                    await router.listening.wait()
                    await client.call_tool("announce")
                    await heard[0].wait()  # the stream has events: it resumes after one
                running.replicas[0].kill()
                router.down.add(0)
                with anyio.fail_after(PATIENCE_SECONDS):
                    await resumed.wait()
                await client.call_tool("announce")
                with anyio.move_on_after(PATIENCE_SECONDS):
                    await heard[1].wait()
        assert heard[1].is_set(), running.logs()
        assert [r.replica for r in router.routed("resume")] == [2]  # one resume, kept open


async def test_replica_stopped_gracefully_fails_only_its_own_calls(tmp_path: Path) -> None:
    """Draining: SIGTERM on the replica owning a call waiting for an answer fails that
    call, with an error the client sees; the session lives on, served by the others."""
    with cluster(tmp_path) as running:
        router = ReplicaRouter(running.ports)
        asked = anyio.Event()
        holding = True

        async def hold_first(
            context: ClientRequestContext, params: ElicitRequestParams
        ) -> ElicitResult:
            if holding:
                asked.set()
                await anyio.sleep_forever()
            return ElicitResult(action="accept", content={"name": "Ada"})

        failures: list[MCPError] = []
        async with routed_client(router, elicitation_callback=hold_first) as client:

            async def call() -> None:
                try:
                    await client.call_tool("ask_name")
                except MCPError as exc:
                    failures.append(exc)

            with anyio.fail_after(PATIENCE_SECONDS):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(call)
                    await asked.wait()
                    [owned] = calls(router)
                    await anyio.to_thread.run_sync(running.replicas[owned.replica].stop)
                    router.down.add(owned.replica)
            holding = False
            after = [text_of(await client.call_tool("ask_name")) for _ in range(2)]
    assert len(failures) == 1, running.logs()
    assert failures[0].message.startswith("Server closed"), failures[0].message
    others = sorted(f"Hello, Ada, from {REPLICA_NAMES[i]}" for i in router.live())
    assert sorted(after) == others, running.logs()


# -- refusals (raw JSON-RPC) -------------------------------------------------------------


def urls(deployment: Cluster) -> list[str]:
    return [deployment.url(index) for index in range(len(deployment.replicas))]


def forged(question_id: Any) -> Any:
    """``question_id`` with its last character changed (or, for a number, another number)."""
    if isinstance(question_id, str) and question_id:
        last = "A" if question_id[-1] != "A" else "B"
        return question_id[:-1] + last
    return question_id + 1 if isinstance(question_id, int) else "forged"


async def test_duplicate_answer_refused(deployment: Cluster) -> None:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        raw = RawSession(http, urls(deployment))
        await raw.initialize(0)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with raw.call(1, "ask_name") as (request, stream):
                question = await stream.question()
                first = await raw.post(2, answer(question["id"]))
                again_elsewhere = await raw.post(0, answer(question["id"]))
                again_on_owner = await raw.post(1, answer(question["id"]))
                done = await stream.answer_to(request["id"])
    assert first.status_code == 202, first.text
    for again in (again_elsewhere, again_on_owner):
        assert 400 <= again.status_code < 500, again.text
        assert error_of(again)["message"]
    assert done["result"]["content"][0]["text"] == "Hello, Ada, from B"


async def test_forged_answer_refused(deployment: Cluster) -> None:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        raw = RawSession(http, urls(deployment))
        await raw.initialize(2)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with raw.call(0, "ask_name") as (request, stream):
                question = await stream.question()
                fakes = [forged(question["id"]), "made-up", 12345]
                refused = [await raw.post(r, answer(f)) for f in fakes for r in (0, 1)]
                real = await raw.post(1, answer(question["id"], "Grace"))
                done = await stream.answer_to(request["id"])
    for response in refused:
        assert 400 <= response.status_code < 500, response.text
        assert error_of(response)["message"]
    assert real.status_code == 202, real.text
    assert done["result"]["content"][0]["text"] == "Hello, Grace, from A"


async def test_answer_under_another_sessions_id_refused(deployment: Cluster) -> None:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        mine = RawSession(http, urls(deployment))
        theirs = RawSession(http, urls(deployment))
        await mine.initialize(0)
        await theirs.initialize(1)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with mine.call(2, "ask_name") as (request, stream):
                question = await stream.question()
                refused = [
                    await mine.post(r, answer(question["id"]), session_id=theirs.session_id)
                    for r in (0, 2)
                ]
                real = await mine.post(1, answer(question["id"]))
                done = await stream.answer_to(request["id"])
    for response in refused:
        assert 400 <= response.status_code < 500, response.text
        assert error_of(response)["message"]
    assert real.status_code == 202, real.text
    assert done["result"]["content"][0]["text"] == "Hello, Ada, from C"


async def test_session_ended_on_one_replica_is_gone_on_all(deployment: Cluster) -> None:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        raw = RawSession(http, urls(deployment))
        await raw.initialize(0)
        ended = await http.delete(deployment.url(1), headers=raw.headers())
        after = [
            await raw.post(replica, raw.request("tools/call", {"name": "whoami"}))
            for replica in (0, 2)
        ]
    assert ended.is_success, ended.text
    assert [response.status_code for response in after] == [404, 404]


async def test_session_bound_to_its_user_on_every_replica(
    deployment: Cluster, tmp_path: Path
) -> None:
    """Opened by alice on P, her session serves her on Q too, and is not found for bob
    on either replica (as if the id did not exist)."""
    guarded = ReplicaOptions(
        redis_url=deployment.redis.url, state_key=deployment.options.state_key, auth=True
    )
    with replicas(["P", "Q"], guarded, tmp_path) as pair:
        async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
            raw = RawSession(http, [f"http://127.0.0.1:{p.port}/mcp" for p in pair])
            raw.extra_headers = {"authorization": "Bearer alice"}
            await raw.initialize(0)
            whoami = raw.request("tools/call", {"name": "whoami"})
            hers = await raw.post(1, whoami)
            raw.extra_headers = {"authorization": "Bearer bob"}
            his = [await raw.post(replica, whoami) for replica in (0, 1)]
            raw.extra_headers = {}
            nobodys = await raw.post(1, whoami)
    assert hers.status_code == 200, hers.text
    assert "Q" in hers.text
    assert [response.status_code for response in his] == [404, 404], [r.text for r in his]
    assert nobodys.status_code == 401


# -- notifications -----------------------------------------------------------------------


async def test_roots_changed_on_one_replica_are_current_on_every_replica(
    deployment: Cluster, tmp_path: Path
) -> None:
    """A replica that kept the roots it listed granted a removed root for the rest of the
    session when the client's "roots changed" reached another replica."""
    kept, removed = tmp_path / "kept", tmp_path / "removed"
    kept.mkdir()
    removed.mkdir()
    roots = Roots([kept, removed])
    router = ReplicaRouter(deployment.ports)
    both = [kept.as_uri(), removed.as_uri()]
    async with routed_client(router, roots=roots) as client:
        seen = [(await client.call_tool("roots_here")).structured_content for _ in REPLICA_NAMES]
        assert seen == [{"result": both}] * len(REPLICA_NAMES)
        await roots.remove(removed)
        seen = [(await client.call_tool("roots_here")).structured_content for _ in REPLICA_NAMES]
    assert seen == [{"result": [kept.as_uri()]}] * len(REPLICA_NAMES)
    assert len({route.replica for route in calls(router)}) == len(REPLICA_NAMES)


async def test_list_changed_reaches_clients_on_every_replica(deployment: Cluster) -> None:
    """Each client's GET stream is on another replica; each hears ``announce`` (run on
    one of them) exactly once: the list change, then the sentinel update that ends it."""
    heard: list[list[str]] = [[] for _ in REPLICA_NAMES]
    ended = [anyio.Event() for _ in REPLICA_NAMES]

    def handler(index: int) -> Callable[[IncomingMessage], Any]:
        async def handle(message: IncomingMessage) -> None:
            if isinstance(message, ToolListChangedNotification):
                heard[index].append("tools")
            elif isinstance(message, ResourceUpdatedNotification):
                heard[index].append(message.params.uri)
                ended[index].set()

        return handle

    async with AsyncExitStack() as stack:
        clients: list[Client] = []
        for index in range(len(REPLICA_NAMES)):
            router = ReplicaRouter(deployment.ports)
            router.listen_on = index
            client = routed_client(router, message_handler=handler(index))
            clients.append(await stack.enter_async_context(client))
            with anyio.fail_after(PATIENCE_SECONDS):
                await router.listening.wait()
        for client in clients:
            await client.subscribe_resource(SENTINEL_URI)
        await clients[0].call_tool("announce")
        with anyio.move_on_after(PATIENCE_SECONDS):
            for event in ended:
                await event.wait()
    assert heard == [["tools", SENTINEL_URI] for _ in REPLICA_NAMES], deployment.logs()


async def test_listen_stream_hears_a_change_made_on_another_replica(deployment: Cluster) -> None:
    listener_router = ReplicaRouter(deployment.ports)
    listener_router.requests_to = 0
    caller_router = ReplicaRouter(deployment.ports)
    caller_router.requests_to = 2
    async with (
        routed_client(listener_router, modern=True) as listener,
        routed_client(caller_router, modern=True) as caller,
        listener.listen(tools_list_changed=True) as notifications,
    ):
        assert text_of(await caller.call_tool("announce")) == "announced from C"
        with anyio.fail_after(PATIENCE_SECONDS):
            notification = await notifications.receive()
    assert isinstance(notification, ToolListChangedNotification)


# -- 2026-07-28 ---------------------------------------------------------------------------


async def test_modern_retry_answered_by_another_replica(deployment: Cluster) -> None:
    router = ReplicaRouter(deployment.ports)
    async with routed_client(router, modern=True, elicitation_callback=answer_ada) as client:
        result = text_of(await client.call_tool("ask_name"))
    [first] = [r for r in router.routed("request") if r.method == "tools/call"]
    [retry] = router.routed("retry")
    assert retry.replica != first.replica
    assert result == f"Hello, Ada, from {REPLICA_NAMES[retry.replica]}"


async def test_modern_retry_sealed_with_another_key_refused(
    deployment: Cluster, tmp_path: Path
) -> None:
    """A replica with a key of its own cannot open the others' ``requestState``."""
    stray = ReplicaOptions(redis_url=deployment.redis.url, state_key=secrets.token_bytes(32))
    with replicas(["D"], stray, tmp_path) as [d]:
        router = ReplicaRouter([deployment.replicas[0].port, d.port])
        router.requests_to, router.retry_to = 0, 1
        async with routed_client(router, modern=True, elicitation_callback=answer_ada) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("ask_name")
    assert "state_keys" in caught.value.message
    assert [r.replica for r in router.routed("retry")] == [1]


async def test_single_use_state_replayed_on_another_replica_refused(deployment: Cluster) -> None:
    router = ReplicaRouter(deployment.ports)
    async with routed_client(router, modern=True, elicitation_callback=answer_ada) as client:
        first = await client.call_tool_round("ask_name")
        assert isinstance(first, InputRequiredResult)
        answers = await client.answer_input_requests(first)
        state = first.request_state
        done = await client.call_tool_round(
            "ask_name", input_responses=answers, request_state=state
        )
        with pytest.raises(MCPError) as caught:
            await client.call_tool_round("ask_name", input_responses=answers, request_state=state)
    assert isinstance(done, CallToolResult)
    assert text_of(done).startswith("Hello, Ada, from ")
    assert "already used" in caught.value.message
    used, replayed = router.routed("retry")
    assert used.replica != replayed.replica


# -- Redis down --------------------------------------------------------------------------


async def test_redis_stopped_fails_closed(tmp_path: Path) -> None:
    """503 with a JSON-RPC error saying the shared state cannot be reached (not where
    it is: that is the operator's, in the log), even on the replica that opened the
    session and still has it in memory: no fallback to local state."""
    with cluster(tmp_path, names=("A", "B")) as running:
        async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
            raw = RawSession(http, [running.url(0), running.url(1)])
            await raw.initialize(0)
            running.redis.process.stop()
            responses = [
                await raw.post(replica, raw.request("tools/call", {"name": "whoami"}))
                for replica in (0, 1)
            ]
            fresh = RawSession(http, [running.url(0)])
            params = {
                "protocolVersion": LEGACY_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            }
            responses.append(await fresh.post(0, fresh.request("initialize", params)))
    for response in responses:
        assert response.status_code == 503, response.text
        message = error_of(response)["message"]
        assert "shared state cannot be reached" in message, message
        assert running.redis.url not in message, message


# -- through haproxy, answerback's ordinary Client ---------------------------------------


@needs_haproxy
async def test_haproxy_spreads_one_session_over_the_replicas(deployment: Cluster) -> None:
    async with Client(deployment.proxy_url, mode="legacy") as client:
        names = {text_of(await client.call_tool("whoami")) for _ in range(6)}
    assert len(names) > 1, "haproxy balanced by connection, not per request"


@needs_haproxy
async def test_haproxy_questions_answered_from_any_replica(deployment: Cluster) -> None:
    results: list[str] = []

    async def ask(client: Client) -> None:
        results.append(text_of(await client.call_tool("ask_name")))

    async with Client(deployment.proxy_url, mode="legacy", elicitation_callback=answer_ada) as c:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                for _ in range(6):
                    tg.start_soon(ask, c)
    assert len(results) == 6
    assert all(text.startswith("Hello, Ada, from ") for text in results), results


@needs_haproxy
async def test_haproxy_list_changed_reaches_every_client(deployment: Cluster) -> None:
    ended = [anyio.Event() for _ in range(3)]
    heard: list[list[str]] = [[] for _ in range(3)]

    def handler(index: int) -> Callable[[IncomingMessage], Any]:
        async def handle(message: IncomingMessage) -> None:
            if isinstance(message, ToolListChangedNotification):
                heard[index].append("tools")
            elif isinstance(message, ResourceUpdatedNotification):
                heard[index].append(message.params.uri)
                ended[index].set()

        return handle

    async with AsyncExitStack() as stack:
        clients: list[Client] = []
        for index in range(3):
            listening = anyio.Event()
            client = proxied_client(deployment.proxy_url, listening, message_handler=handler(index))
            clients.append(await stack.enter_async_context(client))
            with anyio.fail_after(PATIENCE_SECONDS):
                await listening.wait()
        for client in clients:
            await client.subscribe_resource(SENTINEL_URI)
        await clients[1].call_tool("announce")
        with anyio.move_on_after(PATIENCE_SECONDS):
            for event in ended:
                await event.wait()
    assert all(h == ["tools", SENTINEL_URI] for h in heard), (heard, deployment.logs())


@needs_haproxy
async def test_haproxy_modern_retries(deployment: Cluster) -> None:
    async with Client(deployment.proxy_url, mode=MODERN, elicitation_callback=answer_ada) as c:
        results = [text_of(await c.call_tool("ask_name")) for _ in range(3)]
    assert all(text.startswith("Hello, Ada, from ") for text in results), results


# -- the benchmark -----------------------------------------------------------------------


@needs_haproxy
@pytest.mark.timeout(180)
def test_scale_out_benchmark_quick_run(tmp_path: Path) -> None:
    """``--quick`` measures every setup and Redis memory (no number is judged: a quick
    run on a shared machine means nothing)."""
    output, readme = tmp_path / "scale_out.json", tmp_path / "README.md"
    command = [sys.executable, "-m", "benchmarks.scale_out", "--quick"]
    subprocess.run(
        [*command, "--output", str(output), "--readme", str(readme)],
        cwd=REPO,
        check=True,
        timeout=170,
        stdout=subprocess.DEVNULL,
    )
    measured: dict[str, Any] = json.loads(output.read_text())["measured"]
    assert all(m["calls"] > 0 for m in measured["medians"].values()), measured
    assert measured["ratio"] > 0
    assert measured["redis_memory"]["key_bytes_per_session"] > 0
    assert "scale-out:begin" in readme.read_text()
