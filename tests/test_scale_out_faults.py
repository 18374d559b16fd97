"""Scale-out when Redis loses its data or a replica stops beating for a while.

Real processes, as in ``test_scale_out.py``: a redis-server with no persistence (as
docs/deployment.md advises) and replicas of ``tests/scale_out/replica_server.py``. A
replica whose event loop is blocked is frozen with SIGSTOP (what a blocked loop looks
like from outside: no beats, no reads) and thawed with SIGCONT. Waits on Redis watch its
keyspace notifications, so nothing sleeps.
"""

from __future__ import annotations

import json
import logging
import os
import signal
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Sequence
from contextlib import ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from scale_out.cluster import (
    Cluster,
    Process,
    cluster,
    free_port,
    missing_for_redis,
    redis_server,
    replicas,
)
from scale_out.fixtures import asyncio_only, redis_on
from scale_out.raw import RawSession, answer, error_of
from scale_out.router import ReplicaRouter, routed_transport

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.transports.http import RedisState
from answerback.transports.http import _redis_state as redis_state_module
from answerback.transports.http._message_bus import CallOwner
from answerback.transports.http._redis_client import connect
from answerback.transports.http._state import StateUnavailable
from answerback.types import CallToolResult, ElicitRequestParams, ElicitResult, TextContent

pytestmark = [
    pytest.mark.anyio,
    asyncio_only,
    pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis())),
]

PATIENCE_SECONDS = 30.0
"""A safety net so a broken test fails instead of hanging; never a claim about speed."""
PREFIX = "answerback:"


@asynccontextmanager
async def redis_client(url: str) -> AsyncGenerator[Any, None]:
    """A redis-py client for the test's own looks at Redis, with keyspace
    notifications turned on (the private redis-server is the test's)."""
    client = connect(url)
    try:
        await client.config_set("notify-keyspace-events", "KA")
        yield client
    finally:
        await client.aclose()


async def until(redis: Any, keys: Sequence[str], holds: Callable[[], Awaitable[bool]]) -> None:
    """Return once ``holds()`` is true, checking again whenever one of ``keys`` changes."""
    pubsub = redis.pubsub()
    try:
        with anyio.fail_after(PATIENCE_SECONDS):
            await pubsub.subscribe(*(f"__keyspace@0__:{key}" for key in keys))
            # SUBSCRIBE is only sent; ``holds()`` goes on another connection, which Redis
            # may serve first: a change in between would go unheard. Redis confirms each
            # channel before sending anything published there.
            confirmed = 0
            while confirmed < len(keys):
                message = await pubsub.get_message(timeout=None)
                if message is not None and message["type"] == "subscribe":
                    confirmed += 1
            while not await holds():
                await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
    finally:
        await pubsub.aclose()


