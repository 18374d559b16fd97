"""Single-use ``requestState`` and state shared by replicas (2026-07-28).

A server marks state single-use (``ctx.seal_state(..., single_use=True)``, or
``MCPServer(single_use_state=True)`` for the state ``ctx.elicit`` seals): the first retry
carrying it runs, the same state sent again is refused before the tool runs, also on
another replica sharing the record of used states. Replicas that share ``state_keys``
accept each other's state; one sealed with other keys is refused with a message that
says to share them.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncGenerator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest
from http_support import serve
from pydantic import BaseModel
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from scale_out.cluster import free_port, missing_for_redis, redis_server
from support import ReportingEventLoop

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.transports.http import (
    InMemoryNotificationBus,
    InMemoryUsedStates,
    NotificationBus,
    RedisUsedStates,
    UsedStates,
)
from answerback.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ASYNCIO = ("asyncio", {"loop_factory": ReportingEventLoop})
TRIO = ("trio", dict[str, Any]())
REPLAYED = (
    "Invalid requestState: it was already used, and this server accepts it once "
    "(single-use state). Start the request again without requestState."
)
UNKNOWN_KEY = (
    "Invalid requestState: no key this server holds sealed it. Either it was altered, or "
    "another replica sealed it with other keys (every replica must share "
    "MCPServer(state_keys=...)). Start the request again without requestState."
)


class Confirmation(BaseModel):
    confirm: bool


async def accept(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"confirm": True})


@dataclass
class Ledger:
    """What the servers' tools did, to show a refused replay ran nothing."""

    payments: list[str] = field(default_factory=list[str])


def payment_server(ledger: Ledger, **options: Any) -> MCPServer:
    """``pay`` asks with ctx.elicit; ``pay_by_hand`` builds its own rounds with
    single-use state."""
    mcp = MCPServer("Payments", **options)

    @mcp.tool()
    async def pay(ctx: Context, amount: int) -> str:
        """Pay once the user confirms."""
        answer = await ctx.elicit(f"Pay {amount}?", Confirmation)
        if answer.action != "accept" or not answer.data.confirm:
            return "Not paid."
        ledger.payments.append(f"pay {amount}")
        return f"Paid {amount}."

    @mcp.tool()
    async def pay_by_hand(ctx: Context, amount: int) -> str | InputRequiredResult:
        """Pay on the round after the one that asked."""
        if ctx.open_state() is None:
            question = ElicitRequest(
                params=ElicitRequestFormParams(
                    message=f"Pay {amount}?",
                    requested_schema={
                        "type": "object",
                        "properties": {"confirm": {"type": "boolean"}},
                    },
                )
            )
            return InputRequiredResult(
                input_requests={"confirm": question},
                request_state=ctx.seal_state({"amount": amount}, single_use=True),
            )
        ledger.payments.append(f"by hand {amount}")
        return f"Paid {amount} by hand."

    return mcp


@dataclass
class Shared:
    """The part of an HTTP app's state that a server attaches to, shared by replicas."""

    notifications: NotificationBus = field(default_factory=InMemoryNotificationBus)
    used_states: UsedStates = field(default_factory=InMemoryUsedStates)


@asynccontextmanager
async def replicas(
    states: list[Shared], **options: Any
) -> AsyncGenerator[tuple[list[MCPServer], Ledger], None]:
    """A server attached to each state (one shared object, or each replica's view of
    the same Redis), as replicas are."""
    ledger = Ledger()
    servers = [payment_server(ledger, **options) for _ in states]
    async with AsyncExitStack() as stack:
        for server, state in zip(servers, states, strict=True):
            await stack.enter_async_context(server.attach_state(state))
        yield servers, ledger


async def round_one(
    server: MCPServer | str, tool: str
) -> tuple[InputRequiredResult, dict[str, Any]]:
    async with Client(server, mode=MODERN, elicitation_callback=accept) as client:
        needed = await client.call_tool_round(tool, {"amount": 5})
        assert isinstance(needed, InputRequiredResult)
        return needed, await client.answer_input_requests(needed)


async def retry(
    server: MCPServer | str, tool: str, needed: InputRequiredResult, answers: dict[str, Any]
) -> Any:
    async with Client(server, mode=MODERN) as client:
        return await client.call_tool_round(
            tool, {"amount": 5}, input_responses=answers, request_state=needed.request_state
        )


@pytest.mark.parametrize("tool", ["pay", "pay_by_hand"])
async def test_single_use_state_is_accepted_once_then_refused(tool: str) -> None:
    ledger = Ledger()
    server = payment_server(ledger, single_use_state=True)
    needed, answers = await round_one(server, tool)
    done = await retry(server, tool, needed, answers)
    with pytest.raises(MCPError) as caught:
        await retry(server, tool, needed, answers)
    assert isinstance(done.content[0], TextContent)
    assert done.content[0].text.startswith("Paid 5")
    assert (caught.value.code, caught.value.message) == (-32602, REPLAYED)
    assert len(ledger.payments) == 1


async def test_state_is_reusable_unless_the_server_asks_for_single_use() -> None:
    """The default is unchanged: ctx.elicit's state may be retried again."""
    ledger = Ledger()
    server = payment_server(ledger)
    needed, answers = await round_one(server, "pay")
    for _ in range(2):
        done = await retry(server, "pay", needed, answers)
        assert done.content[0] == TextContent(text="Paid 5.")
    assert ledger.payments == ["pay 5", "pay 5"]


