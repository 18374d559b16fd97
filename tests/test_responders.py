"""The ``Responder`` seam: what answers the server, what it declares, and how it stacks.

The seed's callbacks become a ``CallbackResponder``; a responder declares exactly what
it answers (and that declaration is what the server sees, in ``initialize`` and in
2026-07-28 ``_meta``); what it did not declare is refused by name on both ends; every
form answer is checked before it is sent (a renderer is asked again, anything else
fails listing every field); a form outside the restricted subset is refused with
-32602; ``Headless`` answers for nobody, never with an accept; and an expired HTTP
session is set up again once however many requests meet it.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from http_support import forget_session, serve
from http_support.apps import http_app
from pydantic import FileUrl
from support import (
    LIBRARY_SERVER,
    PATIENCE_SECONDS,
    HandDrivenServer,
    RawPeer,
    client_with_hand_driven_server,
    target,
)

from answerback import Client, MCPError
from answerback.client import (
    HEADLESS_META,
    CallbackResponder,
    CheckedForms,
    ClientRequestContext,
    Headless,
    IncomingMessage,
    Responder,
    ResponderWrapper,
)
from answerback.forms import AnswerError, Form, parse_form
from answerback.jsonrpc import JSONObject
from answerback.server import Context, MCPServer
from answerback.transports.http import StreamableHTTPTransport
from answerback.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    ClientCapabilities,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationCapability,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    Root,
    RootsCapability,
    SamplingCapability,
    SamplingContextCapability,
    SamplingMessage,
    TextContent,
    ToolListChangedNotification,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ERAS = ["legacy", MODERN]

SIGN_UP: JSONObject = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 2},
        "age": {"type": "integer", "minimum": 18},
        "email": {"type": "string", "format": "email"},
        "newsletter": {"type": "boolean", "default": False},
    },
    "required": ["name", "age", "email"],
}
GOOD_ANSWER: JSONObject = {"name": "Ada", "age": 36, "email": "ada@example.com"}
BAD_ANSWER: JSONObject = {"name": "A", "age": 12, "email": "not an address"}
BAD_FIELDS = ["name", "age", "email"]


def responders_server() -> MCPServer:
    """Tools that ask for every kind of answer and report exactly what came back."""
    mcp = MCPServer("Responders")

    @mcp.tool()
    async def sign_up(ctx: Context) -> str:
        """Ask the sign-up form; the raw answer, as the server received it."""
        try:
            answer = await ctx.session.elicit_form("Sign up", SIGN_UP)
        except MCPError as exc:
            return json.dumps({"error": exc.code, "message": exc.message, "data": exc.data})
        return json.dumps(answer.to_wire())

    @mcp.tool()
    async def sign_up_uncaught(ctx: Context) -> str:
        """Ask the sign-up form; a failure ends the call."""
        return json.dumps((await ctx.session.elicit_form("Sign up", SIGN_UP)).to_wire())

    @mcp.tool()
    async def open_link(ctx: Context) -> str:
        return (await ctx.elicit_url("Sign in", "https://example.com/auth", "login-1")).action

    @mcp.tool()
    async def ask_model(ctx: Context) -> str:
        reply = await ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(text="Hi"))], max_tokens=5
        )
        assert isinstance(reply.content, TextContent)
        return reply.content.text

    @mcp.tool()
    def model_with_context() -> InputRequiredResult:
        """A hand-made sampling question that wants the client's context."""
        params = CreateMessageRequestParams(
            messages=[SamplingMessage(role="user", content=TextContent(text="Hi"))],
            max_tokens=5,
            include_context="thisServer",
        )
        return InputRequiredResult(input_requests={"s": CreateMessageRequest(params=params)})

    @mcp.tool()
    async def roots(ctx: Context) -> list[str]:
        return [root.name or "" for root in (await ctx.session.list_roots()).roots]

    @mcp.tool()
    def declared(ctx: Context) -> str:
        return json.dumps(ctx.session.client_capabilities.to_wire(), sort_keys=True)

    @mcp.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.info("hello from the server")
        return "said hello"

    return mcp


