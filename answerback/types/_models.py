"""Wire models shared by both protocol generations.

One model per schema ``$defs`` entry, named as the schema names it. Where 2026-07-28 added
or dropped a field, the model carries it as optional, so one class serves both eras and
the engine decides what to put on the wire. Request and notification models carry
``method`` and ``params`` only: the JSON-RPC envelope (``jsonrpc``, ``id``) belongs to the
JSON-RPC layer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias

from pydantic import Discriminator, Field, FileUrl, Tag

from answerback.types._base import MCPModel, optional_field

# --- Aliases and constants ---------------------------------------------------------------

ProgressToken: TypeAlias = str | int
RequestId: TypeAlias = str | int
Cursor: TypeAlias = str
Role: TypeAlias = Literal["user", "assistant"]
LoggingLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
TaskStatus: TypeAlias = Literal["working", "input_required", "completed", "failed", "cancelled"]
IncludeContext: TypeAlias = Literal["none", "thisServer", "allServers"]
CacheScope: TypeAlias = Literal["public", "private"]
ElicitationContentValue: TypeAlias = str | int | float | bool | list[str] | None
_UnitInterval: TypeAlias = Annotated[float, Field(ge=0, le=1)]
"""A number from 0 to 1, both included (priorities and weights, as the schema bounds them)."""

MAX_COMPLETION_VALUES = 100
"""The most values one ``Completion`` may carry; ``total`` and ``hasMore`` tell of more."""

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
"""Request ``_meta`` key (2026-07-28): the protocol version this request speaks."""
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
"""Request ``_meta`` key (2026-07-28): the client's capabilities for this request."""
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
"""Request ``_meta`` key (2026-07-28): the client's ``Implementation``."""
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
"""Request ``_meta`` key (2026-07-28): opt in to log notifications at this level and up."""
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
"""Result ``_meta`` key (2026-07-28): the server's ``Implementation``."""
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
"""Notification/result ``_meta`` key (2026-07-28): the ``subscriptions/listen`` stream id."""


# --- Base shapes -------------------------------------------------------------------------


class BaseMetadata(MCPModel):
    """Name and display title shared by tools, prompts, resources and implementations."""

    name: str
    title: str | None = None


class Icon(MCPModel):
    """An image a client may show next to a server, tool, prompt or resource."""

    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | str | None = None
    """``"light"`` or ``"dark"`` today; a newer server's value is kept as it came (a hint)."""


class Icons(MCPModel):
    """Mixin shape for anything that can carry icons."""

    icons: list[Icon] | None = None


class Implementation(BaseMetadata):
    """Who is on the other end: name and version of a client or server."""

    version: str
    description: str | None = None
    icons: list[Icon] | None = None
    website_url: str | None = None


class Annotations(MCPModel):
    """Hints to the client about who a piece of content is for and how much it matters."""

    audience: list[Role | str] | None = None
    """``"user"`` and/or ``"assistant"`` today; a newer server's value is kept as it came."""
    priority: _UnitInterval | None = None
    """0 (least important) to 1 (effectively required)."""
    last_modified: str | None = None


# --- Capabilities ------------------------------------------------------------------------


class ElicitationCapability(MCPModel):
    """Client can ask its user questions; ``form`` and ``url`` say which modes."""

    form: dict[str, Any] | None = None
    url: dict[str, Any] | None = None


class SamplingContextCapability(MCPModel):
    """Client honours ``includeContext`` other than ``"none"`` (soft-deprecated)."""


class SamplingToolsCapability(MCPModel):
    """Client's sampler accepts ``tools`` and ``toolChoice``."""


class SamplingCapability(MCPModel):
    """Client can run its language model for the server."""

    context: SamplingContextCapability | None = None
    tools: SamplingToolsCapability | None = None


class RootsCapability(MCPModel):
    """Client can tell the server which directories it may work in."""

    list_changed: bool | None = None


class ClientCapabilities(MCPModel):
    """What a client can answer: the mirror image of the callbacks it registered."""

    experimental: dict[str, dict[str, Any]] | None = None
    extensions: dict[str, dict[str, Any]] | None = None
    roots: RootsCapability | None = None
    sampling: SamplingCapability | None = None
    elicitation: ElicitationCapability | None = None
    tasks: dict[str, Any] | None = None


class LoggingCapability(MCPModel):
    """Server sends log messages."""


class CompletionsCapability(MCPModel):
    """Server offers argument completion."""


