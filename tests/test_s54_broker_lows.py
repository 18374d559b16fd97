"""The broker's names and pings (stop 54): closed connections are forgotten, the host's
name reaches every connection given it, a host's own ``"tea (2)"`` never collides with
the broker's numbering, one ping at a time per server, and a withdrawal still told when
the broker closes during its ping.

Servers that must not answer in time are played by hand (``client_with_hand_driven_server``),
so nothing here waits on a clock.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support import (
    PATIENCE_SECONDS,
    SERVERS,
    RawPeer,
    ScreenPerson,
    client_with_hand_driven_server,
    server_object,
)

from answerback import Client
from answerback.interact import SERVER_CANCELLED, Answer, Broker, Question
from answerback.types import ElicitResult, TextContent

pytestmark = pytest.mark.anyio

ASKING_SERVER = SERVERS / "asking_server.py"


Person = ScreenPerson


def text_of(result: Any) -> str:
    [content] = result.content
    assert isinstance(content, TextContent), content
    return content.text


async def greeting(client: Client, who: str) -> str:
    return text_of(await client.call_tool("greet", {"who": who}))


async def ask_by_hand(peer: RawPeer, question_id: str) -> None:
    await peer.send(
        {
            "jsonrpc": "2.0",
            "id": question_id,
            "method": "elicitation/create",
            "params": {
                "message": "Name?",
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
            },
        }
    )


async def test_closed_connections_are_forgotten() -> None:
    """A host naming every connection anew (a gateway) leaves the broker holding only
    the open ones: before, it kept every closed session, one per name, for good."""
    person = Person()
    async with Broker(person) as broker:
        for number in range(3):
            name = f"gateway-{number}"
            async with Client(server_object(ASKING_SERVER), responder=broker.responder(name)) as c:
                assert await greeting(c, "A") == f"Hello, Ada for {name} (A)."
        async with Client(server_object(ASKING_SERVER), responder=broker.responder("last")) as c:
            assert await greeting(c, "B") == "Hello, Ada for last (B)."
            assert list(broker._speakers) == ["last"]  # pyright: ignore[reportPrivateUsage]


async def test_the_hosts_name_reaches_every_connection_given_it() -> None:
    """``mute("work")`` with the name the host gave both responders reaches the one
    shown as ``work (2)`` too; before, only a warning said it was missed."""
    person = Person()
    async with (
        Broker(person) as broker,
        Client(server_object(ASKING_SERVER), responder=broker.responder("work")) as first,
        Client(server_object(ASKING_SERVER), responder=broker.responder("work")) as second,
    ):
        assert await greeting(first, "A") == "Hello, Ada for work (A)."
        assert await greeting(second, "B") == "Hello, Ada for work (2) (B)."
        broker.mute("work")
        assert broker.is_muted("work (2)")
        assert await greeting(second, "B") == "No greeting for B."
        assert await greeting(first, "A") == "No greeting for A."
        broker.unmute("work")
        assert await greeting(second, "B") == "Hello, Ada for work (2) (B)."


async def test_a_numbered_mute_lasts_as_long_as_its_connection() -> None:
    """Muting ``work (2)`` as shown mutes that connection only, and only while it is
    open: the next connection numbered so may be another server."""
    person = Person()
    async with (
        Broker(person) as broker,
        Client(server_object(ASKING_SERVER), responder=broker.responder("work")) as first,
    ):
        assert await greeting(first, "A") == "Hello, Ada for work (A)."
        async with Client(server_object(ASKING_SERVER), responder=broker.responder("work")) as c:
            assert await greeting(c, "B") == "Hello, Ada for work (2) (B)."
            broker.mute("work (2)")
            assert await greeting(c, "B") == "No greeting for B."
            assert await greeting(first, "A") == "Hello, Ada for work (A)."
        async with Client(server_object(ASKING_SERVER), responder=broker.responder("work")) as c:
            assert await greeting(c, "C") == "Hello, Ada for work (2) (C)."


async def test_a_host_naming_a_connection_tea_2_does_not_collide_with_the_numbering() -> None:
    """The broker never numbers a connection ``tea (2)`` while a responder has that
    name, and muting the host's ``tea (2)`` leaves the second ``tea`` alone."""
    person = Person()
    async with (
        Broker(person) as broker,
        Client(server_object(ASKING_SERVER), responder=broker.responder("tea")) as first,
        Client(server_object(ASKING_SERVER), responder=broker.responder("tea")) as second,
        Client(server_object(ASKING_SERVER), responder=broker.responder("tea (2)")) as literal,
    ):
        assert await greeting(first, "A") == "Hello, Ada for tea (A)."
        assert await greeting(second, "B") == "Hello, Ada for tea (3) (B)."
        assert await greeting(literal, "C") == "Hello, Ada for tea (2) (C)."
        broker.mute("tea (2)")
        assert await greeting(literal, "C") == "No greeting for C."
        assert await greeting(second, "B") == "Hello, Ada for tea (3) (B)."


async def test_a_name_given_later_takes_its_place_from_a_numbered_connection() -> None:
    """A responder named ``tea (2)`` made after the second ``tea`` was shown so: the
    host's connection gets its own name, the numbered one the next number."""
    person = Person()
    async with (
        Broker(person) as broker,
        Client(server_object(ASKING_SERVER), responder=broker.responder("tea")) as first,
        Client(server_object(ASKING_SERVER), responder=broker.responder("tea")) as second,
    ):
        assert await greeting(first, "A") == "Hello, Ada for tea (A)."
        assert await greeting(second, "B") == "Hello, Ada for tea (2) (B)."
        async with Client(
            server_object(ASKING_SERVER), responder=broker.responder("tea (2)")
        ) as literal:
            assert await greeting(literal, "C") == "Hello, Ada for tea (2) (C)."
            # The turn it had moved with it: the newcomer's place in line is its own.
            assert "tea (3)" in broker._last_turn  # pyright: ignore[reportPrivateUsage]
            assert await greeting(second, "B") == "Hello, Ada for tea (3) (B)."


