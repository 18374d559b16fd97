"""The JSON-RPC engine (``answerback.jsonrpc.Endpoint``), driven by hand over memory streams.

A ``RawPeer`` on the other end of the connection sends exactly the bytes-turned-dicts a
real peer could send, well-formed or not, and sees exactly what the endpoint answers.
The engine knows no MCP method; the handlers here are tiny stand-ins.
"""

from __future__ import annotations

import asyncio
import gc
import subprocess
import sys
import warnings
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, cast

import anyio
import anyio.lowlevel
import pydantic
import pytest
from support import PATIENCE_SECONDS, RawPeer, peer_pair
from trio.testing import MockClock

from answerback.jsonrpc import (
    Endpoint,
    Envelope,
    IncomingRequest,
    JSONObject,
    MalformedMessage,
    RequestId,
)
from answerback.jsonrpc import _attention as attention_module
from answerback.jsonrpc import _endpoint as endpoint_module
from answerback.jsonrpc._attention import Attention
from answerback.jsonrpc._budget import RequestBytes
from answerback.jsonrpc._endpoint import REQUESTS_IN_FLIGHT, SkippedAnswer
from answerback.server import MCPServer
from answerback.transports import InProcessTransport, create_stream_pairs
from answerback.types import (
    BUSY,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    ConnectionClosedError,
    MCPError,
    MethodNotFoundError,
    RequestTimeoutError,
)
from answerback.types._errors import invalid_params

pytestmark = pytest.mark.anyio


class Greeting(pydantic.BaseModel):
    name: str


class Handlers:
    """Stand-in request handlers, with events that show what a handler went through."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.cancelled = anyio.Event()
        self.release = anyio.Event()
        self.committed = anyio.Event()
        self.notifications: list[tuple[str, JSONObject | None]] = []

    async def on_request(self, request: IncomingRequest) -> JSONObject:
        if request.method == "ping":
            return {}
        if request.method == "echo":
            return {"echo": request.params}
        if request.method == "greet":
            try:
                greeting = Greeting.model_validate(request.params)
            except pydantic.ValidationError as exc:
                raise invalid_params(exc) from None
            return {"text": f"Hello, {greeting.name}."}
        if request.method == "misbuild":
            return {"text": Greeting.model_validate({"nom": "the handler's own mistake"}).name}
        if request.method == "explode":
            raise ValueError("the widget is out of range")
        if request.method == "refuse":
            raise MCPError(-1, "No, thank you.", {"retry": False})
        if request.method == "commit":
            self.started.set()
            with anyio.CancelScope(shield=True):
                await self.release.wait()
                self.committed.set()
            await anyio.lowlevel.checkpoint()  # where the peer's cancellation lands
            return {"committed": True}
        if request.method == "chatter":
            self.started.set()
            try:
                while True:  # never awaits anything but its own notifications
                    await request.notify("notifications/message", {"data": "still here"})
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
        if request.method == "wait":
            self.started.set()
            try:
                await self.release.wait()
            except anyio.get_cancelled_exc_class():
                self.cancelled.set()
                raise
            return {"waited": True}
        raise MethodNotFoundError(f"Method not found: {request.method!r}")

    async def on_notification(self, method: str, params: JSONObject | None, _: Envelope) -> None:
        self.notifications.append((method, params))


@asynccontextmanager
async def endpoint_and_peer(
    handlers: Handlers | None = None, **options: Any
) -> AsyncGenerator[tuple[Endpoint, RawPeer], None]:
    """A running endpoint (``options`` go to ``Endpoint``), and the peer a test drives
    by hand."""
    handlers = handlers or Handlers()
    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream,
            write_stream,
            on_request=handlers.on_request,
            on_notification=handlers.on_notification,
            **options,
        ) as endpoint:
            yield endpoint, peer


async def ignore(method: str, params: JSONObject | None, envelope: Envelope) -> None:
    return None


async def ask(peer: RawPeer, request_id: Any, method: str, params: Any = None) -> JSONObject:
    """Send a request from the peer and return the endpoint's answer to it."""
    message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    await peer.send(message)
    return await peer.receive()


async def assert_still_answers(peer: RawPeer) -> None:
    """The endpoint is alive: a fresh request gets its normal answer."""
    assert await ask(peer, "alive?", "ping") == {"jsonrpc": "2.0", "id": "alive?", "result": {}}


# -- malformed input -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "related", "paced"),
    [
        ({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}, 7, True),
        ({"jsonrpc": "2.0", "id": 1, "method": "roots/list"}, 7, True),
        ({"jsonrpc": "2.0", "id": 7, "result": {}}, 7, False),
        ({"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "no"}}, 7, False),
        ({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}, 7, False),
        ({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}, None, False),
    ],
    ids=[
        "a handler's log",
        "a handler's question",
        "an answer",
        "an error answer",
        "a cancellation",
        "a broadcast",
    ],
)
def test_only_a_handlers_own_messages_wait_for_a_slow_reader(
    message: dict[str, Any], related: int | None, paced: bool
) -> None:
    """An answer carries its request's id as ``related_request_id`` too: counted as
    paced, it waited for a peer that does not read, and a client's close hung on it."""
    assert Envelope(message, related_request_id=related).paced is paced


async def test_invalid_json_is_a_parse_error_with_null_id() -> None:
    """Bytes that are not JSON get -32700 with ``id: null``; the endpoint carries on."""
    async with endpoint_and_peer() as (_, peer):
        await peer.send_raw(MalformedMessage("Expecting value: line 1 column 1"))
        answer = await peer.receive()
        assert answer["jsonrpc"] == "2.0"
        assert answer["id"] is None
        assert answer["error"]["code"] == PARSE_ERROR
        assert "Expecting value" in answer["error"]["message"]
        await assert_still_answers(peer)


async def test_a_parse_error_goes_to_the_id_its_first_members_named() -> None:
    """A request the transport could not parse, but whose first members said its id,
    gets its parse error by that id: the caller's request fails instead of waiting. An
    id still being answered is not answered twice: that error goes to null."""
    handlers = Handlers()
    async with endpoint_and_peer(handlers) as (_, peer):
        await peer.send_raw(MalformedMessage("recursion limit exceeded", request_id=4))
        answer = await peer.receive()
        assert answer["id"] == 4
        assert answer["error"]["code"] == PARSE_ERROR
        await peer.send({"jsonrpc": "2.0", "id": 5, "method": "wait"})
        await handlers.started.wait()
        await peer.send_raw(MalformedMessage("trailing comma", request_id=5))
        refused = await peer.receive()
        assert refused["id"] is None
        assert refused["error"]["code"] == PARSE_ERROR
        handlers.release.set()
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 5, "result": {"waited": True}}
        await assert_still_answers(peer)


@pytest.mark.parametrize("version", ["1.0", None, 2.0])
async def test_wrong_jsonrpc_version_is_an_invalid_request(version: Any) -> None:
    """Anything but ``"jsonrpc": "2.0"`` is -32600, answered to the request's id."""
    async with endpoint_and_peer() as (_, peer):
        message: JSONObject = {"id": 3, "method": "ping"}
        if version is not None:
            message["jsonrpc"] = version
        await peer.send(message)
        answer = await peer.receive()
        assert answer["id"] == 3
        assert answer["error"]["code"] == INVALID_REQUEST
        assert '"jsonrpc"' in answer["error"]["message"]
        await assert_still_answers(peer)