class PromptsCapability(MCPModel):
    """Server offers prompts."""

    list_changed: bool | None = None


class ResourcesCapability(MCPModel):
    """Server offers resources."""

    subscribe: bool | None = None
    list_changed: bool | None = None


class ToolsCapability(MCPModel):
    """Server offers tools."""

    list_changed: bool | None = None


class ServerCapabilities(MCPModel):
    """What a server offers, as declared at initialize or discovery."""

    experimental: dict[str, dict[str, Any]] | None = None
    extensions: dict[str, dict[str, Any]] | None = None
    logging: LoggingCapability | None = None
    completions: CompletionsCapability | None = None
    prompts: PromptsCapability | None = None
    resources: ResourcesCapability | None = None
    tools: ToolsCapability | None = None
    tasks: dict[str, Any] | None = None


# --- Request / result / notification bases -----------------------------------------------


def _meta_key(key: str) -> Any:
    # Explicit wire names rather than ``alias=`` so type checkers keep the Python names
    # as constructor parameters.
    return optional_field(validation_alias=key, serialization_alias=key)


class RequestParamsMeta(MCPModel):
    """The ``_meta`` of a request: progress token, and in 2026 the per-request handshake."""

    progress_token: ProgressToken | None = None
    protocol_version: str | None = _meta_key(META_PROTOCOL_VERSION)
    client_capabilities: ClientCapabilities | None = _meta_key(META_CLIENT_CAPABILITIES)
    client_info: Implementation | None = _meta_key(META_CLIENT_INFO)
    log_level: LoggingLevel | None = _meta_key(META_LOG_LEVEL)


class RequestParams(MCPModel):
    """Params every request may carry: just ``_meta``."""

    meta: RequestParamsMeta | None = None


class TaskMetadata(MCPModel):
    """Asks the receiver to run a request as a task (experimental, 2025-11-25 only)."""

    ttl: int | None = None


class TaskAugmentedRequestParams(RequestParams):
    """Params of a request that may be run as a task (experimental, 2025-11-25 only)."""

    task: TaskMetadata | None = None


class PaginatedRequestParams(RequestParams):
    """Params of a list request: where to continue."""

    cursor: Cursor | None = None


class NotificationParams(MCPModel):
    """Params every notification may carry: just ``_meta``."""

    meta: dict[str, Any] | None = None


class Result(MCPModel):
    """Base of every result; ``result_type`` is set by 2026-07-28 servers only."""

    meta: dict[str, Any] | None = None
    result_type: str | None = None


class EmptyResult(Result):
    """The answer to requests that only need acknowledging (ping, subscribe, setLevel)."""


class PaginatedResult(Result):
    """A page of a list; ``next_cursor`` is absent on the last page."""

    next_cursor: Cursor | None = None


class CacheableResult(Result):
    """A result that 2026-07-28 servers mark with a client-side cache lifetime."""

    ttl_ms: Annotated[int, Field(ge=0)] | None = None
    """Milliseconds a client may cache the result for; 0 means do not reuse it."""
    cache_scope: CacheScope | None = None


class Request(MCPModel):
    """Any request by method name; for methods this package has no model for."""

    method: str
    params: dict[str, Any] | None = None


class Notification(MCPModel):
    """Any notification by method name; for methods this package has no model for."""

    method: str
    params: dict[str, Any] | None = None


# --- Content -----------------------------------------------------------------------------


class TextContent(MCPModel):
    """Plain text for a model or a person."""

    type: Literal["text"] = "text"
    text: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


class ImageContent(MCPModel):
    """A base64-encoded image."""

    type: Literal["image"] = "image"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


class AudioContent(MCPModel):
    """Base64-encoded audio."""

    type: Literal["audio"] = "audio"
    data: str
    mime_type: str
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


class ResourceContents(MCPModel):
    """The common part of a resource's contents."""

    uri: str
    mime_type: str | None = None
    meta: dict[str, Any] | None = None


class TextResourceContents(ResourceContents):
    """A resource's contents as text."""

    text: str


class BlobResourceContents(ResourceContents):
    """A resource's contents as base64-encoded bytes."""

    blob: str


