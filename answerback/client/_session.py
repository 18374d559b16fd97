"""``ClientSession``: the client's half of one connection, over the JSON-RPC engine.

It sends typed requests, sets the connection up (and up again, once, when an HTTP
server forgot it) through its ``Negotiation``, and is the seam between the server and
the ``Responder``: it declares what the responder declares, refuses what it did not,
checks form answers before they leave, and routes notifications to it.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar, cast, get_args

import anyio
import pydantic
import pydantic_core
from anyio.abc import ObjectReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream
from pydantic import BaseModel, TypeAdapter

from answerback._options import one_of, positive_int, positive_seconds_or_none
from answerback.client._callbacks import (
    ClientRequestContext,
    WrongAnswerType,
    checked_answer,
    refusal,
)
from answerback.client._form_answers import (
    fitted,
    link_message_too_long,
    unfit_answer,
    unsupported_form,
)
from answerback.client._negotiation import Mode, Negotiation
from answerback.client._responder import Responder, ResponderWrapper, answerer
from answerback.client._url_elicitation import UrlElicitations
from answerback.forms import (
    AnswerError,
    Form,
    FormTooLarge,
    UnsupportedForm,
    check_message,
    parse_form,
)
from answerback.forms._patterns import PatternBudget, drawing_on
from answerback.jsonrpc import (
    Endpoint,
    Envelope,
    IncomingRequest,
    JSONObject,
    ProgressCallback,
    RequestId,
)
from answerback.jsonrpc._attention import Attention
from answerback.jsonrpc._endpoint import (
    ResultNotObjectError,
    as_object,
    error_from_exception,
    new_error_reference,
    redacted_message,
)
from answerback.types import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
    ClientCapabilities,
    ConnectionClosedError,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    Implementation,
    InputRequest,
    InputRequests,
    InputRequiredResult,
    ListRootsResult,
    LoggingLevel,
    LoggingMessageNotification,
    MCPError,
    MCPModel,
    MethodNotFoundError,
    ServerNotification,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotificationParams,
)
from answerback.types._errors import (
    BUSY,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    invalid_params,
    shown_problems,
    validation_problems,
)
from answerback.types._methods import PERSON_FACING_METHODS, parse_as
from answerback.types._sampling_rules import (
    SamplingAnswerError,
    check_sampling_answer,
    check_sampling_request,
)

logger = logging.getLogger("answerback.client")

ResultT = TypeVar("ResultT", bound=BaseModel)

_NOTIFICATION_ADAPTER: TypeAdapter[ServerNotification] = TypeAdapter(ServerNotification)


_Declared = tuple[ClientCapabilities, Implementation, JSONObject, JSONObject]
"""A client's declaration, as models and as the wire dicts they dump to."""