def fields_in(error: MCPError) -> list[str]:
    return [entry["field"] for entry in error.data["errors"]]


# -- responders of our own -------------------------------------------------------------


class Person(Responder):
    """A responder for form elicitation only, answering from a list of prepared answers."""

    def __init__(self, *answers: JSONObject) -> None:
        self.answers = list(answers)
        self.asked = 0

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(elicitation=ElicitationCapability(form={}))

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        self.asked += 1
        return ElicitResult(action="accept", content=self.answers.pop(0))


class Renderer(Person):
    """A person in front of a form renderer that shows the problems and asks again."""

    def __init__(self, *answers: JSONObject) -> None:
        super().__init__(*answers)
        self.problems: list[AnswerError] = []

    async def elicit_again(
        self,
        context: ClientRequestContext,
        params: ElicitRequestFormParams,
        previous: ElicitResult,
        problems: AnswerError,
    ) -> ElicitResult | ErrorData:
        self.problems.append(problems)
        return await self.elicit(context, params)


class Recording(ResponderWrapper):
    """A layer that notes every question before passing it on."""

    def __init__(self, inner: Responder) -> None:
        super().__init__(inner)
        self.seen: list[str] = []

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        self.seen.append(params.mode)
        return await super().elicit(context, params)


class Declaring(Responder):
    """Declares exactly what it is given; answers only what the tests need."""

    def __init__(self, capabilities: ClientCapabilities) -> None:
        self.declared = capabilities
        self.sampled: list[CreateMessageRequestParams] = []

    def capabilities(self) -> ClientCapabilities:
        return self.declared

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        return ElicitResult(action="decline")

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        self.sampled.append(params)
        return CreateMessageResult(role="assistant", content=TextContent(text="42"), model="m")

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        return ListRootsResult(roots=[])


