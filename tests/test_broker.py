"""The broker: one person answers every connected server, one question at a time.

A scripted presenter stands in for the person: it records what it was shown (and what
was withdrawn), answers from a script, and waits on events the test sets. Servers are
the test servers (in-process, over stdio, over HTTP), in both protocol generations.
"""

from __future__ import annotations

import os
import signal
import sys
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from http_support import free_port, python_server, serve, serve_process
from pydantic import BaseModel
from support import PATIENCE_SECONDS, SERVERS, server_object, target

from answerback import Client, StdioServer
from answerback.client import HEADLESS_META, ClientRequestContext, ResponderWrapper
from answerback.interact import (
    CALL_ENDED,
    CONNECTION_CLOSED,
    SERVER_CANCELLED,
    SERVER_DISCONNECTED,
    Answer,
    Broker,
    Question,
    Roots,
)
from answerback.server import Context, MCPServer
from answerback.types import (
    MODERN_VERSIONS,
    USER_REJECTED,
    ConnectionClosedError,
    CreateMessageResult,
    ElicitResult,
    ErrorData,
    LoggingMessageNotificationParams,
    MCPError,
    RequestTimeoutError,
    TextContent,
)

pytestmark = pytest.mark.anyio

ASKING_SERVER = SERVERS / "asking_server.py"
CALLBACK_SERVER = SERVERS / "callback_server.py"
URL_SERVER = SERVERS / "url_server.py"
MODES = ["legacy", MODERN_VERSIONS[0]]

TIMEOUT = 1.0
"""A call's read timeout where the person must outlast it: long enough for a busy machine
to answer once the person is done, short enough to keep the test quick."""

Step = Answer | Callable[[Question], Awaitable[Answer]]


class Changes:
    """Wakes a waiter whenever something it watches changes (an ``on_change`` hook)."""

    def __init__(self) -> None:
        self._event: anyio.Event | None = None

    def __call__(self) -> None:
        if self._event is not None:
            self._event.set()

    async def until(self, done: Callable[[], bool]) -> None:
        with anyio.fail_after(PATIENCE_SECONDS):
            while True:
                self._event = anyio.Event()
                if done():
                    return
                await self._event.wait()


class ScriptedPresenter:
    """A person who answers from a script: each step is an answer, or an async
    function of the question (one that waits on an event plays a slow person)."""

    def __init__(self, *steps: Step) -> None:
        self.steps = list(steps)
        self.shown: list[Question] = []
        self.withdrawals: list[tuple[Question, str]] = []
        self.closed: list[Question] = []
        """Questions whose screen was cancelled."""
        self.on_screen = 0
        self.most_on_screen = 0
        self.changes = Changes()

    async def present(self, question: Question) -> Answer:
        self.shown.append(question)
        self.on_screen += 1
        self.most_on_screen = max(self.most_on_screen, self.on_screen)
        self.changes()
        try:
            step = self.steps.pop(0)
            return await step(question) if callable(step) else step
        except anyio.get_cancelled_exc_class():
            self.closed.append(question)
            raise
        finally:
            self.on_screen -= 1
            self.changes()

    async def withdrawn(self, question: Question, reason: str) -> None:
        self.withdrawals.append((question, reason))
        self.changes()

    async def until_shown(self, count: int) -> None:
        await self.changes.until(lambda: len(self.shown) >= count)

    def servers(self) -> list[str]:
        return [question.server for question in self.shown]


