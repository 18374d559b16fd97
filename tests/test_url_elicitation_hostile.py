"""URL-mode elicitation against servers that misbehave, played by hand, and the parts
underneath: the typed -32042 error, completion bookkeeping, and ``UrlConsent``'s edges.

answerback's own server never sends a link its verdict blocks, so a hostile one is
played with a ``RawPeer``: such a link must never reach the callback, in either era, and
the server (or, in 2026-07-28, the caller) must get an error it can tell from a
person's decline. Nothing is fetched, and no browser is started (openers are injected).
"""

from __future__ import annotations

import json
import logging
import webbrowser
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from jsonschema import Draft202012Validator
from support import (
    PATIENCE_SECONDS,
    HandDrivenServer,
    RawPeer,
    client_with_hand_driven_server,
    schema_errors,
)

from answerback import Client
from answerback.client import (
    ClientRequestContext,
    ClientSession,
    UrlConsent,
    UrlConsentRequest,
    UrlElicitations,
)
from answerback.client._url_elicitation import REMEMBERED_ELICITATIONS, ConsentAnswer
from answerback.jsonrpc import JSONObject
from answerback.server import MCPServer
from answerback.types import (
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    InvalidParamsError,
    MCPError,
    URLElicitationRequiredError,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
SPEC = Path(__file__).parents[2] / "shared" / "spec" / "2025-11-25" / "schema.json"

BLOCKED = {
    "https://google.com@evil.com/": "userinfo",
    "javascript:alert(1)": "scheme",
    "data:text/html,<script>alert(1)</script>": "scheme",
    "file:///etc/passwd": "scheme",
    "http://example.com/login": "plain-http",
    "https://example.com/\u202egpj.exe": "bidi-control",
}


class Callback:
    """An elicitation callback that records what reached it and accepts."""

    def __init__(self) -> None:
        self.asked: list[ElicitRequestParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.asked.append(params)
        return ElicitResult(action="accept")


@asynccontextmanager
async def hand_driven(mode: str, **options: Any) -> AsyncGenerator[tuple[Client, RawPeer], None]:
    """A connected client whose server the test plays, in either era."""
    if mode == "legacy":
        async with client_with_hand_driven_server(**options) as (client, peer, _):
            yield client, peer
        return
    transport = HandDrivenServer()

    async def discover() -> None:
        request = await transport.peer.receive()
        assert request["method"] == "server/discover", request
        result: JSONObject = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}
        await transport.peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async with anyio.create_task_group() as tg:
        tg.start_soon(discover)
        async with Client(transport, mode=MODERN, **options) as client:
            yield client, transport.peer


async def failed_call(client: Client, peer: RawPeer, answer: JSONObject) -> BaseException:
    """Call a tool, answer its ``tools/call`` with ``answer`` (a result or an error), and
    return what the call raised; then check the client sends nothing else before a ping
    (so it did not retry)."""
    raised: list[BaseException] = []

    async def call() -> None:
        try:
            await client.call_tool("pay")
        except MCPError as exc:
            raised.append(exc)

    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            request = await peer.receive()
            assert request["method"] == "tools/call", request
            await peer.send({"jsonrpc": "2.0", "id": request["id"], **answer})
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.ping)
            following = await peer.receive()
            assert following["method"] == "ping", following
            await peer.send({"jsonrpc": "2.0", "id": following["id"], "result": {}})
    [exc] = raised
    return exc


def required(*elicitations: JSONObject) -> JSONObject:
    return {
        "error": {
            "code": -32042,
            "message": "Pay first",
            "data": {"elicitations": list(elicitations)},
        }
    }


@pytest.mark.parametrize(("url", "code"), BLOCKED.items(), ids=list(BLOCKED.values()))
async def test_a_blocked_link_never_reaches_the_callback_and_the_server_gets_an_error(
    url: str, code: str
) -> None:
    callback = Callback()
    async with client_with_hand_driven_server(elicitation_callback=callback) as (_, peer, _):
        params = {"mode": "url", "message": "Pay", "url": url, "elicitationId": "e-1"}
        await peer.send(
            {"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": params}
        )
        answer = await peer.receive()
    assert answer["id"] == "e1"
    error = answer["error"]
    assert error["code"] == -32602
    assert error["message"].startswith(
        "The link was not shown or opened: this client judged it never safe to open ("
    )
    assert "\n" not in error["message"]  # the CLI shows it on one line, after "X refused:"
    assert code in error["data"]["reasons"]
    assert error["data"]["url"] == url
    assert callback.asked == []


async def test_a_blocked_link_in_a_2026_round_fails_the_call_without_asking_or_retrying() -> None:
    callback = Callback()
    link = {"mode": "url", "message": "Open", "url": "javascript:alert(1)"}
    needed = {
        "resultType": "input_required",
        "inputRequests": {"q": {"method": "elicitation/create", "params": link}},
        "requestState": "s",
    }
    async with hand_driven(MODERN, elicitation_callback=callback) as (client, peer):
        exc = await failed_call(client, peer, {"result": needed})
    assert isinstance(exc, InvalidParamsError)
    assert "never safe to open" in exc.message
    assert callback.asked == []