async def call_text(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(tool, arguments)
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text


# -- callbacks are sugar for a responder -----------------------------------------------


async def accept_ada(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content=GOOD_ANSWER)


def test_callbacks_build_a_callback_responder_declaring_the_same() -> None:
    client = Client(responders_server(), elicitation_callback=accept_ada)
    assert isinstance(client.responder, CallbackResponder)
    assert client.session.capabilities == ClientCapabilities(
        elicitation=ElicitationCapability(form={}, url={})
    )


def test_a_responder_and_callbacks_together_are_refused() -> None:
    with pytest.raises(TypeError) as caught:
        Client(responders_server(), responder=Person(), elicitation_callback=accept_ada)
    assert "responder= or callbacks (elicitation_callback)" in str(caught.value)


def test_a_responder_that_declares_nothing_usable_is_refused_at_once() -> None:
    class Forgetful(Responder):
        def capabilities(self) -> Any:
            return {"elicitation": {}}

    with pytest.raises(TypeError, match=r"Forgetful.capabilities\(\) returned dict"):
        Client(responders_server(), responder=Forgetful())


@pytest.mark.parametrize("mode", ERAS)
async def test_a_responder_answers_in_both_eras(mode: str) -> None:
    person = Person(GOOD_ANSWER)
    async with Client(responders_server(), mode=mode, responder=person) as client:
        answer = json.loads(await call_text(client, "sign_up"))
    assert answer == {"action": "accept", "content": {**GOOD_ANSWER, "newsletter": False}}
    assert person.asked == 1


async def test_without_a_logging_callback_log_messages_reach_the_message_handler() -> None:
    """The seed's routing, kept by the callback responder."""
    seen: list[IncomingMessage] = []

    async def handler(message: IncomingMessage) -> None:
        seen.append(message)

    async with Client(responders_server(), mode="legacy", message_handler=handler) as client:
        await client.call_tool("chatty")
    [log] = seen
    assert getattr(log, "method", None) == "notifications/message"


# -- composition -----------------------------------------------------------------------


class Notes(Responder):
    """Receives the server's log messages and notifications."""

    def __init__(self) -> None:
        self.logs: list[LoggingMessageNotificationParams] = []
        self.notifications: list[IncomingMessage] = []
        self.notified = anyio.Event()

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities()

    async def on_log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def on_notification(self, message: IncomingMessage) -> None:
        self.notifications.append(message)
        self.notified.set()


async def test_wrappers_pass_on_what_they_do_not_change() -> None:
    notes = Notes()
    recording = Recording(notes)
    mcp = responders_server()
    async with Client(mcp, mode="legacy", responder=recording) as client:
        await client.call_tool("chatty")
        await mcp.notify_tools_changed()
        with anyio.fail_after(PATIENCE_SECONDS):
            await notes.notified.wait()
    assert [log.data for log in notes.logs] == ["hello from the server"]
    assert isinstance(notes.notifications[0], ToolListChangedNotification)
    assert recording.capabilities() == ClientCapabilities()


@pytest.mark.parametrize("mode", ERAS)
async def test_a_stack_of_layers_answers_through_the_innermost(mode: str) -> None:
    """Recording(CheckedForms(renderer)): each layer does its part, in order."""
    renderer = Renderer(BAD_ANSWER, GOOD_ANSWER)
    stack = Recording(CheckedForms(renderer))
    async with Client(responders_server(), mode=mode, responder=stack) as client:
        answer = json.loads(await call_text(client, "sign_up"))
    assert answer["action"] == "accept"
    assert stack.seen == ["form"]
    assert renderer.asked == 2


# -- exact declarations ----------------------------------------------------------------

EXACT = ClientCapabilities(
    elicitation=ElicitationCapability(url={}),
    sampling=SamplingCapability(context=SamplingContextCapability()),
    roots=RootsCapability(),
)
EXACT_WIRE: JSONObject = {"elicitation": {"url": {}}, "sampling": {"context": {}}, "roots": {}}


async def test_initialize_carries_exactly_what_the_responder_declares() -> None:
    async with client_with_hand_driven_server(responder=Declaring(EXACT)) as (_, _, initialize):
        pass
    assert initialize["capabilities"] == EXACT_WIRE


@pytest.mark.parametrize("mode", ERAS)
async def test_the_server_sees_exactly_what_the_responder_declares(mode: str) -> None:
    """In 2026-07-28 the server reads the declaration from each request's ``_meta``."""
    async with Client(responders_server(), mode=mode, responder=Declaring(EXACT)) as client:
        seen = json.loads(await call_text(client, "declared"))
    assert seen == EXACT_WIRE


@asynccontextmanager
async def modern_hand_driven(responder: Responder) -> AsyncGenerator[tuple[Client, RawPeer], None]:
    """A 2026-07-28 client whose server the test plays by hand."""
    transport = HandDrivenServer()

    async def discover() -> None:
        request = await transport.peer.receive()
        assert request["method"] == "server/discover", request
        result: JSONObject = {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "by-hand", "version": "0"}},
        }
        await transport.peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async with anyio.create_task_group() as tg:
        tg.start_soon(discover)
        async with Client(transport, mode=MODERN, responder=responder) as client:
            yield client, transport.peer


