"""Wire models that exist only in the 2026-07-28 generation.

No handshake: ``server/discover`` replaces ``initialize`` and every request carries its
protocol version and client capabilities in ``_meta`` (see ``RequestParamsMeta``). No
server-to-client requests: a server that needs input answers with an
``InputRequiredResult`` and the client retries with ``inputResponses``. Models that both
generations share, with 2026 fields as optional extras, live in ``_models``; the
multi-round-trip answer types are defined there (the retried request params need them)
and re-exported here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Field

from answerback.types._base import MCPModel
from answerback.types._models import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    CacheableResult,
    ClientCapabilities,
    CreateMessageRequest,
    ElicitRequest,
    Implementation,
    InputResponse,
    InputResponseRequestParams,
    InputResponses,
    ListRootsRequest,
    NotificationParams,
    RequestParams,
    RequestParamsMeta,
    Result,
    ServerCapabilities,
)

__all__ = [
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "RESULT_TYPE_COMPLETE",
    "RESULT_TYPE_INPUT_REQUIRED",
    "DiscoverRequest",
    "DiscoverRequestParams",
    "DiscoverResult",
    "InputRequest",
    "InputRequests",
    "InputRequiredResult",
    "InputResponse",
    "InputResponseRequestParams",
    "InputResponses",
    "MissingRequiredClientCapabilityErrorData",
    "RequestMetaObject",
    "ResultType",
    "SubscriptionFilter",
    "SubscriptionsAcknowledgedNotification",
    "SubscriptionsAcknowledgedNotificationParams",
    "SubscriptionsListenRequest",
    "SubscriptionsListenRequestParams",
    "SubscriptionsListenResult",
    "UnsupportedProtocolVersionErrorData",
]

ResultType: TypeAlias = Literal["complete", "input_required"]
"""How to read a 2026 result; an absent ``resultType`` (older server) means complete."""

RESULT_TYPE_COMPLETE: ResultType = "complete"
RESULT_TYPE_INPUT_REQUIRED: ResultType = "input_required"

RequestMetaObject: TypeAlias = RequestParamsMeta
"""The schema's name for a request's ``_meta``."""


# --- Discovery ---------------------------------------------------------------------------


class DiscoverRequestParams(RequestParams):
    """Params of ``server/discover``: only the per-request ``_meta``."""


class DiscoverRequest(MCPModel):
    """Asks a modern server what it supports; replaces the legacy handshake."""

    method: Literal["server/discover"] = "server/discover"
    params: DiscoverRequestParams


class DiscoverResult(CacheableResult):
    """The server's versions, capabilities and instructions; server info rides in _meta."""

    supported_versions: list[str]
    capabilities: ServerCapabilities
    instructions: str | None = None

    @property
    def server_info(self) -> Implementation | None:
        """The server's ``Implementation`` from ``_meta``, if it sent one."""
        raw = (self.meta or {}).get(META_SERVER_INFO)
        return None if raw is None else Implementation.model_validate(raw)


# --- Multi-round-trip requests -----------------------------------------------------------

InputRequest: TypeAlias = Annotated[
    CreateMessageRequest | ListRootsRequest | ElicitRequest,
    Field(discriminator="method"),
]
"""One thing the server needs from the client before it can finish a request."""

InputRequests: TypeAlias = dict[str, InputRequest]
"""Input requests keyed by server-chosen ids; answers come back under the same keys."""


class InputRequiredResult(MCPModel):
    """Server needs input first: answer ``input_requests`` and retry the request."""

    result_type: Literal["input_required"] = "input_required"
    input_requests: InputRequests | None = None
    request_state: str | None = None
    meta: dict[str, Any] | None = None


# --- Subscriptions -----------------------------------------------------------------------


class SubscriptionFilter(MCPModel):
    """Which notifications a ``subscriptions/listen`` stream should carry."""

    tools_list_changed: bool | None = None
    prompts_list_changed: bool | None = None
    resources_list_changed: bool | None = None
    resource_subscriptions: list[str] | None = None


class SubscriptionsListenRequestParams(RequestParams):
    """What to listen for."""

    notifications: SubscriptionFilter


class SubscriptionsListenRequest(MCPModel):
    """Opens a long-lived stream of the notifications the client asked for."""

    method: Literal["subscriptions/listen"] = "subscriptions/listen"
    params: SubscriptionsListenRequestParams


class SubscriptionsListenResult(Result):
    """Sent only when the server ends a listen stream gracefully; id is in ``_meta``."""


class SubscriptionsAcknowledgedNotificationParams(NotificationParams):
    """The notifications the server agreed to send on this stream."""

    notifications: SubscriptionFilter


class SubscriptionsAcknowledgedNotification(MCPModel):
    """First message of a listen stream: what the server will actually send."""

    method: Literal["notifications/subscriptions/acknowledged"] = (
        "notifications/subscriptions/acknowledged"
    )
    params: SubscriptionsAcknowledgedNotificationParams


# --- Error data --------------------------------------------------------------------------


class MissingRequiredClientCapabilityErrorData(MCPModel):
    """``data`` of error -32021: the capabilities the request needs the client to declare."""

    required_capabilities: ClientCapabilities


class UnsupportedProtocolVersionErrorData(MCPModel):
    """``data`` of error -32022: what the server supports and what it was asked for."""

    supported: list[str]
    requested: str