async def test_a_replay_on_another_replica_is_refused() -> None:
    """Replicas sharing keys and the used-state record: the retry runs on B, its replay
    on A is refused."""
    key = os.urandom(32)
    shared = Shared()
    async with replicas([shared, shared], state_keys=[key], single_use_state=True) as (
        (a, b),
        ledger,
    ):
        needed, answers = await round_one(a, "pay")
        done = await retry(b, "pay", needed, answers)
        with pytest.raises(MCPError) as caught:
            await retry(a, "pay", needed, answers)
    assert done.content[0] == TextContent(text="Paid 5.")
    assert caught.value.message == REPLAYED
    assert ledger.payments == ["pay 5"]


async def test_a_retry_runs_on_another_replica_that_shares_the_keys() -> None:
    key = os.urandom(32)
    shared = Shared()
    async with replicas([shared, shared], state_keys=[key]) as ((a, b), _):
        needed, answers = await round_one(a, "pay")
        done = await retry(b, "pay", needed, answers)
    assert done.content[0] == TextContent(text="Paid 5.")


async def test_a_retry_sealed_with_other_keys_is_refused_saying_to_share_them() -> None:
    ledger = Ledger()
    a = payment_server(ledger, state_keys=[os.urandom(32)])
    b = payment_server(ledger, state_keys=[os.urandom(32)])
    needed, answers = await round_one(a, "pay")
    with pytest.raises(MCPError) as caught:
        await retry(b, "pay", needed, answers)
    assert (caught.value.code, caught.value.message) == (-32602, UNKNOWN_KEY)
    assert ledger.payments == []


async def test_retries_across_http_apps_work_with_shared_keys_and_are_refused_without() -> None:
    """Replicas over real HTTP: round one on A, the retry on B (same keys), and on C
    (other keys) refused saying to share them."""
    key, ledger = os.urandom(32), Ledger()
    a, b, c = (payment_server(ledger, state_keys=[k]) for k in (key, key, os.urandom(32)))
    async with (
        serve(a.http_app()) as on_a,
        serve(b.http_app()) as on_b,
        serve(c.http_app()) as on_c,
    ):
        needed, answers = await round_one(on_a.url, "pay")
        done = await retry(on_b.url, "pay", needed, answers)
        with pytest.raises(MCPError) as caught:
            await retry(on_c.url, "pay", needed, answers)
    assert done.content[0] == TextContent(text="Paid 5.")
    assert (caught.value.code, caught.value.message) == (-32602, UNKNOWN_KEY)
    assert ledger.payments == ["pay 5"]


async def test_the_in_memory_record_claims_once_and_forgets_expired_claims() -> None:
    used = InMemoryUsedStates()
    later = time.time() + 600
    assert await used.claim("a", later)
    assert not await used.claim("a", later)
    assert await used.claim("gone", time.time() - 1)
    assert await used.claim("b", later)  # prunes "gone", whose state has expired
    assert await used.claim("gone", later)
    assert not await used.claim("b", later)


# -- Redis ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    missing = missing_for_redis()
    if missing is not None:
        pytest.skip(f"single-use state in Redis needs a real redis-server: {missing}")
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


@pytest.mark.parametrize("anyio_backend", [ASYNCIO])
async def test_a_replay_on_another_replica_is_refused_through_redis(redis_url: str) -> None:
    address = urlsplit(redis_url)
    prefix = f"test-{os.urandom(4).hex()}:"
    key = os.urandom(32)
    clients = [Redis(host=address.hostname or "", port=address.port or 0) for _ in "ab"]
    states = [Shared(used_states=RedisUsedStates(c, key_prefix=prefix)) for c in clients]
    try:
        async with replicas(states, state_keys=[key], single_use_state=True) as ((a, b), ledger):
            needed, answers = await round_one(a, "pay")
            done = await retry(b, "pay", needed, answers)
            with pytest.raises(MCPError) as caught:
                await retry(a, "pay", needed, answers)
    finally:
        for client in clients:
            await client.aclose()
    assert done.content[0] == TextContent(text="Paid 5.")
    assert caught.value.message == REPLAYED
    assert ledger.payments == ["pay 5"]


@pytest.mark.parametrize("anyio_backend", [TRIO])
async def test_the_redis_record_refuses_trio_saying_why() -> None:
    used = RedisUsedStates(Redis(host="127.0.0.1", port=1))
    with pytest.raises(RuntimeError, match="needs asyncio: redis-py's client runs only"):
        await used.claim("id", time.time() + 60)


@pytest.mark.parametrize("anyio_backend", [ASYNCIO])
async def test_single_use_state_is_refused_while_redis_is_unreachable() -> None:
    """Fail closed: without the shared record a replay could not be told apart."""
    client = Redis(host="127.0.0.1", port=free_port(), retry=Retry(NoBackoff(), 0))
    used = RedisUsedStates(client)
    try:
        async with replicas([Shared(used_states=used)], single_use_state=True) as ((a,), ledger):
            needed, answers = await round_one(a, "pay")
            with pytest.raises(MCPError) as caught:
                await retry(a, "pay", needed, answers)
    finally:
        await client.aclose()
    assert caught.value.code == -32603
    assert "could not check its single-use requestState" in caught.value.message
    assert ledger.payments == []