class Waits:
    """A script step that answers ``answer`` once ``go`` is set (a person thinking)."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.go = anyio.Event()

    async def __call__(self, question: Question) -> Answer:
        await self.go.wait()
        return self.answer


async def never(question: Question) -> Answer:
    """A person who never answers: only a withdrawal ends this screen."""
    await anyio.Event().wait()
    raise AssertionError("unreachable: the event is never set")


def name(value: str) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": value})


def text_of(result: Any) -> str:
    [content] = result.content
    assert isinstance(content, TextContent), content
    return content.text


@pytest.fixture(params=MODES, ids=["legacy", "modern"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def broker_for(presenter: ScriptedPresenter) -> AsyncGenerator[Broker, None]:
    """A running broker whose queue changes wake ``presenter.changes`` too."""
    async with Broker(presenter, on_change=presenter.changes) as broker:
        yield broker


# -- one at a time, each named -----------------------------------------------------------


@asynccontextmanager
async def reach(transport: str, script: Path) -> AsyncGenerator[Any, None]:
    """What to give ``Client`` to reach a test server script over ``transport``."""
    if transport == "http":
        async with serve(server_object(script).http_app()) as running:
            yield running.url
    else:
        yield target(transport, script)


@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
async def test_two_servers_asking_at_once_are_shown_one_at_a_time_each_named(
    transport: str, mode: str
) -> None:
    first = Waits(name("Ada"))
    presenter = ScriptedPresenter(first, ElicitResult(action="accept", content={"name": "Bob"}))
    results: dict[str, str] = {}
    async with (
        reach(transport, ASKING_SERVER) as asking_server,
        reach(transport, CALLBACK_SERVER) as callback_server,
        broker_for(presenter) as broker,
        Client(asking_server, mode=mode, responder=broker.responder("asking")) as asking,
        Client(callback_server, mode=mode, responder=broker.responder("callbacks")) as callbacks,
        anyio.create_task_group() as tg,
    ):

        async def greet() -> None:
            results["asking"] = text_of(await asking.call_tool("greet", {"who": "x"}))

        async def ask() -> None:
            results["callbacks"] = text_of(await callbacks.call_tool("ask"))

        tg.start_soon(greet)
        await presenter.until_shown(1)
        tg.start_soon(ask)
        await presenter.changes.until(lambda: len(broker.pending()) == 2)
        assert presenter.servers() == ["asking"]  # the second waits its turn
        assert [q.server for q in broker.pending()] == ["asking", "callbacks"]
        first.go.set()
    assert presenter.servers() == ["asking", "callbacks"]
    assert presenter.most_on_screen == 1
    assert [q.number for q in presenter.shown] == [1, 2]
    assert results == {"asking": "Hello, Ada (x).", "callbacks": "accept"}
    assert all(q.kind == "form" and q.form is not None for q in presenter.shown)
    # The form the client parsed and checked, not parsed again for the screen.
    assert all(q.form is q.context.form for q in presenter.shown)


# -- a question whose call died goes away ------------------------------------------------


@asynccontextmanager
async def callback_target(transport: str) -> AsyncGenerator[Any, None]:
    if transport == "http":
        port = free_port()
        with serve_process(python_server(CALLBACK_SERVER, "--http", str(port)), port):
            yield f"http://127.0.0.1:{port}/mcp"
    else:
        yield target(transport, CALLBACK_SERVER)


@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
async def test_a_question_the_server_withdraws_leaves_the_queue_and_the_screen(
    transport: str,
) -> None:
    """Legacy servers withdraw a question by cancelling their request: a waiting question
    disappears unseen, the one on screen is closed and the person told why."""
    presenter = ScriptedPresenter(never)
    on_screen, waiting = uuid.uuid4().hex, uuid.uuid4().hex
    outcomes: list[str] = []
    async with (
        callback_target(transport) as server,
        broker_for(presenter) as broker,
        Client(server, mode="legacy", responder=broker.responder("callbacks")) as client,
        anyio.create_task_group() as tg,
    ):

        async def ask(tag: str) -> None:
            outcomes.append(text_of(await client.call_tool("ask_until_stopped", {"tag": tag})))

        tg.start_soon(ask, on_screen)
        await presenter.until_shown(1)
        tg.start_soon(ask, waiting)
        await presenter.changes.until(lambda: len(broker.pending()) == 2)

        await client.call_tool("stop", {"tag": waiting})
        await presenter.changes.until(lambda: len(broker.pending()) == 1)
        assert presenter.withdrawals == []  # never shown, so nothing to tell

        await client.call_tool("stop", {"tag": on_screen})
        await presenter.changes.until(lambda: bool(presenter.withdrawals))
    [(question, reason)] = presenter.withdrawals
    assert question is presenter.shown[0]
    assert reason == SERVER_CANCELLED
    assert presenter.closed == [question]
    assert len(presenter.shown) == 1
    assert outcomes == ["withdrawn", "withdrawn"]
    assert broker.pending() == []


async def test_a_server_that_dies_takes_its_questions_away(mode: str) -> None:
    """The server process is killed while its question is on screen and another waits:
    both go, the person is told the server disconnected, and the next server's turn
    comes."""
    presenter = ScriptedPresenter(never, name("Eve"))
    failures: list[BaseException] = []
    greeting: list[str] = []
    async with (
        broker_for(presenter) as broker,
        Client(
            StdioServer(sys.executable, [str(CALLBACK_SERVER)]),
            mode=mode,
            responder=broker.responder("doomed"),
        ) as doomed,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("other")
        ) as other,
        anyio.create_task_group() as tg,
    ):
        pid = (await doomed.call_tool("pid")).structured_content
        assert pid is not None

        async def ask() -> None:
            try:
                await doomed.call_tool("ask")
            except MCPError as exc:
                failures.append(exc)

        async def greet() -> None:
            greeting.append(text_of(await other.call_tool("greet", {"who": "y"})))

        tg.start_soon(ask)
        await presenter.until_shown(1)
        tg.start_soon(ask)
        await presenter.changes.until(lambda: len(broker.pending()) == 2)
        tg.start_soon(greet)
        await presenter.changes.until(lambda: len(broker.pending()) == 3)
        os.kill(pid["result"], signal.SIGKILL)
        await presenter.until_shown(2)
    assert presenter.withdrawals == [(presenter.shown[0], SERVER_DISCONNECTED)]
    assert presenter.servers() == ["doomed", "other"]
    assert greeting == ["Hello, Eve (y)."]
    assert len(failures) == 2
    assert all(isinstance(exc, ConnectionClosedError) for exc in failures)


async def test_a_call_the_client_cancels_takes_its_question_off_the_screen(mode: str) -> None:
    presenter = ScriptedPresenter(never)
    async with (
        broker_for(presenter) as broker,
        Client(
            target("memory", CALLBACK_SERVER), mode=mode, responder=broker.responder("callbacks")
        ) as client,
    ):
        async with anyio.create_task_group() as tg:

            async def ask() -> None:
                await client.call_tool("ask")

            tg.start_soon(ask)
            await presenter.until_shown(1)
            tg.cancel_scope.cancel()
        await presenter.changes.until(lambda: bool(presenter.withdrawals))
    # Legacy: the client tells the server, which withdraws its question; 2026: the call's
    # retry loop, where the question was being answered, is what ends.
    expected = SERVER_CANCELLED if mode == "legacy" else CALL_ENDED
    assert presenter.withdrawals == [(presenter.shown[0], expected)]
    # The person may have stopped that call themselves: not told only that the server did.
    [(_, reason)] = presenter.withdrawals
    assert "the call that asked it was cancelled" in reason


class SlowToClose:
    """A screen that takes its time to close once its question goes (a terminal redrawing,
    say): ``closing`` is set when it starts to close, ``close`` lets it finish."""

    def __init__(self) -> None:
        self.closing = anyio.Event()
        self.close = anyio.Event()

    async def __call__(self, question: Question) -> Answer:
        try:
            await anyio.Event().wait()
        except anyio.get_cancelled_exc_class():
            self.closing.set()
            with anyio.CancelScope(shield=True):
                await self.close.wait()
            raise
        raise AssertionError("unreachable: the event is never set")


async def test_a_question_whose_call_ended_leaves_pending_before_its_screen_closes(
    mode: str,
) -> None:
    """Legacy: the server withdraws its question (``notifications/cancelled``); 2026: the
    call ends. Either way ``pending()`` drops it at once, and says so, not once the
    screen has finished closing."""
    screen = SlowToClose()
    presenter = ScriptedPresenter(screen)
    seen: list[int] = []
    async with (
        Broker(presenter, on_change=lambda: seen.append(len(broker.pending()))) as broker,
        Client(
            target("memory", CALLBACK_SERVER), mode=mode, responder=broker.responder("callbacks")
        ) as client,
    ):
        async with anyio.create_task_group() as tg:
            if mode == "legacy":
                tag = uuid.uuid4().hex
                tg.start_soon(client.call_tool, "ask_until_stopped", {"tag": tag})
                await presenter.until_shown(1)
                await client.call_tool("stop", {"tag": tag})
            else:
                tg.start_soon(client.call_tool, "ask")
                await presenter.until_shown(1)
                tg.cancel_scope.cancel()
        try:
            with anyio.fail_after(PATIENCE_SECONDS):
                await screen.closing.wait()
            assert broker.pending() == []
            assert seen[-1] == 0, "on_change was not told the question went"
        finally:
            screen.close.set()
        await presenter.changes.until(lambda: bool(presenter.withdrawals))
    expected = SERVER_CANCELLED if mode == "legacy" else CALL_ENDED
    assert presenter.withdrawals == [(presenter.shown[0], expected)]


# -- cancel all, mute ----------------------------------------------------------------------


async def test_cancel_all_answers_cancel_to_everything_one_server_asked(mode: str) -> None:
    first = Waits(name("unused"))
    presenter = ScriptedPresenter(first, name("Bea"))
    results: dict[str, str] = {}
    async with (
        broker_for(presenter) as broker,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("noisy")
        ) as noisy,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("quiet")
        ) as quiet,
        anyio.create_task_group() as tg,
    ):

        async def greet(client: Client, who: str) -> None:
            results[who] = text_of(await client.call_tool("greet", {"who": who}))

        tg.start_soon(greet, noisy, "n1")
        await presenter.until_shown(1)
        tg.start_soon(greet, quiet, "q1")
        await presenter.changes.until(lambda: len(broker.pending()) == 2)
        tg.start_soon(greet, noisy, "n2")
        await presenter.changes.until(lambda: len(broker.pending()) == 3)

        assert broker.cancel_all("noisy") == 2
    assert results == {
        "n1": "No greeting for n1.",
        "n2": "No greeting for n2.",
        "q1": "Hello, Bea (q1).",
    }
    assert presenter.servers() == ["noisy", "quiet"]
    assert presenter.closed == [presenter.shown[0]]
    assert presenter.withdrawals == []  # the person did it: nothing to tell them


async def test_servers_take_turns_so_one_cannot_push_the_others_back(mode: str) -> None:
    """A server with three questions waiting does not keep another's one behind them:
    the one shown longest ago goes next, with its oldest question."""
    first = Waits(name("A1"))
    presenter = ScriptedPresenter(first, name("B1"), name("A2"), name("A3"), name("A4"))
    results: dict[str, str] = {}
    async with (
        broker_for(presenter) as broker,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("busy")
        ) as busy,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("other")
        ) as other,
        anyio.create_task_group() as tg,
    ):

        async def greet(client: Client, who: str) -> None:
            results[who] = text_of(await client.call_tool("greet", {"who": who}))

        tg.start_soon(greet, busy, "a1")
        await presenter.until_shown(1)
        for n, who in enumerate(["a2", "a3", "a4"], start=2):
            tg.start_soon(greet, busy, who)
            await presenter.changes.until(lambda n=n: len(broker.pending()) == n)
        tg.start_soon(greet, other, "b1")
        await presenter.changes.until(lambda: len(broker.pending()) == 5)
        assert [q.server for q in broker.pending()] == ["busy", "other", "busy", "busy", "busy"]
        first.go.set()
    assert presenter.servers() == ["busy", "other", "busy", "busy", "busy"]
    assert results["b1"] == "Hello, B1 (b1)."
    assert [results[who] for who in ["a1", "a2", "a3", "a4"]] == [
        "Hello, A1 (a1).",
        "Hello, A2 (a2).",
        "Hello, A3 (a3).",
        "Hello, A4 (a4).",
    ]


async def test_a_server_past_its_waiting_questions_is_answered_cancel_unseen(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """5,000 questions at once queued 4,096 of them ahead of every other server's; past
    ``max_waiting_per_server`` a server's next question is cancelled at once, saying why,
    and another server's still waits its turn."""
    first = Waits(name("A1"))
    presenter = ScriptedPresenter(first, name("B1"), name("A2"))
    results: dict[str, str] = {}
    async with (
        Broker(presenter, on_change=presenter.changes, max_waiting_per_server=1) as broker,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("flood")
        ) as flood,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("other")
        ) as other,
        anyio.create_task_group() as tg,
    ):

        async def greet(client: Client, who: str) -> None:
            results[who] = text_of(await client.call_tool("greet", {"who": who}))

        tg.start_soon(greet, flood, "a1")
        await presenter.until_shown(1)
        tg.start_soon(greet, flood, "a2")
        await presenter.changes.until(lambda: len(broker.pending()) == 2)
        for who in ["a3", "a4"]:  # no room: answered at once, never shown
            await greet(flood, who)
        tg.start_soon(greet, other, "b1")
        await presenter.changes.until(lambda: len(broker.pending()) == 3)
        first.go.set()
    assert results == {
        "a1": "Hello, A1 (a1).",
        "a2": "Hello, A2 (a2).",
        "a3": "No greeting for a3.",
        "a4": "No greeting for a4.",
        "b1": "Hello, B1 (b1).",
    }
    assert presenter.servers() == ["flood", "other", "flood"]
    warnings = [r.getMessage() for r in caplog.records if "unseen" in r.getMessage()]
    assert warnings == [
        "cancelled questions from flood unseen: the person already has 1 of this server's "
        "questions waiting"
    ]


