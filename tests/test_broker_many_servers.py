"""The broker with several servers at once: a server that cannot answer holds up no one
else's question, two connections given one name are told apart, and a handler failing on
every notification names its server and logs one traceback.

A server that stops answering is played by hand (``client_with_hand_driven_server``):
the test decides whether, and when, the broker's ping gets its answer, so nothing here
waits on a clock.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import pytest
from support import (
    SERVERS,
    RawPeer,
    ScreenPerson,
    client_with_hand_driven_server,
    server_object,
)

from answerback import Client
from answerback.interact import (
    SERVER_CANCELLED,
    SERVER_NOT_ANSWERING,
    Broker,
)
from answerback.interact import _broker as broker_module
from answerback.types import LoggingMessageNotificationParams, TextContent

pytestmark = pytest.mark.anyio

ASKING_SERVER = SERVERS / "asking_server.py"
QUESTION_ID = "frozen-question"


Person = ScreenPerson


async def ask_by_hand(peer: RawPeer) -> None:
    """The hand-driven server asks for a name (a legacy ``elicitation/create``)."""
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": QUESTION_ID,
            "method": "elicitation/create",
            "params": {
                "message": "Name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
        }
    )


def text_of(result: Any) -> str:
    [content] = result.content
    assert isinstance(content, TextContent), content
    return content.text


async def test_a_server_slow_to_answer_a_ping_holds_up_no_other_servers_question() -> None:
    """The frozen server's question is withdrawn and the broker pings it to learn why;
    until it answers, the other server's question is already on screen, and the
    withdrawal is told once the ping is answered."""
    person = Person()
    greetings: list[str] = []
    async with (
        Broker(person, on_change=person.changed) as broker,
        client_with_hand_driven_server(responder=broker.responder("frozen")) as (_, peer, _),
        Client(server_object(ASKING_SERVER), responder=broker.responder("other")) as other,
        anyio.create_task_group() as tg,
    ):
        await ask_by_hand(peer)
        await person.until(lambda: len(person.shown) == 1)

        async def greet() -> None:
            greetings.append(text_of(await other.call_tool("greet", {"who": "Bo"})))

        tg.start_soon(greet)
        await person.until(lambda: len(broker.pending()) == 2)

        await peer.cancel(QUESTION_ID, "no longer needed")
        ping = await peer.receive_until(lambda message: message.get("method") == "ping")
        await person.until(lambda: len(person.shown) == 2)
        assert person.shown[1].server == "other"
        assert person.withdrawals == [], "told before the ping was answered"

        await peer.send({"jsonrpc": "2.0", "id": ping["id"], "result": {}})
        await person.until(lambda: bool(person.withdrawals))
    assert person.withdrawals == [(person.shown[0], SERVER_CANCELLED)]
    assert greetings == ["Hello, Ada for other (Bo)."]


@pytest.mark.parametrize("whose_wait", ["broker's", "client's"])
async def test_a_server_that_never_answers_the_ping_is_said_to_have_stopped_answering(
    whose_wait: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not "the server withdrew it": all the broker knows is that the server no
    longer answers (frozen, or its event loop blocked), whichever wait ends first: the
    broker's, or the client's read timeout."""
    options: dict[str, Any] = {}
    if whose_wait == "broker's":
        monkeypatch.setattr(broker_module, "PING_SECONDS", 0.01)
    else:
        options["read_timeout_seconds"] = 0.01
    person = Person()
    async with (
        Broker(person, on_change=person.changed) as broker,
        client_with_hand_driven_server(responder=broker.responder("frozen"), **options) as (
            _,
            peer,
            _,
        ),
    ):
        await ask_by_hand(peer)
        await person.until(lambda: len(person.shown) == 1)
        await peer.cancel(QUESTION_ID, "no longer needed")
        await peer.receive_until(lambda message: message.get("method") == "ping")
        await person.until(lambda: bool(person.withdrawals))
    assert person.withdrawals == [(person.shown[0], SERVER_NOT_ANSWERING)]


async def test_two_open_connections_under_one_name_are_told_apart() -> None:
    """The later one shows as ``work (2)``, and muting it leaves the first alone; once
    the first closes, a connection under the name takes it again (a reconnection)."""
    person = Person()
    async with Broker(person, on_change=person.changed) as broker:
        async with (
            Client(server_object(ASKING_SERVER), responder=broker.responder("work")) as first,
            Client(server_object(ASKING_SERVER), responder=broker.responder("work")) as second,
        ):
            assert text_of(await first.call_tool("greet", {"who": "A"})) == (
                "Hello, Ada for work (A)."
            )
            assert text_of(await second.call_tool("greet", {"who": "B"})) == (
                "Hello, Ada for work (2) (B)."
            )
            broker.mute("work (2)")
            assert text_of(await second.call_tool("greet", {"who": "B"})) == "No greeting for B."
            assert text_of(await first.call_tool("greet", {"who": "A"})) == (
                "Hello, Ada for work (A)."
            )
        async with Client(
            server_object(ASKING_SERVER), responder=broker.responder("work")
        ) as again:
            assert text_of(await again.call_tool("greet", {"who": "C"})) == (
                "Hello, Ada for work (C)."
            )
    assert [question.server for question in person.shown] == ["work", "work (2)", "work", "work"]


async def test_a_handler_failing_on_every_log_message_names_the_server_and_logs_one_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(params: LoggingMessageNotificationParams) -> None:
        raise RuntimeError("the log window is gone")

    caplog.set_level(logging.WARNING, logger="answerback.jsonrpc")
    async with client_with_hand_driven_server(logging_callback=broken) as (_, peer, _):
        for number in range(10):
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/message",
                    "params": {"level": "info", "data": f"line {number}"},
                }
            )
        # Answered only once every notification before it was handled.
        await peer.send({"jsonrpc": "2.0", "id": "sync", "method": "ping"})
        await peer.receive_until(lambda message: message.get("id") == "sync")
    failures = [r for r in caplog.records if "notification handler" in r.getMessage()]
    assert [r.exc_info is not None for r in failures] == [True, False]
    first, tenth = (r.getMessage() for r in failures)
    assert "'notifications/message' from the server 'hand-driven' 0 failed" in first
    assert "has failed 10 times" in tenth
    assert "RuntimeError: the log window is gone" in tenth