class HoldingTea2:
    """Answers at once, except the first question shown as ``tea (2)``, which stays on
    screen (a person reading it) until something settles it."""

    def __init__(self) -> None:
        self.held: Question | None = None
        self.arrived = anyio.Event()

    async def present(self, question: Question) -> Answer:
        if question.server == "tea (2)" and self.held is None:
            self.held = question
            self.arrived.set()
            await anyio.Event().wait()
        return ElicitResult(action="accept", content={"name": f"Ada for {question.server}"})

    async def withdrawn(self, question: Question, reason: str) -> None:
        pass


async def test_the_name_on_screen_stays_that_servers_while_the_host_connects_its_own() -> None:
    """review1 finding 1: the second ``tea``'s question is on screen as ``tea (2)`` when
    the host's own ``"tea (2)"`` first asks. Before, the queue was renamed but not the
    card, so the card's mute key (``mute(<the name shown>)``) muted the host's server,
    never shown, and left the one the person saw asking. Now the name on screen keeps
    naming that server, and the newcomer is shown numbered."""
    person = HoldingTea2()
    queue_changed = anyio.Event()

    def on_change() -> None:
        nonlocal queue_changed
        queue_changed.set()
        queue_changed = anyio.Event()

    results: dict[str, str] = {}
    async with (
        Broker(person, on_change=on_change) as broker,
        Client(server_object(ASKING_SERVER), responder=broker.responder("tea")) as first,
        Client(server_object(ASKING_SERVER), responder=broker.responder("tea")) as second,
    ):
        assert await greeting(first, "A") == "Hello, Ada for tea (A)."

        both_answered = anyio.Event()

        async def greet(key: str, client: Client, who: str) -> None:
            results[key] = await greeting(client, who)
            if len(results) == 2:
                both_answered.set()

        async with anyio.create_task_group() as group:
            group.start_soon(greet, "second", second, "B")
            with anyio.fail_after(PATIENCE_SECONDS):
                await person.arrived.wait()
            held = person.held
            assert held is not None
            # Only now is the host's own "tea (2)" made, connected, and asking.
            async with Client(
                server_object(ASKING_SERVER), responder=broker.responder("tea (2)")
            ) as literal:
                group.start_soon(greet, "literal", literal, "C")
                with anyio.fail_after(PATIENCE_SECONDS):
                    while len(broker.pending()) < 2:
                        await queue_changed.wait()
                assert [q.server for q in broker.pending()] == ["tea (2)", "tea (2) (2)"]
                broker.mute(held.server)  # what the card's mute key does
                with anyio.fail_after(PATIENCE_SECONDS):
                    await both_answered.wait()
                assert results == {
                    "second": "No greeting for B.",
                    "literal": "Hello, Ada for tea (2) (2) (C).",
                }
                assert await greeting(second, "B") == "No greeting for B."  # muted
                assert await greeting(literal, "C") == "Hello, Ada for tea (2) (2) (C)."


async def test_withdrawals_while_a_ping_is_under_way_wait_for_its_verdict() -> None:
    """Two questions withdrawn by one server, the ping for the first still unanswered:
    no second ping; both are told once the one ping is answered. Before, the second
    had a ping of its own, never answered here, and was told "stopped answering"."""
    person = Person()
    async with (
        Broker(person, on_change=person.changed) as broker,
        client_with_hand_driven_server(responder=broker.responder("frozen")) as (_, peer, _),
    ):
        await ask_by_hand(peer, "q1")
        await person.until(lambda: len(person.shown) == 1)
        await peer.cancel("q1", "no longer needed")
        ping = await peer.receive_until(lambda message: message.get("method") == "ping")
        await ask_by_hand(peer, "q2")
        await person.until(lambda: len(person.shown) == 2)
        await peer.cancel("q2", "no longer needed")
        # A third question on screen: the second's withdrawal has been taken up.
        await ask_by_hand(peer, "q3")
        await person.until(lambda: len(person.shown) == 3)
        await peer.send({"jsonrpc": "2.0", "id": ping["id"], "result": {}})
        await person.until(lambda: len(person.withdrawals) == 2)
        assert person.withdrawals == [
            (person.shown[0], SERVER_CANCELLED),
            (person.shown[1], SERVER_CANCELLED),
        ]


async def test_a_broker_closing_during_the_ping_still_tells_the_withdrawal() -> None:
    """The person learns the question went away, with the reason unconfirmed: the
    ping's answer cannot come any more. Before, nothing was said."""
    person = Person()
    broker = Broker(person, on_change=person.changed)
    async with client_with_hand_driven_server(responder=broker.responder("frozen")) as (
        _,
        peer,
        _,
    ):
        async with broker:
            await ask_by_hand(peer, "q1")
            await person.until(lambda: len(person.shown) == 1)
            await peer.cancel("q1", "no longer needed")
            await peer.receive_until(lambda message: message.get("method") == "ping")
        assert person.withdrawals == [(person.shown[0], SERVER_CANCELLED)]