class ClientSession:
    """One connection to a server, from the client's side."""

    def __init__(
        self,
        *,
        responder: Responder,
        client_info: Implementation,
        mode: Mode = "auto",
        connect_timeout_seconds: float | None = None,
        read_timeout_seconds: float | None = None,
        log_level: LoggingLevel | None = None,
        max_input_requests: int = 32,
        refusal_reasons: Mapping[str, str] | None = None,
    ) -> None:
        self.responder = responder
        declared = cast(object, responder.capabilities())  # a subclass may forget it
        if not isinstance(declared, ClientCapabilities):
            raise TypeError(
                f"{type(responder).__name__}.capabilities() returned "
                f"{type(declared).__name__}; it must return the ClientCapabilities the "
                "client declares (ClientCapabilities() declares nothing)."
            )
        self.capabilities = declared
        """What the client declares: the responder's declaration, read once."""
        self.client_info = client_info
        self._declared: _Declared | None = None
        """``capabilities`` and ``client_info`` with their wire form (see ``_declaration``)."""
        self.log_level: LoggingLevel | None = (
            None
            if log_level is None
            else cast(LoggingLevel, one_of("log_level", log_level, get_args(LoggingLevel)))
        )
        self.negotiation = Negotiation(
            self,
            mode=mode,
            connect_timeout_seconds=positive_seconds_or_none(
                "connect_timeout_seconds", connect_timeout_seconds, "wait for ever"
            ),
        )
        self.read_timeout_seconds = positive_seconds_or_none(
            "read_timeout_seconds", read_timeout_seconds, "no timeout"
        )
        self.max_input_requests = positive_int(
            "max_input_requests", max_input_requests, "questions in one round"
        )
        """The most questions one 2026-07-28 round may ask, or a legacy server may have
        waiting for answers at once per request of ours in progress; a server asking
        more is refused."""
        self._questions_open = 0
        """Legacy questions (elicitation, sampling) being answered now."""
        self._warned_questions = False
        """Whether a refusal past ``max_input_requests`` was logged since the questions
        last all got answers (one warning per flood)."""
        self._warned_content = False
        """Whether content left out of an answer that may not carry it was logged (once
        a connection: a host that builds its answers so does it every time)."""
        self.refusal_reasons = dict(refusal_reasons or {})
        """The host's own reason for refusing a capability it does not declare, by
        capability, in place of the advice to a developer (``Client(refusal_reasons=)``)."""
        self._endpoint: Endpoint | None = None
        self.server_info: Implementation | None = None
        """Who the server is (either era), to name it in errors; set by the negotiation."""
        self.on_tools_changed: Callable[[], None] | None = None
        """Called when the server says its tool list changed (set by ``Client``)."""
        self.on_session_expired: Callable[[], Awaitable[None]] | None = self.negotiation.initialize
        """Sets the session up again after the server forgot it (``None``: don't)."""
        self._setups = 0
        """How many times the session was set up again; a request that met an expired
        session compares it with the count it was sent under."""
        self._renewal: _Renewal | None = None
        """The setting up again in progress, which other requests wait for."""
        self.modern_version: str | None = None
        """The 2026-07-28-era version in use, or ``None`` on a legacy connection."""
        self.listeners: dict[RequestId, Subscription] = {}
        """Open ``subscriptions/listen`` streams, by the id of the request that opened them."""
        self._forms: dict[bytes, Form] = {}
        """Parsed forms by their schema's JSON, most recently used last."""
        self.url_elicitations = UrlElicitations()
        """URL-mode elicitation: verdicts, completions, -32042 (``Client`` may replace it)."""
        self.transport_kind: str | None = None
        """How the server is reached (the transport's class, as ``Client`` sets it), for
        the repr; ``None`` for a session used without ``Client``."""
        self.attention = attention_of(responder)
        """The person the responder shares with other connections (a broker's), if any:
        this connection's request timers stand still while they are busy."""

    def __repr__(self) -> str:
        """The server (once it introduced itself), the protocol version and era, how it
        is reached and whether the connection is open: what a debugger needs. Never a
        credential: the transport shows as its kind only, without URL, headers or
        command line."""
        shown: list[str] = []
        if self.server_info is not None:
            shown.append(server_name(self.server_info).removeprefix("server "))
        facts = self.negotiation.facts
        if facts is not None:
            era = "" if self.modern_version is not None else " (handshake era)"
            shown.append(f"protocol={facts.protocol_version!r}{era}")
        if self.transport_kind is not None:
            shown.append(f"transport={self.transport_kind}")
        shown.append(f"state={self._state()}")
        return f"ClientSession({', '.join(shown)})"

    def _state(self) -> str:
        if self._endpoint is None:
            return "not connected"
        if self._endpoint.closing or self._endpoint.closed.is_set():
            return "closed"
        return "open" if self.negotiation.facts is not None else "connecting"

    def attach(self, endpoint: Endpoint) -> None:
        """Send and receive through ``endpoint`` from now on (``Client`` does this when
        it connects)."""
        self._endpoint = endpoint

    @property
    def endpoint(self) -> Endpoint:
        """The JSON-RPC engine this session talks through.

        Raises ``RuntimeError`` before ``attach`` (a ``Client`` not yet entered).
        """
        if self._endpoint is None:
            raise RuntimeError("The session is not connected; use the Client as `async with`.")
        return self._endpoint

    # -- sending ---------------------------------------------------------------------

    def stamp(self, params: JSONObject | None) -> JSONObject | None:
        """On a 2026-07-28 connection, add the per-request ``_meta`` the era requires:
        version, capabilities, client info and (if set) the log level opt-in."""
        if self.modern_version is None:
            return params
        stamped = dict(params or {})
        capabilities, client_info = self._declaration()
        meta: JSONObject = {
            **stamped.get("_meta", {}),
            META_PROTOCOL_VERSION: self.modern_version,
            META_CLIENT_CAPABILITIES: capabilities,
            META_CLIENT_INFO: client_info,
        }
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        stamped["_meta"] = meta
        return stamped

    def _declaration(self) -> tuple[JSONObject, JSONObject]:
        """The capabilities and client info as every 2026-07-28 request carries them:
        dumped once per declaration, not twice per request."""
        declared = self._declared
        if (
            declared is None
            or declared[0] is not self.capabilities
            or declared[1] is not self.client_info
        ):
            declared = self._declared = (
                self.capabilities,
                self.client_info,
                self.capabilities.to_wire(),
                self.client_info.to_wire(),
            )
        return declared[2], declared[3]

    async def request_raw(
        self,
        method: str,
        params: JSONObject | None,
        *,
        timeout: float | None = None,
        cancellable: bool = True,
        on_progress: ProgressCallback | None = None,
        transport_context: Any = None,
        request_id: RequestId | None = None,
        setup: bool = False,
    ) -> JSONObject:
        """Send a request (stamped for the era) and return the raw result object.

        If the server forgot the session (HTTP 404), the session is set up again with
        ``on_session_expired`` and the request is sent once more; however many requests
        meet the expired session at once, it is set up again once. ``setup`` marks the
        requests that do the setting up: they neither wait for it nor start it.
        """
        timeout = timeout if timeout is not None else self.read_timeout_seconds
        renewal = self._renewal
        if renewal is not None and not setup:
            await renewal.done.wait()
        sent_under = self._setups

        async def send() -> JSONObject:
            return await self.endpoint.request(
                method,
                self.stamp(params),
                timeout=timeout,
                cancellable=cancellable,
                on_progress=on_progress,
                transport_context=transport_context,
                request_id=request_id,
            )

        try:
            return await send()
        except ConnectionClosedError as exc:
            if setup or not _session_expired(exc) or self.on_session_expired is None:
                raise
            await self._set_up_again(sent_under, exc)
            return await send()
        except ResultNotObjectError as exc:
            server = self.server_info
            raise InvalidServerResultError(
                f"{describe_server(server)} answered {method!r} with a result that is not "
                "an object, which JSON-RPC requires. The server breaks the protocol; report "
                "it to the server's authors.",
                {
                    "server": server.to_wire() if server is not None else None,
                    "method": method,
                    "problems": ["result: not an object"],
                },
            ) from exc

    async def set_up_again(self) -> None:
        """Set the session up again now, as a request that met the expired session
        would (an HTTP transport whose GET stream learns the server ended the session
        calls this, so a host that only listens hears again)."""
        expired = ConnectionClosedError(
            "The server ended the session (HTTP 404).", {"reason": "session_expired"}
        )
        await self._set_up_again(self._setups, expired)

    async def _set_up_again(self, sent_under: int, expired: ConnectionClosedError) -> None:
        """Single-flight ``on_session_expired``: the first request to meet the expired
        session sets it up again; the others wait for that and then retry. A request
        sent before an earlier setting up finished just retries.

        A 2026-07-28 connection has no session: a server that put a session id on its
        answers and then ended it mixes the eras, and setting it up again would switch
        the connection to the handshake era behind the host's back, so it is refused.
        """
        if self.modern_version is not None:
            raise ConnectionClosedError(
                f"{describe_server(self.server_info)} ended the session it had put on its "
                f"answers (HTTP 404), but this connection speaks {self.modern_version}, "
                "which has no session to set up again; the request was not sent again and "
                "the connection stays in that era. The server (or a gateway in front of "
                "it) mixes the eras, sending a session id on 2026-07-28 answers: report "
                'it to its authors, or connect with Client(mode="legacy") to use its '
                "sessions.",
                {"reason": "no_session_in_era"},
            ) from expired
        # Each turn either returns, raises, or follows a renewal whose task was
        # cancelled; then this task tries itself, so the loop ends.
        while self._setups == sent_under and self.on_session_expired is not None:
            renewal = self._renewal
            if renewal is not None:
                await renewal.done.wait()
                if renewal.failure is not None:
                    raise expired from renewal.failure
                continue
            renewal = self._renewal = _Renewal()
            try:
                await self.on_session_expired()
                self._setups += 1
            except Exception as exc:
                renewal.failure = exc
                raise
            finally:
                self._renewal = None
                renewal.done.set()

    async def send_request(
        self,
        method: str,
        params: MCPModel | JSONObject | None,
        result_type: type[ResultT],
        *,
        timeout: float | None = None,
        cancellable: bool = True,
        on_progress: ProgressCallback | None = None,
        setup: bool = False,
    ) -> ResultT:
        """Send a request and parse its result; the timeout defaults to the client's."""
        wire = params.to_wire() if isinstance(params, MCPModel) else params
        raw = await self.request_raw(
            method,
            wire,
            timeout=timeout,
            cancellable=cancellable,
            on_progress=on_progress,
            setup=setup,
        )
        return self.complete_result(method, raw, result_type)

    # -- reading results -------------------------------------------------------------

    def parse_result(self, method: str, raw: JSONObject, result_type: type[ResultT]) -> ResultT:
        """``raw`` as ``result_type``; a result that breaks the schema is the server's
        bug, reported as ``InvalidServerResultError`` naming the server and the problems."""
        try:
            return result_type.model_validate(raw)
        except pydantic.ValidationError as exc:
            raise InvalidServerResultError.from_validation(
                self.server_info, method, result_type, exc
            ) from None

    def complete_result(self, method: str, raw: JSONObject, result_type: type[ResultT]) -> ResultT:
        """Parse a final result; anything but a complete one is the server's mistake."""
        result_type_field = raw.get("resultType", "complete")
        if result_type_field != "complete":
            raise InvalidServerResultError(
                f"{describe_server(self.server_info)} answered {method!r} with resultType "
                f"{result_type_field!r}, which this request does not allow.",
                {"method": method, "resultType": result_type_field},
            )
        return self.parse_result(method, raw, result_type)

    def input_required(self, method: str, raw: JSONObject) -> InputRequiredResult:
        """An ``InputRequiredResult``, refused if it breaks the rules: the specification
        requires questions or state (or there is nothing to retry with), and a server
        may not bury the user in more questions than ``max_input_requests``."""
        needed = self.parse_result(method, raw, InputRequiredResult)
        if not needed.input_requests and needed.request_state is None:
            raise InvalidServerResultError(
                f"{describe_server(self.server_info)} answered {method!r} with an "
                "InputRequiredResult holding neither inputRequests nor requestState; the "
                "specification requires at least one, so there is nothing to retry with. "
                "Report it to the server's authors.",
                {"method": method},
            )
        asked = len(needed.input_requests or {})
        if asked > self.max_input_requests:
            raise InvalidServerResultError(
                f"{describe_server(self.server_info)} asked {asked} questions in one round "
                f"of {method!r}; this client answers at most {self.max_input_requests} at "
                "once. Raise Client(max_input_requests=...) if the server legitimately needs "
                "more.",
                {"method": method, "inputRequests": asked},
            )
        return needed

    async def request_round(
        self,
        method: str,
        params: JSONObject,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        transport_context: Any = None,
    ) -> JSONObject:
        """One round of a 2026-07-28 request that may need input, as a raw result: a
        server whose tool asked with a server-to-client request fails it with advice
        for the host (see ``_no_back_channel``), whether the client drives the rounds
        or the host does (``call_tool_round``)."""
        try:
            return await self.request_raw(
                method,
                params,
                timeout=timeout,
                on_progress=on_progress,
                transport_context=transport_context,
            )
        except MCPError as exc:
            if (advised := _no_back_channel(exc)) is None:
                raise
            raise advised from exc

    async def request_with_input(
        self,
        method: str,
        params: JSONObject,
        result_type: type[ResultT],
        *,
        max_rounds: int,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        transport_context: Any = None,
    ) -> ResultT:
        """Send a request that may come back as ``InputRequiredResult`` and drive it to
        completion: answer each round's input requests through the callbacks and retry
        with the answers and the echoed ``requestState``, a fresh request each round.
        A round no retry is left for is refused unanswered: its questions' answers could
        never be sent, so nobody is asked them."""
        attempt = dict(params)
        state_only_rounds = 0
        for rounds_answered in range(max_rounds + 1):
            raw = await self.request_round(
                method,
                attempt,
                timeout=timeout,
                on_progress=on_progress,
                transport_context=transport_context,
            )
            if raw.get("resultType") != "input_required":
                return self.complete_result(method, raw, result_type)
            needed = self.input_required(method, raw)
            if rounds_answered == max_rounds:
                break
            attempt = dict(params)
            if needed.input_requests:
                attempt["inputResponses"] = await self.answer_input_requests(needed.input_requests)
                state_only_rounds = 0
            else:
                # Nothing to answer: the server is waiting on something; back off a little.
                await anyio.sleep(min(1.0, 0.05 * 2**state_only_rounds))
                state_only_rounds += 1
            if needed.request_state is not None:
                attempt["requestState"] = needed.request_state
        target = params.get("name", params.get("uri"))
        call = f"{method!r} of {target!r}" if isinstance(target, str) else repr(method)
        raise InputRequiredRoundsExceededError(
            f"{call} still needed input from {self._server_named()} after {max_rounds} "
            "rounds; giving up. The server may be asking in a loop; raise "
            "input_required_max_rounds if it legitimately needs more."
        )

    async def answer_input_requests(self, input_requests: InputRequests) -> JSONObject:
        """Answer a round's input requests through the responder, keyed as asked.

        An ``ErrorData`` answer refuses the whole request, and a responder that raises
        or returns the wrong type fails it with the internal error the legacy path would
        have sent the server (the original exception is chained): the call fails the
        same way in both eras.

        The whole round's patterns (each form's, compiled and run on its defaults, and
        each answer's checks) share one ``PatternBudget``, as one form's do: a round may
        hold any number of forms, and each within its own budget still froze the client
        for seconds. It is drawn on only while a form is read or an answer checked, never
        while the responder runs (``answer_elicitation``): the host's callbacks may take
        minutes and call other servers' tools, whose result checks must not draw on this
        server's budget, nor be refused once its patterns have spent it. Waiting for the
        person costs none of it.

        What refuses a question whatever the answer (a kind or mode this client did not
        declare, a form it cannot show) refuses the round before anyone is asked: the
        person's answers to the round's other questions would be thrown away with it.
        """
        responses: JSONObject = {}
        patterns = PatternBudget()
        for key, input_request in input_requests.items():
            refused = self._refusal(input_request, patterns)
            if refused is not None:
                problem = refused.message.rstrip(". ")
                raise MCPError.from_error_data(
                    refused.model_copy(
                        update={
                            "message": f"{problem} (input request {key!r} from "
                            f"{self._server_named()}; none of the round's questions was "
                            "put to anyone)."
                        }
                    )
                )
        for key, input_request in input_requests.items():
            params = input_request.params
            meta = None if params is None or params.meta is None else params.meta.to_wire()
            context = ClientRequestContext(self, key, meta)
            try:
                # Cancelled, like a legacy handler, if the connection ends meanwhile.
                answer = await self.endpoint.until_closed(
                    functools.partial(self._answer_input, context, input_request, patterns),
                    "waiting for the answer to the server's question",
                )
            except MCPError:
                raise
            except Exception as exc:
                server = self._server_named()
                answering = f"{input_request.method!r} (input request {key!r}) from {server}"
                error = error_from_exception(exc, answering=answering)
                raise MCPError.from_error_data(error) from exc
            if isinstance(answer, ErrorData):
                raise MCPError.from_error_data(answer)
            responses[key] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        return responses

    async def send_notification(self, method: str, params: JSONObject | None = None) -> None:
        """Send a notification to the server as is (no answer comes back)."""
        await self.endpoint.notify(method, params)

    # -- receiving -------------------------------------------------------------------

    def _server_named(self) -> str:
        """The server as a log line names it mid-sentence."""
        return describe_server(self.server_info, starts_sentence=False)

    async def handle_request(self, request: IncomingRequest) -> JSONObject:
        """Answer a server→client request through the responder.

        What the host's code raises reaches the server only as a reference to this
        client's log (see ``_unexplained``); an ``MCPError`` it raises itself, or an
        ``ErrorData`` it returns, is its message to the server and goes as given
        (``_deliberate``)."""
        if request.method == "ping":
            return {}
        context = ClientRequestContext(self, request.id, request.meta)
        try:
            if request.method in PERSON_FACING_METHODS:
                answer = await self._answer_person_facing(context, request.method, request.params)
            else:
                answer = await self._answer(context, request.method, request.params)
        except Exception as exc:
            if _deliberate(exc):
                raise
            raise self._unexplained(request, exc) from exc
        if isinstance(answer, ErrorData):
            raise MCPError.from_error_data(answer)
        return answer.model_dump(mode="json", by_alias=True, exclude_none=True)

    def _unexplained(self, request: IncomingRequest, exc: Exception) -> MCPError:
        """The error the server gets for an exception answering its ``request``: a
        reference, its traceback logged here under the same one. Its text may hold what
        the host keeps from servers (a path, a token), and the server is another program,
        often someone else's, wherever it runs; the host's developer finds the details in
        this client's log. (In 2026-07-28 nothing goes to the server: the call fails here,
        with the exception as its cause.)"""
        reference = new_error_reference()
        logger.error(
            "request handler for %r (id %r) from %s failed (reference %s); the server was "
            "sent only the reference",
            request.method,
            request.id,
            self._server_named(),
            reference,
            exc_info=exc,
        )
        message = redacted_message("Internal error", reference, logged_by="client")
        return MCPError(INTERNAL_ERROR, message, {"reference": reference})

    async def _answer_person_facing(
        self, context: ClientRequestContext, method: str, params: JSONObject | None
    ) -> BaseModel:
        """A legacy question for the person (or model): at most ``max_input_requests``
        are answered at once per request of ours in progress (at least one), as a
        2026-07-28 round of each call asks at most that many; past it the server is told
        to wait, not the person shown a form per request it sent."""
        calls = max(1, self.endpoint.requests_waiting)
        if self._questions_open >= self.max_input_requests * calls:
            if not self._warned_questions:
                self._warned_questions = True
                logger.warning(
                    "%s asked more than %d questions (elicitation, sampling) at once, "
                    "with %d request(s) of this client in progress; the extra ones are "
                    "refused until some are answered (Client(max_input_requests=...) "
                    "raises the limit)",
                    self._server_named(),
                    self._questions_open,
                    calls,
                )
            return ErrorData(
                code=BUSY,
                message=f"Busy: this client already has {self._questions_open} of your questions "
                "(elicitation, sampling) waiting for answers, its limit: "
                f"Client(max_input_requests={self.max_input_requests}) for each of its "
                f"requests in progress ({calls}). Wait for their answers, then ask again.",
            )
        self._questions_open += 1
        try:
            return await self._answer(context, method, params)
        finally:
            self._questions_open -= 1
            if self._questions_open == 0:
                self._warned_questions = False

    async def _answer(
        self, context: ClientRequestContext, method: str, params: JSONObject | None
    ) -> BaseModel:
        """One legacy server request parsed and answered by the responder (a 2026-07-28
        input request comes parsed, to ``_answer_input``)."""
        if method == "elicitation/create":
            unknown_mode = _unknown_elicitation_mode(params)
            if unknown_mode is not None and self.capabilities.elicitation is None:
                # Refused as any elicitation is by a client that declared none.
                return refusal(
                    "Elicitation", "elicitation", self.refusal_reasons.get("elicitation")
                )
            if unknown_mode is not None:
                logger.warning(
                    "refused an elicitation from %s: %s",
                    self._server_named(),
                    unknown_mode.message,
                )
                return unknown_mode
            elicit_params = _request_params(ElicitRequestParams, params)
            if isinstance(elicit_params, ErrorData):
                return elicit_params
            return await self.answer_elicitation(context, elicit_params)
        if method == "sampling/createMessage":
            sampling_params = _request_params(CreateMessageRequestParams, params)
            if isinstance(sampling_params, ErrorData):
                return sampling_params
            return await self.answer_sampling(context, sampling_params)
        if method == "roots/list":
            return await self.answer_list_roots(context)
        return MethodNotFoundError(f"Method not found: {method!r}").error

    async def _answer_input(
        self, context: ClientRequestContext, question: InputRequest, patterns: PatternBudget
    ) -> BaseModel:
        """One 2026-07-28 input request answered by the responder: already parsed with the
        ``InputRequiredResult`` that carried it, so not dumped and parsed again. A form
        draws on its round's ``patterns``."""
        if isinstance(question, ElicitRequest):
            return await self.answer_elicitation(context, question.params, patterns=patterns)
        if isinstance(question, CreateMessageRequest):
            return await self.answer_sampling(context, question.params)
        return await self.answer_list_roots(context)

    def _refusal(self, question: InputRequest, patterns: PatternBudget) -> ErrorData | None:
        """What refuses a 2026-07-28 input request before the responder sees it, checked
        for a whole round before any of its questions is asked."""
        if isinstance(question, ElicitRequest):
            refused = self._elicitation_refusal(question.params, patterns)
            return refused if isinstance(refused, ErrorData) else None
        if isinstance(question, CreateMessageRequest):
            return self._sampling_refusal(question.params)
        if self.capabilities.roots is None:
            return refusal("List roots", "roots", self.refusal_reasons.get("roots"))
        return None

    def _elicitation_refusal(
        self, params: ElicitRequestParams, patterns: PatternBudget | None
    ) -> ErrorData | Form | None:
        """The refusal of an elicitation in a mode the responder did not declare, of a
        form outside the restricted subset or too large to show, and of a link whose
        message is longer than a form's may be; else the form parsed (``None``: a link)."""
        declared = self.capabilities.elicitation
        if declared is None:
            return refusal("Elicitation", "elicitation", self.refusal_reasons.get("elicitation"))
        if isinstance(params, ElicitRequestFormParams):
            if declared.form is None and declared.url is not None:
                return _mode_refusal("Form elicitation", "elicitation.form")
            try:
                check_message(params.message)
                with drawing_on(patterns):
                    return self._form(params.requested_schema)
            except UnsupportedForm as exc:
                logger.warning("refused a form from %s: %s", self._server_named(), exc)
                return unsupported_form(exc)
        if declared.url is None:
            return _mode_refusal("URL elicitation", "elicitation.url")
        try:
            check_message(params.message)  # shown beside the link, bounded as a form's
        except FormTooLarge as exc:
            logger.warning("refused a link from %s: %s", self._server_named(), exc)
            return link_message_too_long(exc, params.message)
        return None

    def _sampling_refusal(self, params: CreateMessageRequestParams) -> ErrorData | None:
        """The refusal of a sampling request the responder did not declare (tools,
        context), or whose ``maxTokens`` or tool-use pairing is wrong."""
        declared = self.capabilities.sampling
        if declared is None:
            return refusal("Sampling", "sampling", self.refusal_reasons.get("sampling"))
        if (params.tools or params.tool_choice) and declared.tools is None:
            return _mode_refusal("Sampling with tools", "sampling.tools")
        if params.include_context in ("thisServer", "allServers") and declared.context is None:
            return _mode_refusal("Sampling with context", "sampling.context")
        try:
            check_sampling_request(
                params.messages, params.max_tokens, params.tools, params.tool_choice
            )
        except MCPError as refused:  # the server's mistake, told as it is
            return refused.error
        return None

    def _form(self, requested_schema: JSONObject) -> Form:
        """The parsed form for a schema, reused: a server asks the same form again and
        again, and parsing it (building its validator) costs more than the rest of an
        elicitation round trip. Bounded, oldest dropped first."""
        key = pydantic_core.to_json(requested_schema)
        form = self._forms.pop(key, None)
        if form is None:
            form = parse_form(requested_schema)
            if len(self._forms) >= _FORMS_KEPT:
                del self._forms[next(iter(self._forms))]
        self._forms[key] = form
        return form

    async def answer_elicitation(
        self,
        context: ClientRequestContext,
        params: ElicitRequestParams,
        *,
        patterns: PatternBudget | None = None,
    ) -> ElicitResult | ErrorData:
        """The seam for elicitation: refuse a mode the responder did not declare, a
        form outside the restricted subset or too large to show, and a link whose message
        is longer than a form's may be; then check an accepted form answer (defaults
        filled in) before it is sent; one that does not fit fails, naming every field.
        Any other answer goes without ``content`` (``_without_content``).

        Reading the form and checking the answer draw on ``patterns``, a 2026-07-28
        round's budget (``answer_input_requests``), or without one each on its own. The
        responder runs outside it: what it checks draws on budgets of its own."""
        form = self._elicitation_refusal(params, patterns)
        if isinstance(form, ErrorData):
            return form
        if form is not None:
            context = replace(context, form=form)
        if isinstance(params, ElicitRequestURLParams):
            try:
                verdict = self.url_elicitations.admit(self, params)
            except MCPError as blocked:  # answerback's refusal to the server, not a failure
                return blocked.error
            context = replace(context, url_verdict=verdict)
        source = functools.partial(answerer, self.responder, "elicit")  # named on failure
        answer = checked_answer(await self.responder.elicit(context, params), ElicitResult, source)
        if isinstance(answer, ErrorData):
            return answer
        if form is None or answer.action != "accept":
            return self._without_content(answer, source, link=form is None)
        try:
            with drawing_on(patterns):
                return fitted(form, answer)
        except AnswerError as exc:
            return unfit_answer(exc, source())

    def _without_content(
        self, answer: ElicitResult, source: Callable[[], str], *, link: bool
    ) -> ElicitResult:
        """``answer`` without ``content``, which only an accepted form may carry (both
        eras' schemas). What a person typed into a form and then declined is what they
        chose not to send, and a link's answer has no fields at all: neither may reach
        the server, whatever the host's code put there. The person's decision goes as
        they made it; the host's developer learns from one warning per connection."""
        if answer.content is None:
            return answer
        if not self._warned_content:
            self._warned_content = True
            answered = f"a {'link' if link else 'form'} with {answer.action!r}"
            logger.warning(
                "%s answered %s from %s, with content; the answer was sent without it: "
                "only an accepted form carries content (what was typed into a form the "
                "person declined or cancelled stays with them). Leave content out of "
                "such answers.",
                source(),
                answered,
                self._server_named(),
            )
        return answer.model_copy(update={"content": None})

    async def answer_sampling(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        """The seam for sampling: refuse what was not declared (tools, context), a
        ``maxTokens`` under 1 and messages that break the tool-use pairing rules, before
        the responder sees it; then refuse an answer that uses a tool the request did not
        let the model use (-32603, the client's fault, naming who answered)."""
        refused = self._sampling_refusal(params)
        if refused is not None:
            return refused
        source = answerer(self.responder, "sample")
        answer = checked_answer(
            await self.responder.sample(context, params), CreateMessageResult, source
        )
        if isinstance(answer, ErrorData):
            return answer
        try:
            check_sampling_answer(params, answer)
        except SamplingAnswerError as exc:
            logger.warning(
                "refused %s's sampling answer to %s: %s", source, self._server_named(), exc
            )
            return ErrorData(
                code=INTERNAL_ERROR,
                message=f"The client's sampling answer was refused: {exc} {source} must use only "
                'the tools the request offers, and none under toolChoice "none".',
                data={"reason": "tool_use_not_allowed"},
            )
        return answer

    async def answer_list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        """The responder's roots, or a refusal when this client did not declare roots."""
        if self.capabilities.roots is None:
            return refusal("List roots", "roots", self.refusal_reasons.get("roots"))
        answer = await self.responder.list_roots(context)
        return checked_answer(answer, ListRootsResult, answerer(self.responder, "list_roots"))

    async def handle_notification(
        self, method: str, params: JSONObject | None, envelope: Envelope
    ) -> None:
        """Route a server notification: log messages to ``responder.on_log``, the others
        to ``responder.on_notification`` (unknown or malformed ones are dropped).

        Notifications of a ``listen()`` stream go to that stream only; its
        acknowledgement is consumed there. A tool list change, on the session or on a
        stream, first makes the client forget what it learned from the old list.
        """
        if method == "notifications/tools/list_changed" and self.on_tools_changed is not None:
            self.on_tools_changed()
        if method == "notifications/elicitation/complete":
            await self.url_elicitations.completed(self, params)
        meta = as_object((params or {}).get("_meta"))
        subscription = meta.get(META_SUBSCRIPTION_ID) if meta else None
        listener = self.listeners.get(subscription) if isinstance(subscription, str | int) else None
        if listener is not None:
            await listener.deliver(method, params)
            return
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        try:
            notification = _NOTIFICATION_ADAPTER.validate_python(message)
        except ValueError:
            logger.debug("ignored unknown or malformed notification %r", method)
            return
        if isinstance(notification, LoggingMessageNotification):
            await self.responder.on_log(notification.params)
        else:
            await self.responder.on_notification(notification)

    async def handle_transport_error(self, exc: Exception) -> None:
        """Hand an error the transport reported (a message it could not read, say) to
        ``responder.on_notification``."""
        await self.responder.on_notification(exc)


LISTEN_NOTIFICATIONS_KEPT = 1024
"""How many notifications a ``listen()`` stream keeps for a host that has not taken them.
Each says that something changed, so past this the oldest goes (with a warning): the
host learns of the change from a newer one, and a host that holds the stream open
without reading it neither grows without limit nor holds up the connection's answers."""


class Subscription:
    """One ``subscriptions/listen`` stream as the client sees it.

    ``settled`` is set once the server acknowledged it (``honoured`` then holds what it
    agreed to send) or it cannot start: the request failed or ended first, or the
    acknowledgement broke the schema (``failure`` says which).
    """

    def __init__(self, server: Implementation | None = None) -> None:
        self.server = server
        """Who acknowledges, to name in errors."""
        self.settled = anyio.Event()
        self.honoured: SubscriptionFilter | None = None
        self.failure: Exception | None = None
        self.send, self.receive = anyio.create_memory_object_stream[ServerNotification](
            LISTEN_NOTIFICATIONS_KEPT
        )
        self.dropping = False

    def ended(self, failure: Exception | None) -> None:
        """The ``subscriptions/listen`` request is over, with ``failure`` if it failed."""
        self.send.close()
        if self.honoured is None and self.failure is None:
            self.failure = failure or InvalidServerResultError(
                f"{describe_server(self.server)} ended 'subscriptions/listen' without "
                "acknowledging it; the specification has the acknowledgement come first. "
                "Report it to the server's authors.",
                {"method": "subscriptions/listen"},
            )
        self.settled.set()

    def _acknowledged(self, params: JSONObject | None) -> None:
        if self.settled.is_set():
            return
        try:
            acknowledged = SubscriptionsAcknowledgedNotificationParams.model_validate(params or {})
        except pydantic.ValidationError as exc:
            self.failure = InvalidServerResultError.from_validation(
                self.server,
                "subscriptions/listen",
                SubscriptionsAcknowledgedNotificationParams,
                exc,
            )
        else:
            self.honoured = acknowledged.notifications
        self.settled.set()

    async def deliver(self, method: str, params: JSONObject | None) -> None:
        if method == "notifications/subscriptions/acknowledged":
            self._acknowledged(params)
            return
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        try:
            notification = _NOTIFICATION_ADAPTER.validate_python(message)
        except ValueError:
            logger.debug("ignored unknown notification %r on a listen stream", method)
            return
        try:
            self.send.send_nowait(notification)
            if self.dropping and self._held() <= LISTEN_NOTIFICATIONS_KEPT // 4:
                self.dropping = False  # read again: a later flood is said again
        except anyio.WouldBlock:
            if not self.dropping:
                self.dropping = True
                logger.warning(
                    "a listen() stream holds %d notifications nobody has taken: the "
                    "oldest are dropped until it is read",
                    LISTEN_NOTIFICATIONS_KEPT,
                )
            self.receive.receive_nowait()
            self.send.send_nowait(notification)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def _held(self) -> int:
        return self.send.statistics().current_buffer_used


class ListenStream(ObjectReceiveStream[ServerNotification]):
    """What ``Client.listen()`` yields: the notifications of one ``subscriptions/listen``
    stream, to ``receive()`` or iterate (it ends when the server ends the subscription),
    and ``honoured``, what the server's acknowledgement agreed to send: the kinds asked
    for that it supports, so possibly less than was asked."""

    def __init__(
        self,
        notifications: MemoryObjectReceiveStream[ServerNotification],
        honoured: SubscriptionFilter,
    ) -> None:
        self._notifications = notifications
        self.honoured = honoured

    async def receive(self) -> ServerNotification:
        return await self._notifications.receive()

    def receive_nowait(self) -> ServerNotification:
        """The next notification if one is waiting; ``anyio.WouldBlock`` if none is."""
        return self._notifications.receive_nowait()

    async def aclose(self) -> None:
        self._notifications.close()


class InputRequiredRoundsExceededError(MCPError):
    """A request still needed input after ``input_required_max_rounds`` rounds."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


_FORMS_KEPT = 64


class InvalidServerResultError(MCPError):
    """The server answered with a result that breaks the MCP schema (a server bug).

    The message names the server, the method and the first problems; ``data`` holds
    them all (``server``, ``method``, ``problems``).
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INTERNAL_ERROR, message, data)

    @classmethod
    def from_validation(
        cls,
        server: Implementation | None,
        method: str,
        result_type: type[BaseModel],
        exc: pydantic.ValidationError,
    ) -> InvalidServerResultError:
        """The error for a ``method`` result that failed ``result_type``'s validation,
        naming the server and the first few problems."""
        problems = validation_problems(exc)
        return cls(
            f"{describe_server(server)} sent an invalid {result_type.__name__} for {method!r}: "
            f"{shown_problems(problems)}. The server breaks the MCP schema; report it to its "
            "authors.",
            {
                "server": server.to_wire() if server is not None else None,
                "method": method,
                "problems": problems,
            },
        )


