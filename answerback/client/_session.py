"""``ClientSession``: the client's half of one connection, over the JSON-RPC engine.

It sends typed requests, answers the server's requests through the user's callbacks,
and routes notifications to ``logging_callback`` or ``message_handler``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

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
from answerback.jsonrpc import Endpoint, Envelope, IncomingRequest, JSONObject, ProgressCallback
from answerback.types import (
    ClientCapabilities,
    ConnectionClosedError,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    InitializeResult,
    InvalidParamsError,
    ListRootsResult,
    LoggingMessageNotificationParams,
    MCPError,
    MCPModel,
    MethodNotFoundError,
    ServerNotification,
)
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
    ) -> None:
        self.capabilities = capabilities
        self._elicitation_callback = elicitation_callback
        self._sampling_callback = sampling_callback
        self._list_roots_callback = list_roots_callback
        self._logging_callback = logging_callback
        self._message_handler = message_handler
        self.read_timeout_seconds = read_timeout_seconds
        self._endpoint: Endpoint | None = None
        self.server: InitializeResult | None = None
        """What the server said about itself when the connection was set up."""
        self.on_session_expired: Callable[[], Awaitable[None]] | None = None
        """Sets the session up again after the server forgot it (set by ``Client``)."""

    def attach(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint

    @property
    def endpoint(self) -> Endpoint:
        if self._endpoint is None:
            raise RuntimeError("The session is not connected; use the Client as `async with`.")
        return self._endpoint

    # -- sending ---------------------------------------------------------------------

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
        """Send a request and parse its result; the timeout defaults to the client's.

        If the server forgot the session (HTTP 404), the session is set up again with
        ``on_session_expired`` and the request is sent once more.
        """
        wire = params.to_wire() if isinstance(params, MCPModel) else params
        timeout = timeout if timeout is not None else self.read_timeout_seconds
        try:
            raw = await self.endpoint.request(
                method, wire, timeout=timeout, cancellable=cancellable, on_progress=on_progress
            )
        except ConnectionClosedError as exc:
            if not _session_expired(exc) or self.on_session_expired is None:
                raise
            await self.on_session_expired()
            raw = await self.endpoint.request(
                method, wire, timeout=timeout, cancellable=cancellable, on_progress=on_progress
            )
        return result_type.model_validate(raw)

    async def send_notification(self, method: str, params: JSONObject | None = None) -> None:
        await self.endpoint.notify(method, params)

    # -- receiving -------------------------------------------------------------------

    async def handle_request(self, request: IncomingRequest) -> JSONObject:
        """Answer a server→client request through the matching callback."""
        context = ClientRequestContext(self, request.id, request.meta)
        answer: BaseModel
        if request.method == "ping":
            return {}
        if request.method == "elicitation/create":
            answer = await self.answer_elicitation(
                context, parse_as(ElicitRequestParams, request.params or {})
            )
        elif request.method == "sampling/createMessage":
            params = CreateMessageRequestParams.model_validate(request.params or {})
            answer = await self.answer_sampling(context, params)
        elif request.method == "roots/list":
            answer = await self.answer_list_roots(context)
        else:
            raise MethodNotFoundError(f"Method not found: {request.method!r}")
        if isinstance(answer, ErrorData):
            raise MCPError.from_error_data(answer)
        return answer.model_dump(mode="json", by_alias=True, exclude_none=True)

    async def answer_elicitation(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        if self._elicitation_callback is None:
            return refusal("Elicitation")
        answer = await self._elicitation_callback(context, params)
        return _expect(answer, ElicitResult, "elicitation_callback")

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
        """Route a server notification to its callback, or else to ``message_handler``."""
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


def _session_expired(exc: ConnectionClosedError) -> bool:
    data: object = exc.data
    return isinstance(data, dict) and cast(dict[str, Any], data).get("reason") == "session_expired"


def _expect(answer: Any, expected: type[ResultT], callback: str) -> ResultT | ErrorData:
    if isinstance(answer, expected | ErrorData):
        return answer
    raise TypeError(
        f"{callback} returned {type(answer).__name__}; it must return "
        f"{expected.__name__} or ErrorData."
    )
