"""Models built in Python serialise to messages the official wire schemas accept."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from pydantic import FileUrl

from answerback.types import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    URL_ELICITATION_REQUIRED,
    Annotations,
    AudioContent,
    BlobResourceContents,
    BooleanSchema,
    CallToolRequest,
    CallToolRequestParams,
    CallToolResult,
    CancelledNotification,
    CancelledNotificationParams,
    ClientCapabilities,
    CompleteRequest,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    CompletionArgument,
    CompletionContext,
    CreateMessageRequest,
    CreateMessageRequestParams,
    CreateMessageResult,
    DiscoverRequest,
    DiscoverRequestParams,
    DiscoverResult,
    ElicitationCapability,
    ElicitationCompleteNotification,
    ElicitationCompleteNotificationParams,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    EmbeddedResource,
    EmptyResult,
    EnumOption,
    ErrorData,
    GetPromptRequest,
    GetPromptRequestParams,
    GetPromptResult,
    Icon,
    ImageContent,
    Implementation,
    InitializedNotification,
    InitializeRequest,
    InitializeRequestParams,
    InitializeResult,
    InputRequiredResult,
    LegacyTitledEnumSchema,
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
    LoggingCapability,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    MCPModel,
    MissingRequiredClientCapabilityErrorData,
    ModelHint,
    ModelPreferences,
    NumberSchema,
    PaginatedRequestParams,
    PingRequest,
    ProgressNotification,
    ProgressNotificationParams,
    Prompt,
    PromptArgument,
    PromptListChangedNotification,
    PromptMessage,
    PromptReference,
    PromptsCapability,
    ReadResourceRequest,
    ReadResourceRequestParams,
    ReadResourceResult,
    RequestParamsMeta,
    Resource,
    ResourceLink,
    ResourcesCapability,
    ResourceTemplate,
    ResourceTemplateReference,
    ResourceUpdatedNotification,
    ResourceUpdatedNotificationParams,
    Root,
    RootsCapability,
    RootsListChangedNotification,
    SamplingCapability,
    SamplingMessage,
    SamplingToolsCapability,
    ServerCapabilities,
    SetLevelRequest,
    SetLevelRequestParams,
    StringSchema,
    SubscribeRequest,
    SubscribeRequestParams,
    SubscriptionFilter,
    SubscriptionsAcknowledgedNotification,
    SubscriptionsAcknowledgedNotificationParams,
    SubscriptionsListenRequest,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    TextContent,
    TextResourceContents,
    TitledMultiSelectEnumSchema,
    TitledMultiSelectItems,
    TitledSingleSelectEnumSchema,
    Tool,
    ToolAnnotations,
    ToolChoice,
    ToolListChangedNotification,
    ToolResultContent,
    ToolsCapability,
    ToolUseContent,
    UnsubscribeRequest,
    UnsubscribeRequestParams,
    UnsupportedProtocolVersionErrorData,
    UntitledMultiSelectEnumSchema,
    UntitledMultiSelectItems,
    UntitledSingleSelectEnumSchema,
    URLElicitationRequiredErrorData,
)

jsonschema = pytest.importorskip("jsonschema")

SPEC_DIR = Path(__file__).parents[2] / "shared" / "spec"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"


@cache
def _defs(version: str) -> dict[str, Any]:
    path = SPEC_DIR / version / "schema.json"
    if not path.is_file():
        pytest.skip(f"wire schema {path} is absent (the spec folder lives beside the project)")
    return json.loads(path.read_text())["$defs"]


def check(version: str, definition: str, instance: Any) -> None:
    """Validate ``instance`` against ``#/$defs/<definition>`` of the version's schema."""
    defs = _defs(version)
    assert definition in defs, f"{definition} is not in the {version} schema"
    schema = {"$ref": f"#/$defs/{definition}", "$defs": defs}
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(instance), key=str)
    assert not errors, f"{definition} ({version}): {errors[0].message}\n{instance}"


def request(model: MCPModel, request_id: int | str = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, **model.to_wire()}


