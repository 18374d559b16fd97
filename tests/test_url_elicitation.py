"""URL-mode elicitation end to end: answerback's client and server (tests/servers/url_server.py)
in-process, over stdio and over streamable HTTP, in both protocol generations.

The person is played by ``Person``: a consent function that answers as told and an
opener that records the link instead of starting a browser. What is checked: the link
opens only after consent and exactly as judged; the tool gets a result object; a link
the server's verdict blocks is never sent; the callback gets the client's verdict;
``notifications/elicitation/complete`` reaches the caller; error -32042 is raised, or
followed (consent, wait for completion, one retry) and stopped when it repeats.
"""

from __future__ import annotations

import uuid
import webbrowser
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.from_thread
import pytest
from http_support import serve
from support import PATIENCE_SECONDS, SERVERS, server_object, target

from answerback import Client, MCPError
from answerback.client import (
    ClientRequestContext,
    ClientSession,
    IncomingMessage,
    UrlConsent,
    UrlConsentRequest,
    UrlElicitationLoopError,
    UrlElicitations,
)
from answerback.client._url_elicitation import ConsentAnswer
from answerback.types import (
    CallToolResult,
    ElicitationCompleteNotification,
    ElicitRequestParams,
    ElicitResult,
    TextContent,
    URLElicitationRequiredError,
)
from answerback.urls import ApprovedDomains, RiskLevel, UrlVerdict

pytestmark = pytest.mark.anyio

URL_SERVER = SERVERS / "url_server.py"
MODERN = "2026-07-28"