async def test_unknown_method_is_method_not_found() -> None:
    """A handler's ``MethodNotFoundError`` becomes -32601 with its message."""
    async with endpoint_and_peer() as (_, peer):
        answer = await ask(peer, 4, "no/such/method")
        assert answer == {
            "jsonrpc": "2.0",
            "id": 4,
            "error": {"code": METHOD_NOT_FOUND, "message": "Method not found: 'no/such/method'"},
        }


@pytest.mark.parametrize("params", [["Ada"], "Ada", 7])
async def test_params_that_are_not_an_object_are_invalid_params(params: Any) -> None:
    """MCP params are always objects; an array or scalar is -32602 before any handler."""
    handlers = Handlers()
    async with endpoint_and_peer(handlers) as (_, peer):
        answer = await ask(peer, 5, "echo", params)
        assert answer["id"] == 5
        assert answer["error"]["code"] == INVALID_PARAMS
        assert "params must be an object" in answer["error"]["message"]


async def test_a_batch_is_an_invalid_request() -> None:
    """JSON-RPC batches are not part of MCP: -32600 with ``id: null``, nothing run."""
    async with endpoint_and_peer() as (_, peer):
        await peer.send([{"jsonrpc": "2.0", "id": 1, "method": "echo"}])
        answer = await peer.receive()
        assert answer["id"] is None
        assert answer["error"]["code"] == INVALID_REQUEST
        assert "Batch" in answer["error"]["message"]
        await assert_still_answers(peer)


async def test_an_id_of_the_wrong_type_is_an_invalid_request() -> None:
    """Ids are strings or integers; anything else cannot be answered by id."""
    async with endpoint_and_peer() as (_, peer):
        answer = await ask(peer, {"not": "an id"}, "ping")
        assert answer["id"] is None
        assert answer["error"]["code"] == INVALID_REQUEST


async def test_a_response_to_an_unknown_id_is_dropped() -> None:
    """A stray response is logged and ignored; nothing is sent and the endpoint goes on."""
    async with endpoint_and_peer() as (endpoint, peer):
        await peer.send({"jsonrpc": "2.0", "id": 999, "result": {"surprise": True}})
        await peer.send({"jsonrpc": "2.0", "id": 998, "error": {"code": -1, "message": "?"}})
        await assert_still_answers(peer)  # the first message back is the ping's answer
        assert endpoint.pending_count == 0