async def test_each_2026_request_carries_the_declaration_in_meta() -> None:
    seen: list[JSONObject] = []
    async with (
        modern_hand_driven(Declaring(EXACT)) as (client, peer),
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(client.ping)
        request = await peer.receive()
        seen.append(request)
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
    [ping] = seen
    assert ping["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] == EXACT_WIRE


# -- precise refusals, server side -----------------------------------------------------

URL_ONLY = ClientCapabilities(elicitation=ElicitationCapability(url={}))
FORM_ONLY = ClientCapabilities(elicitation=ElicitationCapability(form={}))
SAMPLING_ONLY = ClientCapabilities(sampling=SamplingCapability())


FORM = '{"elicitation": {"form": {}}}'
URL = '{"elicitation": {"url": {}}}'


@pytest.mark.parametrize(
    ("declared", "mode", "tool", "what", "capability", "fix"),
    [
        (URL_ONLY, "legacy", "sign_up_uncaught", "Form elicitation", FORM, "elicit()"),
        (URL_ONLY, MODERN, "sign_up_uncaught", "Form elicitation", FORM, "elicit()"),
        (FORM_ONLY, "legacy", "open_link", "URL elicitation", URL, "elicit()"),
        (FORM_ONLY, MODERN, "open_link", "URL elicitation", URL, "elicit()"),
        (
            SAMPLING_ONLY,
            MODERN,
            "model_with_context",
            "Sampling with context",
            '{"sampling": {"context": {}}}',
            "SamplingCapability(context=SamplingContextCapability())",
        ),
    ],
    ids=["form-legacy", "form-2026", "url-legacy", "url-2026", "context-2026"],
)
async def test_the_server_names_the_missing_part_and_how_to_provide_it(
    declared: ClientCapabilities, mode: str, tool: str, what: str, capability: str, fix: str
) -> None:
    """The missing part in the specification's terms (any client reads it), and
    answerback's own fix marked as such."""
    responder = Declaring(declared)
    async with Client(responders_server(), mode=mode, responder=responder) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool(tool)
    message = caught.value.message
    assert message.startswith(f"{what} not supported: the ")
    assert f"declare the {'client ' if mode == MODERN else ''}capability {capability}" in message
    assert fix in message.split("With answerback's Client: ")[1]
    assert responder.sampled == []


async def test_in_2026_a_url_only_client_is_told_it_lacks_elicitation_form() -> None:
    async with Client(responders_server(), mode=MODERN, responder=Declaring(URL_ONLY)) as c:
        answer = json.loads(await call_text(c, "sign_up"))
    assert answer["error"] == -32021
    assert answer["data"] == {"requiredCapabilities": {"elicitation": {"form": {}}}}
    assert "pass elicitation_callback= to Client (both modes)" in answer["message"]


# -- precise refusals, client side -----------------------------------------------------


def sampling_request(request_id: int, **extra: Any) -> JSONObject:
    params: JSONObject = {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}],
        "maxTokens": 5,
        **extra,
    }
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "sampling/createMessage",
        "params": params,
    }


def elicitation_request(request_id: int, params: JSONObject) -> JSONObject:
    return {"jsonrpc": "2.0", "id": request_id, "method": "elicitation/create", "params": params}


FORM_PARAMS: JSONObject = {"mode": "form", "message": "Sign up", "requestedSchema": SIGN_UP}
URL_PARAMS: JSONObject = {
    "mode": "url",
    "message": "Sign in",
    "url": "https://example.com/auth",
    "elicitationId": "e-1",
}


@pytest.mark.parametrize(
    ("declared", "question", "capability"),
    [
        (URL_ONLY, elicitation_request(1, FORM_PARAMS), "elicitation.form"),
        (FORM_ONLY, elicitation_request(1, URL_PARAMS), "elicitation.url"),
        (SAMPLING_ONLY, sampling_request(1, includeContext="allServers"), "sampling.context"),
        (
            SAMPLING_ONLY,
            sampling_request(1, tools=[{"name": "t", "inputSchema": {}}]),
            "sampling.tools",
        ),
    ],
    ids=["form-to-url-only", "url-to-form-only", "context", "tools"],
)
async def test_the_client_refuses_an_undeclared_part_by_name(
    declared: ClientCapabilities, question: JSONObject, capability: str
) -> None:
    """A server that asks anyway gets -32602 (as the specification says for modes),
    naming the exact capability; the responder never sees the question."""
    responder = Declaring(declared)
    async with client_with_hand_driven_server(responder=responder) as (_, server, _):
        await server.send(question)
        answer = await server.receive()
    assert answer["error"]["code"] == INVALID_PARAMS
    assert f"the client did not declare the {capability!r} capability" in answer["error"]["message"]
    assert responder.sampled == []


