"""One ``UrlElicitations`` shared by several clients, as a host that keeps the person's
approved sites in one naturally builds it: each connection's elicitation ids are its own.

A server cannot complete an elicitation another server asked for (not even one with the
same id), ``on_complete`` hears which server completed it, a -32042 retry waits for its
own server's completion, and an id asked for again after it completed starts over. The
servers are in-process, on the 2025-11-25 protocol (2026-07-28 has no completion
notification).
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
from answerback.client import ClientRequestContext, IncomingMessage, UrlElicitations
from answerback.server import Context, MCPServer
from answerback.types import (
    ElicitationCompleteNotification,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    Implementation,
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
        assert not a.url_elicitations.is_completed("pay-1")
        assert not b.url_elicitations.is_completed("pay-1")
        await a.call_tool("complete", {"elicitation_id": "pay-1"})
        await told_a.received("pay-1")
        assert a.url_elicitations.is_completed("pay-1")
        assert not b.url_elicitations.is_completed("pay-1")


async def test_on_complete_hears_which_server_completed_an_id_both_used() -> None:
    heard: list[tuple[str, str | None]] = []

    async def on_complete(elicitation_id: str, server: Implementation | None) -> None:
        heard.append((elicitation_id, server.name if server else None))

    bank, shop = Site("Bank"), Site("Shop")
    shared = UrlElicitations(on_complete=on_complete)
    async with clients(shared, bank, shop) as ([a, b], [told_a, told_b]):
        await a.call_tool("sign_in", {"elicitation_id": "sign-in"})
        await b.call_tool("sign_in", {"elicitation_id": "sign-in"})
        await b.call_tool("complete", {"elicitation_id": "sign-in"})
        await told_b.received("sign-in")
        assert (a.url_elicitations.is_completed("sign-in"), heard) == (
            False,
            [("sign-in", "Shop")],
        )
        assert b.url_elicitations.is_completed("sign-in")
        await a.call_tool("complete", {"elicitation_id": "sign-in"})
        with anyio.fail_after(PATIENCE_SECONDS):
            await a.url_elicitations.wait_completed("sign-in")
        await told_a.received("sign-in")
    assert heard == [("sign-in", "Shop"), ("sign-in", "Bank")]


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
            assert not a.url_elicitations.is_completed("connect-ada")
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
        assert a.url_elicitations.is_completed("pay")
        await a.call_tool("sign_in", {"elicitation_id": "pay"})
        assert not a.url_elicitations.is_completed("pay")
        await a.call_tool("complete", {"elicitation_id": "pay"})
        with anyio.fail_after(PATIENCE_SECONDS):
            await a.url_elicitations.wait_completed("pay")
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
                assert not a.url_elicitations.is_completed("connect-ada")
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


def test_on_complete_must_take_the_id_and_the_server() -> None:
    async def id_only(elicitation_id: str) -> None:
        del elicitation_id

    def not_async(elicitation_id: str, server: Implementation | None) -> None:
        del elicitation_id, server

    with pytest.raises(TypeError, match=r"must accept \(elicitation_id, server\)"):
        UrlElicitations(on_complete=id_only)  # pyright: ignore[reportArgumentType]
    with pytest.raises(TypeError, match="async def"):
        UrlElicitations(on_complete=not_async)  # pyright: ignore[reportArgumentType]