async def test_an_error_without_an_id_is_reported_as_a_message_the_peer_could_not_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A peer answers what it cannot parse with a null id: the warning says so (which of
    our calls it was cannot be known), not that an unknown id was answered."""
    async with endpoint_and_peer() as (endpoint, peer):
        error = {"code": PARSE_ERROR, "message": "Parse error: too deep"}
        await peer.send({"jsonrpc": "2.0", "id": None, "error": error})
        await assert_still_answers(peer)
        assert endpoint.pending_count == 0
    warnings = [record.getMessage() for record in caplog.records]
    assert any(
        "could not read a message of ours" in text and "Parse error: too deep" in text
        for text in warnings
    ), warnings


async def test_a_duplicate_in_flight_id_is_an_invalid_request() -> None:
    """Reusing the id of a request still running is refused; the first one still finishes."""
    handlers = Handlers()
    async with endpoint_and_peer(handlers) as (_, peer):
        await peer.send({"jsonrpc": "2.0", "id": 7, "method": "wait"})
        with anyio.fail_after(PATIENCE_SECONDS):
            await handlers.started.wait()
        duplicate = await ask(peer, 7, "echo", {"again": True})
        assert duplicate["id"] == 7
        assert duplicate["error"]["code"] == INVALID_REQUEST
        assert "already in use" in duplicate["error"]["message"]
        handlers.release.set()
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 7, "result": {"waited": True}}
        # Once answered, the id may be used again.
        reused = await ask(peer, 7, "echo", {"again": True})
        assert reused["result"] == {"echo": {"again": True}}


@asynccontextmanager
async def bounded_endpoint(
    on_request: Callable[[IncomingRequest], Awaitable[JSONObject]], max_in_flight: int | None
) -> AsyncGenerator[tuple[Endpoint, RawPeer], None]:
    """A running endpoint answering at most ``max_in_flight`` requests at once."""
    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream,
            write_stream,
            on_request=on_request,
            on_notification=ignore,
            max_in_flight=max_in_flight,
        ) as endpoint:
            yield endpoint, peer


def echo_or_wait_forever(
    started: list[RequestId],
) -> Callable[[IncomingRequest], Awaitable[JSONObject]]:
    """A handler that answers ``echo`` at once and holds any other request for ever,
    noting its id in ``started``."""

    async def on_request(request: IncomingRequest) -> JSONObject:
        if request.method == "echo":
            return {"echo": request.params}
        started.append(request.id)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return on_request


async def test_a_peer_has_at_most_max_in_flight_requests_answered_at_once() -> None:
    """Past the bound, a request is refused at once, whether handed over or read from a
    backlog, and holds nothing; once one finishes (here: cancelled), room is made."""
    started: list[RequestId] = []
    on_request = echo_or_wait_forever(started)

    async with bounded_endpoint(on_request, 3) as (endpoint, peer):
        for n in range(3):
            await peer.send({"jsonrpc": "2.0", "id": n, "method": "wait"})
        await loop_turns_until(lambda: len(started) == 3)
        refused = await ask(peer, "one too many", "echo", {"x": 1})
        assert refused["id"] == "one too many"
        assert refused["error"]["code"] == BUSY
        message = refused["error"]["message"]
        assert "3 of your requests are being answered" in message
        assert "cancel those you no longer need" in message
        queue_behind_a_notification(
            peer, [{"jsonrpc": "2.0", "id": f"queued {n}", "method": "echo"} for n in range(2)]
        )
        for n in range(2):
            answer = await peer.receive()
            assert (answer["id"], answer["error"]["code"]) == (f"queued {n}", BUSY)
        assert endpoint.in_flight_count == 3
        await peer.cancel(0, "no longer needed")
        await loop_turns_until(lambda: endpoint.in_flight_count == 2)
        assert await ask(peer, "room again", "echo", {"x": 2}) == {
            "jsonrpc": "2.0",
            "id": "room again",
            "result": {"echo": {"x": 2}},
        }
        assert sorted(cast(list[int], started)) == [0, 1, 2]


async def test_no_bound_on_requests_in_flight_when_asked_for_none() -> None:
    """``max_in_flight=None``: the 2026-07-28 HTTP connection, whose requests each hold
    a POST, answers any number at once."""
    release = anyio.Event()
    started: list[RequestId] = []

    async def on_request(request: IncomingRequest) -> JSONObject:
        started.append(request.id)
        await release.wait()
        return {}

    count = REQUESTS_IN_FLIGHT + 10
    async with bounded_endpoint(on_request, None) as (_, peer):
        for n in range(count):
            await peer.send({"jsonrpc": "2.0", "id": n, "method": "wait"})
        await loop_turns_until(lambda: len(started) == count)
        assert len(started) == count
        release.set()
        answers = [await peer.receive() for _ in range(count)]
        assert all("result" in answer for answer in answers)


async def test_requests_past_the_byte_budget_are_refused_until_answers_free_it() -> None:
    """Each request holds its size (``Envelope.size``) of the budget while answered, and
    one that would take it past its limit is refused at once, whether handed over or read
    from a backlog; a budget may be shared by connections (the HTTP app's is), and one
    request alone is always taken, however big."""
    budget = RequestBytes(1000)
    started: list[RequestId] = []
    on_request = echo_or_wait_forever(started)

    def sized(request_id: RequestId, method: str, size: int) -> Envelope:
        return Envelope({"jsonrpc": "2.0", "id": request_id, "method": method}, size=size)

    with peer_pair() as ((read_one, write_one), one), peer_pair() as ((read_two, write_two), two):
        async with (
            Endpoint(
                read_one, write_one, on_request=on_request, on_notification=ignore,
                request_bytes=budget,
            ) as first,
            Endpoint(
                read_two, write_two, on_request=on_request, on_notification=ignore,
                request_bytes=budget,
            ),
        ):  # fmt: skip
            await one.send_raw(sized("huge", "wait", 5000))  # alone: taken
            await loop_turns_until(lambda: started == ["huge"])
            assert budget.held == 5000
            await two.send_raw(sized("small", "echo", 10))
            refused = await two.receive()
            assert (refused["id"], refused["error"]["code"]) == ("small", BUSY)
            assert refused["error"]["message"] == (
                "Busy: the requests being answered hold 5000 bytes already, and this one "
                "holds 10, past the 1000 bytes of requests answered at once. Wait for their "
                "answers (or cancel those you no longer need), then send this again."
            )
            await one.cancel("huge", "no longer needed")
            await loop_turns_until(lambda: first.in_flight_count == 0)
            assert budget.held == 0
            for n in range(2):
                await one.send_raw(sized(n, "wait", 400))
            await loop_turns_until(lambda: len(started) == 3)
            one.write_stream.send_nowait(Envelope({"jsonrpc": "2.0", "method": "notifications/hi"}))
            one.write_stream.send_nowait(sized("queued", "echo", 201))
            one.write_stream.send_nowait(sized("fits", "echo", 200))
            answers = {answer["id"]: answer for answer in [await one.receive() for _ in range(2)]}
            assert answers["queued"]["error"]["code"] == BUSY
            assert answers["fits"]["result"] == {"echo": None}
            assert budget.held == 800  # what the two waiting requests hold; "fits" gave its back


async def test_a_holder_holds_at_most_its_share_of_the_byte_budget() -> None:
    """Requests whose transport names their holder (``Envelope.holder``: an HTTP
    caller's principal) hold at most the budget's ``share`` each, so one caller's
    stalled requests cannot have everyone refused; one request of a holder holding
    nothing is always taken; requests of no holder count only against the whole; a
    holder whose requests are answered is forgotten."""
    budget = RequestBytes(1000, share=500)
    started: list[RequestId] = []
    on_request = echo_or_wait_forever(started)

    def sized(request_id: RequestId, method: str, size: int, holder: str | None) -> Envelope:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        return Envelope(message, size=size, holder=holder)

    with peer_pair() as ((read, write), peer):
        async with Endpoint(
            read, write, on_request=on_request, on_notification=ignore, request_bytes=budget
        ) as endpoint:
            await peer.send_raw(sized("ada-1", "wait", 300, "ada"))
            await peer.send_raw(sized("bob-big", "wait", 700, "bob"))  # alone: taken
            await loop_turns_until(lambda: started == ["ada-1", "bob-big"])
            assert (budget.held, budget.held_by("ada"), budget.held_by("bob")) == (1000, 300, 700)
            await peer.cancel("bob-big", "no longer needed")
            await loop_turns_until(lambda: endpoint.in_flight_count == 1)
            assert budget.held_by("bob") == 0
            await peer.send_raw(sized("ada-2", "echo", 201, "ada"))
            refused = await peer.receive()
            assert (refused["id"], refused["error"]["code"]) == ("ada-2", BUSY)
            assert refused["error"]["message"] == (
                "Busy: your requests being answered hold 300 bytes already, and this one "
                "holds 201, past the 500 bytes one caller's requests may hold. Wait for "
                "their answers (or cancel those you no longer need), then send this again."
            )
            for request_id, holder in (("bob-1", "bob"), ("anyone", None), ("ada-3", "ada")):
                await peer.send_raw(sized(request_id, "echo", 200, holder))
                answer = await peer.receive()
                assert answer == {"jsonrpc": "2.0", "id": request_id, "result": {"echo": None}}
            await peer.send_raw(sized("nobody-big", "wait", 600, None))
            await loop_turns_until(lambda: len(started) == 3)  # only the whole is counted
            await peer.send_raw(sized("bob-2", "echo", 101, "bob"))  # in bob's share, not the whole
            refused = await peer.receive()
            assert refused["error"]["code"] == BUSY
            assert refused["error"]["message"].startswith(
                "Busy: the requests being answered hold 900 bytes already"
            )
            await peer.cancel("ada-1", "no longer needed")
            await peer.cancel("nobody-big", "no longer needed")
            await loop_turns_until(lambda: endpoint.in_flight_count == 0)
            assert budget.held == 0
            assert budget.held_by("ada") == 0
            assert not budget._held_by  # pyright: ignore[reportPrivateUsage]


def test_a_budget_and_a_share_must_be_positive() -> None:
    with pytest.raises(ValueError, match="share of request bytes must be at least 1, not 0"):
        RequestBytes(1000, share=0)
    with pytest.raises(ValueError, match="budget of request bytes must be at least 1, not -5"):
        RequestBytes(-5)


# -- errors from handlers ------------------------------------------------------------------


async def test_a_handler_exception_is_an_internal_error_naming_it() -> None:
    """Any unexpected exception becomes -32603 whose message names it; no traceback."""
    async with endpoint_and_peer() as (_, peer):
        answer = await ask(peer, 8, "explode")
        assert answer["error"]["code"] == INTERNAL_ERROR
        assert "ValueError" in answer["error"]["message"]
        assert "the widget is out of range" in answer["error"]["message"]
        assert "Traceback" not in answer["error"]["message"]
        await assert_still_answers(peer)


async def test_params_of_the_wrong_shape_are_invalid_params() -> None:
    """A handler that parses its params with pydantic turns the failure into -32602
    naming the field (``invalid_params``)."""
    async with endpoint_and_peer() as (_, peer):
        answer = await ask(peer, 9, "greet", {"nom": "Ada"})
        assert answer["error"] == {
            "code": INVALID_PARAMS,
            "message": "Invalid params: name: Field required",
        }
        good = await ask(peer, 10, "greet", {"name": "Ada"})
        assert good["result"] == {"text": "Hello, Ada."}


async def test_a_validation_error_of_the_handlers_own_is_an_internal_error() -> None:
    """A pydantic error that escapes a handler came from its own code, not from the
    peer's params: an internal error naming it, never -32602 blaming the peer."""
    async with endpoint_and_peer() as (_, peer):
        answer = await ask(peer, 9, "misbuild", {"name": "Ada"})
        assert answer["error"]["code"] == INTERNAL_ERROR
        assert answer["error"]["message"].startswith(
            "Internal error: ValidationError: 1 validation error for Greeting"
        )
        await assert_still_answers(peer)


async def test_an_mcp_error_is_sent_as_raised() -> None:
    """A handler decides the exact error by raising ``MCPError``."""
    async with endpoint_and_peer() as (_, peer):
        answer = await ask(peer, 11, "refuse")
        assert answer["error"] == {
            "code": -1,
            "message": "No, thank you.",
            "data": {"retry": False},
        }


class NotAnException(BaseException):
    """What a library may raise to unwind a handler (answerback's own ``InputNeeded`` is
    one): not an ``Exception``, not a cancellation."""


def raising(exc: BaseException) -> Any:
    async def handler(request: IncomingRequest) -> JSONObject:
        if request.method == "ping":
            return {}
        raise exc

    return handler


@pytest.mark.parametrize(
    ("raised", "code", "named"),
    [
        pytest.param(NotAnException("unwound"), INTERNAL_ERROR, "NotAnException", id="base"),
        pytest.param(
            BaseExceptionGroup("in a task group", [NotAnException("unwound")]),
            INTERNAL_ERROR,
            "NotAnException",
            id="group-of-base",
        ),
        pytest.param(
            ExceptionGroup("in a task group", [MCPError(-7, "No, thank you.")]),
            -7,
            "No, thank you.",
            id="group-of-mcp-error",
        ),
        pytest.param(
            ExceptionGroup("two tools failed", [ValueError("a"), KeyError("b")]),
            INTERNAL_ERROR,
            "two tools failed",
            id="group-of-two",
        ),
    ],
)
async def test_whatever_escapes_a_handler_is_answered(
    raised: BaseException, code: int, named: str
) -> None:
    """A ``BaseException`` that is not a cancellation, or an exception group (a task group
    inside a handler), still gets an error response; a group of one is judged by its
    member. The connection goes on, and nothing is left for asyncio to report."""
    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream, write_stream, on_request=raising(raised), on_notification=ignore
        ):
            answer = await ask(peer, 12, "tools/call")
            assert answer["id"] == 12
            assert answer["error"]["code"] == code
            assert named in answer["error"]["message"]
            await assert_still_answers(peer)


async def test_a_notification_handler_raising_a_base_exception_is_only_logged() -> None:
    """The reader survives it: the connection keeps answering."""

    async def unwinding(method: str, params: JSONObject | None, envelope: Envelope) -> None:
        raise NotAnException("unwound")

    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream, write_stream, on_request=raising(ValueError()), on_notification=unwinding
        ):
            await peer.send({"jsonrpc": "2.0", "method": "notifications/anything"})
            await assert_still_answers(peer)


