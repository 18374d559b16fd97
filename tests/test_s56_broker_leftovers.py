"""The broker's leftovers (stop 56): a closed connection's session is not kept alive by
the broker, connections under one name keep the names they are shown by while open and
never get a doubled number, and content dropped from a refused or link answer is blamed
on the presenter that gave it.
"""

from __future__ import annotations

import gc
import logging
import weakref

import pytest
from pydantic import BaseModel
from support import SERVERS, ScreenPerson, server_object

from answerback import Client
from answerback.client import ClientSession
from answerback.interact import Answer, Broker, Question
from answerback.server import Context, MCPServer
from answerback.types import ElicitRequestURLParams, ElicitResult, TextContent

pytestmark = pytest.mark.anyio

ASKING_SERVER = SERVERS / "asking_server.py"


def text_of(result: object) -> str:
    [content] = getattr(result, "content")  # noqa: B009 (CallToolResult, untyped here)
    assert isinstance(content, TextContent), content
    return content.text


class ForgetfulPerson:
    """Answers every form with a name and keeps nothing it was shown."""

    async def present(self, question: Question) -> Answer:
        return ElicitResult(action="accept", content={"name": "Ada"})

    async def withdrawn(self, question: Question, reason: str) -> None:
        raise AssertionError(f"nothing is withdrawn here: {reason}")


async def test_a_closed_connections_session_is_not_kept_alive_by_the_broker() -> None:
    """Once the host lets go of a closed client, its session is freed, even though no
    question came since: before, the broker held it until the next question."""
    async with Broker(ForgetfulPerson()) as broker:
        client = Client(server_object(ASKING_SERVER), responder=broker.responder("tea"))
        async with client:
            assert text_of(await client.call_tool("greet", {"who": "A"})) == "Hello, Ada (A)."
            session: weakref.ref[ClientSession] = weakref.ref(client.session)
        del client
        gc.collect()
        assert session() is None
        assert not broker.is_muted("tea")  # the name alone is still known, harmlessly


async def greeting(client: Client, who: str) -> str:
    return text_of(await client.call_tool("greet", {"who": who}))


async def test_names_stay_while_open_and_the_hosts_name_reaches_them_all() -> None:
    """The second ``tea`` stays ``tea (2)`` after the first closes (the person knows it
    so), a third takes the free ``tea``, a fourth ``tea (3)``: never ``tea (2) (2)``; and
    ``mute("tea")`` reaches every one of them, whatever it is shown as."""
    tea = server_object(ASKING_SERVER)
    async with (
        Broker(ScreenPerson()) as broker,
        Client(tea, responder=broker.responder("tea")) as second_keeps,
    ):
        async with Client(tea, responder=broker.responder("tea")) as first:
            assert await greeting(first, "A") == "Hello, Ada for tea (A)."
            assert await greeting(second_keeps, "B") == "Hello, Ada for tea (2) (B)."
        assert await greeting(second_keeps, "B") == "Hello, Ada for tea (2) (B)."
        async with (
            Client(tea, responder=broker.responder("tea")) as third,
            Client(tea, responder=broker.responder("tea")) as fourth,
        ):
            assert await greeting(third, "C") == "Hello, Ada for tea (C)."
            assert await greeting(fourth, "D") == "Hello, Ada for tea (3) (D)."
            assert await greeting(second_keeps, "B") == "Hello, Ada for tea (2) (B)."
            broker.mute("tea")
            for client, who in ((second_keeps, "B"), (third, "C"), (fourth, "D")):
                assert await greeting(client, who) == f"No greeting for {who}."


class Name(BaseModel):
    name: str


desk = MCPServer("Desk")


@desk.tool()
async def ask_form(ctx: Context) -> str:
    answer = await ctx.elicit("Name?", schema=Name)
    return answer.action


@desk.tool()
async def ask_link(ctx: Context) -> str:
    answer = await ctx.elicit_url("Sign in", "https://example.com/sign-in", "s-1")
    return answer.action


class LeakyCard:
    """Declines forms and accepts links, with what was typed left in ``content``."""

    async def present(self, question: Question) -> Answer:
        if isinstance(question.params, ElicitRequestURLParams):
            return ElicitResult(action="accept", content={"clicked": True})
        return ElicitResult(action="decline", content={"name": "typed, then declined"})

    async def withdrawn(self, question: Question, reason: str) -> None:
        raise AssertionError(f"nothing is withdrawn here: {reason}")


async def test_dropped_content_is_blamed_on_the_presenter_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The warning names ``LeakyCard.present``, the code that put content there; before,
    it named ``BrokerResponder.elicit``, which only passed the answer on."""
    caplog.set_level(logging.WARNING, logger="answerback")
    async with (
        Broker(LeakyCard()) as broker,
        Client(desk, responder=broker.responder("desk")) as client,
    ):
        assert text_of(await client.call_tool("ask_form")) == "decline"
        assert text_of(await client.call_tool("ask_link")) == "accept"
        assert text_of(await client.call_tool("ask_form")) == "decline"
    warnings = [r.getMessage() for r in caplog.records if "content" in r.getMessage()]
    assert warnings == [
        "LeakyCard.present answered a form with 'decline' from desk, with content; the "
        "answer was sent without it: only an accepted form carries content (what was typed "
        "into a form the person declined or cancelled stays with them). Leave content out "
        "of such answers."
    ]