def test_a_broker_needs_room_for_one_question_per_server() -> None:
    with pytest.raises(ValueError, match="max_waiting_per_server must be positive, got 0"):
        Broker(ScriptedPresenter(), max_waiting_per_server=0)


async def test_a_muted_server_is_declined_unseen_until_unmuted(mode: str) -> None:
    presenter = ScriptedPresenter(name("Cy"))
    async with (
        broker_for(presenter) as broker,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("pushy")
        ) as pushy,
    ):
        broker.mute("pushy")
        assert broker.is_muted("pushy")
        muted = await pushy.call_tool("wait_for_name", {"tag": uuid.uuid4().hex})
        assert presenter.shown == []
        broker.unmute("pushy")
        heard = await pushy.call_tool("greet", {"who": "z"})
    assert text_of(muted) == "decline"
    assert text_of(heard) == "Hello, Cy (z)."
    assert presenter.servers() == ["pushy"]


async def test_muting_the_server_on_screen_declines_what_it_asked() -> None:
    """The person mutes a server from inside its question: that question and the next
    are declined, marked as a policy so the server can tell."""
    seen: list[Answer] = []

    class Muting(ScriptedPresenter):
        async def present(self, question: Question) -> Answer:
            self.shown.append(question)
            broker.mute(question.server)
            await anyio.sleep_forever()  # cancelled by the mute
            raise AssertionError("unreachable")

    presenter = Muting()
    async with Broker(presenter) as broker:
        responder = broker.responder("pushy")

        class Recording(ResponderWrapper):
            async def elicit(self, context: ClientRequestContext, params: Any) -> Any:
                answer = await super().elicit(context, params)
                seen.append(answer)
                return answer

        async with Client(
            target("memory", ASKING_SERVER), mode="legacy", responder=Recording(responder)
        ) as client:
            first = await client.call_tool("wait_for_name", {"tag": uuid.uuid4().hex})
            second = await client.call_tool("wait_for_name", {"tag": uuid.uuid4().hex})
    assert [text_of(first), text_of(second)] == ["decline", "decline"]
    assert len(presenter.shown) == 1
    for answer in seen:
        assert isinstance(answer, ElicitResult)
        assert answer.meta is not None
        assert answer.meta[HEADLESS_META]["reason"] == "the person muted this server"