def _contents_kind(value: Any) -> str:
    """The tag of a resource's contents: ``"text"`` or ``"blob"`` by the field that holds
    them, ``"unknown"`` when neither is there (a newer server's kind)."""
    if isinstance(value, dict):
        data: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        if data.get("text") is not None:
            return "text"
        if "blob" in data:  # a null ``text`` beside a blob is taken as absent
            return "blob"
        return "text" if "text" in data else "unknown"
    if isinstance(value, TextResourceContents):
        return "text"
    return "blob" if isinstance(value, BlobResourceContents) else "unknown"


AnyResourceContents: TypeAlias = Annotated[
    Annotated[TextResourceContents, Tag("text")]
    | Annotated[BlobResourceContents, Tag("blob")]
    | Annotated[ResourceContents, Tag("unknown")],
    Discriminator(_contents_kind),
]
"""A resource's contents as read or embedded: text, a blob, or, for contents with
neither (a newer server's kind), the common ``ResourceContents`` keeping every other
field in ``model_extra``. Contents with ``text`` or ``blob`` that break their schema are
still an error: only the field present decides."""


class EmbeddedResource(MCPModel):
    """A resource's contents inlined into a message."""

    type: Literal["resource"] = "resource"
    resource: AnyResourceContents
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


class Resource(BaseMetadata):
    """Something a server can be asked to read, listed by ``resources/list``."""

    uri: str
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None


class ResourceLink(Resource):
    """A pointer to a resource inside a tool result or prompt, without its contents."""

    type: Literal["resource_link"] = "resource_link"


class ToolUseContent(MCPModel):
    """The model asks to call a tool (sampling with tools)."""

    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, Any]
    meta: dict[str, Any] | None = None


class UnknownContent(MCPModel):
    """A content block of a ``type`` this answerback does not know, kept as it came.

    A newer server (or an extension) may send kinds of content that did not exist when
    this answerback was written; the rest of the result stays usable, and this block
    keeps ``type`` and every other field (``model_extra``, wire names) so that a host
    can show it as "unsupported content", pass it on, or look inside. ``to_wire()`` gives
    it back as it was sent. A block of a known type that breaks its schema is still an
    error: only the type decides.
    """

    type: str


_CONTENT_TYPES = frozenset({"text", "image", "audio", "resource_link", "resource"})


def _content_kind(value: Any) -> str | None:
    """The tag of a content block: its ``type`` if known, ``"unknown"`` for any other
    string, ``None`` (an error) for a block without a string ``type``."""
    kind: object
    if isinstance(value, dict):
        data: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        kind = data.get("type")
    else:
        kind = getattr(value, "type", None)
    if not isinstance(kind, str):
        return None
    return kind if kind in _CONTENT_TYPES else "unknown"


ContentBlock: TypeAlias = Annotated[
    Annotated[TextContent, Tag("text")]
    | Annotated[ImageContent, Tag("image")]
    | Annotated[AudioContent, Tag("audio")]
    | Annotated[ResourceLink, Tag("resource_link")]
    | Annotated[EmbeddedResource, Tag("resource")]
    | Annotated[UnknownContent, Tag("unknown")],
    Discriminator(
        _content_kind,
        custom_error_type="content_type_missing",
        custom_error_message='A content block needs a "type" string',
    ),
]
"""Content of tool results and prompt messages: one of the five kinds the specification
defines, or ``UnknownContent`` for a type this answerback does not know (a newer
server's)."""


class ToolResultContent(MCPModel):
    """What a tool call returned, fed back to the model (sampling with tools)."""

    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: list[ContentBlock] = Field(default_factory=lambda: list[ContentBlock]())
    structured_content: dict[str, Any] | None = None
    is_error: bool | None = None
    meta: dict[str, Any] | None = None


SamplingMessageContentBlock: TypeAlias = Annotated[
    TextContent | ImageContent | AudioContent | ToolUseContent | ToolResultContent,
    Field(discriminator="type"),
]
"""Content of a sampling message."""

SamplingContent: TypeAlias = SamplingMessageContentBlock | list[SamplingMessageContentBlock]
"""One sampling content block or several, as 2025-11-25 allows both."""


# --- Tools -------------------------------------------------------------------------------


class ToolAnnotations(MCPModel):
    """Untrusted hints about a tool's behaviour, for the client's UI and policy."""

    title: str | None = None
    read_only_hint: bool | None = None
    destructive_hint: bool | None = None
    idempotent_hint: bool | None = None
    open_world_hint: bool | None = None


class ToolExecution(MCPModel):
    """Whether a tool may run as a task (experimental, 2025-11-25 only)."""

    task_support: Literal["forbidden", "optional", "required"] | str | None = None
    """A hint; a value newer than these three is kept as it came."""