async def test_exit_in_a_handler_is_answered_then_ends_the_endpoint(
    anyio_backend_name: str,
) -> None:
    """``SystemExit`` (or Ctrl-C) must still stop the program: the peer gets its error
    response, and the exception then leaves the endpoint."""
    if anyio_backend_name == "asyncio":
        pytest.skip(
            "asyncio raises SystemExit from a task straight out of the event loop, which "
            "would end the test runner's loop rather than the test"
        )
    with peer_pair() as ((read_stream, write_stream), peer):

        async def serve_until_it_ends() -> None:
            async with Endpoint(
                read_stream, write_stream, on_request=raising(SystemExit(3)), on_notification=ignore
            ):
                await peer.send({"jsonrpc": "2.0", "id": 13, "method": "tools/call"})
                await anyio.sleep_forever()

        with pytest.raises(BaseExceptionGroup) as caught:
            await serve_until_it_ends()
        assert caught.group_contains(SystemExit)
        answer = peer.read_stream.receive_nowait()
        assert isinstance(answer, Envelope)
        assert answer.message["id"] == 13
        assert answer.message["error"]["code"] == INTERNAL_ERROR


async def test_an_error_response_raises_the_matching_mcp_error() -> None:
    """On the requesting side an error answer raises ``MCPError`` with code, message, data."""
    async with endpoint_and_peer() as (endpoint, peer), anyio.create_task_group() as tg:

        async def answer_with_an_error() -> None:
            request = await peer.receive()
            error = {"code": INVALID_PARAMS, "message": "No such city.", "data": {"city": "X"}}
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

        tg.start_soon(answer_with_an_error)
        with pytest.raises(MCPError) as caught:
            await endpoint.request("weather", {"city": "X"})
        assert caught.value.code == INVALID_PARAMS
        assert caught.value.message == "No such city."
        assert caught.value.data == {"city": "X"}


# -- many requests at once -----------------------------------------------------------------


async def test_out_of_order_answers_reach_the_right_callers() -> None:
    """Three requests in flight, answered last-first: each caller gets its own result."""
    results: dict[str, JSONObject] = {}
    async with endpoint_and_peer() as (endpoint, peer):

        async def call(name: str) -> None:
            results[name] = await endpoint.request("lookup", {"name": name})

        async with anyio.create_task_group() as tg:
            for name in ("ada", "grace", "alan"):
                tg.start_soon(call, name)
            requests = [await peer.receive() for _ in range(3)]
            assert len({r["id"] for r in requests}) == 3
            for request in reversed(requests):
                name = request["params"]["name"]
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"of": name}})
    assert results == {"ada": {"of": "ada"}, "grace": {"of": "grace"}, "alan": {"of": "alan"}}


async def test_requests_in_flight_in_both_directions_at_once() -> None:
    """Two endpoints call each other concurrently, including calls made while answering."""
    (left_read, left_write), (right_read, right_write) = create_stream_pairs()
    release = anyio.Event()

    async def left_handler(request: IncomingRequest) -> JSONObject:
        return {"left answers": request.params}

    async def right_handler(request: IncomingRequest) -> JSONObject:
        params = request.params or {}
        if params.get("slow"):
            await release.wait()  # held until a later request has been answered
        # Answering this request needs an answer from the other side first.
        inner = await request.request("inner", {"for": params["n"]})
        return {"right answers": params["n"], "inner": inner}

    results: dict[str, JSONObject] = {}
    async with (
        Endpoint(left_read, left_write, on_request=left_handler, on_notification=ignore) as left,
        Endpoint(
            right_read, right_write, on_request=right_handler, on_notification=ignore
        ) as right,
    ):

        async def left_calls(key: str, params: JSONObject) -> None:
            results[key] = await left.request("outer", params)
            if not params.get("slow"):
                release.set()

        async def right_calls(key: str, n: int) -> None:
            results[key] = await right.request("direct", {"n": n})

        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(left_calls, "slow", {"n": 1, "slow": True})
                tg.start_soon(left_calls, "fast", {"n": 2})
                for n in range(3):
                    tg.start_soon(right_calls, f"right-{n}", n)
        assert left.pending_count == right.pending_count == 0
        assert left.in_flight_count == right.in_flight_count == 0
    assert results["slow"] == {"right answers": 1, "inner": {"left answers": {"for": 1}}}
    assert results["fast"] == {"right answers": 2, "inner": {"left answers": {"for": 2}}}
    for n in range(3):
        assert results[f"right-{n}"] == {"left answers": {"n": n}}


# -- a backlog ----------------------------------------------------------------------------


def queue_behind_a_notification(peer: RawPeer, messages: list[JSONObject]) -> None:
    """Put ``messages`` in the endpoint's buffer at once. A notification goes first: it
    is never handed over, so it wakes the reader and what follows queues up behind it,
    as when many peers share one connection (the 2026-07-28 HTTP server's)."""
    peer.write_stream.send_nowait(Envelope({"jsonrpc": "2.0", "method": "notifications/hi"}))
    for message in messages:
        peer.write_stream.send_nowait(Envelope(message))