# -- forms asked again -------------------------------------------------------------------


async def test_a_wrong_form_answer_is_asked_again_before_anyone_else(mode: str) -> None:
    wrong = Waits(ElicitResult(action="accept", content={}))  # "name" is required
    presenter = ScriptedPresenter(wrong, name("Di"), name("Ed"))
    results: dict[str, str] = {}
    async with (
        broker_for(presenter) as broker,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("first")
        ) as first,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("second")
        ) as second,
        anyio.create_task_group() as tg,
    ):

        async def greet(client: Client, who: str) -> None:
            results[who] = text_of(await client.call_tool("greet", {"who": who}))

        tg.start_soon(greet, first, "f")
        await presenter.until_shown(1)
        tg.start_soon(greet, second, "s")
        await presenter.changes.until(lambda: len(broker.pending()) == 2)
        wrong.go.set()
    assert presenter.servers() == ["first", "first", "second"]
    again = presenter.shown[1]
    assert again.asked_again
    assert again.number == presenter.shown[0].number
    assert again.previous == ElicitResult(action="accept", content={})
    assert again.problems is not None
    assert [error.field for error in again.problems.errors] == ["name"]
    assert results == {"f": "Hello, Di (f).", "s": "Hello, Ed (s)."}


# -- sampling, links, roots ----------------------------------------------------------------


