"""The public API of every package, pinned: what each ``__all__`` exports, and its home.

Any change to a package's ``__all__`` shows up as a diff of this file, so adding or
removing a public name is a visible decision. Every exported class and function reports
the public package it is imported from (``answerback.server.Context``, not the private
module that defines it), which is what reprs, tracebacks, ``help()`` and pickle show.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import pickle
import types
import typing
from typing import Any

import pydantic
import pytest

import answerback
from answerback.server import AcceptedElicitation, Context, DeclinedElicitation
from answerback.types import MCPError, TextContent

PUBLIC_API: dict[str, list[str]] = {
    "answerback": [
        "Client",
        "ClientRequestContext",
        "MCPError",
        "StdioServer",
    ],
    "answerback.cli": [
        "main",
    ],
    "answerback.client": [
        "AuthorizationError",
        "CallbackResponder",
        "CheckedForms",
        "Client",
        "ClientRequestContext",
        "ClientSession",
        "ConsentAnswer",
        "ElicitationCallback",
        "FileTokenStore",
        "FormRenderer",
        "HEADLESS_META",
        "Headless",
        "HeadlessPolicy",
        "InMemoryTokenStore",
        "IncomingMessage",
        "InputRequiredRoundsExceededError",
        "InvalidServerResultError",
        "KeyringTokenStore",
        "ListRootsCallback",
        "ListenStream",
        "LockingTokenStore",
        "LoggingCallback",
        "MessageHandler",
        "Mode",
        "OAuth",
        "Responder",
        "ResponderWrapper",
        "SamplingCallback",
        "TokenStore",
        "TokenStoreError",
        "UrlCompletions",
        "UrlConsent",
        "UrlConsentRequest",
        "UrlElicitationLoopError",
        "UrlElicitations",
        "open_link",
    ],
    "answerback.forms": [
        "AnswerError",
        "BooleanField",
        "FieldError",
        "Form",
        "FormField",
        "FormSchemaError",
        "FormTooLarge",
        "FormTooSlow",
        "FormValue",
        "MAX_CHOICES",
        "MAX_FIELDS",
        "MAX_TEXT_LENGTH",
        "MultiSelectField",
        "NumberField",
        "Option",
        "SingleSelectField",
        "StringField",
        "StringFormat",
        "Titles",
        "UnsupportedForm",
        "check_message",
        "form_schema",
        "parse_form",
        "validate_answer",
    ],
    "answerback.interact": [
        "Answer",
        "Broker",
        "BrokerResponder",
        "BrowserLogin",
        "CALL_ENDED",
        "CONNECTION_CLOSED",
        "Presenter",
        "Question",
        "QuestionKind",
        "REJECTED",
        "RootRefusedError",
        "Roots",
        "SERVER_CANCELLED",
        "SERVER_DISCONNECTED",
        "SERVER_NOT_ANSWERING",
        "Sampler",
        "ServerControls",
        "TYPED_BY_PERSON",
        "clean",
    ],
    "answerback.interact.sampling": [
        "AnthropicProvider",
        "Approval",
        "AuditLog",
        "BUDGET_EXHAUSTED",
        "ContextSource",
        "Grant",
        "Limits",
        "MODEL_NOT_ALLOWED",
        "MappedRequest",
        "ModelCatalogue",
        "ModelChoice",
        "ModelInfo",
        "ModelProvider",
        "ModelSampler",
        "OpenAIChatProvider",
        "OpenAIQuirks",
        "RATE_LIMITED",
        "REFUSAL",
        "ReversibleNames",
        "SERVER_NOT_ALLOWED",
        "SamplingPolicy",
        "SamplingProviderError",
        "SamplingRefused",
        "SamplingRequest",
        "SamplingResponder",
        "approve_all",
        "from_anthropic_response",
        "from_openai_response",
        "to_anthropic_request",
        "to_openai_request",
    ],
    "answerback.interact.terminal": [
        "FORM_KEYS",
        "FormOutcome",
        "FormScreen",
        "LinePresenter",
        "Opener",
        "REJECTED",
        "Sampler",
        "SamplingScreen",
        "ServerControls",
        "ServerKeys",
        "TYPED_BY_PERSON",
        "TerminalPresenter",
        "UrlCard",
        "UrlDecision",
        "ask_form",
    ],
    "answerback.jsonrpc": [
        "Endpoint",
        "Envelope",
        "IncomingRequest",
        "JSONObject",
        "MalformedMessage",
        "ProgressCallback",
        "ReadStream",
        "RequestHandler",
        "RequestId",
        "WriteStream",
    ],
    "answerback.server": [
        "AcceptedElicitation",
        "AcceptedUrlElicitation",
        "AuthInfo",
        "CancelledElicitation",
        "Context",
        "DeclinedElicitation",
        "ElicitationResult",
        "FormSchemaError",
        "IntrospectionVerifier",
        "InvalidTokenError",
        "JWTVerifier",
        "MCPServer",
        "PathOutsideRootsError",
        "ResourceServer",
        "SampleResult",
        "SamplingLoopError",
        "SamplingTools",
        "ServerSession",
        "TokenVerifier",
        "UrlElicitationResult",
        "VerifierUnavailableError",
        "form_schema",
    ],
    "answerback.transports": [
        "ClientTransport",
        "ConnectionServer",
        "InProcessTransport",
        "ServerExitedError",
        "StderrTarget",
        "StdioServer",
        "StrayOutputError",
        "StreamControl",
        "StreamPair",
        "create_stream_pairs",
        "default_environment",
        "stdio_server_streams",
    ],
    "answerback.transports.http": [
        "AuthInfo",
        "AuthorizationError",
        "EventStore",
        "FileTokenStore",
        "HostPolicy",
        "InMemoryEventStore",
        "InMemoryNotificationBus",
        "InMemoryState",
        "InMemoryTokenStore",
        "InMemoryUsedStates",
        "KeyringTokenStore",
        "LockingTokenStore",
        "Notice",
        "NoticesSince",
        "NotificationBus",
        "OAuth",
        "RedisNotificationBus",
        "RedisState",
        "RedisUsedStates",
        "ReplayingNotificationBus",
        "RequestAuthenticator",
        "ServerState",
        "StreamableHTTPApp",
        "StreamableHTTPTransport",
        "TimedEventStore",
        "TokenStore",
        "TokenStoreError",
        "UsedStates",
        "run_uvicorn",
        "serve_uvicorn",
        "uvicorn_server",
    ],
    "answerback.types": [
        "Annotations",
        "AudioContent",
        "AuthorizationError",
        "BUSY",
        "BaseMetadata",
        "BlobResourceContents",
        "BooleanSchema",
        "CLIENT_NOTIFICATION_TYPES",
        "CLIENT_REQUEST_TYPES",
        "CONNECTION_CLOSED",
        "CacheScope",
        "CacheableResult",
        "CallToolRequest",
        "CallToolRequestParams",
        "CallToolResult",
        "CancelTaskRequest",
        "CancelTaskResult",
        "CancelledNotification",
        "CancelledNotificationParams",
        "ClientCapabilities",
        "ClientNotification",
        "ClientRequest",
        "ClientResult",
        "CompleteRequest",
        "CompleteRequestParams",
        "CompleteResult",
        "Completion",
        "CompletionArgument",
        "CompletionContext",
        "CompletionsCapability",
        "ConnectionClosedError",
        "ContentBlock",
        "CreateMessageRequest",
        "CreateMessageRequestParams",
        "CreateMessageResult",
        "CreateTaskResult",
        "Cursor",
        "DiscoverRequest",
        "DiscoverRequestParams",
        "DiscoverResult",
        "ElicitRequest",
        "ElicitRequestFormParams",
        "ElicitRequestParams",
        "ElicitRequestURLParams",
        "ElicitResult",
        "ElicitationCapability",
        "ElicitationCompleteNotification",
        "ElicitationCompleteNotificationParams",
        "ElicitationContentValue",
        "EmbeddedResource",
        "EmptyResult",
        "EnumOption",
        "EnumSchema",
        "ErrorData",
        "FEATURE_SINCE",
        "FEATURE_UNTIL",
        "Feature",
        "GetPromptRequest",
        "GetPromptRequestParams",
        "GetPromptResult",
        "GetTaskPayloadRequest",
        "GetTaskPayloadResult",
        "GetTaskRequest",
        "GetTaskResult",
        "HEADER_MISMATCH",
        "HeaderMismatchError",
        "INPUT_REQUIRED_METHODS",
        "INTERNAL_ERROR",
        "INVALID_PARAMS",
        "INVALID_REQUEST",
        "Icon",
        "Icons",
        "ImageContent",
        "Implementation",
        "IncludeContext",
        "InitializeRequest",
        "InitializeRequestParams",
        "InitializeResult",
        "InitializedNotification",
        "InputRequest",
        "InputRequests",
        "InputRequiredResult",
        "InputResponse",
        "InputResponseRequestParams",
        "InputResponses",
        "InternalError",
        "InvalidParamsError",
        "InvalidRequestError",
        "JSONRPCErrorResponse",
        "JSONRPCMessage",
        "JSONRPCNotification",
        "JSONRPCRequest",
        "JSONRPCResponse",
        "JSONRPCResultResponse",
        "JSONRPC_VERSION",
        "LATEST_LEGACY_VERSION",
        "LATEST_VERSION",
        "LEGACY_VERSIONS",
        "LegacyTitledEnumSchema",
        "ListPromptsRequest",
        "ListPromptsResult",
        "ListResourceTemplatesRequest",
        "ListResourceTemplatesResult",
        "ListResourcesRequest",
        "ListResourcesResult",
        "ListRootsRequest",
        "ListRootsResult",
        "ListTasksRequest",
        "ListTasksResult",
        "ListToolsRequest",
        "ListToolsResult",
        "LoggingCapability",
        "LoggingLevel",
        "LoggingMessageNotification",
        "LoggingMessageNotificationParams",
        "MCPError",
        "MCPModel",
        "META_CLIENT_CAPABILITIES",
        "META_CLIENT_INFO",
        "META_LOG_LEVEL",
        "META_PROTOCOL_VERSION",
        "META_SERVER_INFO",
        "META_SUBSCRIPTION_ID",
        "METHOD_NOT_FOUND",
        "METHOD_VERSIONS",
        "MISSING_REQUIRED_CLIENT_CAPABILITY",
        "MODERN_VERSIONS",
        "MethodNotFoundError",
        "MissingRequiredClientCapabilityError",
        "MissingRequiredClientCapabilityErrorData",
        "ModelHint",
        "ModelPreferences",
        "MultiSelectEnumSchema",
        "Notification",
        "NotificationParams",
        "NotificationTypes",
        "NumberSchema",
        "PARSE_ERROR",
        "PaginatedRequestParams",
        "PaginatedResult",
        "ParseError",
        "PingRequest",
        "PrimitiveSchemaDefinition",
        "ProgressNotification",
        "ProgressNotificationParams",
        "ProgressToken",
        "Prompt",
        "PromptArgument",
        "PromptListChangedNotification",
        "PromptMessage",
        "PromptReference",
        "PromptsCapability",
        "REQUEST_TIMEOUT",
        "RESOURCE_NOT_FOUND",
        "RESULT_TYPE_COMPLETE",
        "RESULT_TYPE_INPUT_REQUIRED",
        "ReadResourceRequest",
        "ReadResourceRequestParams",
        "ReadResourceResult",
        "RelatedTaskMetadata",
        "Request",
        "RequestId",
        "RequestMetaObject",
        "RequestParams",
        "RequestParamsMeta",
        "RequestTimeoutError",
        "RequestTypes",
        "Resource",
        "ResourceContents",
        "ResourceLink",
        "ResourceListChangedNotification",
        "ResourceNotFoundError",
        "ResourceRequestParams",
        "ResourceTemplate",
        "ResourceTemplateReference",
        "ResourceUpdatedNotification",
        "ResourceUpdatedNotificationParams",
        "ResourcesCapability",
        "Result",
        "ResultType",
        "Role",
        "Root",
        "RootsCapability",
        "RootsListChangedNotification",
        "SERVER_NOTIFICATION_TYPES",
        "SERVER_REQUEST_TYPES",
        "SUPPORTED_VERSIONS",
        "SamplingCapability",
        "SamplingContent",
        "SamplingContextCapability",
        "SamplingMessage",
        "SamplingMessageContentBlock",
        "SamplingToolsCapability",
        "ServerCapabilities",
        "ServerNotification",
        "ServerRequest",
        "ServerResult",
        "SetLevelRequest",
        "SetLevelRequestParams",
        "SingleSelectEnumSchema",
        "StringSchema",
        "SubscribeRequest",
        "SubscribeRequestParams",
        "SubscriptionFilter",
        "SubscriptionsAcknowledgedNotification",
        "SubscriptionsAcknowledgedNotificationParams",
        "SubscriptionsListenRequest",
        "SubscriptionsListenRequestParams",
        "SubscriptionsListenResult",
        "Task",
        "TaskAugmentedRequestParams",
        "TaskMetadata",
        "TaskRequestParams",
        "TaskStatus",
        "TaskStatusNotification",
        "TaskStatusNotificationParams",
        "TextContent",
        "TextResourceContents",
        "TitledMultiSelectEnumSchema",
        "TitledMultiSelectItems",
        "TitledSingleSelectEnumSchema",
        "Tool",
        "ToolAnnotations",
        "ToolChoice",
        "ToolExecution",
        "ToolListChangedNotification",
        "ToolResultContent",
        "ToolUseContent",
        "ToolsCapability",
        "UNSUPPORTED_PROTOCOL_VERSION",
        "URLElicitationRequiredError",
        "URLElicitationRequiredErrorData",
        "URL_ELICITATION_REQUIRED",
        "USER_REJECTED",
        "UnknownContent",
        "UnsubscribeRequest",
        "UnsubscribeRequestParams",
        "UnsupportedProtocolVersionError",
        "UnsupportedProtocolVersionErrorData",
        "UntitledMultiSelectEnumSchema",
        "UntitledMultiSelectItems",
        "UntitledSingleSelectEnumSchema",
        "has_feature",
        "has_method",
        "is_modern",
        "parse_as",
    ],
    "answerback.urls": [
        "ApprovedDomains",
        "MAX_URL_LENGTH",
        "ReasonCode",
        "RiskLevel",
        "UrlDisplay",
        "UrlReason",
        "UrlVerdict",
        "file_uri_to_path",
        "judge_url",
        "path_to_file_uri",
    ],
}

# Classes whose annotations name something their module imports only for type checkers:
# typing.get_type_hints could not evaluate those before they were published either.
TYPE_CHECKING_ANNOTATIONS = {"answerback.client.ClientRequestContext"}


def exports(package: str) -> list[tuple[str, Any]]:
    module = importlib.import_module(package)
    return [(name, getattr(module, name)) for name in module.__all__]


def classes_and_functions() -> list[tuple[str, str, Any]]:
    return [
        (package, name, value)
        for package in PUBLIC_API
        for name, value in exports(package)
        # Aliases of outside types (``Cursor = str``) have no home of ours to report.
        if isinstance(value, type | types.FunctionType)
        and value.__module__.startswith("answerback")
    ]


@pytest.mark.parametrize("package", list(PUBLIC_API))
def test_all_is_pinned(package: str) -> None:
    exported: list[str] = importlib.import_module(package).__all__
    assert len(set(exported)) == len(exported), f"{package}.__all__ names something twice"
    assert sorted(exported) == PUBLIC_API[package], (
        f"{package}.__all__ changed; if that is intended, update PUBLIC_API here"
    )


@pytest.mark.parametrize("package", list(PUBLIC_API))
def test_every_exported_name_imports(package: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"from {package} import *", namespace)
    assert set(PUBLIC_API[package]) <= set(namespace)


@pytest.mark.parametrize(
    ("package", "name", "value"),
    classes_and_functions(),
    ids=[f"{package}.{name}" for package, name, _ in classes_and_functions()],
)
def test_exports_report_their_public_home(package: str, name: str, value: Any) -> None:
    """Each class and function names a public package that exports it under that name.

    That is this package, or, for a re-export (``answerback.Client``), the package it
    comes from. The home exports it under its own name (an alias such as
    ``RequestMetaObject`` may differ): pickle relies on that pair.
    """
    home: str = value.__module__
    assert not any(part.startswith("_") for part in home.split(".")), (
        f"{package}.{name} reports the private module {home}"
    )
    assert home == package or home in PUBLIC_API, f"{package}.{name} reports {home}"
    assert value.__qualname__ in PUBLIC_API[home]
    assert getattr(importlib.import_module(home), value.__qualname__) is value
    assert pickle.loads(pickle.dumps(value)) is value


def test_reprs_and_pickles_name_the_public_module() -> None:
    assert repr(Context) == "<class 'answerback.server.Context'>"
    assert repr(TextContent) == "<class 'answerback.types.TextContent'>"
    assert b"answerback.types" in pickle.dumps(MCPError)
    content = TextContent(type="text", text="hi")
    assert pickle.loads(pickle.dumps(content)) == content


def plain_classes() -> list[tuple[str, str, Any]]:
    """Published classes other than pydantic models (pydantic keeps its own field types)."""
    return [
        (package, name, value)
        for package, name, value in classes_and_functions()
        if isinstance(value, type)
        and not issubclass(value, pydantic.BaseModel)
        and value.__module__ == package
        and f"{package}.{name}" not in TYPE_CHECKING_ANNOTATIONS
    ]


@pytest.mark.parametrize(
    ("package", "name", "value"),
    plain_classes(),
    ids=[f"{package}.{name}" for package, name, _ in plain_classes()],
)
def test_plain_classes_keep_annotations_that_evaluate(package: str, name: str, value: Any) -> None:
    """Moving a class leaves its annotations resolvable (they were written elsewhere)."""
    typing.get_type_hints(value)


class Signup(pydantic.BaseModel):
    email: str


def test_pydantic_reads_published_dataclasses() -> None:
    """A result dataclass a tool author might validate or nest in a model still works."""
    assert dataclasses.is_dataclass(DeclinedElicitation)
    declined = pydantic.TypeAdapter(DeclinedElicitation).validate_python({"action": "decline"})
    assert declined == DeclinedElicitation()
    schema = pydantic.TypeAdapter(AcceptedElicitation[Signup]).json_schema()
    assert schema["properties"]["data"] == {"$ref": "#/$defs/Signup"}


def test_published_models_rebuild_and_subclass() -> None:
    """Pydantic resolves a model's annotations in its module; published models still build."""
    TextContent.model_rebuild(force=True)

    class Shouted(TextContent):
        volume: int = 11

    assert Shouted(type="text", text="hi").to_wire() == {"type": "text", "text": "hi", "volume": 11}


def test_version_matches_the_installed_metadata() -> None:
    assert importlib.metadata.version("answerback") == answerback.__version__, (
        "the installed metadata is stale: reinstall (make removes .venv/.installed when "
        "answerback/__init__.py changes, or run pip install -e '.[dev]')"
    )