def attention_of(responder: Responder) -> Attention | None:
    """The ``attention`` a responder (or one it wraps) exposes: a broker's responder
    shares its person with every connection it answers for."""
    while True:
        attention: object = getattr(responder, "attention", None)
        if isinstance(attention, Attention):
            return attention
        if not isinstance(responder, ResponderWrapper):
            return None
        responder = responder.inner


def describe_server(server: Implementation | None, *, starts_sentence: bool = True) -> str:
    """How errors name a server: ``The server 'Library' 1.0``, or just ``The server``
    (``the server ...`` inside a sentence)."""
    article = "The" if starts_sentence else "the"
    return f"{article} {server_name(server)}"


def server_name(server: Implementation | None) -> str:
    """A server's name after "the", in every error, log line and repr of the client:
    ``server 'Library' 1.0`` once it introduced itself, else ``server``. The name and
    version are the server's own words: see ``told_by_server``."""
    if server is None:
        return "server"
    name = told_by_server(server.name, quoted=True)
    version = told_by_server(server.version.strip())  # the official SDK's default is ""
    return f"server {name} {version}" if version else f"server {name}"


_MOST_CHARS_TOLD = 64
"""How much of a server's name or version is shown: enough for any real one."""


def told_by_server(text: str, *, quoted: bool = False) -> str:
    """``text`` the server said about itself, safe to print: cut to a readable length,
    and in ``repr``'s quotes, every character that is not printable (newline, escape
    sequence, bidi override) written out as ``\\n``, ``\\x1b``, ``\\u202e``, so a
    hostile server can neither forge a log line nor restyle a terminal, nor have its
    words (``1.0 (verified by answerback)``) read as answerback's. Without ``quoted``, a
    plain token (a version such as ``1.0.2-rc.1+build_7``) is shown without the quotes,
    and empty text as nothing: neither can be mistaken for anything else."""
    plain = not quoted and _PLAIN_TOKEN.fullmatch(text) is not None
    if len(text) > _MOST_CHARS_TOLD:
        text = text[: _MOST_CHARS_TOLD - 1] + "…"
    return text if plain else repr(text)