async def test_a_blocked_link_required_by_32042_is_refused_without_asking_or_retrying() -> None:
    callback = Callback()
    follow = UrlElicitations(follow_required=True, completion_timeout_seconds=0)
    link = {"mode": "url", "message": "Pay", "url": "javascript:alert(1)", "elicitationId": "p"}
    async with hand_driven("legacy", elicitation_callback=callback, url_elicitations=follow) as (
        client,
        peer,
    ):
        exc = await failed_call(client, peer, required(link))
    assert isinstance(exc, InvalidParamsError)
    assert isinstance(exc.__cause__, URLElicitationRequiredError)
    assert callback.asked == []


@pytest.mark.parametrize(
    "data",
    [
        {"elicitations": "pay first"},
        {"elicitations": []},
        {"elicitations": [{"mode": "url", "message": "Pay", "url": "https://example.com/"}]},
        None,
    ],
    ids=["not-a-list", "empty", "no-id", "no-data"],
)
async def test_a_32042_the_client_cannot_follow_reaches_the_caller_unchanged(data: Any) -> None:
    callback = Callback()
    follow = UrlElicitations(follow_required=True, completion_timeout_seconds=0)
    error = {"error": {"code": -32042, "message": "Pay first", "data": data}}
    async with hand_driven("legacy", elicitation_callback=callback, url_elicitations=follow) as (
        client,
        peer,
    ):
        exc = await failed_call(client, peer, error)
    assert type(exc) is URLElicitationRequiredError
    assert exc.message == "Pay first"
    assert exc.__notes__
    assert callback.asked == []


async def test_a_client_without_a_url_callback_does_not_follow_32042() -> None:
    follow = UrlElicitations(follow_required=True, completion_timeout_seconds=0)
    link = {"mode": "url", "message": "Pay", "url": "https://example.com/", "elicitationId": "p"}
    async with hand_driven("legacy", url_elicitations=follow) as (client, peer):
        exc = await failed_call(client, peer, required(link))
    assert type(exc) is URLElicitationRequiredError


# -- UrlConsent's edges -----------------------------------------------------------------


async def ask_server(
    consent: UrlConsent, params: JSONObject, *, mode: str = "legacy"
) -> JSONObject:
    """Send one ``elicitation/create`` to a client answering with ``consent``."""
    async with client_with_hand_driven_server(elicitation_callback=consent) as (_, peer, _):
        await peer.send(
            {"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": params}
        )
        return await peer.receive()


LINK = {"mode": "url", "message": "Sign in", "url": "https://example.com/a", "elicitationId": "x"}


async def test_a_browser_that_cannot_open_answers_cancel() -> None:
    async def yes(request: UrlConsentRequest) -> ConsentAnswer:
        return "accept"

    opened: list[str] = []

    def no_browser(url: str) -> bool:
        opened.append(url)
        return False

    answer = await ask_server(UrlConsent(yes, opener=no_browser), LINK)
    assert answer["result"] == {"action": "cancel"}
    assert opened == ["https://example.com/a"]