def notification(model: MCPModel) -> dict[str, Any]:
    return {"jsonrpc": "2.0", **model.to_wire()}


def response(model: MCPModel, request_id: int | str = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": model.to_wire()}


def check_result(version: str, definition: str, model: MCPModel) -> None:
    check(version, definition, model.to_wire())
    check(version, "JSONRPCResultResponse", response(model))


def error_response(code: int, message: str, data: MCPModel | None = None) -> dict[str, Any]:
    error = ErrorData(code=code, message=message, data=None if data is None else data.to_wire())
    return {"jsonrpc": "2.0", "id": 7, "error": error.to_wire()}


# --- shared fixtures ---------------------------------------------------------------------

NAME_FORM = {
    "type": "object",
    "properties": {"name": {"type": "string", "title": "Name"}},
    "required": ["name"],
}

SERVER_INFO = Implementation(
    name="library",
    version="1.0.0",
    title="Library",
    description="Lends books",
    icons=[Icon(src="https://example.com/icon.png", mime_type="image/png", sizes=["48x48"])],
    website_url="https://example.com",
)
CLIENT_INFO = Implementation(name="answerback", version="0.1.0")

WEATHER_TOOL = Tool(
    name="get_weather",
    title="Weather",
    description="Current weather for a city",
    input_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    output_schema={"type": "object", "properties": {"celsius": {"type": "number"}}},
    annotations=ToolAnnotations(read_only_hint=True, open_world_hint=True),
)

ALL_CONTENT = [
    TextContent(text="hello", annotations=Annotations(audience=["user"], priority=0.5)),
    ImageContent(data="aGk=", mime_type="image/png"),
    AudioContent(data="aGk=", mime_type="audio/wav"),
    ResourceLink(uri="file:///notes.md", name="notes", mime_type="text/markdown"),
    EmbeddedResource(resource=TextResourceContents(uri="file:///a.txt", text="a")),
    EmbeddedResource(resource=BlobResourceContents(uri="file:///b.bin", blob="AAE=")),
]


def sampling_params() -> CreateMessageRequestParams:
    return CreateMessageRequestParams(
        messages=[
            SamplingMessage(role="user", content=TextContent(text="Weather in Paris?")),
            SamplingMessage(
                role="assistant",
                content=[
                    ToolUseContent(id="call-1", name="get_weather", input={"city": "Paris"}),
                ],
            ),
            SamplingMessage(
                role="user",
                content=[
                    ToolResultContent(
                        tool_use_id="call-1",
                        content=[TextContent(text="18 degrees")],
                        structured_content={"celsius": 18},
                    )
                ],
            ),
        ],
        max_tokens=200,
        system_prompt="Be brief.",
        temperature=0.2,
        stop_sequences=["END"],
        model_preferences=ModelPreferences(
            hints=[ModelHint(name="claude")], intelligence_priority=0.8, speed_priority=0.3
        ),
        tools=[WEATHER_TOOL],
        tool_choice=ToolChoice(mode="auto"),
        include_context="none",
        metadata={"trace": "t1"},
    )


def modern_meta(**extra: Any) -> RequestParamsMeta:
    return RequestParamsMeta(
        protocol_version=MODERN,
        client_capabilities=ClientCapabilities(
            elicitation=ElicitationCapability(form={}, url={}),
            sampling=SamplingCapability(tools=SamplingToolsCapability()),
        ),
        client_info=CLIENT_INFO,
        **extra,
    )


# --- 2025-11-25 --------------------------------------------------------------------------


class TestLegacyElicitation:
    def test_form_request(self) -> None:
        params = ElicitRequestFormParams(message="Your name?", requested_schema=NAME_FORM)
        check(LEGACY, "ElicitRequest", request(ElicitRequest(params=params)))

    def test_every_primitive_field_schema(self) -> None:
        fields: dict[str, MCPModel] = {
            "name": StringSchema(title="Name", min_length=1, format="email", default="a@b.c"),
            "age": NumberSchema(type="integer", minimum=0, maximum=150, default=30),
            "ok": BooleanSchema(default=True),
            "colour": UntitledSingleSelectEnumSchema(enum=["red", "blue"], default="red"),
            "size": TitledSingleSelectEnumSchema(
                one_of=[EnumOption(const="s", title="Small"), EnumOption(const="l", title="Large")]
            ),
            "tags": UntitledMultiSelectEnumSchema(
                items=UntitledMultiSelectItems(enum=["a", "b"]), min_items=1, default=["a"]
            ),
            "toppings": TitledMultiSelectEnumSchema(
                items=TitledMultiSelectItems(any_of=[EnumOption(const="c", title="Cheese")])
            ),
            "legacy": LegacyTitledEnumSchema(enum=["x"], enum_names=["Ex"]),
        }
        for field in fields.values():
            check(LEGACY, "PrimitiveSchemaDefinition", field.to_wire())
        schema = {
            "type": "object",
            "properties": {key: field.to_wire() for key, field in fields.items()},
        }
        params = ElicitRequestFormParams(message="Tell me", requested_schema=schema)
        check(LEGACY, "ElicitRequest", request(ElicitRequest(params=params)))

    def test_url_request(self) -> None:
        params = ElicitRequestURLParams(
            message="Sign in", url="https://example.com/auth", elicitation_id="el-1"
        )
        check(LEGACY, "ElicitRequest", request(ElicitRequest(params=params), "s-1"))

    def test_results(self) -> None:
        accepted = ElicitResult(
            action="accept", content={"name": "Ada", "age": 36, "ok": True, "tags": ["a"]}
        )
        check_result(LEGACY, "ElicitResult", accepted)
        check_result(LEGACY, "ElicitResult", ElicitResult(action="decline"))
        check_result(LEGACY, "ElicitResult", ElicitResult(action="cancel"))

    def test_complete_notification_and_required_error(self) -> None:
        complete = ElicitationCompleteNotification(
            params=ElicitationCompleteNotificationParams(elicitation_id="el-1")
        )
        check(LEGACY, "ElicitationCompleteNotification", notification(complete))
        data = URLElicitationRequiredErrorData(
            elicitations=[
                ElicitRequestURLParams(
                    message="Authorise", url="https://example.com/a", elicitation_id="el-2"
                )
            ]
        )
        envelope = error_response(URL_ELICITATION_REQUIRED, "Authorisation needed", data)
        check(LEGACY, "URLElicitationRequiredError", envelope)


class TestLegacySampling:
    def test_request_with_tools(self) -> None:
        check(
            LEGACY, "CreateMessageRequest", request(CreateMessageRequest(params=sampling_params()))
        )

    def test_results(self) -> None:
        single = CreateMessageResult(
            role="assistant", content=TextContent(text="42"), model="m", stop_reason="endTurn"
        )
        check_result(LEGACY, "CreateMessageResult", single)
        tool_use = CreateMessageResult(
            role="assistant",
            content=[
                TextContent(text="Checking"),
                ToolUseContent(id="c2", name="get_weather", input={"city": "Oslo"}),
            ],
            model="m",
            stop_reason="toolUse",
        )
        check_result(LEGACY, "CreateMessageResult", tool_use)


class TestLegacyRootsLoggingHandshake:
    def test_roots(self) -> None:
        check(LEGACY, "ListRootsRequest", request(ListRootsRequest()))
        result = ListRootsResult(
            roots=[Root(uri=FileUrl("file:///home/ada/notebooks"), name="notebooks")]
        )
        check_result(LEGACY, "ListRootsResult", result)
        check(LEGACY, "RootsListChangedNotification", notification(RootsListChangedNotification()))

    def test_logging(self) -> None:
        set_level = SetLevelRequest(params=SetLevelRequestParams(level="warning"))
        check(LEGACY, "SetLevelRequest", request(set_level))
        check_result(LEGACY, "EmptyResult", EmptyResult())
        message = LoggingMessageNotification(
            params=LoggingMessageNotificationParams(
                level="error", logger="db", data={"error": "gone"}
            )
        )
        check(LEGACY, "LoggingMessageNotification", notification(message))

    def test_initialize(self) -> None:
        params = InitializeRequestParams(
            protocol_version=LEGACY,
            capabilities=ClientCapabilities(
                roots=RootsCapability(list_changed=True),
                sampling=SamplingCapability(tools=SamplingToolsCapability()),
                elicitation=ElicitationCapability(form={}, url={}),
                experimental={"x": {}},
            ),
            client_info=CLIENT_INFO,
        )
        check(LEGACY, "InitializeRequest", request(InitializeRequest(params=params)))
        result = InitializeResult(
            protocol_version=LEGACY,
            capabilities=ServerCapabilities(
                logging=LoggingCapability(),
                prompts=PromptsCapability(list_changed=True),
                resources=ResourcesCapability(subscribe=True, list_changed=True),
                tools=ToolsCapability(list_changed=False),
            ),
            server_info=SERVER_INFO,
            instructions="Ask for books by title.",
        )
        check_result(LEGACY, "InitializeResult", result)
        check(LEGACY, "InitializedNotification", notification(InitializedNotification()))

    def test_ping_progress_cancelled(self) -> None:
        check(LEGACY, "PingRequest", request(PingRequest()))
        progress = ProgressNotification(
            params=ProgressNotificationParams(
                progress_token="tok", progress=3, total=10, message="3 of 10"
            )
        )
        check(LEGACY, "ProgressNotification", notification(progress))
        cancelled = CancelledNotification(
            params=CancelledNotificationParams(request_id=4, reason="user gave up")
        )
        check(LEGACY, "CancelledNotification", notification(cancelled))


class TestLegacyServerFeatures:
    def test_tools(self) -> None:
        check(LEGACY, "ListToolsRequest", request(ListToolsRequest()))
        listed = ListToolsRequest(params=PaginatedRequestParams(cursor="c1"))
        check(LEGACY, "ListToolsRequest", request(listed))
        check_result(LEGACY, "ListToolsResult", ListToolsResult(tools=[WEATHER_TOOL]))
        call = CallToolRequest(
            params=CallToolRequestParams(
                name="get_weather",
                arguments={"city": "Paris"},
                meta=RequestParamsMeta(progress_token=9),
            )
        )
        check(LEGACY, "CallToolRequest", request(call))
        result = CallToolResult(content=list(ALL_CONTENT), structured_content={"celsius": 18})
        check_result(LEGACY, "CallToolResult", result)
        failed = CallToolResult(content=[TextContent(text="no such city")], is_error=True)
        check_result(LEGACY, "CallToolResult", failed)
        check(LEGACY, "ToolListChangedNotification", notification(ToolListChangedNotification()))

    def test_resources(self) -> None:
        check(LEGACY, "ListResourcesRequest", request(ListResourcesRequest()))
        resources = ListResourcesResult(
            resources=[Resource(uri="file:///a.txt", name="a", size=1, mime_type="text/plain")],
            next_cursor="n",
        )
        check_result(LEGACY, "ListResourcesResult", resources)
        check(LEGACY, "ListResourceTemplatesRequest", request(ListResourceTemplatesRequest()))
        templates = ListResourceTemplatesResult(
            resource_templates=[ResourceTemplate(uri_template="file:///{path}", name="files")]
        )
        check_result(LEGACY, "ListResourceTemplatesResult", templates)
        read = ReadResourceRequest(params=ReadResourceRequestParams(uri="file:///a.txt"))
        check(LEGACY, "ReadResourceRequest", request(read))
        contents = ReadResourceResult(
            contents=[
                TextResourceContents(uri="file:///a.txt", text="a"),
                BlobResourceContents(uri="file:///b.bin", blob="AAE="),
            ]
        )
        check_result(LEGACY, "ReadResourceResult", contents)
        subscribe = SubscribeRequest(params=SubscribeRequestParams(uri="file:///a.txt"))
        check(LEGACY, "SubscribeRequest", request(subscribe))
        unsubscribe = UnsubscribeRequest(params=UnsubscribeRequestParams(uri="file:///a.txt"))
        check(LEGACY, "UnsubscribeRequest", request(unsubscribe))
        updated = ResourceUpdatedNotification(
            params=ResourceUpdatedNotificationParams(uri="file:///a.txt")
        )
        check(LEGACY, "ResourceUpdatedNotification", notification(updated))

    def test_prompts(self) -> None:
        check(LEGACY, "ListPromptsRequest", request(ListPromptsRequest()))
        prompts = ListPromptsResult(
            prompts=[
                Prompt(
                    name="review",
                    description="Review code",
                    arguments=[PromptArgument(name="code", required=True)],
                )
            ]
        )
        check_result(LEGACY, "ListPromptsResult", prompts)
        get = GetPromptRequest(
            params=GetPromptRequestParams(name="review", arguments={"code": "x = 1"})
        )
        check(LEGACY, "GetPromptRequest", request(get))
        rendered = GetPromptResult(
            description="A review",
            messages=[PromptMessage(role="user", content=content) for content in ALL_CONTENT],
        )
        check_result(LEGACY, "GetPromptResult", rendered)
        changed = PromptListChangedNotification()
        check(LEGACY, "PromptListChangedNotification", notification(changed))

    def test_completion(self) -> None:
        for ref in (PromptReference(name="review"), ResourceTemplateReference(uri="file:///{p}")):
            complete = CompleteRequest(
                params=CompleteRequestParams(
                    ref=ref,
                    argument=CompletionArgument(name="language", value="py"),
                    context=CompletionContext(arguments={"framework": "flask"}),
                )
            )
            check(LEGACY, "CompleteRequest", request(complete))
        result = CompleteResult(completion=Completion(values=["python"], total=1, has_more=False))
        check_result(LEGACY, "CompleteResult", result)


# --- 2026-07-28 --------------------------------------------------------------------------


def input_required() -> InputRequiredResult:
    return InputRequiredResult.model_validate(
        {
            "resultType": "input_required",
            "inputRequests": {
                "name": ElicitRequest(
                    params=ElicitRequestFormParams(message="Name?", requested_schema=NAME_FORM)
                ).to_wire(),
                "login": ElicitRequest(
                    params=ElicitRequestURLParams(message="Sign in", url="https://example.com/a")
                ).to_wire(),
                "summary": CreateMessageRequest(params=sampling_params()).to_wire(),
                "roots": ListRootsRequest().to_wire(),
            },
            "requestState": "opaque-state",
        }
    )


class TestModern:
    def test_discover(self) -> None:
        discover = DiscoverRequest(params=DiscoverRequestParams(meta=modern_meta()))
        check(MODERN, "DiscoverRequest", request(discover))
        result = DiscoverResult(
            result_type="complete",
            supported_versions=[MODERN, LEGACY],
            capabilities=ServerCapabilities(tools=ToolsCapability(list_changed=True)),
            instructions="Ask for books by title.",
            ttl_ms=60_000,
            cache_scope="public",
            meta={META_SERVER_INFO: SERVER_INFO.to_wire()},
        )
        check(MODERN, "DiscoverResult", result.to_wire())
        check(MODERN, "DiscoverResultResponse", response(result))
        assert result.server_info == SERVER_INFO

    def test_input_required_with_each_kind(self) -> None:
        result = input_required()
        assert result.input_requests is not None
        kinds = {key: type(value).__name__ for key, value in result.input_requests.items()}
        assert kinds == {
            "name": "ElicitRequest",
            "login": "ElicitRequest",
            "summary": "CreateMessageRequest",
            "roots": "ListRootsRequest",
        }
        check(MODERN, "InputRequiredResult", result.to_wire())
        for definition in ("CallToolResultResponse", "GetPromptResultResponse"):
            check(MODERN, definition, response(result))
        for value in result.input_requests.values():
            check(MODERN, "InputRequest", value.to_wire())

    def test_retried_call_tool(self) -> None:
        retried = CallToolRequest(
            params=CallToolRequestParams.model_validate(
                {
                    "name": "issue_card",
                    "arguments": {},
                    "_meta": modern_meta(progress_token="p1", log_level="info").to_wire(),
                    "inputResponses": {
                        "name": ElicitResult(action="accept", content={"name": "Ada"}).to_wire(),
                        "login": ElicitResult(action="decline").to_wire(),
                        "summary": CreateMessageResult(
                            role="assistant", content=TextContent(text="ok"), model="m"
                        ).to_wire(),
                        "roots": ListRootsResult(
                            roots=[Root(uri=FileUrl("file:///home/ada"))]
                        ).to_wire(),
                    },
                    "requestState": "opaque-state",
                }
            )
        )
        wire = request(retried, 2)
        assert wire["params"]["_meta"][META_LOG_LEVEL] == "info"
        check(MODERN, "CallToolRequest", wire)
        done = CallToolResult(result_type="complete", content=[TextContent(text="Card issued.")])
        check(MODERN, "CallToolResultResponse", response(done, 2))

    def test_retried_prompt_and_read(self) -> None:
        get = GetPromptRequest(
            params=GetPromptRequestParams(
                name="review", meta=modern_meta(), request_state="s", input_responses={}
            )
        )
        check(MODERN, "GetPromptRequest", request(get))
        read = ReadResourceRequest(
            params=ReadResourceRequestParams(uri="file:///a", meta=modern_meta(), request_state="s")
        )
        check(MODERN, "ReadResourceRequest", request(read))
        contents = ReadResourceResult(
            result_type="complete",
            ttl_ms=0,
            cache_scope="private",
            contents=[TextResourceContents(uri="file:///a", text="a")],
        )
        check(MODERN, "ReadResourceResultResponse", response(contents))

    def test_cacheable_lists_and_complete(self) -> None:
        tools = ListToolsRequest(params=PaginatedRequestParams(meta=modern_meta()))
        check(MODERN, "ListToolsRequest", request(tools))
        listed = ListToolsResult(
            result_type="complete", ttl_ms=1000, cache_scope="public", tools=[WEATHER_TOOL]
        )
        check(MODERN, "ListToolsResultResponse", response(listed))
        complete = CompleteRequest(
            params=CompleteRequestParams(
                meta=modern_meta(),
                ref=PromptReference(name="review"),
                argument=CompletionArgument(name="language", value="p"),
            )
        )
        check(MODERN, "CompleteRequest", request(complete))
        result = CompleteResult(result_type="complete", completion=Completion(values=["py"]))
        check(MODERN, "CompleteResultResponse", response(result))

    def test_listen(self) -> None:
        wanted = SubscriptionFilter(
            tools_list_changed=True, resource_subscriptions=["file:///a.txt"]
        )
        listen = SubscriptionsListenRequest(
            params=SubscriptionsListenRequestParams(meta=modern_meta(), notifications=wanted)
        )
        check(MODERN, "SubscriptionsListenRequest", request(listen, "sub-1"))
        acknowledged = SubscriptionsAcknowledgedNotification(
            params=SubscriptionsAcknowledgedNotificationParams(
                notifications=SubscriptionFilter(tools_list_changed=True),
                meta={META_SUBSCRIPTION_ID: "sub-1"},
            )
        )
        check(MODERN, "SubscriptionsAcknowledgedNotification", notification(acknowledged))
        ended = SubscriptionsListenResult(
            result_type="complete", meta={META_SUBSCRIPTION_ID: "sub-1"}
        )
        check(MODERN, "SubscriptionsListenResultResponse", response(ended, "sub-1"))

    def test_notifications(self) -> None:
        message = LoggingMessageNotification(
            params=LoggingMessageNotificationParams(level="info", data="hello")
        )
        check(MODERN, "LoggingMessageNotification", notification(message))
        progress = ProgressNotification(
            params=ProgressNotificationParams(progress_token=1, progress=0.5)
        )
        check(MODERN, "ProgressNotification", notification(progress))
        cancelled = CancelledNotification(params=CancelledNotificationParams(request_id="r"))
        check(MODERN, "ClientNotification", notification(cancelled))

    def test_error_data(self) -> None:
        missing = MissingRequiredClientCapabilityErrorData(
            required_capabilities=ClientCapabilities(elicitation=ElicitationCapability())
        )
        check(
            MODERN,
            "MissingRequiredClientCapabilityError",
            error_response(MISSING_REQUIRED_CLIENT_CAPABILITY, "Needs elicitation", missing),
        )
        unsupported = UnsupportedProtocolVersionErrorData(supported=[MODERN], requested="1999")
        check(
            MODERN,
            "UnsupportedProtocolVersionError",
            error_response(UNSUPPORTED_PROTOCOL_VERSION, "Unsupported version", unsupported),
        )

    def test_meta_keys_match_schema(self) -> None:
        request_meta = _defs(MODERN)["RequestMetaObject"]["properties"]
        for key in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES, META_CLIENT_INFO):
            assert key in request_meta
        assert META_LOG_LEVEL in request_meta
        assert META_SERVER_INFO in _defs(MODERN)["ResultMetaObject"]["properties"]
        notification_meta = _defs(MODERN)["NotificationMetaObject"]["properties"]
        assert META_SUBSCRIPTION_ID in notification_meta

    def test_the_validator_does_reject(self) -> None:
        # A 2026 request without the per-request _meta is not a 2026 request.
        bare = CallToolRequest(params=CallToolRequestParams(name="t"))
        with pytest.raises(AssertionError, match="_meta"):
            check(MODERN, "CallToolRequest", request(bare))