@pytest.fixture(params=["memory", "stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(params=["legacy", MODERN])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@asynccontextmanager
async def connect(transport: str, mode: str, **options: Any) -> AsyncGenerator[Client, None]:
    """A client of the URL server over ``transport``, speaking ``mode``."""
    with anyio.fail_after(PATIENCE_SECONDS):
        if transport == "http":
            app = server_object(URL_SERVER).http_app()
            async with serve(app) as running, Client(running.url, mode=mode, **options) as client:
                yield client
        else:
            async with Client(target(transport, URL_SERVER), mode=mode, **options) as client:
                yield client


class Person:
    """Consent as a person gives it, and a browser that only records what it opened."""

    def __init__(self, answer: ConsentAnswer = "accept") -> None:
        self.answer: ConsentAnswer = answer
        self.shown: list[UrlConsentRequest] = []
        self.opened: list[str] = []
        self.browser_opened = anyio.Event()

    async def ask(self, request: UrlConsentRequest) -> ConsentAnswer:
        self.shown.append(request)
        return self.answer

    def open(self, url: str) -> bool:
        """The opener; ``UrlConsent`` runs it in a worker thread."""
        self.opened.append(url)
        anyio.from_thread.run_sync(self.browser_opened.set)
        return True

    def consent(self) -> UrlConsent:
        return UrlConsent(self.ask, opener=self.open)


def text(result: CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text


async def test_a_link_opens_only_after_consent_and_the_tool_gets_an_accepted_result(
    transport: str, mode: str
) -> None:
    person = Person()
    url = "https://example.com/sign-in?step=1"
    async with connect(transport, mode, elicitation_callback=person.consent()) as client:
        result = await client.call_tool("sign_in", {"url": url})
    assert text(result) == "AcceptedUrlElicitation accept"
    [shown] = person.shown
    assert shown.message == "Sign in to continue"
    assert shown.verdict.level is RiskLevel.OK
    assert shown.verdict.display.url == url
    assert shown.verdict.display.site == "example.com"
    assert shown.server is not None
    assert shown.server.name == "Links"
    assert person.opened == [shown.verdict.canonical_url] == [url]


@pytest.mark.parametrize("answer", ["decline", "cancel"])
async def test_declined_and_cancelled_links_reach_the_tool_as_result_objects(
    mode: str, answer: ConsentAnswer
) -> None:
    person = Person(answer)
    async with connect("memory", mode, elicitation_callback=person.consent()) as client:
        result = await client.call_tool("sign_in", {"url": "https://example.com/sign-in"})
    expected = {"decline": "DeclinedElicitation", "cancel": "CancelledElicitation"}[answer]
    assert text(result) == f"{expected} {answer}"
    assert len(person.shown) == 1
    assert person.opened == []


async def test_a_browser_that_fails_leaves_the_tool_a_cancelled_result(mode: str) -> None:
    person = Person()
    told: list[str] = []

    def broken(url: str) -> bool:
        raise webbrowser.Error("could not locate runnable browser")

    async def not_opened(request: UrlConsentRequest, reason: str) -> None:
        told.append(f"{reason}; open {request.verdict.canonical_url} yourself")

    consent = UrlConsent(person.ask, opener=broken, not_opened=not_opened)
    async with connect("memory", mode, elicitation_callback=consent) as client:
        result = await client.call_tool("sign_in", {"url": "https://example.com/sign-in"})
    assert text(result) == "CancelledElicitation cancel"
    assert told == [
        "opening the browser failed (Error: could not locate runnable browser); "
        "open https://example.com/sign-in yourself"
    ]


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("https://google.com@evil.com/", "user name"),
        ("javascript:alert(1)", "javascript:"),
        ("http://example.com/login", "https"),
    ],
)
async def test_the_server_refuses_to_send_a_link_its_verdict_blocks(
    mode: str, url: str, why: str
) -> None:
    """The tool fails before anything is sent: the person is never asked."""
    person = Person()
    async with connect("memory", mode, elicitation_callback=person.consent()) as client:
        result = await client.call_tool("sign_in", {"url": url})
    assert result.is_error
    assert "Refusing to send a URL elicitation whose link clients block" in text(result)
    assert why in text(result)
    assert person.shown == []


async def test_a_hand_made_round_with_a_blocked_link_is_refused_by_the_server() -> None:
    person = Person()
    async with connect("memory", MODERN, elicitation_callback=person.consent()) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("hand_made_link", {"url": "https://google.com@evil.com/"})
    assert "Refusing to send a URL elicitation whose link clients block" in caught.value.message
    assert person.shown == []


async def test_a_plain_callback_gets_the_clients_verdict_on_its_context(mode: str) -> None:
    """The seed's callback signature is unchanged; the verdict rides on the context and
    counts the sites the person approved."""
    verdicts: list[UrlVerdict | None] = []

    async def callback(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        verdicts.append(context.url_verdict)
        return ElicitResult(action="decline")

    approvals = UrlElicitations(approved_domains=ApprovedDomains(["example.org"]))
    async with connect(
        "memory", mode, elicitation_callback=callback, url_elicitations=approvals
    ) as client:
        await client.call_tool("sign_in", {"url": "https://xn--80ak6aa92e.com/login"})
        await client.call_tool("sign_in", {"url": "https://tools.example.org:8443/connect"})
    lookalike, approved = verdicts
    assert lookalike is not None
    assert lookalike.level is RiskLevel.HIGH_RISK
    assert approved is not None
    assert approved.approved
    assert approved.level is RiskLevel.OK


async def test_completion_of_an_elicitation_reaches_the_caller(transport: str) -> None:
    """The server's completion notification, sent after the asking call ended, completes
    the wait, calls ``on_complete`` once, and still reaches ``message_handler``; one for
    an id the client never saw is ignored."""
    completed: list[tuple[str, ClientSession]] = []
    messages: list[IncomingMessage] = []

    async def on_complete(elicitation_id: str, session: ClientSession) -> None:
        completed.append((elicitation_id, session))

    async def message_handler(message: IncomingMessage) -> None:
        messages.append(message)

    elicitation_id = f"sign-in-{uuid.uuid4().hex}"
    async with connect(
        transport,
        "legacy",
        elicitation_callback=Person().consent(),
        url_elicitations=UrlElicitations(on_complete=on_complete),
        message_handler=message_handler,
    ) as client:
        arguments = {"url": "https://example.com/sign-in", "elicitation_id": elicitation_id}
        await client.call_tool("sign_in", arguments)
        assert not client.url_completions.is_completed(elicitation_id)
        sent = await client.call_tool("complete_unknown_then", {"elicitation_id": elicitation_id})
        assert sent.structured_content == {"result": True}
        with anyio.fail_after(PATIENCE_SECONDS):
            await client.url_completions.wait_completed(elicitation_id)
        assert client.url_completions.is_completed(elicitation_id)
        assert not client.url_completions.is_completed("never-asked")
    assert completed == [(elicitation_id, client.session)]
    told = [
        m.params.elicitation_id for m in messages if isinstance(m, ElicitationCompleteNotification)
    ]
    assert told == ["never-asked", elicitation_id]


async def test_a_2026_server_has_no_completion_notification_to_send() -> None:
    async with connect("memory", MODERN, elicitation_callback=Person().consent()) as client:
        await client.call_tool("sign_in", {"url": "https://example.com/", "elicitation_id": "m-1"})
        sent = await client.call_tool("complete_unknown_then", {"elicitation_id": "m-1"})
    assert sent.structured_content == {"result": False}


async def test_without_following_the_required_elicitations_reach_the_caller() -> None:
    person = Person()
    async with connect("memory", "legacy", elicitation_callback=person.consent()) as client:
        with pytest.raises(URLElicitationRequiredError) as caught:
            await client.call_tool("read_drive", {"account": uuid.uuid4().hex})
    [required] = caught.value.elicitations
    assert required.url.startswith("https://drive.example.com/connect?account=")
    assert required.elicitation_id is not None
    assert person.shown == []


async def test_a_required_link_is_consented_opened_completed_and_the_call_retried(
    transport: str,
) -> None:
    """-32042: the person is asked, the browser opens, the page reports back (the
    server's completion notification), and the one retry succeeds."""
    person = Person()
    completed: list[str] = []

    async def on_complete(elicitation_id: str, session: ClientSession) -> None:
        completed.append(elicitation_id)

    account = uuid.uuid4().hex
    follow = UrlElicitations(
        follow_required=True, completion_timeout_seconds=None, on_complete=on_complete
    )
    async with connect(
        transport, "legacy", elicitation_callback=person.consent(), url_elicitations=follow
    ) as client:

        async def page_reports_back() -> None:
            await person.browser_opened.wait()
            done = await client.call_tool(
                "browser_finished", {"elicitation_id": f"connect-{account}"}
            )
            assert done.structured_content == {"result": True}

        async with anyio.create_task_group() as tg:
            tg.start_soon(page_reports_back)
            result = await client.call_tool("read_drive", {"account": account})
            assert text(result) == f"the files of {account}"
    [shown] = person.shown
    assert shown.elicitation_id == f"connect-{account}"
    assert shown.message == f"Connect the drive of {account}"
    assert person.opened == [f"https://drive.example.com/connect?account={account}"]
    assert completed == [f"connect-{account}"]


@pytest.mark.parametrize("transport_name", ["memory", "http"])
async def test_the_same_elicitation_required_again_stops_the_loop(transport_name: str) -> None:
    person = Person()
    follow = UrlElicitations(follow_required=True, completion_timeout_seconds=0)
    async with connect(
        transport_name, "legacy", elicitation_callback=person.consent(), url_elicitations=follow
    ) as client:
        with pytest.raises(UrlElicitationLoopError) as caught:
            await client.call_tool("never_enough")
    assert isinstance(caught.value, URLElicitationRequiredError)
    assert caught.value.code == -32042
    assert "'never-enough'" in caught.value.message
    assert "retried once" in caught.value.message
    assert [request.elicitation_id for request in person.shown] == ["never-enough"]
    assert len(person.opened) == 1


@pytest.mark.parametrize("answer", ["decline", "cancel"])
async def test_a_required_link_the_person_refuses_ends_the_call_with_the_servers_error(
    answer: ConsentAnswer,
) -> None:
    person = Person(answer)
    follow = UrlElicitations(follow_required=True, completion_timeout_seconds=0)
    async with connect(
        "memory", "legacy", elicitation_callback=person.consent(), url_elicitations=follow
    ) as client:
        with pytest.raises(URLElicitationRequiredError) as caught:
            await client.call_tool("read_drive", {"account": uuid.uuid4().hex})
    assert not isinstance(caught.value, UrlElicitationLoopError)
    assert any(repr(answer) in note for note in caught.value.__notes__)
    assert len(person.shown) == 1
    assert person.opened == []


async def test_a_2026_connection_does_not_follow_the_legacy_error() -> None:
    """2026-07-28 has no -32042 and no completion notification (servers ask inside
    InputRequiredResult), so a 2026 server raising it anyway reaches the caller."""
    person = Person()
    follow = UrlElicitations(follow_required=True, completion_timeout_seconds=None)
    async with connect(
        "memory", MODERN, elicitation_callback=person.consent(), url_elicitations=follow
    ) as client:
        with pytest.raises(URLElicitationRequiredError):
            await client.call_tool("read_drive", {"account": uuid.uuid4().hex})
    assert person.shown == []