def numbered_notifications(count: int) -> list[JSONObject]:
    """``count`` notifications whose params say which they are: ``{"n": 0}``, ..."""
    return [
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": n}}
        for n in range(count)
    ]


def numbers_notified(handlers: Handlers) -> list[object]:
    """The ``n`` of each numbered notification the handlers saw, in the order seen."""
    return [params["n"] for _, params in handlers.notifications if params and "n" in params]


async def loop_turns_until(done: Callable[[], bool]) -> int:
    """How many times this task had to yield before ``done()`` held (at most 1,000)."""
    turns = 0
    while not done() and turns < 1000:
        await anyio.lowlevel.checkpoint()
        turns += 1
    return turns


async def answer_echoes_then_count_tasks_kept(count: int) -> int:
    """Answer ``count`` requests, one at a time; how many of their tasks are still
    alive afterwards (after a collection), while the endpoint is still open."""
    handler_tasks: weakref.WeakSet[asyncio.Task[Any]] = weakref.WeakSet()

    async def on_request(request: IncomingRequest) -> JSONObject:
        handler_tasks.add(cast("asyncio.Task[Any]", asyncio.current_task()))
        return {"echo": request.params}

    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream, write_stream, on_request=on_request, on_notification=ignore
        ) as endpoint:
            for n in range(count):
                assert (await ask(peer, n, "echo", {"n": n}))["result"] == {"echo": {"n": n}}
            assert endpoint.in_flight_count == 0
            gc.collect()
            return len(handler_tasks)


async def test_the_tasks_of_answered_requests_are_let_go(anyio_backend_name: str) -> None:
    """An answered request's task is not kept until the connection ends: each one lets
    itself go as it ends."""
    if anyio_backend_name != "asyncio":
        pytest.skip("trio's nursery lets its tasks go by itself")
    assert await answer_echoes_then_count_tasks_kept(200) == 0


async def test_a_host_loop_that_starts_tasks_eagerly_keeps_no_answered_task(
    anyio_backend_name: str,
) -> None:
    """A host may set ``asyncio.eager_task_factory`` on its loop; the engine honours it,
    and a task that ended within its first step is not kept either."""
    if sys.version_info < (3, 12):
        pytest.skip("eager task factories are 3.12+")
    if anyio_backend_name != "asyncio":
        pytest.skip("a task factory is asyncio's")
    loop = asyncio.get_running_loop()
    loop.set_task_factory(asyncio.eager_task_factory)
    try:
        assert await answer_echoes_then_count_tasks_kept(200) == 0
    finally:
        loop.set_task_factory(None)


EXIT_IN_A_TOOL = """
import asyncio, anyio
from answerback import Client
from answerback.server import MCPServer

mcp = MCPServer("exits")

@mcp.tool()
def stop() -> str:
    raise SystemExit(3)

async def main() -> None:
    asyncio.get_running_loop().set_task_factory(asyncio.eager_task_factory)
    async with Client(mcp) as client:
        try:
            await client.call_tool("stop")
        except BaseException as exc:
            print("call_tool raised", type(exc).__name__, flush=True)
            raise

anyio.run(main)
"""


@pytest.mark.skipif(sys.version_info < (3, 12), reason="eager task factories are 3.12+")
def test_exit_in_an_eagerly_started_handler_does_not_leave_through_the_caller() -> None:
    """With a host's eager task factory, a tool that exits runs inside its caller's
    step; the exit still ends the program from the handler's own task, as without one,
    and the caller gets the error response rather than the ``SystemExit``."""
    done = subprocess.run(
        [sys.executable, "-c", EXIT_IN_A_TOOL],
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert done.returncode == 3, done.stderr
    assert done.stdout == "call_tool raised InternalError\n"


async def test_a_backlog_starts_its_handlers_together() -> None:
    """Queued requests are read in a batch, not one per loop turn: a backlog that grew as
    fast as it was read one at a time would never drain."""
    started: list[RequestId] = []
    release = anyio.Event()

    async def on_request(request: IncomingRequest) -> JSONObject:
        started.append(request.id)
        await release.wait()
        return {"n": request.id}

    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream, write_stream, on_request=on_request, on_notification=ignore
        ):
            requests: list[JSONObject] = [
                {"jsonrpc": "2.0", "id": n, "method": "wait"} for n in range(50)
            ]
            queue_behind_a_notification(peer, requests)
            turns = await loop_turns_until(lambda: len(started) == 50)
            assert sorted(cast(list[int], started)) == list(range(50))
            assert turns <= 5  # one batch, then the handlers' first step
            release.set()
            answers = [await peer.receive() for _ in range(50)]
            assert sorted(answer["result"]["n"] for answer in answers) == list(range(50))


async def test_a_flooded_reader_still_lets_other_tasks_run() -> None:
    """A batch has a bound: behind 640 queued notifications, other tasks still get turns
    (without one, they would wait for the whole flood)."""
    handlers = Handlers()
    async with endpoint_and_peer(handlers) as (_, peer):
        queue_behind_a_notification(peer, numbered_notifications(640))
        turns = await loop_turns_until(lambda: len(handlers.notifications) == 641)
        assert 5 <= turns < 1000
        assert numbers_notified(handlers) == list(range(640))  # in the order they came


async def test_a_backlog_ended_by_a_hang_up_is_read_to_its_end() -> None:
    """The peer queues messages and closes its end: the batch reads every one of them,
    then the connection ends as any hang-up does (nothing queued is lost to it)."""
    handlers = Handlers()
    async with endpoint_and_peer(handlers) as (endpoint, peer):
        queue_behind_a_notification(peer, numbered_notifications(3))
        peer.write_stream.close()
        with anyio.fail_after(PATIENCE_SECONDS):
            await endpoint.closed.wait()
        assert numbers_notified(handlers) == [0, 1, 2]


async def test_a_backlog_is_handled_in_order() -> None:
    """Within a batch, a cancellation still applies to the request queued before it and
    not to the one after it, and malformed input is answered where it stood."""
    handlers = Handlers()
    async with endpoint_and_peer(handlers) as (endpoint, peer):
        cancel_1 = {"requestId": 1, "reason": "changed my mind"}
        cancel_3 = {"requestId": 3, "reason": "too early: not sent yet"}
        queue_behind_a_notification(
            peer,
            [
                {"jsonrpc": "2.0", "id": 1, "method": "wait"},
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel_1},
                {"jsonrpc": "1.0", "id": 2, "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel_3},
                {"jsonrpc": "2.0", "id": 3, "method": "echo", "params": {"n": 3}},
            ],
        )
        invalid = await peer.receive()
        assert (invalid["id"], invalid["error"]["code"]) == (2, INVALID_REQUEST)
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 3, "result": {"echo": {"n": 3}}}
        await assert_still_answers(peer)  # and id 1 was never answered
        assert endpoint.in_flight_count == 0


# -- cancellation, timeouts, progress ------------------------------------------------------


async def test_a_cancelled_caller_on_a_connection_that_just_closed_is_cancelled() -> None:
    """Its scope was cancelled as the connection went away (a ``fail_after`` over many
    calls and their client): the call ends cancelled, not with a connection error."""
    async with endpoint_and_peer() as (endpoint, peer):
        peer.read_stream.close()  # the peer stops reading: sending now fails
        with anyio.CancelScope() as scope:
            scope.cancel()
            await endpoint.request("ping")
        assert scope.cancelled_caught
        with pytest.raises(ConnectionClosedError, match="Cannot send"):
            await endpoint.request("ping")