async def test_context_reaches_a_responder_that_declared_it() -> None:
    responder = Declaring(
        ClientCapabilities(sampling=SamplingCapability(context=SamplingContextCapability()))
    )
    async with client_with_hand_driven_server(responder=responder) as (_, server, _):
        await server.send(sampling_request(1, includeContext="thisServer"))
        answer = await server.receive()
    assert answer["result"]["content"] == {"type": "text", "text": "42"}
    [params] = responder.sampled
    assert params.include_context == "thisServer"


async def test_a_whole_undeclared_capability_keeps_the_seed_message_and_names_it() -> None:
    async with client_with_hand_driven_server(responder=Declaring(FORM_ONLY)) as (_, server, _):
        await server.send({"jsonrpc": "2.0", "id": 1, "method": "roots/list"})
        answer = await server.receive()
    assert answer["error"] == {
        "code": METHOD_NOT_FOUND,
        "message": "List roots not supported",
        "data": {
            "reason": "the client did not declare the 'roots' capability: pass "
            "list_roots_callback= to Client, or a Responder that declares it in "
            "capabilities() and answers in list_roots()"
        },
    }


# -- form answers are checked before they are sent -------------------------------------


async def sloppy_callback(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    return ElicitResult(action="accept", content=BAD_ANSWER)


async def test_a_wrong_answer_reaches_the_server_as_an_error_naming_every_field() -> None:
    """Legacy: the server's question fails with the client's error, not a bad answer."""
    mcp = responders_server()
    async with Client(mcp, mode="legacy", elicitation_callback=sloppy_callback) as client:
        seen = json.loads(await call_text(client, "sign_up"))
    assert seen["error"] == INTERNAL_ERROR
    with pytest.raises(AnswerError) as problems:
        parse_form(SIGN_UP).check(BAD_ANSWER)
    listing = "; ".join(map(str, problems.value.errors))
    assert seen["message"] == (
        f"The client's answer does not fit the requested form: {listing}. "
        "elicitation_callback must answer every field as the form asks."
    )
    assert [entry["field"] for entry in seen["data"]["errors"]] == BAD_FIELDS


async def test_the_same_failure_reaches_the_caller_in_both_eras() -> None:
    """Uncaught by the tool, the failure is one ``MCPError`` with the same words."""
    failures: list[MCPError] = []
    for mode in ERAS:
        async with Client(
            responders_server(), mode=mode, elicitation_callback=sloppy_callback
        ) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("sign_up_uncaught")
        failures.append(caught.value)
    legacy, modern = failures
    assert type(legacy) is type(modern)
    assert (legacy.code, legacy.message, legacy.data) == (modern.code, modern.message, modern.data)
    assert fields_in(legacy) == BAD_FIELDS


@pytest.mark.parametrize("mode", ERAS)
async def test_defaults_are_filled_and_values_made_canonical(mode: str) -> None:
    person = Person({"name": "Ada", "age": 36.0, "email": "ada@example.com"})
    async with Client(responders_server(), mode=mode, responder=person) as client:
        answer = json.loads(await call_text(client, "sign_up"))
    assert answer["content"] == {**GOOD_ANSWER, "newsletter": False}
    assert isinstance(answer["content"]["age"], int)


@pytest.mark.parametrize("mode", ERAS)
async def test_a_callback_gets_the_form_the_client_parsed_and_checked(mode: str) -> None:
    """So a renderer need not parse the schema again (the broker parsed every form three
    times, a quarter of a second per hundred large forms)."""
    seen: list[Form | None] = []

    class Looking(Person):
        async def elicit(
            self, context: ClientRequestContext, params: ElicitRequestParams
        ) -> ElicitResult | ErrorData:
            seen.append(context.form)
            assert isinstance(params, ElicitRequestFormParams)
            assert context.form == parse_form(params.requested_schema)
            return await super().elicit(context, params)

    async with Client(responders_server(), mode=mode, responder=Looking(GOOD_ANSWER)) as c:
        await call_text(c, "sign_up")
    [form] = seen
    assert form is not None
    assert "age" in [field.name for field in form.fields]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_renderer_is_asked_again_with_every_problem(mode: str) -> None:
    renderer = Renderer(BAD_ANSWER, {**GOOD_ANSWER, "age": 12}, GOOD_ANSWER)
    async with Client(responders_server(), mode=mode, responder=CheckedForms(renderer)) as c:
        answer = json.loads(await call_text(c, "sign_up"))
    assert answer["action"] == "accept"
    assert answer["content"]["age"] == 36
    first, second = renderer.problems
    assert [error.field for error in first.errors] == BAD_FIELDS
    assert [error.field for error in second.errors] == ["age"]


@pytest.mark.parametrize("mode", ERAS)
async def test_past_the_last_attempt_the_request_fails_with_every_field(mode: str) -> None:
    renderer = Renderer(BAD_ANSWER, BAD_ANSWER)
    stack = CheckedForms(renderer, attempts=2)
    async with Client(responders_server(), mode=mode, responder=stack) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("sign_up_uncaught")
    assert renderer.asked == 2
    assert fields_in(caught.value) == BAD_FIELDS
    assert "Renderer.elicit must answer every field" in caught.value.message


async def test_a_renderer_may_give_up_when_asked_again() -> None:
    class GivesUp(Renderer):
        async def elicit_again(
            self,
            context: ClientRequestContext,
            params: ElicitRequestFormParams,
            previous: ElicitResult,
            problems: AnswerError,
        ) -> ElicitResult | ErrorData:
            return ElicitResult(action="cancel")

    stack = CheckedForms(GivesUp(BAD_ANSWER))
    async with Client(responders_server(), mode="legacy", responder=stack) as client:
        answer = json.loads(await call_text(client, "sign_up"))
    assert answer == {"action": "cancel"}


def test_checked_forms_needs_at_least_one_attempt() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        CheckedForms(Renderer(), attempts=0)


# -- forms outside the restricted subset -----------------------------------------------

NESTED: JSONObject = {
    "mode": "form",
    "message": "Where do you live?",
    "requestedSchema": {
        "type": "object",
        "properties": {"home": {"type": "object", "properties": {"city": {"type": "string"}}}},
    },
}


async def test_an_unsupported_form_gets_invalid_params_and_the_host_is_told(
    caplog: pytest.LogCaptureFixture,
) -> None:
    person = Person(GOOD_ANSWER)
    with caplog.at_level(logging.WARNING, logger="answerback.client"):
        async with client_with_hand_driven_server(responder=person) as (_, server, _):
            await server.send(elicitation_request(7, NESTED))
            answer = await server.receive()
            alive = {"jsonrpc": "2.0", "id": 8, "method": "ping"}
            await server.send(alive)
            pong = await server.receive()
    assert answer["id"] == 7
    assert answer["error"]["code"] == INVALID_PARAMS
    assert "not an MCP elicitation form" in answer["error"]["message"]
    assert [entry["field"] for entry in answer["error"]["data"]["errors"]] == ["home"]
    assert person.asked == 0
    assert pong == {"jsonrpc": "2.0", "id": 8, "result": {}}
    [record] = [r for r in caplog.records if "refused a form" in r.getMessage()]
    assert "from the server 'hand-driven' 0: " in record.getMessage()


async def test_a_server_request_of_the_wrong_shape_gets_invalid_params() -> None:
    """Params the schema refuses are the server's mistake: -32602 naming the field,
    never an internal error of the client's, and nobody is asked."""
    person = Person(GOOD_ANSWER)
    async with client_with_hand_driven_server(responder=person) as (_, server, _):
        await server.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "elicitation/create",
                "params": {"mode": "form", "requestedSchema": {"type": "object"}},
            }
        )
        answer = await server.receive()
    assert answer == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": INVALID_PARAMS,
            "message": "Invalid params: form.message: Field required",
        },
    }
    assert person.asked == 0