class Tool(BaseMetadata):
    """A function the server offers, with its argument (and result) JSON Schema as written."""

    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: ToolAnnotations | None = None
    execution: ToolExecution | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None


class ListToolsResult(PaginatedResult, CacheableResult):
    """A page of the server's tools."""

    tools: list[Tool]


class CallToolResult(Result):
    """What a tool returned; ``is_error`` marks a failure the model should see."""

    content: list[ContentBlock] = Field(default_factory=lambda: list[ContentBlock]())
    structured_content: dict[str, Any] | None = None
    is_error: bool = False

    @property
    def text(self) -> str:
        """The text of its text blocks, joined by newlines (``""`` if it has none): what
        most tools return, read without checking each block's type first."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))


# --- Sampling ----------------------------------------------------------------------------


class SamplingMessage(MCPModel):
    """One turn of the conversation a server asks the client's model to continue."""

    role: Role
    content: SamplingContent
    meta: dict[str, Any] | None = None


class ModelHint(MCPModel):
    """A model name (or substring) the server would like; the client decides."""

    name: str | None = None


class ModelPreferences(MCPModel):
    """How the server weighs cost, speed and intelligence when the client picks a model."""

    hints: list[ModelHint] | None = None
    cost_priority: _UnitInterval | None = None
    """0 (cost does not matter) to 1 (cost matters most); likewise the two below."""
    speed_priority: _UnitInterval | None = None
    intelligence_priority: _UnitInterval | None = None


class ToolChoice(MCPModel):
    """Whether the sampled model may, must or must not call tools."""

    mode: Literal["auto", "required", "none"] | None = None


class CreateMessageRequestParams(TaskAugmentedRequestParams):
    """What the server wants the client's model to complete."""

    messages: list[SamplingMessage]
    max_tokens: Annotated[int, Field(strict=True)]
    """Strict: it is what the person's token budget pays, so ``"5"`` or ``true`` is an
    error to report, not a number to guess."""
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: IncludeContext | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None


class CreateMessageResult(Result):
    """The client's model's answer to a sampling request."""

    role: Role
    content: SamplingContent
    model: str
    stop_reason: str | None = None

    if TYPE_CHECKING:
        # A host's ``list[TextContent]`` is not a ``list[SamplingMessageContentBlock]`` to a
        # type checker (lists are invariant), so the constructor takes any sequence; pydantic
        # still stores a list, and the wire form is unchanged.
        def __init__(
            self,
            *,
            role: Role,
            content: SamplingMessageContentBlock | Sequence[SamplingMessageContentBlock],
            model: str,
            stop_reason: str | None = None,
            meta: dict[str, Any] | None = None,
            result_type: str | None = None,
        ) -> None: ...


class CreateMessageRequest(MCPModel):
    """Server asks the client to sample its model (legacy request; 2026 input request)."""

    method: Literal["sampling/createMessage"] = "sampling/createMessage"
    params: CreateMessageRequestParams


# --- Roots -------------------------------------------------------------------------------


class Root(MCPModel):
    """A directory the client lets the server work in."""

    uri: FileUrl
    name: str | None = None
    meta: dict[str, Any] | None = None


class ListRootsResult(Result):
    """The client's current roots."""

    roots: list[Root]


class ListRootsRequest(MCPModel):
    """Server asks which roots the client grants (legacy request; 2026 input request)."""

    method: Literal["roots/list"] = "roots/list"
    params: RequestParams | None = None


class RootsListChangedNotification(MCPModel):
    """Client tells the server its roots changed (legacy only)."""

    method: Literal["notifications/roots/list_changed"] = "notifications/roots/list_changed"
    params: NotificationParams | None = None


# --- Elicitation: the restricted schema --------------------------------------------------


class StringSchema(MCPModel):
    """A text field in an elicitation form."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: Literal["email", "uri", "date", "date-time"] | None = None
    default: str | None = None


class NumberSchema(MCPModel):
    """A number field in an elicitation form."""

    type: Literal["number", "integer"] = "number"
    title: str | None = None
    description: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    default: float | None = None


class BooleanSchema(MCPModel):
    """A yes/no field in an elicitation form."""

    type: Literal["boolean"] = "boolean"
    title: str | None = None
    description: str | None = None
    default: bool | None = None


class EnumOption(MCPModel):
    """One titled choice (``{"const": ..., "title": ...}``) of a titled enum."""

    const: str
    title: str


class UntitledSingleSelectEnumSchema(MCPModel):
    """Pick one of plain string values."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    enum: list[str]
    default: str | None = None