_PLAIN_TOKEN = re.compile(r"[0-9A-Za-z.+_-]*")


def _deliberate(exc: BaseException) -> bool:
    """Whether ``exc`` is the host's own words for the server: an ``MCPError`` raised in
    the host's code (alone, or alone in nested groups, as a task group raises it), or
    ``WrongAnswerType``, answerback's words naming only a function and types.

    An ``MCPError`` raised inside answerback is not: it came from another connection the
    host's code used (another server's error, a closed connection's stderr, a URL), and
    tells this server what is none of its business. (This session's own refusals, a
    busy client or bad params, are answers it returns, not exceptions.)"""
    while isinstance(exc, BaseExceptionGroup):
        inner: tuple[BaseException, ...] = cast("BaseExceptionGroup[BaseException]", exc).exceptions
        if len(inner) != 1:
            return False
        exc = inner[0]
    if isinstance(exc, WrongAnswerType):
        return True
    return isinstance(exc, MCPError) and not _raised_in_answerback(exc)


_PACKAGE = str(Path(__file__).resolve().parent.parent) + os.sep
"""Where answerback's own modules are, to tell where an exception was raised."""


def _raised_in_answerback(exc: BaseException) -> bool:
    """Whether ``exc`` was raised in answerback's code: the innermost frame of its
    traceback (where ``raise`` ran, however often it was re-raised since)."""
    trace = exc.__traceback__
    if trace is None:
        return False
    while trace.tb_next is not None:
        trace = trace.tb_next
    return str(Path(trace.tb_frame.f_code.co_filename).resolve()).startswith(_PACKAGE)


