"""Client fixes from the stop-52 probes: what a host's callback raises stays on the host,
callbacks with the wrong arguments are refused at construction, ``Responder`` passes
mypy, ``ClientSession`` says what it is, legacy-only methods refuse on 2026-07-28, and
a few messages say what to do.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import logging
import textwrap
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast
from unittest.mock import AsyncMock

import anyio
import pytest
from support import PATIENCE_SECONDS, HandDrivenServer, RawPeer, peer_pair

import answerback
import answerback.client
import answerback.interact
import answerback.interact.sampling
import answerback.interact.terminal
import answerback.server
from answerback import Client
from answerback.client import ClientRequestContext, Responder
from answerback.client._session import describe_server
from answerback.jsonrpc import Endpoint, Envelope, IncomingRequest, JSONObject
from answerback.server import MCPServer
from answerback.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    ClientCapabilities,
    ConnectionClosedError,
    ElicitationCapability,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    Implementation,
    ListRootsResult,
    MCPError,
    MethodNotFoundError,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
SECRET = "could not open /home/ada/.config/host/secrets.toml (token=abc123)"
NAME_QUESTION: JSONObject = {
    "mode": "form",
    "message": "Name?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
}


@asynccontextmanager
async def hand_driven(
    mode: str, capabilities: JSONObject, **options: Any
) -> AsyncGenerator[tuple[Client, RawPeer], None]:
    """A connected client whose server (declaring ``capabilities``) the test plays by
    hand, in either era."""
    transport = HandDrivenServer()
    peer = transport.peer
    set_up_done = anyio.Event()
    server_info: JSONObject = {"name": "hand-driven", "version": "0"}

    async def set_up() -> None:
        try:
            if mode == "legacy":
                await peer.answer_initialize(capabilities)
                return
            request = await peer.receive()
            assert request["method"] == "server/discover", request
            result: JSONObject = {
                "supportedVersions": [MODERN],
                "capabilities": capabilities,
                "_meta": {"io.modelcontextprotocol/serverInfo": server_info},
            }
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        finally:
            set_up_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(set_up)
        async with Client(transport, mode=mode, **options) as client:
            await set_up_done.wait()
            yield client, peer


async def ask(peer: RawPeer, method: str, params: JSONObject | None = None) -> JSONObject:
    """Send the client a request as the server, and return its response."""
    request: JSONObject = {"jsonrpc": "2.0", "id": "q1", "method": method}
    if params is not None:
        request["params"] = params
    await peer.send(request)
    return await peer.receive_until(lambda message: message.get("id") == "q1")


# -- Responder's defaults are no abstract methods to mypy -----------------------------

REQUIRED_MEMBERS = {
    "Responder.capabilities",
    "FormRenderer.elicit_again",
    "Presenter.present",
    "Presenter.withdrawn",
    "ModelProvider.create_message",
    "ServerControls.cancel_all",
    "ServerControls.mute",
    "TokenStore.get",
    "TokenStore.set",
    "TokenStore.delete",
    "LockingTokenStore.lock_record",
    "TokenVerifier.verify",
}
"""Protocol members a subclass must write: their bodies are trivial on purpose (mypy
takes them for abstract). Any other trivial body on a public class is a default that
mypy would refuse to let a subclass inherit."""

PACKAGE = Path(answerback.__file__).parent
PUBLIC_MODULES = (
    answerback.client,
    answerback.interact,
    answerback.interact.sampling,
    answerback.interact.terminal,
    answerback.server,
)


def is_trivial(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """mypy's "trivial body": a docstring, ``pass``, ``...`` or ``raise
    NotImplementedError`` and nothing else."""
    body = list(function.body)
    first = body[0] if body else None
    is_constant = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    if is_constant and isinstance(cast(ast.Constant, cast(ast.Expr, first).value).value, str):
        body = body[1:]
    if not body:
        return True
    if len(body) > 1:
        return False
    [statement] = body
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
        return statement.value.value is Ellipsis
    if isinstance(statement, ast.Raise) and statement.exc is not None:
        raised = statement.exc.func if isinstance(statement.exc, ast.Call) else statement.exc
        return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"
    return False


def written_in_answerback(function: Callable[..., object]) -> bool:
    return Path(function.__code__.co_filename).is_relative_to(PACKAGE)


def trivial_members() -> set[str]:
    found: set[str] = set()
    for module in PUBLIC_MODULES:
        for name in module.__all__:
            public: object = getattr(module, name)
            if not isinstance(public, type):
                continue
            for member, value in vars(public).items():
                function: object = value.fget if isinstance(value, property) else value
                if not inspect.isfunction(function) or not written_in_answerback(function):
                    continue  # not a function, or one generated (a dataclass's __init__)
                tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
                definition = tree.body[0]
                assert isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef)
                if is_trivial(definition):
                    found.add(f"{public.__name__}.{member}")
    return found


def test_only_required_members_of_public_classes_have_trivial_bodies() -> None:
    """``Responder.on_log`` had a docstring for a body, so mypy refused every subclass
    that did not override it ("Cannot instantiate abstract class")."""
    assert trivial_members() - REQUIRED_MEMBERS == set()


def test_the_trivial_body_check_sees_the_required_members() -> None:
    """The scan finds what it should (else the test above would pass on nothing)."""
    assert trivial_members() >= {"Responder.capabilities", "Presenter.present"}


# -- a callback's exception stays on the host (legacy era) -----------------------------


async def crashing_elicitation(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    raise RuntimeError(SECRET)


async def crashing_roots(context: ClientRequestContext) -> ListRootsResult:
    raise RuntimeError(SECRET)


class CrashingResponder(Responder):
    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(elicitation=ElicitationCapability())

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        raise RuntimeError(SECRET)


@pytest.mark.parametrize(
    ("options", "method", "params"),
    [
        pytest.param(
            {"elicitation_callback": crashing_elicitation},
            "elicitation/create",
            NAME_QUESTION,
            id="elicitation",
        ),
        pytest.param({"list_roots_callback": crashing_roots}, "roots/list", None, id="roots"),
        pytest.param(
            {"responder": CrashingResponder()},
            "elicitation/create",
            NAME_QUESTION,
            id="responder",
        ),
    ],
)
async def test_a_raising_callback_sends_the_server_a_reference_only(
    options: dict[str, Any],
    method: str,
    params: JSONObject | None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="answerback.client")
    with anyio.fail_after(PATIENCE_SECONDS):
        async with hand_driven("legacy", {}, **options) as (_, peer):
            response = await ask(peer, method, params)
    error = response["error"]
    assert SECRET not in json.dumps(response)
    assert error["code"] == INTERNAL_ERROR
    reference = error["data"]["reference"]
    assert error["message"] == (
        f"Internal error; the client logged the details under reference {reference}."
    )
    [record] = [r for r in caplog.records if r.name == "answerback.client"]
    assert reference in record.getMessage()
    assert record.exc_info is not None
    assert str(record.exc_info[1]) == SECRET


async def refusing_on_purpose(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    raise MCPError(INVALID_PARAMS, "This host asks no names of robots.")


async def refusing_from_a_task_group(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    async with anyio.create_task_group() as tg:
        tg.start_soon(refusing_on_purpose, context, params)
    return ElicitResult(action="cancel")


@pytest.mark.parametrize("callback", [refusing_on_purpose, refusing_from_a_task_group])
async def test_an_mcp_error_a_callback_raises_goes_to_the_server_as_given(
    callback: Callable[..., Any],
) -> None:
    with anyio.fail_after(PATIENCE_SECONDS):
        async with hand_driven("legacy", {}, elicitation_callback=callback) as (_, peer):
            response = await ask(peer, "elicitation/create", NAME_QUESTION)
    assert response["error"] == {
        "code": INVALID_PARAMS,
        "message": "This host asks no names of robots.",
    }


async def passing_on_another_servers_error(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    """Asks another server, as an agent host's callback does, and lets its error out."""
    other = MCPServer("other")

    @other.tool()
    def vault() -> str:
        raise MCPError(INVALID_PARAMS, f"the vault refused {SECRET}")

    async with Client(other) as client:
        await client.call_tool("vault")
    return ElicitResult(action="cancel")


