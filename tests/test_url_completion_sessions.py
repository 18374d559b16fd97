"""One ``UrlElicitations`` shared by several clients, as a host that keeps the person's
approved sites in one naturally builds it: each connection's elicitation ids are its own.

A server cannot complete an elicitation another server asked for (not even one with the
same id), ``on_complete`` hears which connection completed it (not merely the name the
server gives itself, which another can copy), a -32042 retry waits for its own server's
completion, an id asked for again after it completed starts over, one connection's ids
cannot push out another's, and a closed client's ids go with it. The servers are
in-process, on the 2025-11-25 protocol (2026-07-28 has no completion notification).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import pytest
from support import PATIENCE_SECONDS

from answerback import Client
from answerback.client import (
    ClientRequestContext,
    ClientSession,
    IncomingMessage,
    UrlCompletions,
    UrlElicitations,
)
from answerback.client._url_elicitation import REMEMBERED_ELICITATIONS
from answerback.server import Context, MCPServer
from answerback.types import (
    ElicitationCompleteNotification,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    URLElicitationRequiredError,
)

pytestmark = pytest.mark.anyio


class Site:
    """A server that sends people to its pages (``sign_in``; ``read`` by error -32042
    until the account is connected), and ``complete``, which plays a page reporting back:
    the account is connected and the client told on this call's connection, whether this
    server asked for that id or not (a rogue server's claim)."""

    def __init__(self, name: str) -> None:
        self.server = MCPServer(name)
        self.connected: set[str] = set()
        self.reads = 0
        page = f"https://{name.lower()}.example.com"

        @self.server.tool()
        async def sign_in(ctx: Context, elicitation_id: str) -> str:
            answer = await ctx.elicit_url("Sign in", f"{page}/sign-in", elicitation_id)
            return answer.action

        @self.server.tool()
        async def read(account: str) -> str:
            self.reads += 1
            if account in self.connected:
                return f"the files of {account}"
            connect = ElicitRequestURLParams(
                message="Connect your drive",
                url=f"{page}/connect",
                elicitation_id=f"connect-{account}",
            )
            raise URLElicitationRequiredError([connect])

        @self.server.tool()
        async def complete(ctx: Context, elicitation_id: str) -> bool:
            self.connected.add(elicitation_id.removeprefix("connect-"))
            return await ctx.session.send_elicitation_complete(elicitation_id)

        @self.server.tool()
        async def disconnect(account: str) -> None:
            self.connected.discard(account)


class Person:
    """Accepts every link, and remembers which server asked for which id."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str | None]] = []
        self.asked_once = anyio.Event()

    async def consent(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        assert isinstance(params, ElicitRequestURLParams)
        server = context.session.server_info
        self.asked.append((server.name if server else "?", params.elicitation_id))
        self.asked_once.set()
        return ElicitResult(action="accept")


class Completions:
    """The completion notifications a client's ``message_handler`` got. It gets each
    after ``UrlElicitations`` took it in, so waiting here orders the test after that."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self._more = anyio.Event()

    async def message_handler(self, message: IncomingMessage) -> None:
        if isinstance(message, ElicitationCompleteNotification):
            self.ids.append(message.params.elicitation_id)
            self._more.set()
            self._more = anyio.Event()

    async def received(self, elicitation_id: str, times: int = 1) -> None:
        with anyio.fail_after(PATIENCE_SECONDS):
            while self.ids.count(elicitation_id) < times:
                await self._more.wait()


@asynccontextmanager
async def clients(
    shared: UrlElicitations, *sites: Site, person: Person | None = None
) -> AsyncGenerator[tuple[list[Client], list[Completions]], None]:
    """One legacy client per site, all sharing ``shared``, with what each was told."""
    person = person or Person()
    told = [Completions() for _ in sites]
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(
            sites[0].server,
            mode="legacy",
            elicitation_callback=person.consent,
            url_elicitations=shared,
            message_handler=told[0].message_handler,
        ) as first:
            if len(sites) == 1:
                yield [first], told
                return
            async with Client(
                sites[1].server,
                mode="legacy",
                elicitation_callback=person.consent,
                url_elicitations=shared,
                message_handler=told[1].message_handler,
            ) as second:
                yield [first, second], told


async def test_a_server_cannot_complete_what_another_server_asked_for() -> None:
    bank, rogue = Site("Bank"), Site("Rogue")
    async with clients(UrlElicitations(), bank, rogue) as ([a, b], [told_a, told_b]):
        assert (await a.call_tool("sign_in", {"elicitation_id": "pay-1"})).text == "accept"
        await b.call_tool("complete", {"elicitation_id": "pay-1"})
        await told_b.received("pay-1")
        assert not a.url_completions.is_completed("pay-1")
        assert not b.url_completions.is_completed("pay-1")
        await a.call_tool("complete", {"elicitation_id": "pay-1"})
        await told_a.received("pay-1")
        assert a.url_completions.is_completed("pay-1")
        assert not b.url_completions.is_completed("pay-1")


async def test_on_complete_hears_which_connection_completed_an_id_both_used() -> None:
    """A rogue server calling itself "Bank" too cannot pass for the bank: the callback
    is given the connection, and the names the servers give themselves are equal."""
    heard: list[tuple[str, ClientSession]] = []

    async def on_complete(elicitation_id: str, session: ClientSession) -> None:
        heard.append((elicitation_id, session))

    bank, rogue = Site("Bank"), Site("Bank")
    shared = UrlElicitations(on_complete=on_complete)
    async with clients(shared, bank, rogue) as ([a, b], [told_a, told_b]):
        await a.call_tool("sign_in", {"elicitation_id": "sign-in"})
        await b.call_tool("sign_in", {"elicitation_id": "sign-in"})
        await b.call_tool("complete", {"elicitation_id": "sign-in"})
        await told_b.received("sign-in")
        assert heard == [("sign-in", b.session)]
        assert heard[0][1] is not a.session
        assert a.server_info == b.server_info
        assert not a.url_completions.is_completed("sign-in")
        assert b.url_completions.is_completed("sign-in")
        await a.call_tool("complete", {"elicitation_id": "sign-in"})
        with anyio.fail_after(PATIENCE_SECONDS):
            await a.url_completions.wait_completed("sign-in")
        await told_a.received("sign-in")
    assert [(elicitation_id, session is a.session) for elicitation_id, session in heard] == [
        ("sign-in", False),
        ("sign-in", True),
    ]


async def test_the_client_keeps_its_settings_and_its_completions_apart() -> None:
    """``client.url_elicitations`` is the ``UrlElicitations`` it was given, as
    ``Client(url_elicitations=...)`` takes it; its completions have a name of their own."""
    shared = UrlElicitations(follow_required=True)
    async with clients(shared, Site("Bank")) as ([a], [told]):
        assert a.url_elicitations is shared
        completions = a.url_completions
        assert isinstance(completions, UrlCompletions)
        await a.call_tool("sign_in", {"elicitation_id": "pay"})
        await a.call_tool("complete", {"elicitation_id": "pay"})
        await told.received("pay")
        assert completions.is_completed("pay")  # a view made earlier follows completions


async def test_a_retry_waits_for_its_own_server_to_say_the_link_completed() -> None:
    """follow_required: another server's completion of the same id neither ends the wait
    nor lets the call be retried before the person finished on the right site."""
    drive, rogue = Site("Drive"), Site("Rogue")
    person = Person()
    shared = UrlElicitations(follow_required=True, completion_timeout_seconds=None)
    async with clients(shared, drive, rogue, person=person) as ([a, b], [told_a, told_b]):

        async def spoof_then_report_back() -> None:
            await person.asked_once.wait()
            await b.call_tool("complete", {"elicitation_id": "connect-ada"})
            await told_b.received("connect-ada")
            assert not a.url_completions.is_completed("connect-ada")
            assert drive.reads == 1  # not retried on the other server's word
            await a.call_tool("complete", {"elicitation_id": "connect-ada"})

        async with anyio.create_task_group() as tg:
            tg.start_soon(spoof_then_report_back)
            result = await a.call_tool("read", {"account": "ada"})
            assert result.text == "the files of ada"
        await told_a.received("connect-ada")
    assert drive.reads == 2
    assert person.asked == [("Drive", "connect-ada")]


async def test_an_id_asked_for_again_after_it_completed_starts_over() -> None:
    bank = Site("Bank")
    async with clients(UrlElicitations(), bank) as ([a], [told]):
        await a.call_tool("sign_in", {"elicitation_id": "pay"})
        await a.call_tool("complete", {"elicitation_id": "pay"})
        await told.received("pay")
        assert a.url_completions.is_completed("pay")
        await a.call_tool("sign_in", {"elicitation_id": "pay"})
        assert not a.url_completions.is_completed("pay")
        await a.call_tool("complete", {"elicitation_id": "pay"})
        with anyio.fail_after(PATIENCE_SECONDS):
            await a.url_completions.wait_completed("pay")
        await told.received("pay", times=2)


async def test_a_required_link_asked_for_again_is_waited_for_again() -> None:
    """The second -32042 for an id that completed before waits for a new completion
    instead of retrying at once (which would end in ``UrlElicitationLoopError``)."""
    drive = Site("Drive")
    person = Person()
    shared = UrlElicitations(follow_required=True, completion_timeout_seconds=None)
    async with clients(shared, drive, person=person) as ([a], [told]):
        for round_number in (1, 2):
            person.asked_once = anyio.Event()

            async def report_back(times: int = round_number) -> None:
                await person.asked_once.wait()
                assert not a.url_completions.is_completed("connect-ada")
                await a.call_tool("complete", {"elicitation_id": "connect-ada"})
                await told.received("connect-ada", times)

            async with anyio.create_task_group() as tg:
                tg.start_soon(report_back)
                result = await a.call_tool("read", {"account": "ada"})
                assert result.text == "the files of ada"
            await a.call_tool("disconnect", {"account": "ada"})
    assert drive.reads == 4


def test_a_shared_instance_does_not_keep_a_finished_client_alive() -> None:
    """Its ids are held for a session only as long as the session exists, so a host
    that goes through many clients does not pile up their ids."""
    shared = UrlElicitations()
    client = Client(Site("Bank").server, url_elicitations=shared)
    link = ElicitRequestURLParams(message="m", url="https://bank.example.com/", elicitation_id="e")
    shared.admit(client.session, link)
    session = weakref.ref(client.session)
    del client
    gc.collect()  # a client and its session refer to each other
    assert session() is None


async def test_a_shared_instance_does_not_keep_a_client_that_connected_and_closed_alive() -> None:
    """Nothing the connection left behind (its transport, its tasks, the completion it
    took in) holds the session once the client is closed and dropped."""
    shared = UrlElicitations()
    async with clients(shared, Site("Bank")) as ([client], [told]):
        await client.call_tool("sign_in", {"elicitation_id": "pay"})
        await client.call_tool("complete", {"elicitation_id": "pay"})
        await told.received("pay")
        session = weakref.ref(client.session)
    del client
    gc.collect()
    assert session() is None


async def test_one_connection_asking_often_does_not_push_out_anothers_ids() -> None:
    """Each connection remembers its own ``REMEMBERED_ELICITATIONS`` newest ids."""
    shared = UrlElicitations()
    quiet, busy = Client(Site("Bank").server).session, Client(Site("Rogue").server).session

    def ask(session: ClientSession, elicitation_id: str) -> None:
        link = ElicitRequestURLParams(
            message="m", url="https://example.com/", elicitation_id=elicitation_id
        )
        shared.admit(session, link)

    asked = 3000
    ask(quiet, "pay")
    for number in range(asked):
        ask(busy, f"spam-{number}")
    oldest_kept = asked - REMEMBERED_ELICITATIONS
    for session, elicitation_id in [
        (quiet, "pay"),
        (busy, f"spam-{oldest_kept - 1}"),
        (busy, f"spam-{oldest_kept}"),
    ]:
        await shared.completed(session, {"elicitationId": elicitation_id})
    assert shared.completions(quiet).is_completed("pay")
    assert not shared.completions(busy).is_completed(f"spam-{oldest_kept - 1}")
    assert shared.completions(busy).is_completed(f"spam-{oldest_kept}")


def test_on_complete_must_take_the_id_and_the_session() -> None:
    async def id_only(elicitation_id: str) -> None:
        del elicitation_id

    def not_async(elicitation_id: str, session: ClientSession) -> None:
        del elicitation_id, session

    with pytest.raises(TypeError, match=r"must accept \(elicitation_id, session\)"):
        UrlElicitations(on_complete=id_only)  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="async def"):
        UrlElicitations(on_complete=not_async)  # pyright: ignore[reportArgumentType]