async def test_sampling_is_approved_with_the_persons_reply(mode: str) -> None:
    reply = CreateMessageResult(role="assistant", content=TextContent(text="42"), model="person")
    presenter = ScriptedPresenter(reply)
    async with (
        broker_for(presenter) as broker,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("asking")
        ) as client,
    ):
        result = await client.call_tool("ask_model")
    assert text_of(result) == "person said: 42"
    [question] = presenter.shown
    assert question.kind == "sampling"
    assert question.server == "asking"


async def test_sampling_the_person_denies_fails_with_user_rejected(mode: str) -> None:
    presenter = ScriptedPresenter(ErrorData(code=USER_REJECTED, message="User rejected it"))
    async with (
        broker_for(presenter) as broker,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("asking")
        ) as client,
    ):
        with pytest.raises(MCPError) as caught:
            await client.call_tool("ask_model")
    # Legacy: the server's tool fails with the refusal; 2026-07-28: the client refuses
    # the whole call. Either way the caller sees the person's no.
    assert caught.value.code == USER_REJECTED
    assert "User rejected it" in caught.value.message


async def test_a_link_comes_with_its_verdict(mode: str) -> None:
    presenter = ScriptedPresenter(ElicitResult(action="decline"))
    async with (
        broker_for(presenter) as broker,
        Client(target("memory", URL_SERVER), mode=mode, responder=broker.responder("links")) as c,
    ):
        result = await c.call_tool("sign_in", {"url": "https://example.com/sign-in"})
    assert "decline" in text_of(result)
    [question] = presenter.shown
    assert question.kind == "url"
    assert question.verdict is not None
    assert question.verdict.display.site == "example.com"


