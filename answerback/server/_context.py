"""``Context``: what a tool gets when it declares a parameter annotated ``Context``.

It is the tool's line back to the client during one request: ask the user
(``elicit``), borrow the client's model (``sample``, with a tool loop), log, report
progress, list the client's roots (``roots``) and keep file paths inside them
(``resolve_path``), and reach the client session itself (``ctx.session``) for
capability checks.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, ParamSpec, TypeVar, cast

import anyio.from_thread
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError
from typing_extensions import TypeVar as DefaultedTypeVar

from answerback.forms import AnswerError, check_message, validate_answer
from answerback.jsonrpc import IncomingRequest, RequestId
from answerback.server._arguments import (
    bad_value,
    check_choice,
    check_count,
    check_progress,
    check_sampling_options,
    check_text,
    unsendable,
    wrong_type,
)
from answerback.server._asking import Memo
from answerback.server._caller import caller_of
from answerback.server._form_schema import form_question
from answerback.server._request_state import INVALID_STATE_MESSAGE, StateSeal
from answerback.server._roots_guard import RootsCache, in_worker_thread, resolve_within
from answerback.server._sampling import (
    SampleResult,
    SamplingTools,
    ToolRunner,
    as_messages,
    offered_tools,
    sample_with_tools,
)
from answerback.server._session import ServerSession
from answerback.server._tools import RegisteredTool
from answerback.transports import StreamControl
from answerback.transports.http._request_auth import AuthInfo
from answerback.types import (
    CreateMessageResult,
    IncludeContext,
    InvalidParamsError,
    LoggingLevel,
    ModelPreferences,
    Root,
    SamplingMessage,
    Tool,
    ToolChoice,
)

ModelT = TypeVar("ModelT", bound=BaseModel)
P = ParamSpec("P")
ReturnT = TypeVar("ReturnT")
LifespanT = DefaultedTypeVar("LifespanT", default=Any)
"""What ``ctx.lifespan_context`` is: ``Context[Pool]`` says; a bare ``Context``, ``Any``."""


def _schema_not_response_type(
    elicit: Callable[P, Awaitable[ReturnT]],
) -> Callable[P, Awaitable[ReturnT]]:
    """``elicit`` refusing FastMCP's ``response_type=`` with the answerback spelling.

    Python's own "unexpected keyword argument" names no fix. A ``**kwargs`` catch-all
    would, but it would also hide every misspelt argument from type checkers; this
    wrapper keeps the signature they check, and ``inspect.signature`` shows, as written,
    and leaves any other wrong argument to Python's own error."""

    @functools.wraps(elicit)
    async def checked(*args: P.args, **kwargs: P.kwargs) -> ReturnT:
        if "response_type" in kwargs:
            raise TypeError(_response_type_advice(kwargs["response_type"]))
        return await elicit(*args, **kwargs)

    return checked


def _response_type_advice(given: object) -> str:
    """What to write instead of ``response_type=given``, naming the caller's own model;
    a scalar (``bool``, ``str``, as FastMCP also takes) becomes a model of one field."""
    fix = "ctx.elicit() takes the model as schema=, not response_type= (FastMCP's name): "
    if isinstance(given, type) and issubclass(given, BaseModel):
        return f"{fix}ctx.elicit(message, schema={given.__name__})."
    field_type = given.__name__ if isinstance(given, type) else "str"
    return (
        f"{fix}it takes a pydantic model, so ask for a single {field_type} with a model of "
        f"one field (class Answer(BaseModel): value: {field_type}) and "
        "ctx.elicit(message, schema=Answer)."
    )


@dataclass(frozen=True, slots=True)
class AcceptedElicitation(Generic[ModelT]):
    """The user answered; ``data`` is the answer parsed into the requested model."""

    data: ModelT
    action: Literal["accept"] = "accept"
    meta: dict[str, Any] | None = None
    """The answer's ``_meta``, as the client sent it (see ``DeclinedElicitation``)."""


@dataclass(frozen=True, slots=True)
class DeclinedElicitation:
    """The user explicitly said no, or a policy did for them: then ``meta`` (the
    answer's ``_meta``) says so, as answerback clients mark it, under
    ``"answerback/headless"`` (``{"policy": ..., "reason": ...}``)."""

    action: Literal["decline"] = "decline"
    meta: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class CancelledElicitation:
    """The user dismissed the question without choosing; ``meta`` as for
    ``DeclinedElicitation``."""

    action: Literal["cancel"] = "cancel"
    meta: dict[str, Any] | None = None


ElicitationResult = AcceptedElicitation[ModelT] | DeclinedElicitation | CancelledElicitation