class TitledSingleSelectEnumSchema(MCPModel):
    """Pick one of values that each have a display title."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    one_of: list[EnumOption]
    default: str | None = None


class UntitledMultiSelectItems(MCPModel):
    """The ``items`` of an untitled multi-select: plain string values."""

    type: Literal["string"] = "string"
    enum: list[str]


class TitledMultiSelectItems(MCPModel):
    """The ``items`` of a titled multi-select: values with display titles."""

    any_of: list[EnumOption]


class UntitledMultiSelectEnumSchema(MCPModel):
    """Pick any number of plain string values."""

    type: Literal["array"] = "array"
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    items: UntitledMultiSelectItems
    default: list[str] | None = None


class TitledMultiSelectEnumSchema(MCPModel):
    """Pick any number of values that each have a display title."""

    type: Literal["array"] = "array"
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    items: TitledMultiSelectItems
    default: list[str] | None = None


class LegacyTitledEnumSchema(MCPModel):
    """Pick one value, titles given in the non-standard ``enumNames`` (deprecated)."""

    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    enum: list[str]
    enum_names: list[str] | None = None
    default: str | None = None


def _field_schema_kind(value: Any) -> str | None:
    """Which primitive-schema class a field definition is, from its keys."""
    if isinstance(value, MCPModel):
        return type(value).__name__
    if not isinstance(value, dict):
        return None
    data: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    kind = data.get("type")
    if kind == "string":
        if "oneOf" in data or "one_of" in data:
            return "TitledSingleSelectEnumSchema"
        if "enum" in data:
            if "enumNames" in data or "enum_names" in data:
                return "LegacyTitledEnumSchema"
            return "UntitledSingleSelectEnumSchema"
        return "StringSchema"
    if kind in ("number", "integer"):
        return "NumberSchema"
    if kind == "boolean":
        return "BooleanSchema"
    if kind == "array":
        items = data.get("items")
        if isinstance(items, dict) and ("anyOf" in items or "any_of" in items):
            return "TitledMultiSelectEnumSchema"
        return "UntitledMultiSelectEnumSchema"
    return None


PrimitiveSchemaDefinition: TypeAlias = Annotated[
    Annotated[StringSchema, Tag("StringSchema")]
    | Annotated[NumberSchema, Tag("NumberSchema")]
    | Annotated[BooleanSchema, Tag("BooleanSchema")]
    | Annotated[UntitledSingleSelectEnumSchema, Tag("UntitledSingleSelectEnumSchema")]
    | Annotated[TitledSingleSelectEnumSchema, Tag("TitledSingleSelectEnumSchema")]
    | Annotated[UntitledMultiSelectEnumSchema, Tag("UntitledMultiSelectEnumSchema")]
    | Annotated[TitledMultiSelectEnumSchema, Tag("TitledMultiSelectEnumSchema")]
    | Annotated[LegacyTitledEnumSchema, Tag("LegacyTitledEnumSchema")],
    Discriminator(_field_schema_kind),
]
"""One field of an elicitation form's ``requestedSchema``."""

SingleSelectEnumSchema: TypeAlias = UntitledSingleSelectEnumSchema | TitledSingleSelectEnumSchema
MultiSelectEnumSchema: TypeAlias = UntitledMultiSelectEnumSchema | TitledMultiSelectEnumSchema
EnumSchema: TypeAlias = (
    UntitledSingleSelectEnumSchema
    | TitledSingleSelectEnumSchema
    | UntitledMultiSelectEnumSchema
    | TitledMultiSelectEnumSchema
    | LegacyTitledEnumSchema
)


# --- Elicitation -------------------------------------------------------------------------


class ElicitRequestFormParams(TaskAugmentedRequestParams):
    """Ask the user to fill in a form; ``requested_schema`` is the form, as written."""

    mode: Literal["form"] = "form"
    message: str
    requested_schema: dict[str, Any]


class ElicitRequestURLParams(TaskAugmentedRequestParams):
    """Send the user to a URL for an interaction that must not pass through the client."""

    mode: Literal["url"] = "url"
    message: str
    url: str
    elicitation_id: str | None = None