@contextmanager
def frozen(*processes: Process) -> Generator[None]:
    """The processes stopped (SIGSTOP), as if their event loops were blocked, until
    the block ends."""
    for process in processes:
        os.kill(process.popen.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for process in processes:
            os.kill(process.popen.pid, signal.SIGCONT)


async def answer_ada(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


def text_of(result: CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent), block
    return block.text


async def test_replica_started_after_redis_lost_its_data_takes_the_others_answers(
    tmp_path: Path,
) -> None:
    """Redis restarts empty, then a new replica starts before the running ones beat:
    it makes a new question-id key. The running ones adopt it at their next beat, and
    every answer crossing between old and new replicas is taken."""
    with cluster(tmp_path, names=("A", "B")) as running, ExitStack() as stack:
        async with redis_client(running.redis.url) as redis:
            with frozen(*running.replicas):
                await redis.flushall()
                # C listens once its lifespan has started: it has made the key by then.
                [newcomer] = stack.enter_context(replicas(["C"], running.options, tmp_path))
            beats = [f"{PREFIX}replica:{name}" for name in ("A", "B")]

            async def old_ones_beat() -> bool:
                return await redis.exists(*beats) == len(beats)

            await until(redis, beats, old_ones_beat)
            router = ReplicaRouter([*running.ports, newcomer.port])
            async with (
                httpx2.AsyncClient(transport=router) as http,
                Client(
                    routed_transport(router, http), mode="legacy", elicitation_callback=answer_ada
                ) as client,
            ):
                with anyio.fail_after(PATIENCE_SECONDS):
                    results = [text_of(await client.call_tool("ask_name")) for _ in range(6)]
    calls = [r for r in router.routes if r.method == "tools/call" and r.kind != "answer"]
    assert results == [f"Hello, Ada, from {'ABC'[r.replica]}" for r in calls]
    crossings = [(r.replica, *r.owners) for r in router.routed("answer")]
    assert any(2 in crossing for crossing in crossings), "no answer crossed to or from C"


@asynccontextmanager
async def question_on_a(running: Cluster) -> AsyncGenerator[tuple[RawSession, Any, Any, Any], None]:
    """A session opened on B whose ``ask_name`` call is owned by A, its stream open on
    A: yields the raw session, the call's request, its stream and A's question."""
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        raw = RawSession(http, [running.url(0), running.url(1)])
        await raw.initialize(1)
        async with raw.call(0, "ask_name") as (request, stream):
            yield raw, request, stream, await stream.question()


async def lapse(redis: Any, replica: str) -> None:
    """Return once ``replica``'s heartbeat key has lapsed (it missed three beats)."""
    beat = f"{PREFIX}replica:{replica}"

    async def lapsed() -> bool:
        return not await redis.exists(beat)

    await until(redis, [beat], lapsed)


async def test_answer_reaches_an_owner_whose_beats_lapsed(tmp_path: Path) -> None:
    """A's event loop is blocked past three heartbeats while its question waits: an
    answer through B is taken (not refused as if A had died), and A's call completes
    once A runs again."""
    with cluster(tmp_path, names=("A", "B")) as running:
        async with redis_client(running.redis.url) as redis:
            with anyio.fail_after(PATIENCE_SECONDS):
                async with question_on_a(running) as (raw, request, stream, question):
                    with frozen(running.replicas[0]):
                        await lapse(redis, "A")
                        sent = await raw.post(1, answer(question["id"]))
                    done = await stream.answer_to(request["id"])
    assert sent.status_code == 202, sent.text
    assert done["result"]["content"][0]["text"] == "Hello, Ada, from A"


async def test_answer_refused_for_an_owner_declared_stopped_ends_its_call(
    tmp_path: Path,
) -> None:
    """A replica declared A stopped while A's loop was blocked (as a replica following
    one of A's streams does): an answer to A's question is refused, and A, running
    again, hears of it and ends the call with an error rather than wait for ever."""
    with cluster(tmp_path, names=("A", "B")) as running:
        state = RedisState(running.redis.url)
        async with redis_client(running.redis.url) as redis, state.running():
            with anyio.fail_after(PATIENCE_SECONDS):
                async with question_on_a(running) as (raw, request, stream, question):
                    with frozen(running.replicas[0]):
                        await lapse(redis, "A")
                        await state.replicas.declare_stopped("A")
                        refused = await raw.post(1, answer(question["id"]))
                    done = await stream.answer_to(request["id"])
    assert refused.status_code == 409, refused.text
    assert "has stopped" in error_of(refused)["message"]
    assert "declared this one stopped" in json.dumps(done), done


async def test_redis_flushed_while_a_question_waits(tmp_path: Path) -> None:
    """Redis loses its data (FLUSHALL, as a restart without persistence does) while A's
    question waits: the session is gone, so the answer is refused as for any unknown
    session (404), and A, at its next beat, ends the call with an error its client sees,
    rather than wait for ever."""
    with cluster(tmp_path, names=("A", "B")) as running:
        async with redis_client(running.redis.url) as redis:
            with anyio.fail_after(PATIENCE_SECONDS):
                async with question_on_a(running) as (raw, request, stream, question):
                    await redis.flushall()
                    sent = await raw.post(1, answer(question["id"]))
                    done = await stream.answer_to(request["id"])
    assert sent.status_code == 404, sent.text
    assert "shared state no longer has this session's calls" in done["error"]["message"], done


# -- Redis full, or not up yet -----------------------------------------------------------


async def test_a_full_redis_is_reported_as_full(tmp_path: Path) -> None:
    """Redis answers but refuses writes (maxmemory reached, noeviction): the error says
    it is full and what to do, not that it cannot be reached."""
    with redis_server(tmp_path) as running:
        state = RedisState(running.url)
        async with redis_client(running.url) as redis, state.running():
            await redis.config_set("maxmemory-policy", "noeviction")
            await redis.config_set("maxmemory", 1)
            with pytest.raises(StateUnavailable) as refused:
                await state.messages.open_call("s1", CallOwner(state.replica_id, 1, None))
            await redis.config_set("maxmemory", 0)
    message = str(refused.value)
    assert "is full (OOM command not allowed" in message, message
    assert "raise its maxmemory or free keys" in message, message


class _Heard(logging.Handler):
    """Sets ``event`` when a record containing ``text`` is logged."""

    def __init__(self, text: str, event: anyio.Event) -> None:
        super().__init__()
        self.text = text
        self.event = event

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


async def test_a_replica_started_before_redis_waits_for_it(tmp_path: Path) -> None:
    """As in compose or Kubernetes, where Redis and the replicas start together: a
    replica whose Redis does not answer yet waits for it, then starts."""
    port = free_port()
    state = RedisState(f"redis://127.0.0.1:{port}/0")
    waiting, started_up = anyio.Event(), anyio.Event()
    heard = _Heard("waiting up to", waiting)
    logger = logging.getLogger("answerback.http")
    logger.addHandler(heard)
    keys: list[bytes] = []
    try:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:

                async def replica() -> None:
                    async with state.running() as key:
                        keys.append(key)
                        started_up.set()

                tg.start_soon(replica)
                await waiting.wait()
                assert not started_up.is_set()
                with redis_on(port, tmp_path):
                    await started_up.wait()
    finally:
        logger.removeHandler(heard)
    [key] = keys
    assert len(key) == 32


async def test_a_replica_gives_up_on_an_absent_redis_with_one_clear_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(redis_state_module, "START_SECONDS", 0.0)
    state = RedisState(f"redis://:hunter2@127.0.0.1:{free_port()}/0")
    with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(StateUnavailable) as failed:
        async with state.running():
            pass
    message = str(failed.value)
    assert message.startswith("Redis at redis://***@127.0.0.1:"), message
    assert "Start Redis before the server, or correct RedisState's url." in message
    assert "hunter2" not in message


async def test_a_redis_that_refuses_the_password_is_not_waited_for(tmp_path: Path) -> None:
    with redis_server(tmp_path) as running:
        url = running.url.replace("redis://", "redis://:hunter2@")
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(StateUnavailable) as failed:
            async with RedisState(url).running():
                pass
    message = str(failed.value)
    assert "AUTH" in message, message
    assert "hunter2" not in message
