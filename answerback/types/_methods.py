"""Which model is which method: the message unions and the tables the engine parses by.

The JSON-RPC layer hands over a method name and a plain ``params`` dict; these tables say
which params model to validate it with and which result model the answer is. The tables
cover both generations; ``_versions`` says which methods a given version has.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeAlias, cast

from pydantic import Field, TypeAdapter

from answerback.types._base import MCPModel
from answerback.types._models import (
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    CancelledNotification,
    CancelledNotificationParams,
    CompleteRequest,
    CompleteRequestParams,
    CompleteResult,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationCompleteNotification,
    ElicitationCompleteNotificationParams,
    ElicitRequest,
    ElicitRequestParams,
    ElicitResult,
    EmptyResult,
    GetPromptRequest,
    GetPromptRequestParams,
    GetPromptResult,
    InitializedNotification,
    InitializeRequest,
    InitializeRequestParams,
    InitializeResult,
    ListPromptsRequest,
    ListPromptsResult,
    ListResourcesRequest,
    ListResourcesResult,
    ListResourceTemplatesRequest,
    ListResourceTemplatesResult,
    ListRootsRequest,
    ListRootsResult,
    ListToolsRequest,
    ListToolsResult,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    NotificationParams,
    PaginatedRequestParams,
    PingRequest,
    ProgressNotification,
    ProgressNotificationParams,
    PromptListChangedNotification,
    ReadResourceRequest,
    ReadResourceRequestParams,
    ReadResourceResult,
    RequestParams,
    ResourceListChangedNotification,
    ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams,
    Result,
    RootsListChangedNotification,
    SetLevelRequest,
    SetLevelRequestParams,
    SubscribeRequest,
    SubscribeRequestParams,
    ToolListChangedNotification,
    UnsubscribeRequest,
    UnsubscribeRequestParams,
)
from answerback.types._modern import (
    DiscoverRequest,
    DiscoverRequestParams,
    DiscoverResult,
    InputRequiredResult,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequest,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
)

# --- Unions ------------------------------------------------------------------------------

ClientRequest: TypeAlias = Annotated[
    InitializeRequest
    | PingRequest
    | DiscoverRequest
    | ListResourcesRequest
    | ListResourceTemplatesRequest
    | ReadResourceRequest
    | SubscribeRequest
    | UnsubscribeRequest
    | SubscriptionsListenRequest
    | ListPromptsRequest
    | GetPromptRequest
    | ListToolsRequest
    | CallToolRequest
    | SetLevelRequest
    | CompleteRequest,
    Field(discriminator="method"),
]
"""Any request a client sends, in either generation."""

ServerRequest: TypeAlias = Annotated[
    PingRequest | CreateMessageRequest | ListRootsRequest | ElicitRequest,
    Field(discriminator="method"),
]
"""Any request a legacy server sends to its client."""

ClientNotification: TypeAlias = Annotated[
    CancelledNotification
    | InitializedNotification
    | ProgressNotification
    | RootsListChangedNotification,
    Field(discriminator="method"),
]
"""Any notification a client sends."""

ServerNotification: TypeAlias = Annotated[
    CancelledNotification
    | ProgressNotification
    | LoggingMessageNotification
    | ResourceListChangedNotification
    | ResourceUpdatedNotification
    | PromptListChangedNotification
    | ToolListChangedNotification
    | ElicitationCompleteNotification
    | SubscriptionsAcknowledgedNotification,
    Field(discriminator="method"),
]
"""Any notification a server sends."""

ClientResult: TypeAlias = CreateMessageResult | ListRootsResult | ElicitResult | EmptyResult
"""Any result a client returns. For annotations: results carry no tag, parse by method."""

ServerResult: TypeAlias = (
    InitializeResult
    | DiscoverResult
    | InputRequiredResult
    | ListResourcesResult
    | ListResourceTemplatesResult
    | ReadResourceResult
    | SubscriptionsListenResult
    | ListPromptsResult
    | GetPromptResult
    | ListToolsResult
    | CallToolResult
    | CompleteResult
    | EmptyResult
)
"""Any result a server returns. For annotations: results carry no tag, parse by method."""

# --- Tables ------------------------------------------------------------------------------

RequestTypes: TypeAlias = dict[str, tuple[Any, type[Result]]]
"""method -> (params type, result model). The params type is a model class, or for
``elicitation/create`` the ``ElicitRequestParams`` union; validate it with ``parse_as``."""

NotificationTypes: TypeAlias = dict[str, type[MCPModel]]
"""method -> params model."""

CLIENT_REQUEST_TYPES: RequestTypes = {
    "initialize": (InitializeRequestParams, InitializeResult),
    "ping": (RequestParams, EmptyResult),
    "server/discover": (DiscoverRequestParams, DiscoverResult),
    "tools/list": (PaginatedRequestParams, ListToolsResult),
    "tools/call": (CallToolRequestParams, CallToolResult),
    "prompts/list": (PaginatedRequestParams, ListPromptsResult),
    "prompts/get": (GetPromptRequestParams, GetPromptResult),
    "resources/list": (PaginatedRequestParams, ListResourcesResult),
    "resources/templates/list": (PaginatedRequestParams, ListResourceTemplatesResult),
    "resources/read": (ReadResourceRequestParams, ReadResourceResult),
    "resources/subscribe": (SubscribeRequestParams, EmptyResult),
    "resources/unsubscribe": (UnsubscribeRequestParams, EmptyResult),
    "subscriptions/listen": (SubscriptionsListenRequestParams, SubscriptionsListenResult),
    "completion/complete": (CompleteRequestParams, CompleteResult),
    "logging/setLevel": (SetLevelRequestParams, EmptyResult),
}
"""Requests a client sends to a server."""

SERVER_REQUEST_TYPES: RequestTypes = {
    "ping": (RequestParams, EmptyResult),
    "elicitation/create": (ElicitRequestParams, ElicitResult),
    "sampling/createMessage": (CreateMessageRequestParams, CreateMessageResult),
    "roots/list": (RequestParams, ListRootsResult),
}
"""Requests a legacy server sends to its client; in 2026 the same shapes are input requests."""

PERSON_FACING_METHODS: frozenset[str] = frozenset({"elicitation/create", "sampling/createMessage"})
"""Server requests a person (or a model) answers, which may take long: the client bounds
how many it answers at once, and does not hold the server's streams for them (``ping``
and ``roots/list`` need no one)."""

CLIENT_NOTIFICATION_TYPES: NotificationTypes = {
    "notifications/cancelled": CancelledNotificationParams,
    "notifications/initialized": NotificationParams,
    "notifications/progress": ProgressNotificationParams,
    "notifications/roots/list_changed": NotificationParams,
}
"""Notifications a client sends."""

SERVER_NOTIFICATION_TYPES: NotificationTypes = {
    "notifications/cancelled": CancelledNotificationParams,
    "notifications/progress": ProgressNotificationParams,
    "notifications/message": LoggingMessageNotificationParams,
    "notifications/resources/list_changed": NotificationParams,
    "notifications/resources/updated": ResourceUpdatedNotificationParams,
    "notifications/prompts/list_changed": NotificationParams,
    "notifications/tools/list_changed": NotificationParams,
    "notifications/elicitation/complete": ElicitationCompleteNotificationParams,
    "notifications/subscriptions/acknowledged": SubscriptionsAcknowledgedNotificationParams,
}
"""Notifications a server sends."""

INPUT_REQUIRED_METHODS: frozenset[str] = frozenset({"tools/call", "prompts/get", "resources/read"})
"""Methods whose 2026 result may be an ``InputRequiredResult`` (and whose params take
``inputResponses`` / ``requestState`` on retry)."""

_ELICIT_PARAMS_ADAPTER: TypeAdapter[ElicitRequestParams] = TypeAdapter(ElicitRequestParams)


def parse_as(type_: Any, data: Any) -> Any:
    """Validate ``data`` as ``type_``: a model class or a union alias from these tables."""
    if isinstance(type_, type) and issubclass(type_, MCPModel):
        return type_.model_validate(data)
    if type_ is ElicitRequestParams:
        return _ELICIT_PARAMS_ADAPTER.validate_python(data)
    return TypeAdapter[Any](cast(Any, type_)).validate_python(data)