@dataclass(frozen=True, slots=True)
class AcceptedUrlElicitation:
    """The user agreed to open the link; what they do there reaches your server, not this."""

    action: Literal["accept"] = "accept"
    meta: dict[str, Any] | None = None
    """The answer's ``_meta``, as the client sent it."""


UrlElicitationResult = AcceptedUrlElicitation | DeclinedElicitation | CancelledElicitation


class Context(Generic[LifespanT]):
    """The tool's handle on the request it is answering and on the client behind it.

    Annotated ``Context[Pool]``, its ``lifespan_context`` is typed as a ``Pool``: what
    the server's ``lifespan`` yields (the server does not check the two agree)."""

    def __init__(
        self,
        session: ServerSession,
        request: IncomingRequest,
        *,
        input_responses: dict[str, Any] | None = None,
        request_state: str | None = None,
        state_seal: StateSeal | None = None,
        server_tools: Mapping[str, RegisteredTool] | None = None,
        redact_errors: Callable[[], bool] | None = None,
        memo: Memo | None = None,
        roots_cache: RootsCache | None = None,
        lifespan_context: LifespanT | None = None,
    ) -> None:
        self._session = session
        self._request = request
        self._input_responses = input_responses
        self._request_state = request_state
        self._state_seal = state_seal
        self._server_tools = server_tools or {}
        self._redact_errors = redact_errors
        """Whether a failing tool's text is kept from the client (``error_details``):
        asked only when one fails, since it may parse the peer's address."""
        self._memo = memo
        """2026-07-28: what earlier rounds computed (the results of sampled tool calls)."""
        self._roots_cache = roots_cache if roots_cache is not None else RootsCache()
        """The connection's roots cache (legacy), or this request's own (2026-07-28)."""
        self._lifespan_context = lifespan_context
        self._loop_thread = threading.get_ident()
        """The event loop's thread, where the context is made (a ``def`` tool runs in another)."""

    def __repr__(self) -> str:
        """The request being answered (its id, method, and the tool or prompt it names)
        and the client behind it, for a debugger inside a tool: never the arguments,
        which may hold secrets."""
        request = self._request
        shown = [f"request_id={request.id!r}", f"method={request.method!r}"]
        named = request.params.get("name") if request.params is not None else None
        kind = _NAMED_BY.get(request.method)
        if kind is not None and isinstance(named, str):
            shown.append(f"{kind}={named!r}")
        session = self._session
        shown += [f"client={session.client_info.name!r}", f"protocol={session.protocol_version!r}"]
        return f"Context({', '.join(shown)})"

    @property
    def lifespan_context(self) -> LifespanT:
        """What the server's ``lifespan`` yielded: one value shared by every request, such
        as a database pool. Without a lifespan, ``RuntimeError`` (a tool that needs one
        cannot work without it; read ``MCPServer.lifespan_context`` for ``None``)."""
        if self._lifespan_context is None:
            raise RuntimeError(
                "ctx.lifespan_context: this server has no lifespan, or it yielded None. "
                "Pass MCPServer(..., lifespan=...) a function whose context manager yields "
                "what tools share (docs/server-features.md, 'Sharing state between calls')."
            )
        return self._lifespan_context

    @property
    def session(self) -> ServerSession:
        """The client as this request sees it: what it declared, and how to ask it."""
        return self._session

    @property
    def auth(self) -> AuthInfo | None:
        """Who is calling, as their access token says (``subject``, ``scopes``,
        ``claims``...): set over HTTP when the app has a ``ResourceServer``, ``None``
        otherwise. Key anything you keep for a user by ``auth.principal``."""
        return caller_of(self._request)

    @property
    def request_id(self) -> RequestId:
        """The JSON-RPC id of the request being handled."""
        return self._request.id

    @property
    def meta(self) -> dict[str, Any] | None:
        """The ``_meta`` the client attached to this request."""
        return self._request.meta

    @property
    def input_responses(self) -> dict[str, Any] | None:
        """2026-07-28, by hand: the raw answers a retried request carries."""
        return self._input_responses

    @property
    def request_state(self) -> str | None:
        """2026-07-28, by hand: the ``requestState`` a retried request echoes back.

        A tool that returns its own ``InputRequiredResult`` reads its state here; it is
        attacker-controlled input, so protect it if it matters (answerback's own state,
        used by ``elicit`` and friends, is sealed for you).
        """
        return self._request_state

    def seal_state(self, payload: dict[str, Any], *, single_use: bool = False) -> str:
        """2026-07-28, by hand: seal ``payload`` as the ``requestState`` to return.

        The result is encrypted and authenticated, bound to this request (method, name,
        arguments) and to an expiry; read it back on the retry with ``open_state``.
        ``single_use`` lets one retry through with it: the same state sent again is
        refused (-32602) before your tool runs, on any replica sharing the HTTP app's
        state (use it when a round must not run twice, e.g. a confirmed payment).
        """
        call = "ctx.seal_state()"
        if not isinstance(cast(object, payload), dict):
            raise wrong_type(call, "payload", "a dict", payload, _STATE_ADVICE)
        if not isinstance(cast(object, single_use), bool):
            raise wrong_type(call, "single_use", "True or False", single_use, "Pass a bool.")
        if self._state_seal is None:
            raise RuntimeError("request state exists only on 2026-07-28 requests")
        try:
            return self._state_seal.seal({"tool": payload}, single_use=single_use)
        except PydanticSerializationError as exc:
            raise unsendable(call, "payload", exc, _STATE_ADVICE) from None

    def open_state(self) -> dict[str, Any] | None:
        """2026-07-28, by hand: the payload sealed with ``seal_state`` and echoed back.

        ``None`` if the request carries no state; ``InvalidParamsError`` (-32602) if the
        state was altered, expired or belongs to another request.
        """
        if self._request_state is None or self._state_seal is None:
            return None
        opened = self._state_seal.open(self._request_state).get("tool")
        if not isinstance(opened, dict):
            raise InvalidParamsError(INVALID_STATE_MESSAGE)
        return cast(dict[str, Any], opened)

    @_schema_not_response_type
    async def elicit(self, message: str, schema: type[ModelT]) -> ElicitationResult[ModelT]:
        """Ask the user to fill in a form shaped like ``schema`` and wait for the answer.

        A model the form cannot hold raises ``FormSchemaError``, and a message longer than
        a client shows (``answerback.forms.MAX_TEXT_LENGTH``) ``FormTooLarge``, before
        anything is sent. An accepted answer that does not fit ``schema`` raises
        ``InvalidParamsError`` naming every bad field (``data["errors"]`` lists them as
        ``{"field", "message"}``): the client broke the contract, and the tool should not
        carry on with bad data. A ``message`` that is not a string, or a ``schema`` that
        is not a pydantic model class, raises ``TypeError`` at the call.
        """
        if not isinstance(cast(object, message), str):
            raise wrong_type("ctx.elicit()", "message", "a string", message, _QUESTION_ADVICE)
        asked = cast(object, schema)
        if not (isinstance(asked, type) and issubclass(asked, BaseModel)):
            raise wrong_type(
                "ctx.elicit()", "schema", "a pydantic model class", schema, _SCHEMA_ADVICE
            )
        check_message(message)
        result = await self._session.elicit_question(form_question(message, schema))
        if result.action == "accept":
            try:
                data = validate_answer(schema, result.content or {})
                return AcceptedElicitation(data, meta=result.meta)
            except AnswerError as exc:
                raise InvalidParamsError(
                    f"The client's answer does not fit the requested {schema.__name__} form: "
                    f"{'; '.join(map(str, exc.errors))}. Answer every field as the form says.",
                    {"errors": [{"field": e.field, "message": e.message} for e in exc.errors]},
                ) from exc
        if result.action == "decline":
            return DeclinedElicitation(meta=result.meta)
        return CancelledElicitation(meta=result.meta)

    async def elicit_url(self, message: str, url: str, elicitation_id: str) -> UrlElicitationResult:
        """Ask the user to open ``url``; accepted means they agreed to go, not that they
        finished (your page tells your server; then ``ctx.session.send_elicitation_complete``).

        A link the URL verdict blocks raises ``ValueError``, and a message longer than a
        client shows (``answerback.forms.MAX_TEXT_LENGTH``) ``FormTooLarge``, before
        anything is sent; so does an argument that is not a string (``TypeError``).
        """
        call = "ctx.elicit_url()"
        check_text(call, "message", message, "Pass what the person is asked to do, as a string.")
        check_text(call, "url", url, "Pass the link as a string (https://...).")
        check_text(
            call,
            "elicitation_id",
            elicitation_id,
            "Pass an id of your own for this request, as a string: your page reports back "
            "with it (ctx.session.send_elicitation_complete).",
        )
        check_message(message)
        result = await self._session.elicit_url(message, url, elicitation_id)
        if result.action == "accept":
            return AcceptedUrlElicitation(meta=result.meta)
        if result.action == "decline":
            return DeclinedElicitation(meta=result.meta)
        return CancelledElicitation(meta=result.meta)

    async def sample(
        self,
        messages: str | SamplingMessage | Sequence[SamplingMessage],
        *,
        max_tokens: int = 1024,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_preferences: ModelPreferences | None = None,
        include_context: IncludeContext | None = None,
        metadata: dict[str, Any] | None = None,
        tools: SamplingTools | None = None,
        tool_choice: Literal["auto", "required", "none"] | ToolChoice | None = None,
        max_rounds: int = 8,
    ) -> SampleResult:
        """Ask the client's language model to continue ``messages`` (a string is one
        user message), running the tools it calls, and return its final answer with the
        whole conversation (``.text``, ``.result``, ``.messages``).

        ``tools`` offers the model tools: functions (described as ``@mcp.tool()`` would
        describe them; a ``Context`` parameter gets this context), names of this
        server's tools, or ``True`` for all of them but the one calling. The client must
        have declared ``sampling.tools``; otherwise this raises ``MCPError`` naming the
        capability, before anything is sent. While the model calls tools, each is run
        (one that fails is reported to the model as an ``isError`` result) and the model
        asked again, at most ``max_rounds`` requests in all; the last says ``toolChoice:
        none``, and a model that calls tools even then raises ``SamplingLoopError``.
        ``tool_choice`` applies to the other rounds ("required" to the first only).

        On 2026-07-28 each request is a round of ``InputRequiredResult`` and your tool
        runs again from the start on every retry: answers and tool results of earlier
        rounds are replayed, not asked or run again, but your own code before this call
        runs each round. A client caps its rounds as well (answerback's
        ``input_required_max_rounds``, 10 by default).

        An argument of the wrong type raises ``TypeError``, and one of the right type
        that is not allowed (``max_tokens=0``, an unknown ``tool_choice``) ``ValueError``,
        each naming the argument, before anything is sent.
        """
        conversation = as_messages(messages)
        _check_sampling_arguments(
            max_tokens,
            system_prompt,
            temperature,
            stop_sequences,
            include_context,
            model_preferences,
            metadata,
            max_rounds,
            tool_choice,
        )
        choice = ToolChoice(mode=tool_choice) if isinstance(tool_choice, str) else tool_choice
        name: object = (self._request.params or {}).get("name")
        calling = name if self._request.method == "tools/call" and isinstance(name, str) else None
        offered = offered_tools(tools, self._server_tools, calling=calling, context_type=Context)
        if choice is not None and not offered:
            raise bad_value(
                "ctx.sample()",
                "tool_choice",
                "needs tools to choose from",
                "Pass tools=[...] as well, or leave tool_choice out.",
            )
        runner = None
        if offered:
            redact = self._redact_errors is not None and self._redact_errors()
            runner = ToolRunner(offered, self, redact=redact, memo=self._memo)

        async def ask(
            conversation: list[SamplingMessage], tools: list[Tool] | None, choice: ToolChoice | None
        ) -> CreateMessageResult:
            return await self._session.create_message_for(
                "ctx.sample()",
                conversation,
                max_tokens=max_tokens,
                system_prompt=system_prompt,
                temperature=temperature,
                stop_sequences=list(stop_sequences) if stop_sequences is not None else None,
                metadata=metadata,
                model_preferences=model_preferences,
                include_context=include_context,
                tools=tools,
                tool_choice=choice,
            )

        return await sample_with_tools(
            ask, conversation, runner, tool_choice=choice, max_rounds=max_rounds
        )

    async def roots(self) -> list[Root]:
        """The roots the client grants, asked once and then cached: for the connection
        until the client says they changed (2025-11-25), or for this request
        (2026-07-28, which asks through one extra round). The client must declare the
        roots capability (else ``MCPError``, as ``ctx.session.list_roots`` raises)."""
        return await self._roots_cache.get(self._session)

    async def resolve_path(self, path: str | os.PathLike[str]) -> Path:
        """``path`` (absolute, a ``file://`` URI, or relative to the first root
        directory) resolved for real, if it lies inside one of the client's roots.

        ``..`` that climbs out of a root, a symbolic link leading outside, and any
        other path outside every root raise ``PathOutsideRootsError``: let it propagate
        and the client sees a tool error naming the path and the roots. The guard is
        this server's own rule (the specification does not require it; in 2026-07-28
        roots are only informational). A ``path`` that is neither a string nor a
        path object raises ``TypeError`` before the roots are asked for."""
        if not isinstance(cast(object, path), str | os.PathLike):
            raise wrong_type(
                "ctx.resolve_path()",
                "path",
                "a string or a path object",
                path,
                "Pass a path (absolute, or relative to the first root) or a file:// URI.",
            )
        roots = await self._roots_cache.granted_paths(self._session)
        return await in_worker_thread(resolve_within, path, roots)

    def close_sse_stream(self) -> bool:
        """Over legacy streamable HTTP, end this request's SSE response early; the client
        resumes it after the server's ``retry`` delay and gets everything sent meanwhile.
        Use it to avoid holding a connection open through long work. Returns whether
        there was such a stream to close (other transports have none)."""
        handle = self._request.envelope.transport_context
        if not isinstance(handle, StreamControl):
            return False
        if threading.get_ident() == self._loop_thread:
            handle.close_stream()
        else:  # a plain ``def`` tool's worker thread
            # Closing the stream wakes the event loop's waiters, which only its thread may do.
            anyio.from_thread.run_sync(handle.close_stream)
        return True

    async def log(self, level: LoggingLevel, data: Any, logger: str | None = None) -> None:
        """Send a log message to the client (``notifications/message``).

        A legacy client gets every level until it calls ``logging/setLevel``; a 2026-07-28
        request gets messages only if it opted in with a log level of its own. An unknown
        ``level`` (``ValueError``) or a ``logger`` that is not a string (``TypeError``) is
        refused either way; ``data`` that JSON cannot carry (``TypeError``) when it is sent.
        """
        await self._log("ctx.log()", level, data, logger)

    async def debug(self, data: Any, logger: str | None = None) -> None:
        """``log("debug", ...)``: sent only if the client wants that level."""
        await self._log("ctx.debug()", "debug", data, logger)

    async def info(self, data: Any, logger: str | None = None) -> None:
        """``log("info", ...)``: sent only if the client wants that level."""
        await self._log("ctx.info()", "info", data, logger)

    async def warning(self, data: Any, logger: str | None = None) -> None:
        """``log("warning", ...)``: sent only if the client wants that level."""
        await self._log("ctx.warning()", "warning", data, logger)

    async def error(self, data: Any, logger: str | None = None) -> None:
        """``log("error", ...)``: sent only if the client wants that level."""
        await self._log("ctx.error()", "error", data, logger)

    async def _log(self, call: str, level: LoggingLevel, data: Any, logger: str | None) -> None:
        await self._session.send_log_message_for(call, level, data, logger)

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress, if the client asked for it with a progress token.

        A number that is not a finite ``int`` or ``float`` (``TypeError``, or
        ``ValueError`` for NaN and infinity) or a ``message`` that is not a string is
        refused whether or not the client asked, so the mistake shows on every client. A
        ``progress`` not above the last one this request reported is not sent, since MCP
        requires progress to increase, and is logged as a warning on the
        ``answerback.server`` logger (once per request) rather than failing the call.
        """
        check_progress("ctx.report_progress()", progress, total, message)
        await self._session.send_progress(progress, total, message)


_NAMED_BY = {"tools/call": "tool", "prompts/get": "prompt"}
"""The methods whose ``name`` parameter a ``Context``'s repr shows, and as what."""
_QUESTION_ADVICE = "Pass the question to show above the form, as a string."
_SCHEMA_ADVICE = (
    "Pass the class of a pydantic model whose fields are the form's (strings, numbers, "
    "booleans, choices), e.g. schema=Booking, not an instance (a JSON Schema dict goes "
    "to ctx.session.elicit_form)."
)
_STATE_ADVICE = "Pass a dict of JSON values (strings, numbers, booleans, None, lists, dicts)."
_TOOL_CHOICES = ("auto", "required", "none")


def _check_sampling_arguments(
    max_tokens: object,
    system_prompt: object,
    temperature: object,
    stop_sequences: object,
    include_context: object,
    model_preferences: object,
    metadata: object,
    max_rounds: object,
    tool_choice: object,
) -> None:
    """Refuse what ``ctx.sample`` cannot send (its messages and tools are checked where
    they are read: ``as_messages``, ``offered_tools``)."""
    call = "ctx.sample()"
    check_sampling_options(
        call,
        max_tokens,
        system_prompt,
        temperature,
        stop_sequences,
        metadata,
        model_preferences,
        include_context,
    )
    check_count(
        call,
        "max_rounds",
        max_rounds,
        "Pass how many sampling requests the tool loop may send, as an int.",
    )
    if tool_choice is not None and not isinstance(tool_choice, ToolChoice):
        check_choice(
            call,
            "tool_choice",
            tool_choice,
            _TOOL_CHOICES,
            "Pass one of those, as a string, a ToolChoice(mode=...), or None.",
        )