async def test_peer_cancellation_stops_the_handler_and_sends_no_response() -> None:
    """``notifications/cancelled`` cancels the running handler; its id is never answered."""
    handlers = Handlers()
    async with endpoint_and_peer(handlers) as (endpoint, peer):
        await peer.send({"jsonrpc": "2.0", "id": 20, "method": "wait"})
        with anyio.fail_after(PATIENCE_SECONDS):
            await handlers.started.wait()
        await peer.cancel(20, "the user gave up")
        with anyio.fail_after(PATIENCE_SECONDS):
            await handlers.cancelled.wait()
        # The next thing the peer hears is the answer to a later request, not to id 20.
        await assert_still_answers(peer)
        assert endpoint.in_flight_count == 0
    assert handlers.notifications == []  # the engine applied it; the handler never saw it


async def test_peer_cancellation_respects_a_handlers_shielded_section() -> None:
    """The engine cancels through a cancel scope, so what a handler shields finishes."""
    handlers = Handlers()
    async with endpoint_and_peer(handlers) as (endpoint, peer):
        await peer.send({"jsonrpc": "2.0", "id": 22, "method": "commit"})
        with anyio.fail_after(PATIENCE_SECONDS):
            await handlers.started.wait()
        await peer.cancel(22, "too slow")
        await assert_still_answers(peer)  # the cancellation has been read and applied
        handlers.release.set()
        with anyio.fail_after(PATIENCE_SECONDS):
            await handlers.committed.wait()  # the shielded section ran to its end
        await assert_still_answers(peer)  # and id 22 was never answered
        assert endpoint.in_flight_count == 0


async def test_a_handler_that_only_sends_notifications_can_still_be_cancelled() -> None:
    """Each notification is a checkpoint: the loop keeps running, the peer's cancel lands."""
    handlers = Handlers()
    async with endpoint_and_peer(handlers) as (endpoint, peer):
        await peer.send({"jsonrpc": "2.0", "id": 21, "method": "chatter"})
        first = await peer.receive()
        assert first["params"] == {"data": "still here"}
        await peer.cancel(21, "enough")
        with anyio.fail_after(PATIENCE_SECONDS):
            await handlers.cancelled.wait()
        await peer.send({"jsonrpc": "2.0", "id": "alive?", "method": "ping"})
        answer = await peer.receive_until(lambda message: "id" in message)
        assert answer == {"jsonrpc": "2.0", "id": "alive?", "result": {}}
        assert endpoint.in_flight_count == 0


async def test_a_cancelled_caller_tells_the_peer() -> None:
    """Abandoning a request (cancelling the caller) sends ``notifications/cancelled``."""
    async with endpoint_and_peer() as (endpoint, peer):
        caller = anyio.CancelScope()

        async def call_then_give_up() -> None:
            with caller:
                await endpoint.request("wait")

        sent: list[JSONObject] = []  # read after the task group (pyright: it may swallow errors)
        async with anyio.create_task_group() as tg:
            tg.start_soon(call_then_give_up)
            sent.append(await peer.receive())
            caller.cancel()
        [request] = sent
        cancelled = await peer.receive()
        assert cancelled == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request["id"], "reason": "cancelled"},
        }
        assert endpoint.pending_count == 0
        # A late answer to the abandoned request is simply dropped.
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
        await assert_still_answers(peer)


async def test_move_on_after_cancels_the_request_on_the_wire() -> None:
    """The everyday way to give up on a call, ``anyio.move_on_after``, also tells the peer."""
    async with endpoint_and_peer() as (endpoint, peer):
        with anyio.move_on_after(0.2) as scope:
            await endpoint.request("wait")
        assert scope.cancelled_caught
        request = await peer.receive()
        cancelled = await peer.receive()
        assert cancelled["method"] == "notifications/cancelled"
        assert cancelled["params"] == {"requestId": request["id"], "reason": "cancelled"}


async def test_a_timed_out_request_raises_and_tells_the_peer() -> None:
    """``timeout=`` raises ``RequestTimeoutError`` and cancels the request at the peer."""
    async with endpoint_and_peer() as (endpoint, peer):
        with pytest.raises(RequestTimeoutError) as caught:
            await endpoint.request("wait", timeout=0.2)
        assert "'wait'" in caught.value.message
        request = await peer.receive()
        cancelled = await peer.receive()
        assert cancelled == {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request["id"], "reason": "timed out"},
        }
        assert endpoint.pending_count == 0


async def test_progress_reaches_on_progress_and_keeps_a_timed_request_alive() -> None:
    """Steady progress outlasts the inactivity timeout; every report reaches the caller."""
    reports: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append((progress, total, message))

    steps = 15
    async with endpoint_and_peer() as (endpoint, peer), anyio.create_task_group() as tg:

        async def slow_but_steady_peer() -> None:
            request = await peer.receive()
            token = request["params"]["_meta"]["progressToken"]
            for step in range(1, steps + 1):
                await anyio.sleep(0.1)  # together longer than the 1 s timeout
                await peer.send(
                    {
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": {
                            "progressToken": token,
                            "progress": step,
                            "total": steps,
                            "message": f"step {step}",
                        },
                    }
                )
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"done": True}})

        tg.start_soon(slow_but_steady_peer)
        result = await endpoint.request("work", {"size": 3}, timeout=1.0, on_progress=on_progress)
        assert result == {"done": True}
    assert reports == [(float(s), float(steps), f"step {s}") for s in range(1, steps + 1)]


async def test_progress_token_is_added_without_losing_params() -> None:
    """Asking for progress adds ``_meta.progressToken`` next to the caller's own params."""

    async def ignore(progress: float, total: float | None, message: str | None) -> None:
        return None

    async with endpoint_and_peer() as (endpoint, peer), anyio.create_task_group() as tg:

        async def call() -> None:
            await endpoint.request("work", {"size": 3, "_meta": {"mine": 1}}, on_progress=ignore)

        tg.start_soon(call)
        request = await peer.receive()
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
        assert request["params"] == {
            "size": 3,
            "_meta": {"mine": 1, "progressToken": request["id"]},
        }


@pytest.mark.parametrize("token", [{"a": 1}, ["x"], True, None, 1.5])
async def test_a_progress_notification_with_a_strange_token_is_ignored(token: Any) -> None:
    """Tokens are strings or integers; anything else matches no request and harms nothing."""
    reports: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reports.append(progress)

    results: list[JSONObject] = []
    async with endpoint_and_peer() as (endpoint, peer), anyio.create_task_group() as tg:

        async def call() -> None:
            results.append(await endpoint.request("work", on_progress=on_progress))

        tg.start_soon(call)
        request = await peer.receive()  # its progress token is its id, an integer
        assert request["params"]["_meta"]["progressToken"] == request["id"]
        await peer.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 0.5},
            }
        )
        await assert_still_answers(peer)
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"done": True}})
    assert results == [{"done": True}]
    assert reports == []