async def test_roots_come_from_the_live_list(mode: str, tmp_path: Path) -> None:
    presenter = ScriptedPresenter()
    roots = Roots([tmp_path])
    async with (
        broker_for(presenter) as broker,
        Client(
            target("memory", ASKING_SERVER),
            mode=mode,
            responder=broker.responder("asking", roots=roots),
        ) as client,
    ):
        assert client.session.capabilities.roots is not None
        result = await client.call_tool("list_my_roots")
    assert result.structured_content == {"result": [f"{tmp_path.name}={tmp_path.as_uri()}"]}
    assert presenter.shown == []


# -- timers stand still while the person is busy -------------------------------------------

_SLOW = MCPServer("Slow")


class _Name(BaseModel):
    name: str


_released: dict[str, anyio.Event] = {}
_started: dict[str, anyio.Event] = {}


def _event(events: dict[str, anyio.Event], tag: str) -> anyio.Event:
    return events.setdefault(tag, anyio.Event())


@_SLOW.tool()
async def wait_until_released(tag: str) -> str:
    """Answer only once the test releases ``tag``."""
    _event(_started, tag).set()
    await _event(_released, tag).wait()
    return "released"


@_SLOW.tool()
async def ask_then_wait(ctx: Context, tag: str) -> str:
    """Ask a name, then answer only once the test releases ``tag``."""
    answer = await ctx.elicit("Who?", schema=_Name)
    await _event(_released, tag).wait()
    return answer.action