async def test_an_mcp_error_raised_inside_answerback_is_not_passed_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Another connection's error, let out of the callback, is not the host's message:
    the server gets the reference; the text stays in the client's log."""
    caplog.set_level(logging.ERROR, logger="answerback.client")
    with anyio.fail_after(PATIENCE_SECONDS):
        async with hand_driven(
            "legacy", {}, elicitation_callback=passing_on_another_servers_error
        ) as (_, peer):
            response = await ask(peer, "elicitation/create", NAME_QUESTION)
    assert SECRET not in json.dumps(response)
    assert response["error"]["code"] == INTERNAL_ERROR
    assert "the client logged the details under reference" in response["error"]["message"]
    assert SECRET in caplog.text


# -- callbacks taking the wrong arguments are refused at construction ------------------


async def takes_params_only(params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="cancel")


async def takes_a_required_keyword(
    context: ClientRequestContext, params: ElicitRequestParams, *, person: str
) -> ElicitResult:
    return ElicitResult(action="cancel")


async def takes_three(
    prefix: str, context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    return ElicitResult(action="cancel")


async def takes_anything(*arguments: object) -> ElicitResult:
    return ElicitResult(action="cancel")


async def takes_an_optional_third(
    context: ClientRequestContext, params: ElicitRequestParams, extra: object = None
) -> ElicitResult:
    return ElicitResult(action="cancel")


class Renderer:
    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        return ElicitResult(action="cancel")

    async def __call__(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        return ElicitResult(action="cancel")


@pytest.mark.parametrize(
    ("callback", "complaint"),
    [
        (
            takes_params_only,
            "elicitation_callback must accept (context, params); got takes_params_only, "
            "which takes (params).",
        ),
        (
            takes_a_required_keyword,
            "elicitation_callback must accept (context, params); got "
            "takes_a_required_keyword, which takes (context, params, *, person).",
        ),
        (
            functools.partial(takes_three, "a", cast(Any, "b")),
            "elicitation_callback must accept (context, params); got "
            "functools.partial(takes_three, ...), which takes (params).",
        ),
    ],
)
def test_a_callback_taking_other_arguments_is_refused_at_once(
    callback: Any, complaint: str
) -> None:
    with pytest.raises(TypeError) as caught:
        Client(MCPServer("x"), elicitation_callback=callback)
    assert str(caught.value) == complaint


def injecting(function: Callable[..., Any]) -> Callable[..., Any]:
    """A decorator whose wrapper takes what the client passes and adds an argument."""

    @functools.wraps(function)
    async def wrapper(context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        return await function(context, params, "extra")

    return wrapper


@injecting
async def decorated(
    context: ClientRequestContext, params: ElicitRequestParams, extra: str
) -> ElicitResult:
    return ElicitResult(action="cancel")


@pytest.mark.parametrize(
    "callback",
    [
        takes_anything,
        takes_an_optional_third,
        functools.partial(takes_three, "a"),
        Renderer().elicit,
        Renderer(),
        AsyncMock(),
        decorated,
    ],
    ids=[
        "*args",
        "optional-third",
        "partial",
        "bound-method",
        "__call__",
        "AsyncMock",
        "decorated",
    ],
)
def test_a_callback_that_would_work_is_accepted(callback: Any) -> None:
    Client(MCPServer("x"), elicitation_callback=callback)


def test_the_other_callbacks_are_checked_too() -> None:
    async def no_arguments() -> None: ...

    no_arguments_at_all: Any = no_arguments  # the mistake a type checker would catch
    with pytest.raises(TypeError, match=r"list_roots_callback must accept \(context\)"):
        Client(MCPServer("x"), list_roots_callback=no_arguments_at_all)
    with pytest.raises(TypeError, match=r"logging_callback must accept \(params\)"):
        Client(MCPServer("x"), logging_callback=no_arguments_at_all)


class ElicitsWithoutContext(Responder):
    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(elicitation=ElicitationCapability())

    async def elicit(self, params: ElicitRequestParams) -> ElicitResult:  # type: ignore[override]
        return ElicitResult(action="cancel")


def test_a_responder_method_taking_other_arguments_is_refused_at_once() -> None:
    with pytest.raises(TypeError) as caught:
        Client(MCPServer("x"), responder=ElicitsWithoutContext())
    assert str(caught.value) == (
        "ElicitsWithoutContext.elicit must accept (context, params); got "
        "ElicitsWithoutContext.elicit, which takes (params)."
    )


# -- ClientSession says what it is -------------------------------------------------------


async def test_a_client_session_repr_tells_server_era_transport_and_state() -> None:
    library = MCPServer("Library", version="1.2")
    client = Client(library, mode="legacy")
    assert repr(client.session) == (
        "ClientSession(transport=InProcessTransport, state=not connected)"
    )
    async with client:
        connected = repr(client.session)
    assert connected == (
        "ClientSession('Library' 1.2, protocol='2025-11-25' (handshake era), "
        "transport=InProcessTransport, state=open)"
    )
    assert repr(client.session).endswith("state=closed)")
    async with Client(library, mode=MODERN) as modern:
        assert f"protocol='{MODERN}', transport" in repr(modern.session)


def test_a_client_session_repr_shows_no_credentials() -> None:
    client = Client("https://ada:hunter2@example.com/mcp?token=abc123")
    shown = repr(client.session)
    assert shown == "ClientSession(transport=StreamableHTTPTransport, state=not connected)"


def test_a_server_with_an_empty_version_is_named_without_a_gap() -> None:
    """The official SDK's servers send ``version: ""``."""
    nameless = Implementation(name="sdk-p2", version="")
    assert describe_server(nameless) == "The server 'sdk-p2'"
    assert f"No answer from {describe_server(nameless, starts_sentence=False)} within" == (
        "No answer from the server 'sdk-p2' within"
    )


# -- legacy-only methods refuse at once on 2026-07-28 ----------------------------------


async def test_set_logging_level_on_2026_says_to_pass_log_level() -> None:
    async with Client(MCPServer("Library"), mode=MODERN) as client:
        with pytest.raises(MethodNotFoundError) as caught:
            await client.set_logging_level("debug")
    message = caught.value.message
    assert message.startswith(
        "set_logging_level() not sent: protocol 2026-07-28, which the server 'Library'"
    )
    assert "Pass Client(log_level='debug')" in message


async def test_set_logging_level_is_not_sent_to_a_server_without_logging() -> None:
    with anyio.fail_after(PATIENCE_SECONDS):
        async with hand_driven("legacy", {}) as (client, peer):
            with pytest.raises(MethodNotFoundError) as caught:
                await client.set_logging_level("info")
            sent: list[JSONObject] = []
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.ping)
                sent.append(await peer.receive())  # the ping: nothing went before it
                await peer.send({"jsonrpc": "2.0", "id": sent[0]["id"], "result": {}})
    assert [message["method"] for message in sent] == ["ping"]
    assert caught.value.message == (
        "set_logging_level() not sent: the server 'hand-driven' 0 does not send log "
        'messages (it did not declare {"logging": {}}), and a client may use only what '
        "the server declared."
    )


@pytest.mark.parametrize("call", ["subscribe_resource", "unsubscribe_resource"])
async def test_subscribing_on_2026_says_to_listen(call: str) -> None:
    library = MCPServer("Library")

    @library.resource("books://shelf")
    def shelf() -> str:
        return "Dune"

    async with Client(library, mode=MODERN) as client:
        with pytest.raises(MethodNotFoundError) as caught:
            await getattr(client, call)("books://shelf")
    message = caught.value.message
    assert message.startswith(f"{call}() not sent: protocol 2026-07-28, which the server")
    assert "client.listen(resource_subscriptions=[uri])" in message


async def test_subscribing_on_2026_without_resources_says_to_read_again() -> None:
    async with Client(MCPServer("Library"), mode=MODERN) as client:
        with pytest.raises(MethodNotFoundError) as caught:
            await client.subscribe_resource("books://shelf")
    message = caught.value.message
    assert "has no resources/subscribe" in message
    assert "does not offer resource updates either" in message
    assert "read the resource again when you need it fresh" in message


# -- a 2026 listen ended by the connection says what to do -----------------------------


async def acknowledge_then_hang_up(peer: RawPeer) -> None:
    """Play a 2026-07-28 server that starts the listen, then is gone."""
    listen = await peer.receive()
    assert listen["method"] == "subscriptions/listen"
    await peer.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {
                "notifications": {"toolsListChanged": True},
                "_meta": {"io.modelcontextprotocol/subscriptionId": listen["id"]},
            },
        }
    )
    peer.write_stream.close()