def _session_expired(exc: ConnectionClosedError) -> bool:
    data: object = exc.data
    return isinstance(data, dict) and cast(dict[str, Any], data).get("reason") == "session_expired"


_SERVER_REQUESTS = ("elicitation/create", "sampling/createMessage", "roots/list")


def _no_back_channel(exc: MCPError) -> MCPError | None:
    """``exc`` with advice added, if it is a 2026-07-28 server's -32600 for a tool that
    asked with a server-to-client request (the official SDK's ``ctx.elicit`` and friends),
    which this era cannot carry: only a legacy connection lets that tool ask. The advice
    goes into the message, as ``explain_refusal`` does on 2026-07-28, because the
    server's words give the host nothing to act on. Told apart by the words alone (no
    code says it), as the official SDK words it: ``tests/test_host_guidance.py`` runs
    that SDK's server to catch a rewording."""
    if exc.code != INVALID_REQUEST or not any(m in exc.message for m in _SERVER_REQUESTS):
        return None
    advice = (
        "answerback: the server's tool asks with a server-to-client request (as the "
        "official SDK's ctx.elicit does), which a 2026-07-28 connection cannot carry; "
        'connect to this server with Client(..., mode="legacy") so its tools can ask.'
    )
    message = f"{exc.message.rstrip()} {advice}"
    return MCPError.from_error_data(ErrorData(code=exc.code, message=message, data=exc.data))