async def test_in_2026_an_unsupported_form_fails_the_call_with_the_reasons() -> None:
    person = Person(GOOD_ANSWER)
    round_result: JSONObject = {
        "resultType": "input_required",
        "inputRequests": {"q": {"method": "elicitation/create", "params": NESTED}},
    }
    async with modern_hand_driven(person) as (client, peer):
        failure: MCPError | None = None
        async with anyio.create_task_group() as tg:

            async def server_side() -> None:
                request = await peer.receive()
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": round_result})

            tg.start_soon(server_side)
            try:
                await client.call_tool("anything")
            except MCPError as exc:
                failure = exc
    assert failure is not None
    assert failure.code == INVALID_PARAMS
    assert fields_in(failure) == ["home"]
    assert person.asked == 0


# -- nobody at the keyboard ------------------------------------------------------------


@pytest.mark.parametrize("mode", ERAS)
@pytest.mark.parametrize("policy", ["decline", "cancel"])
async def test_headless_declines_or_cancels_with_a_reason_the_server_sees(
    mode: str, policy: Any
) -> None:
    headless = Headless(policy, reason="nightly job, nobody watching")
    async with Client(responders_server(), mode=mode, responder=headless) as client:
        answer = json.loads(await call_text(client, "sign_up"))
        link = await call_text(client, "open_link")
    assert answer == {
        "action": policy,
        "_meta": {HEADLESS_META: {"policy": policy, "reason": "nightly job, nobody watching"}},
    }
    assert link == policy