async def test_a_2026_listen_cut_off_says_stopped_listening_and_what_to_do() -> None:
    """It said "Connection closed before 'subscriptions/listen' was answered", naming a
    request the host never sent itself, with no advice."""
    capabilities: JSONObject = {"tools": {"listChanged": True}}
    failures: list[ConnectionClosedError] = []

    async def listen_until_cut_off(client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True) as stream:
                async for _ in stream:
                    pass
        except ConnectionClosedError as exc:
            failures.append(exc)

    with anyio.fail_after(PATIENCE_SECONDS):
        async with (
            hand_driven(MODERN, capabilities) as (client, peer),
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(acknowledge_then_hang_up, peer)
            await listen_until_cut_off(client)
    [failure] = failures
    message = failure.message
    assert message.startswith("Stopped listening for notifications: ")
    assert message.endswith(" Open a new connection.")


# -- a question withdrawn because its caller cancelled says so --------------------------


async def test_a_question_withdrawn_after_the_peer_cancelled_says_who_and_that_none_is_due() -> (
    None
):
    """The reason was "cancelled" alone: the client could not tell who cancelled, or
    whether it still owed an answer."""

    async def ask_back(request: IncomingRequest) -> JSONObject:
        return await endpoint.request("elicitation/create", related_request_id=request.id)

    async def ignore(method: str, params: JSONObject | None, envelope: Envelope) -> None:
        return None

    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream,
            write_stream,
            on_request=ask_back,
            on_notification=ignore,
            name="client",
        ) as endpoint:
            await peer.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call"})
            question = await peer.receive()
            await peer.cancel(7, "the person gave up")
            withdrawal = await peer.receive()
    assert withdrawal["method"] == "notifications/cancelled"
    assert withdrawal["params"] == {
        "requestId": question["id"],
        "reason": "the client cancelled its request 7, which this one was sent for; "
        "nothing needs answering",
    }