# --- bounds ------------------------------------------------------------------------------

_BOUND_KEYWORDS = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
)


def _spec_bounds(version: str) -> list[tuple[str, tuple[str, ...], dict[str, Any]]]:
    """Every bounded property in the schema: (definition, path of wire names, bounds),
    looking into objects defined inline (``CompleteResult.completion.values``)."""
    found: list[tuple[str, tuple[str, ...], dict[str, Any]]] = []

    def walk(definition: str, node: dict[str, Any], path: tuple[str, ...]) -> None:
        for name, prop in node.get("properties", {}).items():
            bounds = {key: prop[key] for key in _BOUND_KEYWORDS if key in prop}
            if bounds:
                found.append((definition, (*path, name), bounds))
            walk(definition, prop, (*path, name))

    for definition, node in _defs(version).items():
        walk(definition, node, ())
    return found


def _model_node(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    """``node`` of a pydantic JSON schema with ``$ref`` followed and ``None`` dropped."""
    while True:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
            continue
        branches = [branch for branch in node.get("anyOf", []) if branch != {"type": "null"}]
        if len(branches) != 1:
            return node
        node = branches[0]


def _model_bounds(model: type[MCPModel], path: tuple[str, ...]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True)
    node = _model_node(schema, schema)
    for name in path:
        node = _model_node(schema, node["properties"][name])
    return {key: node[key] for key in _BOUND_KEYWORDS if key in node}


@pytest.mark.parametrize("version", [LEGACY, MODERN])
def test_every_bound_in_the_schema_is_checked_by_its_model(version: str) -> None:
    """``minimum``, ``maximum``, ``maxItems``...: what the schema bounds, the model of the
    same name bounds the same way (so it refuses to build, or to read, what breaks it)."""
    from answerback import types

    bounded = _spec_bounds(version)
    assert bounded, "the schema states no bounds at all: is this the right file?"
    for definition, path, bounds in bounded:
        model = getattr(types, definition, None)
        assert model is not None, f"{definition} ({version}) has bounds but no model"
        assert _model_bounds(model, path) == bounds, f"{definition}.{'.'.join(path)}"