@pytest.mark.parametrize("mode", ERAS)
async def test_headless_fail_is_an_error_the_server_can_tell_from_a_decline(mode: str) -> None:
    headless = Headless("fail", reason="stdin is not a terminal")
    async with Client(responders_server(), mode=mode, responder=headless) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("sign_up_uncaught")
        if mode == "legacy":  # the server's own question failed: a tool sees an error
            seen = json.loads(await call_text(client, "sign_up"))
            assert seen["data"] == caught.value.data
    assert caught.value.code == INTERNAL_ERROR
    assert caught.value.message == "No one can answer this question: stdin is not a terminal."
    assert caught.value.data == {
        HEADLESS_META: {"policy": "fail", "reason": "stdin is not a terminal"}
    }


async def test_headless_never_accepts_even_over_a_renderer_that_would() -> None:
    renderer = Renderer(GOOD_ANSWER)
    async with Client(
        responders_server(), mode="legacy", responder=Headless("decline", inner=renderer)
    ) as client:
        answer = json.loads(await call_text(client, "sign_up"))
    assert answer["action"] == "decline"
    assert renderer.asked == 0


@pytest.mark.parametrize("mode", ERAS)
async def test_headless_hands_sampling_and_roots_to_its_inner_responder(mode: str) -> None:
    async def model(
        context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(text="hi"), model="m")

    async def roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=FileUrl("file:///work"), name="work")])

    inner = CallbackResponder(sampling_callback=model, list_roots_callback=roots)
    headless = Headless("cancel", inner=inner, modes=("form",))
    async with Client(responders_server(), mode=mode, responder=headless) as client:
        assert await call_text(client, "ask_model") == "hi"
        assert (await client.call_tool("roots")).structured_content == {"result": ["work"]}
        declared = json.loads(await call_text(client, "declared"))
    assert declared == {
        "elicitation": {"form": {}},
        "roots": {"listChanged": True},
        "sampling": {},
    }


@pytest.mark.parametrize(
    ("arguments", "complaint"),
    [
        ({"policy": "accept"}, "a policy never accepts"),
        ({"policy": "decline", "modes": ()}, "modes must name"),
        ({"policy": "decline", "modes": "form"}, "modes must name"),
        ({"policy": "decline", "reason": " "}, "reason must say why"),
    ],
)
def test_headless_refuses_a_policy_that_could_mislead(
    arguments: dict[str, Any], complaint: str
) -> None:
    with pytest.raises(ValueError, match=complaint):
        Headless(**arguments)


