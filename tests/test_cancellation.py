"""Cancellation end to end: giving up on a call stops everything it set in motion.

The client's call is cancelled while the server is waiting for the user (the client's
elicitation callback). The client tells the server; the server cancels the tool, which
cancels its own question; the client's callback is cancelled in turn. In-process and
over stdio.
"""

from __future__ import annotations

import uuid

import anyio
import pytest
from support import PATIENCE_SECONDS, SERVERS, target

from answerback import Client
from answerback.client import ClientRequestContext, IncomingMessage
from answerback.types import (
    CancelledNotification,
    ConnectionClosedError,
    ElicitRequestParams,
    ElicitResult,
    RequestTimeoutError,
    TextContent,
)

pytestmark = pytest.mark.anyio

ASKING_SERVER = SERVERS / "asking_server.py"
PROCESS_SERVER = SERVERS / "process_server.py"


@pytest.fixture(params=["memory", "stdio"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class SlowPerson:
    """An elicitation callback that never answers, and notices when it is cancelled."""

    def __init__(self) -> None:
        self.asked = anyio.Event()
        self.cancelled = anyio.Event()

    async def __call__(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.asked.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        raise AssertionError("unreachable")


async def server_history(client: Client, tag: str, until: list[str]) -> list[str]:
    """What the server recorded for ``tag``, waiting (with patience) until it is ``until``."""
    recorded: list[str] = []
    with anyio.move_on_after(PATIENCE_SECONDS):
        while True:
            result = await client.call_tool("history", {"tag": tag})
            assert result.structured_content is not None
            recorded = result.structured_content["result"]
            if recorded == until:
                return recorded
            await anyio.sleep(0.05)
    return recorded


async def test_cancelling_a_call_cancels_the_question_it_is_waiting_on(transport: str) -> None:
    """Client call cancelled mid-elicitation: the callback and the server tool both stop."""
    person = SlowPerson()
    notifications: list[IncomingMessage] = []

    async def message_handler(message: IncomingMessage) -> None:
        notifications.append(message)

    tag = uuid.uuid4().hex
    async with Client(
        target(transport, ASKING_SERVER),
        mode="legacy",
        elicitation_callback=person,
        message_handler=message_handler,
    ) as client:
        call = anyio.CancelScope()

        async def call_the_tool() -> None:
            with call:
                await client.call_tool("wait_for_name", {"tag": tag})

        async with anyio.create_task_group() as tg:
            tg.start_soon(call_the_tool)
            with anyio.fail_after(PATIENCE_SECONDS):
                await person.asked.wait()
            call.cancel()

        with anyio.fail_after(PATIENCE_SECONDS):
            await person.cancelled.wait()
        assert call.cancelled_caught
        assert await server_history(client, tag, ["asking", "cancelled"]) == [
            "asking",
            "cancelled",
        ]
        # The session is unharmed: the next call works normally.
        result = await client.call_tool("history", {"tag": "nothing-here"})
        assert result.structured_content == {"result": []}
    assert not any(isinstance(m, CancelledNotification) for m in notifications)


TIMEOUT_WHILE_ANSWERING = 1.0
"""Long enough for a subprocess on a busy machine to reply once the person has answered;
the person takes three times as long, so only a timeout that ignores them passes."""


async def test_a_timed_call_waits_while_the_user_is_answering(transport: str) -> None:
    """A read timeout measures the server's silence, not the time a person takes to answer."""

    async def thoughtful_person(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        await anyio.sleep(3 * TIMEOUT_WHILE_ANSWERING)  # well past the call's timeout
        return ElicitResult(action="accept", content={"name": "Ada"})

    async with Client(
        target(transport, ASKING_SERVER), mode="legacy", elicitation_callback=thoughtful_person
    ) as client:
        result = await client.call_tool(
            "wait_for_name", {"tag": uuid.uuid4().hex}, read_timeout_seconds=TIMEOUT_WHILE_ANSWERING
        )
    assert result.content == [TextContent(text="accept")]


async def test_a_silent_server_times_out_and_the_session_carries_on(transport: str) -> None:
    """No answer and no activity within the timeout: ``RequestTimeoutError``, then business
    as usual on the same connection."""
    async with Client(target(transport, PROCESS_SERVER), mode="legacy") as client:
        with pytest.raises(RequestTimeoutError) as caught:
            await client.call_tool("wait_forever", read_timeout_seconds=0.25)
        assert "'tools/call'" in caught.value.message
        result = await client.call_tool("environment_value", {"name": "NOT_SET_ANYWHERE"})
    assert result.content == [TextContent(text="<unset>")]


async def test_many_questions_in_flight_are_answered_out_of_order(transport: str) -> None:
    """Eight calls, each waiting on its own question, answered last-first: no mix-ups."""
    people = [f"person-{n}" for n in range(8)]
    turns = {who: anyio.Event() for who in people}
    asked: list[str] = []
    answered: list[str] = []

    async def answer_in_reverse(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        who = params.message.removeprefix("Name for ").removesuffix("?")
        asked.append(who)
        if len(asked) == len(people):
            turns[people[-1]].set()  # everyone is waiting: the last one answers first
        await turns[who].wait()
        answered.append(who)
        if who != people[0]:
            turns[people[people.index(who) - 1]].set()
        return ElicitResult(action="accept", content={"name": who.upper()})

    results: dict[str, str] = {}
    async with Client(
        target(transport, ASKING_SERVER), mode="legacy", elicitation_callback=answer_in_reverse
    ) as client:

        async def greet(who: str) -> None:
            result = await client.call_tool("greet", {"who": who})
            [content] = result.content
            assert isinstance(content, TextContent)
            results[who] = content.text

        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                for who in people:
                    tg.start_soon(greet, who)
    assert sorted(asked) == sorted(people)
    assert answered == list(reversed(people))
    assert results == {who: f"Hello, {who.upper()} ({who})." for who in people}


async def test_disconnecting_cancels_the_servers_waiting_tool() -> None:
    """A client that goes away mid-call fails its own pending call and leaves no tool
    waiting on the server (in-process, where the server outlives the connection)."""
    server = target("memory", ASKING_SERVER)
    person = SlowPerson()
    tag = uuid.uuid4().hex
    failures: list[Exception] = []
    # The call task lives in the outer task group, so it outlives the client.
    async with (
        anyio.create_task_group() as tg,
        Client(server, mode="legacy", elicitation_callback=person) as client,
    ):

        async def call() -> None:
            try:
                await client.call_tool("wait_for_name", {"tag": tag})
            except ConnectionClosedError as exc:
                failures.append(exc)

        tg.start_soon(call)
        with anyio.fail_after(PATIENCE_SECONDS):
            await person.asked.wait()
    assert person.cancelled.is_set()
    assert len(failures) == 1
    async with Client(server, mode="legacy") as observer:
        assert await server_history(observer, tag, ["asking", "cancelled"]) == [
            "asking",
            "cancelled",
        ]