async def test_a_slow_person_times_out_no_call_to_any_server(mode: str) -> None:
    """The person answers one server's question for longer than another server's call
    may stay silent: that call is held, and its timer starts in full once the person is
    done (a call nobody releases then times out). The question's own call, with the
    same timeout, survives too (2026-07-28: its retry gets a full timeout)."""
    slow_person = Waits(name("Fay"))
    presenter = ScriptedPresenter(slow_person)
    held, forgotten, witness_tag = (uuid.uuid4().hex for _ in range(3))
    events: list[str] = []
    results: dict[str, str] = {}
    async with (
        broker_for(presenter) as broker,
        Client(_SLOW, mode=mode, responder=broker.responder("asking")) as asking,
        Client(_SLOW, mode=mode, responder=broker.responder("busy")) as busy,
        Client(_SLOW, mode=mode) as witness,  # not on the broker: its timer runs
        anyio.create_task_group() as tg,
    ):

        async def ask() -> None:
            result = await asking.call_tool(
                "ask_then_wait", {"tag": held}, read_timeout_seconds=TIMEOUT
            )
            results["asking"] = text_of(result)

        async def wait(tag: str) -> None:
            try:
                result = await busy.call_tool(
                    "wait_until_released", {"tag": tag}, read_timeout_seconds=TIMEOUT
                )
                results[tag] = text_of(result)
            except RequestTimeoutError:
                events.append(f"{tag} timed out")

        tg.start_soon(ask)
        await presenter.until_shown(1)
        tg.start_soon(wait, held)
        tg.start_soon(wait, forgotten)
        with anyio.fail_after(PATIENCE_SECONDS):
            await _event(_started, held).wait()
            await _event(_started, forgotten).wait()
        # Started after both calls, with the same timeout: once it has run out, theirs
        # would have too.
        with pytest.raises(RequestTimeoutError):
            await witness.call_tool(
                "wait_until_released", {"tag": witness_tag}, read_timeout_seconds=TIMEOUT
            )
        assert events == []
        events.append("person answered")
        slow_person.go.set()
        await presenter.changes.until(lambda: not broker.pending())
        _event(_released, held).set()
    assert results == {"asking": "accept", held: "released"}
    assert events == ["person answered", f"{forgotten} timed out"]
    for tag in (held, forgotten, witness_tag):
        _released.pop(tag, None)
        _started.pop(tag, None)


# -- failures ------------------------------------------------------------------------------


def client_failures(caplog: pytest.LogCaptureFixture) -> str:
    """The failures the client logged: a handshake-era server hears only a reference."""
    return "\n".join(
        f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        for record in caplog.records
        if record.name == "answerback.client" and record.exc_info is not None
    )


async def test_a_presenter_that_fails_fails_that_call_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(question: Question) -> Answer:
        raise RuntimeError("the screen is gone")

    presenter = ScriptedPresenter(broken, name("Gil"))
    async with (
        broker_for(presenter) as broker,
        Client(
            target("memory", ASKING_SERVER), mode="legacy", responder=broker.responder("asking")
        ) as client,
    ):
        with pytest.raises(MCPError) as failed:
            await client.call_tool("greet", {"who": "a"})
        greeted = await client.call_tool("greet", {"who": "b"})
    assert "the client logged the details under reference" in failed.value.message
    assert "RuntimeError: the screen is gone" in client_failures(caplog)
    assert text_of(greeted) == "Hello, Gil (b)."