# -- a responder that raises -----------------------------------------------------------


class Crashing(Person):
    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        raise RuntimeError("the form renderer crashed")


class Sloppy(Person):
    async def elicit(self, context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        return {"action": "accept"}


@pytest.mark.parametrize("transport", ["memory", "stdio"])
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (Crashing, "Internal error: RuntimeError: the form renderer crashed"),
        (
            Sloppy,
            "Internal error: WrongAnswerType: Sloppy.elicit returned dict; it must return "
            "ElicitResult or ErrorData.",
        ),
    ],
    ids=["raises", "wrong-type"],
)
async def test_a_failing_responder_fails_the_call_in_both_eras(
    transport: str, make: Callable[[], Responder], message: str
) -> None:
    failures: list[MCPError] = []
    for mode in ERAS:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with Client(
                target(transport, LIBRARY_SERVER), mode=mode, responder=make()
            ) as client:
                with pytest.raises(MCPError) as caught:
                    await client.call_tool("issue_card")
                features = await client.call_tool("client_features")
        failures.append(caught.value)
        assert features.structured_content == {"result": ["elicitation"]}
    assert [type(failure) for failure in failures] == [type(failures[0])] * 2
    assert [failure.code for failure in failures] == [INTERNAL_ERROR] * 2
    legacy, modern = (failures[ERAS.index(era)].message for era in ("legacy", "2026-07-28"))
    # The server heard only a reference to the client's log (but for a wrong return
    # type, which answerback words itself); on 2026 it stays here.
    if make is Sloppy:
        assert legacy == message
    else:
        assert re.fullmatch(
            r"Internal error; the client logged the details under reference [0-9a-f]{8}\.",
            legacy,
        ), legacy
    assert modern == message


# -- an expired HTTP session is set up again once --------------------------------------


class CountingInitializes:
    """ASGI middleware: counts ``initialize`` POSTs, and holds the tool calls that carry
    ``stale`` (an ended session) until ``expected`` of them have arrived, so every one
    of them surely went out before the first learns that the session is gone. (Only
    calls: the first handshake's ``notifications/initialized`` may still be on its way.)"""

    def __init__(self, app: Any, expected: int) -> None:
        self.app = app
        self.expected = expected
        self.initializes = 0
        self.stale: str | None = None
        self._stale_posts = 0
        self._all_in: anyio.Event | None = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        method = json.loads(body).get("method")
        if method == "initialize":
            self.initializes += 1
        headers = dict(scope["headers"])
        stale = self.stale is not None and headers.get(b"mcp-session-id") == self.stale.encode()
        if stale and method == "tools/call":
            await self._wait_for_all()
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _wait_for_all(self) -> None:
        if self._all_in is None:
            self._all_in = anyio.Event()
        all_in = self._all_in
        self._stale_posts += 1
        if self._stale_posts >= self.expected:
            all_in.set()
        with anyio.fail_after(PATIENCE_SECONDS):
            await all_in.wait()


async def test_eight_calls_meeting_an_expired_session_cause_one_initialize() -> None:
    app = http_app()
    counting = CountingInitializes(app, expected=8)
    async with serve(counting) as running:
        transport = StreamableHTTPTransport(running.url)
        async with Client(transport, mode="legacy") as client:
            first = transport.session_id
            assert first is not None
            assert counting.initializes == 1
            counting.stale = first
            await forget_session(running.url, first)
            results: list[str] = []

            async def call() -> None:
                results.append(await call_text(client, "pause", {"seconds": 0}))

            with anyio.fail_after(PATIENCE_SECONDS):
                async with anyio.create_task_group() as tg:
                    for _ in range(8):
                        tg.start_soon(call)
            assert transport.session_id not in (None, first)
    assert results == ["done"] * 8
    assert counting.initializes == 2