@pytest.mark.parametrize("failure", ["returns false", "raises"])
async def test_a_link_that_cannot_be_opened_is_cancelled_and_the_person_told_once(
    failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The host's ``not_opened`` tells the person; a warning saying the same again was
    a second line about one link (the traceback stays, at debug level)."""

    async def yes(request: UrlConsentRequest) -> ConsentAnswer:
        return "accept"

    broken = webbrowser.Error("could not locate runnable browser")

    def opener(url: str) -> bool:
        if failure == "raises":
            raise broken
        return False

    told: list[tuple[str | None, str]] = []

    async def not_opened(request: UrlConsentRequest, reason: str) -> None:
        told.append((request.verdict.canonical_url, reason))

    consent = UrlConsent(yes, opener=opener, not_opened=not_opened)
    with caplog.at_level(logging.DEBUG, logger="answerback.client"):
        answer = await ask_server(consent, LINK)
    assert answer["result"] == {"action": "cancel"}
    reason = {
        "returns false": "no browser could be opened",
        "raises": "opening the browser failed (Error: could not locate runnable browser)",
    }[failure]
    assert told == [("https://example.com/a", reason)]
    about_it = [r for r in caplog.records if "https://example.com/a" in r.getMessage()]
    assert [r for r in about_it if r.levelno >= logging.WARNING] == []
    tracebacks = [(r.exc_info or (None, None))[1] for r in about_it]
    assert tracebacks == ([broken] if failure == "raises" else [])


async def test_a_link_that_cannot_be_opened_is_logged_when_no_host_tells_the_person(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def yes(request: UrlConsentRequest) -> ConsentAnswer:
        return "accept"

    def no_browser(url: str) -> bool:
        return False

    with caplog.at_level(logging.WARNING, logger="answerback.client"):
        answer = await ask_server(UrlConsent(yes, opener=no_browser), LINK)
    assert answer["result"] == {"action": "cancel"}
    assert [r.getMessage() for r in caplog.records] == [
        "did not open https://example.com/a: no browser could be opened; answering cancel"
    ]


async def test_consent_that_is_not_an_answer_fails_without_opening(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def sloppy(request: UrlConsentRequest) -> Any:
        return True

    def opener(url: str) -> bool:
        raise AssertionError("opened without consent")

    answer = await ask_server(UrlConsent(sloppy, opener=opener), LINK)
    assert answer["error"]["code"] == -32603
    # The server hears only a reference; the host's log says what to fix.
    assert "the client logged the details under reference" in answer["error"]["message"]
    [logged] = [r for r in caplog.records if r.name == "answerback.client" and r.exc_info]
    assert logged.exc_info is not None
    assert "must return 'accept', 'decline' or 'cancel'" in str(logged.exc_info[1])


async def test_url_consent_hands_forms_on_or_refuses_them() -> None:
    async def never(request: UrlConsentRequest) -> ConsentAnswer:
        raise AssertionError("a form is not a link")

    form: JSONObject = {
        "mode": "form",
        "message": "Name?",
        "requestedSchema": {"type": "object", "properties": {}},
    }
    refused = await ask_server(UrlConsent(never), form)
    assert refused["error"]["code"] == -32602
    assert "URL-mode elicitation only" in refused["error"]["message"]

    forms = Callback()
    handed_on = await ask_server(UrlConsent(never, forms=forms), form)
    assert handed_on["result"]["action"] == "accept"
    assert [params.mode for params in forms.asked] == ["form"]


# -- the typed error and completion bookkeeping ------------------------------------------


def test_url_elicitation_required_error_carries_typed_elicitations_on_the_wire() -> None:
    link = ElicitRequestURLParams(
        message="Connect", url="https://example.com/connect", elicitation_id="c-1"
    )
    raised = URLElicitationRequiredError([link])
    assert raised.code == -32042
    assert raised.message == "URL elicitation required"
    assert URLElicitationRequiredError([link, link], "Two").message == "Two"
    received = MCPError.from_error_data(raised.error)
    assert isinstance(received, URLElicitationRequiredError)
    assert received.elicitations == [link]
    if not SPEC.is_file():
        pytest.skip(f"{SPEC} is absent (the spec folder lives beside the project)")
    defs = json.loads(SPEC.read_text())["$defs"]
    schema = {"$ref": "#/$defs/URLElicitationRequiredError", "$defs": defs}
    envelope = {"jsonrpc": "2.0", "id": 3, "error": raised.error.to_wire()}
    validator = Draft202012Validator(schema)
    assert [error.message for error in schema_errors(validator, envelope)] == []


@pytest.mark.parametrize(("url", "code"), BLOCKED.items(), ids=list(BLOCKED.values()))
def test_a_server_cannot_require_a_blocked_link(url: str, code: str) -> None:
    link = ElicitRequestURLParams(message="Pay", url=url, elicitation_id="p")
    with pytest.raises(ValueError, match="Refusing to require a URL elicitation"):
        URLElicitationRequiredError([link])


def test_a_required_elicitation_needs_an_id() -> None:
    link = ElicitRequestURLParams(message="Pay", url="https://example.com/pay")
    with pytest.raises(ValueError, match="has no elicitation_id"):
        URLElicitationRequiredError([link])


def unconnected_session() -> ClientSession:
    """A client's session, never connected: what the completion bookkeeping keys on."""
    return Client(MCPServer("Links")).session


async def test_completions_count_once_and_only_for_elicitations_seen() -> None:
    completed: list[tuple[str, ClientSession]] = []

    async def on_complete(elicitation_id: str, session: ClientSession) -> None:
        completed.append((elicitation_id, session))

    tracker = UrlElicitations(on_complete=on_complete)
    session = unconnected_session()
    tracker.admit(
        session,
        ElicitRequestURLParams(message="m", url="https://example.com/", elicitation_id="a"),
    )
    for elicitation_id in ["unknown", "a", "a", 7]:
        await tracker.completed(session, {"elicitationId": elicitation_id})
    await tracker.completed(session, None)
    assert completed == [("a", session)]
    assert tracker.completions(session).is_completed("a")
    assert not tracker.completions(session).is_completed("unknown")


async def test_the_oldest_elicitation_is_forgotten_past_the_limit() -> None:
    tracker = UrlElicitations()
    session = unconnected_session()
    for number in range(REMEMBERED_ELICITATIONS + 1):
        link = ElicitRequestURLParams(
            message="m", url="https://example.com/", elicitation_id=f"e{number}"
        )
        tracker.admit(session, link)
    await tracker.completed(session, {"elicitationId": "e0"})
    await tracker.completed(session, {"elicitationId": f"e{REMEMBERED_ELICITATIONS}"})
    assert not tracker.completions(session).is_completed("e0")
    assert tracker.completions(session).is_completed(f"e{REMEMBERED_ELICITATIONS}")


def test_admit_refuses_a_blocked_link_with_the_reasons() -> None:
    link = ElicitRequestURLParams(message="m", url="javascript:alert(1)")
    with pytest.raises(InvalidParamsError) as caught:
        UrlElicitations().admit(unconnected_session(), link)
    assert caught.value.data == {"url": "javascript:alert(1)", "reasons": ["scheme"]}