def _elicit_mode(value: Any) -> str | None:
    """The elicitation mode of params; no ``mode`` means form (2025-06-18 shape)."""
    if isinstance(value, dict):
        data: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
        mode = data.get("mode", "form")
    else:
        mode = getattr(value, "mode", None)
    return mode if mode in ("form", "url") else None


ElicitRequestParams: TypeAlias = Annotated[
    Annotated[ElicitRequestFormParams, Tag("form")] | Annotated[ElicitRequestURLParams, Tag("url")],
    Discriminator(
        _elicit_mode,
        custom_error_type="elicitation_mode",
        custom_error_message=(
            'The elicitation "mode" must be "form" or "url" (none means "form"); '
            "this client knows no other mode"
        ),
    ),
]
"""Params of ``elicitation/create``: form or URL mode (a missing ``mode`` means form)."""


class ElicitResult(Result):
    """The user's answer: accepted (with ``content``), declined, or dismissed."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, ElicitationContentValue] | None = None

    if TYPE_CHECKING:
        # A host's ``dict[str, str]`` of answers is not a ``dict[str, ElicitationContentValue]``
        # to a type checker (dicts are invariant), so the constructor takes any mapping;
        # pydantic still stores a dict, and the wire form is unchanged.
        def __init__(
            self,
            *,
            action: Literal["accept", "decline", "cancel"],
            content: Mapping[str, ElicitationContentValue] | None = None,
            meta: dict[str, Any] | None = None,
            result_type: str | None = None,
        ) -> None: ...


class ElicitRequest(MCPModel):
    """Server asks the user a question (legacy request; 2026 input request)."""

    method: Literal["elicitation/create"] = "elicitation/create"
    params: ElicitRequestParams


class ElicitationCompleteNotificationParams(NotificationParams):
    """Which URL-mode elicitation the server saw completed."""

    elicitation_id: str


class ElicitationCompleteNotification(MCPModel):
    """Server tells the client an out-of-band URL interaction finished (2025-11-25)."""

    method: Literal["notifications/elicitation/complete"] = "notifications/elicitation/complete"
    params: ElicitationCompleteNotificationParams


class URLElicitationRequiredErrorData(MCPModel):
    """``data`` of error -32042: the URL elicitations the user must complete first."""

    elicitations: list[ElicitRequestURLParams]


# --- Input responses (2026-07-28 multi-round-trip requests) ------------------------------


InputResponse: TypeAlias = Annotated[
    ElicitResult | ListRootsResult | CreateMessageResult,
    Field(union_mode="left_to_right"),
]
"""The client's answer to one input request of an ``InputRequiredResult``: the first
kind it fits, tried in this order (an elicitation's answer, the usual one, first: one
validation instead of all three, as pydantic's "smart" union made), accepting exactly
what the smart union did. The server checks an asked answer as the kind it asked for
(``_recorded_state``), so an answer that fits two kinds is never taken for the wrong one."""

InputResponses: TypeAlias = dict[str, InputResponse]
"""Answers keyed like the ``inputRequests`` they answer."""


class InputResponseRequestParams(RequestParams):
    """Params of a retried request: the answers and the server's opaque state."""

    input_responses: InputResponses | None = None
    request_state: str | None = None


# --- Initialization and ping (legacy) ----------------------------------------------------


class InitializeRequestParams(RequestParams):
    """The client's half of the legacy handshake."""

    protocol_version: str
    capabilities: ClientCapabilities
    client_info: Implementation


class InitializeResult(Result):
    """The server's half of the legacy handshake."""

    protocol_version: str
    capabilities: ServerCapabilities
    server_info: Implementation
    instructions: str | None = None


class InitializeRequest(MCPModel):
    """Starts a legacy session."""

    method: Literal["initialize"] = "initialize"
    params: InitializeRequestParams


class InitializedNotification(MCPModel):
    """Client confirms the legacy handshake is done."""

    method: Literal["notifications/initialized"] = "notifications/initialized"
    params: NotificationParams | None = None


class PingRequest(MCPModel):
    """Checks the other side is alive (legacy, either direction)."""

    method: Literal["ping"] = "ping"
    params: RequestParams | None = None


# --- Tools requests ----------------------------------------------------------------------


class ListToolsRequest(MCPModel):
    """Asks for the server's tools."""

    method: Literal["tools/list"] = "tools/list"
    params: PaginatedRequestParams | None = None


class CallToolRequestParams(TaskAugmentedRequestParams, InputResponseRequestParams):
    """Which tool to call with which arguments (and, when retried, the answers)."""

    name: str
    arguments: dict[str, Any] | None = None


class CallToolRequest(MCPModel):
    """Calls a tool."""

    method: Literal["tools/call"] = "tools/call"
    params: CallToolRequestParams


class ToolListChangedNotification(MCPModel):
    """Server's tool list changed."""

    method: Literal["notifications/tools/list_changed"] = "notifications/tools/list_changed"
    params: NotificationParams | None = None


# --- Resources ---------------------------------------------------------------------------


class ResourceTemplate(BaseMetadata):
    """A family of resources addressed by a URI template."""

    uri_template: str
    description: str | None = None
    mime_type: str | None = None
    annotations: Annotations | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None


class ListResourcesRequest(MCPModel):
    """Asks for the server's resources."""

    method: Literal["resources/list"] = "resources/list"
    params: PaginatedRequestParams | None = None


class ListResourcesResult(PaginatedResult, CacheableResult):
    """A page of the server's resources."""

    resources: list[Resource]


class ListResourceTemplatesRequest(MCPModel):
    """Asks for the server's resource templates."""

    method: Literal["resources/templates/list"] = "resources/templates/list"
    params: PaginatedRequestParams | None = None


class ListResourceTemplatesResult(PaginatedResult, CacheableResult):
    """A page of the server's resource templates."""

    resource_templates: list[ResourceTemplate]


class ResourceRequestParams(RequestParams):
    """Params naming one resource."""

    uri: str


class ReadResourceRequestParams(ResourceRequestParams, InputResponseRequestParams):
    """Which resource to read (and, when retried, the answers)."""


class ReadResourceRequest(MCPModel):
    """Reads a resource."""

    method: Literal["resources/read"] = "resources/read"
    params: ReadResourceRequestParams


class ReadResourceResult(CacheableResult):
    """A resource's contents."""

    contents: list[AnyResourceContents]


class SubscribeRequestParams(ResourceRequestParams):
    """Which resource to watch (legacy)."""


class SubscribeRequest(MCPModel):
    """Asks for ``notifications/resources/updated`` about one resource (legacy)."""

    method: Literal["resources/subscribe"] = "resources/subscribe"
    params: SubscribeRequestParams


class UnsubscribeRequestParams(ResourceRequestParams):
    """Which resource to stop watching (legacy)."""


class UnsubscribeRequest(MCPModel):
    """Stops watching a resource (legacy)."""

    method: Literal["resources/unsubscribe"] = "resources/unsubscribe"
    params: UnsubscribeRequestParams


class ResourceListChangedNotification(MCPModel):
    """Server's resource list changed."""

    method: Literal["notifications/resources/list_changed"] = "notifications/resources/list_changed"
    params: NotificationParams | None = None


class ResourceUpdatedNotificationParams(NotificationParams):
    """Which resource changed."""

    uri: str


class ResourceUpdatedNotification(MCPModel):
    """A watched resource changed; read it again."""

    method: Literal["notifications/resources/updated"] = "notifications/resources/updated"
    params: ResourceUpdatedNotificationParams


# --- Prompts -----------------------------------------------------------------------------


class PromptArgument(BaseMetadata):
    """One argument a prompt template takes."""

    description: str | None = None
    required: bool | None = None


class Prompt(BaseMetadata):
    """A prompt template the server offers."""

    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None


class PromptMessage(MCPModel):
    """One message of a rendered prompt."""

    role: Role
    content: ContentBlock


class ListPromptsRequest(MCPModel):
    """Asks for the server's prompts."""

    method: Literal["prompts/list"] = "prompts/list"
    params: PaginatedRequestParams | None = None


class ListPromptsResult(PaginatedResult, CacheableResult):
    """A page of the server's prompts."""

    prompts: list[Prompt]


class GetPromptRequestParams(InputResponseRequestParams):
    """Which prompt to render with which arguments (and, when retried, the answers)."""

    name: str
    arguments: dict[str, str] | None = None


class GetPromptRequest(MCPModel):
    """Renders a prompt."""

    method: Literal["prompts/get"] = "prompts/get"
    params: GetPromptRequestParams


class GetPromptResult(Result):
    """A rendered prompt."""

    description: str | None = None
    messages: list[PromptMessage]


class PromptListChangedNotification(MCPModel):
    """Server's prompt list changed."""

    method: Literal["notifications/prompts/list_changed"] = "notifications/prompts/list_changed"
    params: NotificationParams | None = None


# --- Completion --------------------------------------------------------------------------


class PromptReference(BaseMetadata):
    """Completion target: a prompt's argument."""

    type: Literal["ref/prompt"] = "ref/prompt"


class ResourceTemplateReference(MCPModel):
    """Completion target: a resource template's variable."""

    type: Literal["ref/resource"] = "ref/resource"
    uri: str


class CompletionArgument(MCPModel):
    """The argument being completed and what the user typed so far."""

    name: str
    value: str


class CompletionContext(MCPModel):
    """Arguments already filled in, to narrow the completion."""

    arguments: dict[str, str] | None = None


class CompleteRequestParams(RequestParams):
    """What to complete."""

    ref: Annotated[PromptReference | ResourceTemplateReference, Field(discriminator="type")]
    argument: CompletionArgument
    context: CompletionContext | None = None


class CompleteRequest(MCPModel):
    """Asks for completions of an argument value."""

    method: Literal["completion/complete"] = "completion/complete"
    params: CompleteRequestParams


class Completion(MCPModel):
    """Suggested values (at most 100) and whether more exist."""

    values: Annotated[list[str], Field(max_length=MAX_COMPLETION_VALUES)]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(Result):
    """The server's completion suggestions."""

    completion: Completion


# --- Logging, progress, cancellation -----------------------------------------------------


class SetLevelRequestParams(RequestParams):
    """The lowest log level the client wants to receive."""

    level: LoggingLevel


class SetLevelRequest(MCPModel):
    """Sets the server's log level for this session (legacy)."""

    method: Literal["logging/setLevel"] = "logging/setLevel"
    params: SetLevelRequestParams


class LoggingMessageNotificationParams(NotificationParams):
    """One log message: level, optional logger name, any JSON data."""

    level: LoggingLevel
    logger: str | None = None
    data: Any


class LoggingMessageNotification(MCPModel):
    """Server sends a log message."""

    method: Literal["notifications/message"] = "notifications/message"
    params: LoggingMessageNotificationParams


class ProgressNotificationParams(NotificationParams):
    """How far a request with a progress token has got."""

    progress_token: ProgressToken
    progress: float
    total: float | None = None
    message: str | None = None


class ProgressNotification(MCPModel):
    """Progress of a long-running request."""

    method: Literal["notifications/progress"] = "notifications/progress"
    params: ProgressNotificationParams


class CancelledNotificationParams(NotificationParams):
    """Which request to abandon, and why."""

    request_id: RequestId | None = None
    reason: str | None = None


class CancelledNotification(MCPModel):
    """Either side abandons a request it sent."""

    method: Literal["notifications/cancelled"] = "notifications/cancelled"
    params: CancelledNotificationParams


# --- Tasks (experimental, 2025-11-25 only; modelled, not routed) -------------------------


class RelatedTaskMetadata(MCPModel):
    """``_meta`` entry tying a message to a task."""

    task_id: str


class Task(MCPModel):
    """State of a durable request run as a task."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl: int | None
    poll_interval: int | None = None


class CreateTaskResult(Result):
    """The immediate answer to a task-augmented request."""

    task: Task


class TaskRequestParams(RequestParams):
    """Params naming one task."""

    task_id: str


class GetTaskRequest(MCPModel):
    """Polls a task's state."""

    method: Literal["tasks/get"] = "tasks/get"
    params: TaskRequestParams


class GetTaskResult(Result, Task):
    """A task's state."""


class GetTaskPayloadRequest(MCPModel):
    """Fetches a finished task's result."""

    method: Literal["tasks/result"] = "tasks/result"
    params: TaskRequestParams


class GetTaskPayloadResult(Result):
    """A finished task's result: the shape of the original request's result."""


class CancelTaskRequest(MCPModel):
    """Cancels a task."""

    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskRequestParams


class CancelTaskResult(Result, Task):
    """The cancelled task's state."""


class ListTasksRequest(MCPModel):
    """Lists tasks."""

    method: Literal["tasks/list"] = "tasks/list"
    params: PaginatedRequestParams | None = None


class ListTasksResult(PaginatedResult):
    """A page of tasks."""

    tasks: list[Task]


class TaskStatusNotificationParams(NotificationParams, Task):
    """A task's new state."""


class TaskStatusNotification(MCPModel):
    """A task changed state."""

    method: Literal["notifications/tasks/status"] = "notifications/tasks/status"
    params: TaskStatusNotificationParams