def _mode_refusal(what: str, capability: str) -> ErrorData:
    """The answer to a request whose mode or part the client did not declare (-32602,
    as the specification asks for elicitation modes), naming the exact capability."""
    return ErrorData(
        code=INVALID_PARAMS,
        message=(
            f"{what} not supported: the client did not declare the {capability!r} "
            "capability. Ask only what the client declared."
        ),
        data={"reason": f"the client did not declare the {capability!r} capability"},
    )


def _unknown_elicitation_mode(params: JSONObject | None) -> ErrorData | None:
    """The -32602 answer to an elicitation in a mode this client does not know (a newer
    server's), naming it; ``None`` for form and URL mode and for params the parser
    refuses anyway."""
    mode: object = (params or {}).get("mode", "form")
    if not isinstance(mode, str) or mode in ("form", "url"):
        return None
    return ErrorData(
        code=INVALID_PARAMS,
        message=(
            f"Elicitation mode {mode[:64]!r} not supported: this client knows only the "
            "'form' and 'url' modes. Ask only in a mode the client declared."
        ),
        data={"reason": f"unknown elicitation mode {mode[:64]!r}"},
    )


class _Renewal:
    """A setting up again in progress: done, and whether it failed."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.failure: Exception | None = None


def _request_params(type_: Any, params: JSONObject | None) -> Any:
    """A server request's params parsed as ``type_``, or the -32602 naming every problem
    if they do not fit (the server's mistake, which it is told)."""
    try:
        return parse_as(type_, params or {})
    except pydantic.ValidationError as exc:
        return invalid_params(exc).error