async def test_a_presenter_answering_the_wrong_type_is_named_in_the_calls_error(
    mode: str,
) -> None:
    """As a callback's wrong type is (client-callbacks.md): answerback's own words, naming
    only the presenter and the types, reach the call in both eras, not a log reference."""
    presenter = ScriptedPresenter(name("for a sampling question"))
    async with (
        broker_for(presenter) as broker,
        Client(
            target("memory", ASKING_SERVER), mode=mode, responder=broker.responder("asking")
        ) as client,
    ):
        with pytest.raises(MCPError) as failed:
            await client.call_tool("ask_model")
    assert (
        "Internal error: WrongAnswerType: ScriptedPresenter.present returned ElicitResult for "
        "a sampling question; it must return CreateMessageResult or ErrorData."
    ) in failed.value.message


async def test_a_responder_outside_a_running_broker_says_how_to_run_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    broker = Broker(ScriptedPresenter())
    async with Client(
        target("memory", ASKING_SERVER), mode="legacy", responder=broker.responder("asking")
    ) as client:
        with pytest.raises(MCPError) as failed:
            await client.call_tool("greet", {"who": "a"})
    assert "the client logged the details under reference" in failed.value.message
    assert "use it as `async with Broker(presenter)`" in client_failures(caplog)


async def test_logs_reach_a_wrapper_and_the_timers_still_pause() -> None:
    """A host wraps the broker's responder to show logs; the client still finds the
    broker's attention through the wrapper."""
    logs: list[str] = []

    class ShowLogs(ResponderWrapper):
        async def on_log(self, params: LoggingMessageNotificationParams) -> None:
            logs.append(str(params.data))

    async with Broker(ScriptedPresenter()) as broker:
        responder = ShowLogs(broker.responder("asking"))
        async with Client(
            target("memory", ASKING_SERVER),
            mode="legacy",
            responder=responder,
            log_level="debug",
        ) as client:
            assert client.session.attention is broker.attention
            await client.call_tool("log_every_level")
    assert "a debug message" in logs


async def test_closing_the_client_takes_its_question_off_the_screen(mode: str) -> None:
    """The host disconnects from a server whose question is on screen: the person is told
    the connection was closed (not that the server did anything)."""
    presenter = ScriptedPresenter(never)
    failures: list[BaseException] = []
    async with broker_for(presenter) as broker:
        async with (
            anyio.create_task_group() as tg,
            Client(
                target("memory", CALLBACK_SERVER), mode=mode, responder=broker.responder("gone")
            ) as client,
        ):

            async def ask() -> None:
                try:
                    await client.call_tool("ask")
                except MCPError as exc:
                    failures.append(exc)

            tg.start_soon(ask)
            await presenter.until_shown(1)
        await presenter.changes.until(lambda: bool(presenter.withdrawals))
    assert presenter.withdrawals == [(presenter.shown[0], CONNECTION_CLOSED)]
    assert [type(exc) for exc in failures] == [ConnectionClosedError]


async def test_a_broker_that_stops_answers_cancel_for_the_person_who_left(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The host stops the broker while a question is on screen and another waits, its
    clients still connected: both are answered "cancel", marked as such, and a question
    asked after that is refused with how to run the broker."""
    presenter = ScriptedPresenter(never)
    broker = Broker(presenter, on_change=presenter.changes)
    results: list[str] = []
    async with Client(
        target("memory", ASKING_SERVER), mode="legacy", responder=broker.responder("asking")
    ) as client:
        async with anyio.create_task_group() as tg:

            async def greet(who: str) -> None:
                results.append(text_of(await client.call_tool("greet", {"who": who})))

            async with broker:
                tg.start_soon(greet, "a")
                await presenter.until_shown(1)
                tg.start_soon(greet, "b")
                await presenter.changes.until(lambda: len(broker.pending()) == 2)
        with pytest.raises(MCPError, match="the client logged the details under reference"):
            await client.call_tool("greet", {"who": "c"})
    assert "The Broker is not running" in client_failures(caplog)
    assert sorted(results) == ["No greeting for a.", "No greeting for b."]
    assert presenter.closed == [presenter.shown[0]]
