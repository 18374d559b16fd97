"""``ClientSession``: the client's half of one connection, over the JSON-RPC engine.

It sends typed requests, answers the server's requests through the user's callbacks,
and routes notifications to ``logging_callback`` or ``message_handler``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, TypeVar, cast

import anyio
import pydantic
from pydantic import BaseModel, TypeAdapter

from answerback.client._callbacks import (
    ClientRequestContext,
    ElicitationCallback,
    ListRootsCallback,
    LoggingCallback,
    MessageHandler,
    SamplingCallback,
    refusal,
)
from answerback.client._url_elicitation import UrlElicitations
from answerback.jsonrpc import (
    Endpoint,
    Envelope,
    IncomingRequest,
    JSONObject,
    ProgressCallback,
    RequestId,
)
from answerback.jsonrpc._endpoint import as_object, error_from_exception
from answerback.types import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    ClientCapabilities,
    ConnectionClosedError,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    Implementation,
    InitializeResult,
    InputRequests,
    InputRequiredResult,
    InvalidParamsError,
    ListRootsResult,
    LoggingLevel,
    LoggingMessageNotificationParams,
    MCPError,
    MCPModel,
    MethodNotFoundError,
    ServerNotification,
)
from answerback.types._errors import INTERNAL_ERROR
from answerback.types._methods import parse_as
from answerback.types._sampling_rules import check_tool_balance

logger = logging.getLogger("answerback.client")

ResultT = TypeVar("ResultT", bound=BaseModel)

_NOTIFICATION_ADAPTER: TypeAdapter[ServerNotification] = TypeAdapter(ServerNotification)


class ClientSession:
    """One connection to a server, from the client's side."""

    def __init__(
        self,
        *,
        capabilities: ClientCapabilities,
        elicitation_callback: ElicitationCallback | None = None,
        sampling_callback: SamplingCallback | None = None,
        list_roots_callback: ListRootsCallback | None = None,
        logging_callback: LoggingCallback | None = None,
        message_handler: MessageHandler | None = None,
        read_timeout_seconds: float | None = None,
        client_info: Implementation,
        log_level: LoggingLevel | None = None,
        max_input_requests: int = 32,
    ) -> None:
        self.capabilities = capabilities
        self.client_info = client_info
        self.log_level: LoggingLevel | None = log_level
        self._elicitation_callback = elicitation_callback
        self._sampling_callback = sampling_callback
        self._list_roots_callback = list_roots_callback
        self._logging_callback = logging_callback
        self._message_handler = message_handler
        self.read_timeout_seconds = read_timeout_seconds
        self.max_input_requests = max_input_requests
        """The most questions one 2026-07-28 round may ask; a server asking more is refused."""
        self._endpoint: Endpoint | None = None
        self.server: InitializeResult | None = None
        """What the server said about itself in ``initialize`` (legacy era)."""
        self.server_info: Implementation | None = None
        """Who the server is (either era), to name it in errors; set by ``Client``."""
        self.on_tools_changed: Callable[[], None] | None = None
        """Called when the server says its tool list changed (set by ``Client``)."""
        self.on_session_expired: Callable[[], Awaitable[None]] | None = None
        """Sets the session up again after the server forgot it (set by ``Client``)."""
        self.modern_version: str | None = None
        """The 2026-07-28-era version in use, or ``None`` on a legacy connection."""
        self.listeners: dict[RequestId, Subscription] = {}
        """Open ``subscriptions/listen`` streams, by the id of the request that opened them."""
        self.url_elicitations = UrlElicitations()
        """URL-mode elicitation: verdicts, completions, -32042 (``Client`` may replace it)."""

    def attach(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint

    @property
    def endpoint(self) -> Endpoint:
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
        meta: JSONObject = {
            **stamped.get("_meta", {}),
            META_PROTOCOL_VERSION: self.modern_version,
            META_CLIENT_CAPABILITIES: self.capabilities.to_wire(),
            META_CLIENT_INFO: self.client_info.to_wire(),
        }
        if self.log_level is not None:
            meta[META_LOG_LEVEL] = self.log_level
        stamped["_meta"] = meta
        return stamped

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
    ) -> JSONObject:
        """Send a request (stamped for the era) and return the raw result object.

        If the server forgot the session (HTTP 404), the session is set up again with
        ``on_session_expired`` and the request is sent once more.
        """
        timeout = timeout if timeout is not None else self.read_timeout_seconds

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
            if not _session_expired(exc) or self.on_session_expired is None:
                raise
            await self.on_session_expired()
            return await send()

    async def send_request(
        self,
        method: str,
        params: MCPModel | JSONObject | None,
        result_type: type[ResultT],
        *,
        timeout: float | None = None,
        cancellable: bool = True,
        on_progress: ProgressCallback | None = None,
    ) -> ResultT:
        """Send a request and parse its result; the timeout defaults to the client's."""
        wire = params.to_wire() if isinstance(params, MCPModel) else params
        raw = await self.request_raw(
            method, wire, timeout=timeout, cancellable=cancellable, on_progress=on_progress
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
        server = describe_server(self.server_info)
        if not needed.input_requests and needed.request_state is None:
            raise InvalidServerResultError(
                f"{server} answered {method!r} with an InputRequiredResult holding neither "
                "inputRequests nor requestState; the specification requires at least one, "
                "so there is nothing to retry with. Report it to the server's authors.",
                {"method": method},
            )
        asked = len(needed.input_requests or {})
        if asked > self.max_input_requests:
            raise InvalidServerResultError(
                f"{server} asked {asked} questions in one round of {method!r}; this client "
                f"answers at most {self.max_input_requests} at once. Raise "
                "Client(max_input_requests=...) if the server legitimately needs more.",
                {"method": method, "inputRequests": asked},
            )
        return needed

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
        with the answers and the echoed ``requestState``, a fresh request each round."""
        attempt = dict(params)
        state_only_rounds = 0
        for _ in range(max_rounds + 1):
            raw = await self.request_raw(
                method,
                attempt,
                timeout=timeout,
                on_progress=on_progress,
                transport_context=transport_context,
            )
            if raw.get("resultType") != "input_required":
                return self.complete_result(method, raw, result_type)
            needed = self.input_required(method, raw)
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
        raise InputRequiredRoundsExceededError(
            f"{method!r} still needed input after {max_rounds} rounds; giving up. The server "
            "may be asking in a loop; raise input_required_max_rounds if it legitimately "
            "needs more."
        )

    async def answer_input_requests(self, input_requests: InputRequests) -> JSONObject:
        """Answer a round's input requests through the callbacks, keyed as asked.

        A callback's ``ErrorData`` refuses the whole request, and a callback that raises
        or returns the wrong type fails it with the internal error the legacy path would
        have sent the server (the original exception is chained): the call fails the
        same way in both eras.
        """
        responses: JSONObject = {}
        for key, input_request in input_requests.items():
            wire = input_request.model_dump(mode="json", by_alias=True, exclude_none=True)
            params = as_object(wire.get("params"))
            meta = as_object(params.get("_meta")) if params is not None else None
            context = ClientRequestContext(self, key, meta)
            try:
                answer = await self._answer(context, input_request.method, params)
            except MCPError:
                raise
            except Exception as exc:
                raise MCPError.from_error_data(error_from_exception(exc)) from exc
            if isinstance(answer, ErrorData):
                raise MCPError.from_error_data(answer)
            responses[key] = answer.model_dump(mode="json", by_alias=True, exclude_none=True)
        return responses

    async def send_notification(self, method: str, params: JSONObject | None = None) -> None:
        await self.endpoint.notify(method, params)

    # -- receiving -------------------------------------------------------------------

    async def handle_request(self, request: IncomingRequest) -> JSONObject:
        """Answer a server→client request through the matching callback."""
        if request.method == "ping":
            return {}
        context = ClientRequestContext(self, request.id, request.meta)
        answer = await self._answer(context, request.method, request.params)
        if isinstance(answer, ErrorData):
            raise MCPError.from_error_data(answer)
        return answer.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def _answer(
        self, context: ClientRequestContext, method: str, params: JSONObject | None
    ) -> BaseModel:
        """One server question answered by its callback (both eras come through here)."""
        if method == "elicitation/create":
            elicit_params = parse_as(ElicitRequestParams, params or {})
            return await self.answer_elicitation(context, elicit_params)
        if method == "sampling/createMessage":
            sampling_params = CreateMessageRequestParams.model_validate(params or {})
            return await self.answer_sampling(context, sampling_params)
        if method == "roots/list":
            return await self.answer_list_roots(context)
        raise MethodNotFoundError(f"Method not found: {method!r}")

    async def answer_elicitation(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        if self._elicitation_callback is None:
            return refusal("Elicitation")
        if isinstance(params, ElicitRequestURLParams):
            context = replace(context, url_verdict=self.url_elicitations.admit(params))
        answer = _expect(
            await self._elicitation_callback(context, params), ElicitResult, "elicitation_callback"
        )
        if isinstance(params, ElicitRequestFormParams) and isinstance(answer, ElicitResult):
            return _with_defaults(answer, params.requested_schema)
        return answer

    async def answer_sampling(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        if self._sampling_callback is None:
            return refusal("Sampling")
        sampling = self.capabilities.sampling
        if (params.tools or params.tool_choice) and (sampling is None or sampling.tools is None):
            raise InvalidParamsError(
                "The server sent tools in a sampling request, but this client did not declare "
                "sampling.tools (pass sampling_capabilities to Client to accept them)."
            )
        check_tool_balance(params.messages)
        answer = await self._sampling_callback(context, params)
        return _expect(answer, CreateMessageResult, "sampling_callback")

    async def answer_list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        if self._list_roots_callback is None:
            return refusal("List roots")
        answer = await self._list_roots_callback(context)
        return _expect(answer, ListRootsResult, "list_roots_callback")

    async def handle_notification(
        self, method: str, params: JSONObject | None, envelope: Envelope
    ) -> None:
        """Route a server notification to its callback, or else to ``message_handler``.

        Notifications of a ``listen()`` stream go to that stream only; its
        acknowledgement is consumed there. A tool list change, on the session or on a
        stream, first makes the client forget what it learned from the old list.
        """
        if method == "notifications/tools/list_changed" and self.on_tools_changed is not None:
            self.on_tools_changed()
        if method == "notifications/elicitation/complete":
            await self.url_elicitations.completed(params)
        meta = as_object((params or {}).get("_meta"))
        subscription = meta.get("io.modelcontextprotocol/subscriptionId") if meta else None
        listener = self.listeners.get(subscription) if isinstance(subscription, str | int) else None
        if listener is not None:
            await listener.deliver(method, params)
            return
        if method == "notifications/message" and self._logging_callback is not None:
            await self._logging_callback(
                LoggingMessageNotificationParams.model_validate(params or {})
            )
            return
        if self._message_handler is None:
            return
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        try:
            notification = _NOTIFICATION_ADAPTER.validate_python(message)
        except ValueError:
            logger.debug("ignored unknown or malformed notification %r", method)
            return
        await self._message_handler(notification)

    async def handle_transport_error(self, exc: Exception) -> None:
        if self._message_handler is not None:
            await self._message_handler(exc)
        else:
            logger.warning("transport error: %s", exc)


class Subscription:
    """One ``subscriptions/listen`` stream as the client sees it."""

    def __init__(self) -> None:
        self.acknowledged = anyio.Event()
        self.send, self.receive = anyio.create_memory_object_stream[ServerNotification](math.inf)

    async def deliver(self, method: str, params: JSONObject | None) -> None:
        if method == "notifications/subscriptions/acknowledged":
            self.acknowledged.set()
            return
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        try:
            await self.send.send(_NOTIFICATION_ADAPTER.validate_python(message))
        except ValueError:
            logger.debug("ignored unknown notification %r on a listen stream", method)
        except anyio.ClosedResourceError:
            pass


class InputRequiredRoundsExceededError(MCPError):
    """A request still needed input after ``input_required_max_rounds`` rounds."""

    def __init__(self, message: str) -> None:
        super().__init__(INTERNAL_ERROR, message)


_PROBLEMS_SHOWN = 3


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
        problems = [_problem(error) for error in exc.errors(include_url=False)]
        shown = "; ".join(problems[:_PROBLEMS_SHOWN])
        if len(problems) > _PROBLEMS_SHOWN:
            shown += f"; and {len(problems) - _PROBLEMS_SHOWN} more"
        return cls(
            f"{describe_server(server)} sent an invalid {result_type.__name__} for {method!r}: "
            f"{shown}. The server breaks the MCP schema; report it to its authors.",
            {
                "server": server.to_wire() if server is not None else None,
                "method": method,
                "problems": problems,
            },
        )


def describe_server(server: Implementation | None) -> str:
    """How errors name a server: ``The server 'Library' 1.0``, or just ``The server``."""
    if server is None:
        return "The server"
    return f"The server {server.name!r} {server.version}"


def _problem(error: Any) -> str:
    where = ".".join(str(part) for part in error["loc"]) or "result"
    got = repr(error.get("input"))
    if len(got) > 40:
        got = got[:37] + "..."
    return f"{where}: {error['msg']} (got {got})"


def _session_expired(exc: ConnectionClosedError) -> bool:
    data: object = exc.data
    return isinstance(data, dict) and cast(dict[str, Any], data).get("reason") == "session_expired"


def _with_defaults(answer: ElicitResult, schema: JSONObject) -> ElicitResult:
    """An accepted form answer with the schema's defaults filled in for omitted fields
    (SEP-1034), so a callback may accept a form it showed pre-filled as it is."""
    if answer.action != "accept":
        return answer
    content = dict(answer.content or {})
    properties = as_object(schema.get("properties")) or {}
    for name, raw in properties.items():
        prop = as_object(raw)
        if prop is not None and "default" in prop and name not in content:
            content[name] = prop["default"]
    return answer.model_copy(update={"content": content})


def _expect(answer: Any, expected: type[ResultT], callback: str) -> ResultT | ErrorData:
    if isinstance(answer, expected | ErrorData):
        return answer
    raise TypeError(
        f"{callback} returned {type(answer).__name__}; it must return "
        f"{expected.__name__} or ErrorData."
    )