@pytest.mark.parametrize("request_id", [True, 1.0])
async def test_ids_that_only_look_like_integers_match_nothing(request_id: Any) -> None:
    """``true`` or ``1.0`` is not the id 1: no response is resolved, no handler cancelled."""
    handlers = Handlers()
    results: list[JSONObject] = []
    async with endpoint_and_peer(handlers) as (endpoint, peer), anyio.create_task_group() as tg:

        async def call() -> None:
            results.append(await endpoint.request("first"))

        tg.start_soon(call)
        request = await peer.receive()
        assert request["id"] == 1
        # A response and a cancellation naming the look-alike id...
        await peer.send({"jsonrpc": "2.0", "id": request_id, "result": {"n": "impostor"}})
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "wait"})
        with anyio.fail_after(PATIENCE_SECONDS):
            await handlers.started.wait()
        await peer.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id},
            }
        )
        await assert_still_answers(peer)
        # ...did nothing: the real answers still decide.
        assert not handlers.cancelled.is_set()
        await peer.send({"jsonrpc": "2.0", "id": 1, "result": {"n": 1}})
        handlers.release.set()
        assert await peer.receive() == {"jsonrpc": "2.0", "id": 1, "result": {"waited": True}}
    assert results == [{"n": 1}]


async def test_a_failing_progress_callback_does_not_break_the_connection() -> None:
    """A bug in the caller's ``on_progress`` is logged; the request and connection go on."""

    async def broken(progress: float, total: float | None, message: str | None) -> None:
        raise RuntimeError("progress bar fell over")

    results: list[JSONObject] = []
    async with endpoint_and_peer() as (endpoint, peer), anyio.create_task_group() as tg:

        async def call() -> None:
            results.append(await endpoint.request("work", on_progress=broken))

        tg.start_soon(call)
        request = await peer.receive()
        await peer.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": request["id"], "progress": 1},
            }
        )
        await assert_still_answers(peer)
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"done": True}})
    assert results == [{"done": True}]


class TrioTime:
    """``time`` for the engine and ``Attention``: trio's clock, which a ``MockClock`` moves."""

    @staticmethod
    def monotonic() -> float:
        return anyio.current_time()


SLOW_LOG: JSONObject = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}


def progress(token: RequestId, step: int) -> JSONObject:
    params: JSONObject = {"progressToken": token, "progress": step}
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}


@pytest.mark.parametrize(
    "anyio_backend", [pytest.param(("trio", {"clock": MockClock(autojump_threshold=0)}), id="trio")]
)
@pytest.mark.parametrize(
    "then",
    [
        "nothing",
        "progress",
        "progress after a slow progress callback",
        "a handler's end",
        "the person let go after it",
        "the person let go during it",
    ],
)
async def test_a_slow_callback_before_the_last_activity_does_not_lengthen_the_timeout(
    monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    """A request with a 10 s timeout, a callback of ours taking 5 s, then (at 5 s) the
    activity the timer restarts from, then silence: it times out at 15 s. Callback time
    was counted since the wait began, before the activity too: the timeout came at 20 s.
    With nothing after the callback, its 5 s do not count (15 s too)."""
    monkeypatch.setattr(endpoint_module, "time", TrioTime)
    monkeypatch.setattr(attention_module, "time", TrioTime)
    attention = Attention()
    callback_done = anyio.Event()

    class SlowLog(Handlers):
        async def on_notification(self, method: str, params: Any, _: Envelope) -> None:
            if then == "the person let go during it":
                with attention.holding():
                    await anyio.sleep(5)
            else:
                await anyio.sleep(5)
            callback_done.set()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if progress == 1 and then == "progress after a slow progress callback":
            await anyio.sleep(5)

    async def peer_goes_silent(peer: RawPeer) -> None:
        request = await peer.receive()
        if then == "progress after a slow progress callback":
            await peer.send(progress(request["id"], 1))
        elif then == "the person let go after it":
            with attention.holding():
                await peer.send(SLOW_LOG)
                await callback_done.wait()
        else:
            await peer.send(SLOW_LOG)
        if then.startswith("progress"):
            await peer.send(progress(request["id"], 2))
        elif then == "a handler's end":
            assert await ask(peer, "ping", "ping") == {"jsonrpc": "2.0", "id": "ping", "result": {}}

    elapsed: list[float] = []
    options: dict[str, Any] = {"attention": attention}
    async with (
        endpoint_and_peer(SlowLog(), **options) as (endpoint, peer),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(peer_goes_silent, peer)
        start = anyio.current_time()
        with pytest.raises(RequestTimeoutError):
            await endpoint.request("work", timeout=10, on_progress=on_progress)
        elapsed.append(anyio.current_time() - start)
    assert elapsed == [pytest.approx(15)]


# -- closing -------------------------------------------------------------------------------


async def test_closing_the_connection_fails_pending_requests() -> None:
    """When the peer hangs up, waiting callers get ``ConnectionClosedError`` at once."""
    failures: list[BaseException] = []
    async with endpoint_and_peer() as (endpoint, peer):

        async def call() -> None:
            try:
                await endpoint.request("wait")
            except ConnectionClosedError as exc:
                failures.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            tg.start_soon(call)
            await peer.receive()
            await peer.receive()
            peer.write_stream.close()  # the endpoint's read stream ends
        with anyio.fail_after(PATIENCE_SECONDS):
            await endpoint.closed.wait()
        with pytest.raises(ConnectionClosedError, match="Open a new connection"):
            await endpoint.request("ping")
    assert len(failures) == 2
    assert all("'wait'" in str(exc) for exc in failures)


async def test_a_handler_waiting_on_a_peer_that_hangs_up_is_cancelled() -> None:
    """The peer closes the connection while a handler waits on its answer: the handler
    is cancelled (nobody can read what it would answer), not woken with an error."""
    outcome: list[BaseException] = []
    done = anyio.Event()

    async def asks_back(request: IncomingRequest) -> JSONObject:
        try:
            return await request.request("question")
        except BaseException as exc:
            outcome.append(exc)
            done.set()
            raise

    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream, write_stream, on_request=asks_back, on_notification=ignore
        ):
            await peer.send({"jsonrpc": "2.0", "id": 24, "method": "tools/call"})
            assert (await peer.receive())["method"] == "question"
            peer.write_stream.close()
            with anyio.fail_after(PATIENCE_SECONDS):
                await done.wait()
    [exc] = outcome
    assert isinstance(exc, anyio.get_cancelled_exc_class())


async def test_a_peer_that_closes_only_its_end_still_gets_every_answer() -> None:
    """Over a pipe the peer may close its end and keep reading ours (``server <
    requests.jsonl``): with ``answer_after_input_ends`` every request already read is
    answered, and the connection ends only after the last answer."""
    handlers = Handlers()
    async with endpoint_and_peer(handlers, answer_after_input_ends=True) as (endpoint, peer):
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "wait"})
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        peer.write_stream.close()
        with anyio.fail_after(PATIENCE_SECONDS):
            await handlers.started.wait()
            assert await peer.receive() == {"jsonrpc": "2.0", "id": 2, "result": {}}
        with pytest.raises(ConnectionClosedError, match="closed its end"):
            await endpoint.request("ping")  # the peer can answer nothing now
        assert not endpoint.closed.is_set()  # "wait" is still being answered
        handlers.release.set()
        with anyio.fail_after(PATIENCE_SECONDS):
            answer = await peer.receive()
            await endpoint.closed.wait()
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {"waited": True}}
    assert not handlers.cancelled.is_set()


async def test_a_handler_asking_a_peer_that_closed_its_end_learns_no_answer_will_come() -> None:
    """With ``answer_after_input_ends`` a handler waiting on the peer's answer is not
    cancelled but told at once that none will come, and what it answers then still
    reaches the peer."""

    async def asks_back(request: IncomingRequest) -> JSONObject:
        try:
            return await request.request("question")
        except ConnectionClosedError as exc:
            return {"gave_up": str(exc)}

    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream,
            write_stream,
            on_request=asks_back,
            on_notification=ignore,
            answer_after_input_ends=True,
        ) as endpoint:
            await peer.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call"})
            assert (await peer.receive())["method"] == "question"
            peer.write_stream.close()
            with anyio.fail_after(PATIENCE_SECONDS):
                answer = await peer.receive()
                await endpoint.closed.wait()
    assert answer["id"] == 7
    assert "'question'" in answer["result"]["gave_up"]
    assert "closed its end of the connection" in answer["result"]["gave_up"]


async def test_leaving_the_endpoint_lets_shielded_sections_finish() -> None:
    """Leaving cancels the handlers still running through their cancel scopes, as the
    peer's cancellation does, so what a handler shields still runs to its end."""
    handlers = Handlers()
    async with endpoint_and_peer(handlers) as (endpoint, peer):
        await peer.send({"jsonrpc": "2.0", "id": 23, "method": "commit"})
        with anyio.fail_after(PATIENCE_SECONDS):
            await handlers.started.wait()
        handlers.release.set()  # the handler has not run since: it is still waiting
    assert handlers.committed.is_set()
    assert endpoint.in_flight_count == 0


async def test_request_ids_start_at_one() -> None:
    """Some peers treat an id of 0 as missing, so the first id is 1, then 2..."""
    async with endpoint_and_peer() as (endpoint, peer), anyio.create_task_group() as tg:
        tg.start_soon(endpoint.request, "first")
        tg.start_soon(endpoint.request, "second")
        ids = sorted([(await peer.receive())["id"], (await peer.receive())["id"]])
        assert ids == [1, 2]
        assert endpoint.reserve_id() == 3
        for request_id in ids:
            await peer.send({"jsonrpc": "2.0", "id": request_id, "result": {}})


async def test_leaving_the_endpoint_fails_requests_still_waiting() -> None:
    """Closing our own side also releases every waiting caller with a clear error."""
    failures: list[BaseException] = []
    handlers = Handlers()
    with peer_pair() as ((read_stream, write_stream), peer):
        async with (
            anyio.create_task_group() as tg,
            Endpoint(
                read_stream,
                write_stream,
                on_request=handlers.on_request,
                on_notification=handlers.on_notification,
            ) as endpoint,
        ):

            async def call() -> None:
                try:
                    await endpoint.request("wait")
                except ConnectionClosedError as exc:
                    failures.append(exc)

            tg.start_soon(call)
            await peer.receive()
            # The endpoint is gone; the caller wakes up with the reason.
    assert len(failures) == 1
    assert "closed" in str(failures[0])


async def test_the_in_process_transport_closes_every_stream_end() -> None:
    """Even when the client leaves before the server has started: an unclosed memory
    stream is a ResourceWarning when collected (an error in this suite)."""
    server = MCPServer("Never started")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        async with InProcessTransport(server).connect():
            pass
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


# -- an MCP server over the same raw streams -----------------------------------------------


async def test_mcp_server_answers_malformed_input_with_standard_codes() -> None:
    """The real ``MCPServer`` gives the standard codes and keeps serving."""
    server = MCPServer("Plain")

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    with peer_pair() as ((read_stream, write_stream), peer):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve_connection, read_stream, write_stream)
            early = await ask(peer, 0, "tools/list")
            assert early["error"]["code"] == INVALID_REQUEST  # not initialized yet
            assert (await ask(peer, 1, "ping"))["result"] == {}  # ping is fine before that
            init = await ask(
                peer,
                2,
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "hand", "version": "0"},
                },
            )
            assert init["result"]["protocolVersion"] == "2025-11-25"
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            unknown = await ask(peer, 3, "resources/teleport")
            assert unknown["error"]["code"] == METHOD_NOT_FOUND
            bad_params = await ask(peer, 4, "tools/call", {"arguments": {}})
            assert bad_params["error"]["code"] == INVALID_PARAMS
            await peer.send_raw(MalformedMessage("Expecting value"))
            assert (await peer.receive())["error"]["code"] == PARSE_ERROR
            added = await ask(peer, 5, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
            assert added["result"]["structuredContent"] == {"result": 5}
            peer.write_stream.close()


# -- a skipped answer after a request given up ---------------------------------------------


class GivenUpTime:
    """The clock and the sleep of ``GIVEN_UP_GRACE``, turned by the test."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        self.slept: list[float] = []
        self.sleeping = anyio.Event()
        self.wake = anyio.Event()
        monkeypatch.setattr(endpoint_module, "_now", lambda: self.now)
        monkeypatch.setattr(endpoint_module, "_sleep", self.sleep)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.sleeping.set()
        await self.wake.wait()


async def give_up_one(endpoint: Endpoint, peer: RawPeer) -> None:
    """Our request "first" is cancelled; the peer, as MCP asks, never answers it."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(endpoint.request, "first")
        await peer.receive()
        tg.cancel_scope.cancel()
    assert (await peer.receive())["method"] == "notifications/cancelled"


async def skip_its_answer(peer: RawPeer) -> None:
    """The peer answers "second" with an answer too big, which names no id."""
    assert (await peer.receive())["method"] == "second"
    await peer.send_raw(SkippedAnswer("too big", failure="The answer was too big."))


async def test_a_request_given_up_long_ago_does_not_keep_a_skipped_answer_from_its_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A peer never answers a request we cancelled: past ``GIVEN_UP_GRACE`` it may no
    longer own an answer skipped, which fails the one call waiting at once (no timer)."""
    time = GivenUpTime(monkeypatch)
    async with endpoint_and_peer() as (endpoint, peer):
        await give_up_one(endpoint, peer)
        time.now += endpoint_module.GIVEN_UP_GRACE
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(skip_its_answer, peer)
                with pytest.raises(MCPError, match=r"^The answer was too big\.$") as caught:
                    await endpoint.request("second")
                assert caught.value.error.code == INTERNAL_ERROR
    assert time.slept == []


async def test_a_skipped_answer_in_the_grace_of_a_request_given_up_is_settled_after_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Within ``GIVEN_UP_GRACE`` of a cancel the skipped answer may be the late answer
    to the request cancelled, so the call waits; once the grace has passed, with no
    further message from the peer, a timer fails it."""
    time = GivenUpTime(monkeypatch)
    outcome: list[MCPError] = []

    async def second() -> None:
        with pytest.raises(MCPError, match=r"^The answer was too big\.$") as caught:
            await endpoint.request("second")
        outcome.append(caught.value)

    async with endpoint_and_peer() as (endpoint, peer):
        await give_up_one(endpoint, peer)
        time.now += 1
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(second)
                await skip_its_answer(peer)
                await time.sleeping.wait()
                assert time.slept == [endpoint_module.GIVEN_UP_GRACE - 1]
                await assert_still_answers(peer)
                assert not outcome
                assert endpoint.requests_waiting == 1
                time.now += endpoint_module.GIVEN_UP_GRACE - 1
                time.wake.set()
    assert outcome[0].error.code == INTERNAL_ERROR
    assert time.slept == [endpoint_module.GIVEN_UP_GRACE - 1]
