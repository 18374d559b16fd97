"""Behaviour of the wire models: aliases, leniency, unions, tables and versions."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import FileUrl, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from answerback import types
from answerback.types import (
    CLIENT_NOTIFICATION_TYPES,
    CLIENT_REQUEST_TYPES,
    LATEST_LEGACY_VERSION,
    LATEST_VERSION,
    LEGACY_VERSIONS,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
    SERVER_NOTIFICATION_TYPES,
    SERVER_REQUEST_TYPES,
    UNSUPPORTED_PROTOCOL_VERSION,
    Annotations,
    BooleanSchema,
    CallToolRequestParams,
    CallToolResult,
    ClientCapabilities,
    ClientRequest,
    CompleteResult,
    Completion,
    CreateMessageRequestParams,
    CreateMessageResult,
    DiscoverResult,
    ElicitationCapability,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    EmptyResult,
    ErrorData,
    ImageContent,
    InputRequiredResult,
    JSONRPCErrorResponse,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResultResponse,
    ListResourcesResult,
    ListRootsRequest,
    ListRootsResult,
    ListToolsResult,
    LoggingMessageNotification,
    MCPError,
    MCPModel,
    ModelPreferences,
    NumberSchema,
    PrimitiveSchemaDefinition,
    ProgressNotificationParams,
    ReadResourceResult,
    RequestParamsMeta,
    Root,
    SamplingCapability,
    SamplingMessage,
    SamplingToolsCapability,
    ServerNotification,
    StringSchema,
    TextContent,
    TitledMultiSelectEnumSchema,
    TitledSingleSelectEnumSchema,
    Tool,
    ToolUseContent,
    UnsupportedProtocolVersionError,
    has_feature,
    has_method,
    is_modern,
    parse_as,
)

ELICIT_PARAMS = TypeAdapter[ElicitRequestParams](ElicitRequestParams)


class TestAliases:
    def test_camel_case_round_trip(self) -> None:
        wire = {
            "name": "t",
            "inputSchema": {"type": "object", "properties": {"$ref": {"x": 1}}},
            "outputSchema": {"type": "object"},
        }
        tool = Tool.model_validate(wire)
        assert tool.input_schema == wire["inputSchema"]
        assert tool.to_wire() == wire
        assert Tool.model_validate(tool.to_wire()) == tool

    def test_snake_case_names_also_accepted(self) -> None:
        params = CallToolRequestParams.model_validate({"name": "t", "request_state": "s"})
        assert params.request_state == "s"
        assert params.to_wire() == {"name": "t", "requestState": "s"}

    def test_meta_alias(self) -> None:
        content = TextContent.model_validate({"type": "text", "text": "x", "_meta": {"k": 1}})
        assert content.meta == {"k": 1}
        assert content.to_wire() == {"type": "text", "text": "x", "_meta": {"k": 1}}

    def test_request_meta_keys(self) -> None:
        meta = RequestParamsMeta(progress_token=3, protocol_version="2026-07-28")
        assert meta.to_wire() == {"progressToken": 3, META_PROTOCOL_VERSION: "2026-07-28"}
        parsed = RequestParamsMeta.model_validate({META_PROTOCOL_VERSION: "x", "custom/k": 1})
        assert parsed.protocol_version == "x"
        assert parsed.to_wire()["custom/k"] == 1

    def test_unknown_fields_preserved(self) -> None:
        wire: dict[str, Any] = {
            "content": [{"type": "text", "text": "x", "futureField": [1]}],
            "newThing": {"a": 1},
        }
        result = CallToolResult.model_validate(wire)
        out = result.to_wire()
        assert out["newThing"] == {"a": 1}
        assert out["content"][0]["futureField"] == [1]


class TestRepr:
    def test_text_content(self) -> None:
        assert repr(TextContent(type="text", text="x")) == "TextContent(type='text', text='x')"

    def test_nested_hides_none(self) -> None:
        result = ElicitResult(action="decline")
        assert repr(result) == "ElicitResult(action='decline')"


class TestElicitation:
    def test_missing_mode_is_form(self) -> None:
        params = ELICIT_PARAMS.validate_python(
            {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}
        )
        assert isinstance(params, ElicitRequestFormParams)
        assert params.mode == "form"
        assert params.requested_schema == {"type": "object", "properties": {}}

    def test_url_mode(self) -> None:
        params = ELICIT_PARAMS.validate_python(
            {"mode": "url", "message": "Go", "url": "https://x.example", "elicitationId": "e"}
        )
        assert isinstance(params, ElicitRequestURLParams)
        assert params.elicitation_id == "e"

    def test_unknown_mode_rejected(self) -> None:
        with pytest.raises(ValidationError):
            ELICIT_PARAMS.validate_python({"mode": "telepathy", "message": "?"})

    def test_model_instances_pass_through(self) -> None:
        form = ElicitRequestFormParams(message="m", requested_schema={})
        assert ELICIT_PARAMS.validate_python(form) is form

    def test_server_request_table_parses_union(self) -> None:
        params_type, result_type = SERVER_REQUEST_TYPES["elicitation/create"]
        parsed = parse_as(params_type, {"message": "m", "requestedSchema": {}})
        assert isinstance(parsed, ElicitRequestFormParams)
        assert result_type is ElicitResult

    def test_result_content_types(self) -> None:
        result = ElicitResult.model_validate(
            {"action": "accept", "content": {"n": 1, "b": True, "s": "x", "l": ["a"], "f": 1.5}}
        )
        assert result.content == {"n": 1, "b": True, "s": "x", "l": ["a"], "f": 1.5}
        assert result.content is not None
        assert type(result.content["b"]) is bool
        assert type(result.content["n"]) is int

    def test_primitive_schema_dispatch(self) -> None:
        adapter = TypeAdapter[Any](PrimitiveSchemaDefinition)
        assert isinstance(adapter.validate_python({"type": "string"}), StringSchema)
        assert isinstance(adapter.validate_python({"type": "boolean"}), BooleanSchema)
        titled = {"type": "string", "oneOf": [{"const": "a", "title": "A"}]}
        assert isinstance(adapter.validate_python(titled), TitledSingleSelectEnumSchema)
        multi = {"type": "array", "items": {"anyOf": [{"const": "a", "title": "A"}]}}
        assert isinstance(adapter.validate_python(multi), TitledMultiSelectEnumSchema)


class TestContent:
    def test_content_union_by_type(self) -> None:
        result = CallToolResult.model_validate(
            {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]}
        )
        assert isinstance(result.content[0], ImageContent)

    def test_call_tool_result_defaults(self) -> None:
        result = CallToolResult()
        assert result.content == []
        assert result.is_error is False
        assert result.structured_content is None

    def test_sampling_content_single_or_list(self) -> None:
        single = CreateMessageResult.model_validate(
            {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}
        )
        assert isinstance(single.content, TextContent)
        several = SamplingMessage.model_validate(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "1", "name": "f", "input": {}}],
            }
        )
        assert isinstance(several.content, list)
        assert isinstance(several.content[0], ToolUseContent)

    def test_root_file_url(self) -> None:
        root = Root(uri=FileUrl("file:///home/ada/notebooks"), name="notebooks")
        assert root.to_wire() == {"uri": "file:///home/ada/notebooks", "name": "notebooks"}
        result = ListRootsResult(roots=[root])
        assert result.model_dump_json(by_alias=True, exclude_none=True) == (
            '{"roots":[{"uri":"file:///home/ada/notebooks","name":"notebooks"}]}'
        )

    def test_root_rejects_non_file(self) -> None:
        with pytest.raises(ValidationError):
            Root.model_validate({"uri": "https://example.com"})


NOT_FINITE = [math.nan, math.inf, -math.inf]


def only_error(exc: pytest.ExceptionInfo[ValidationError]) -> tuple[str, str]:
    """Where the one validation error is (dotted, by wire name) and what it says."""
    [error] = exc.value.errors(include_url=False)
    return ".".join(str(part) for part in error["loc"]), error["msg"]


class TestBounds:
    """The schema's bounds hold when a model is built and when a wire message is read."""

    @pytest.mark.parametrize("priority", [0, 0.0, 0.5, 1, 1.0])
    def test_a_priority_from_0_to_1_is_accepted(self, priority: float) -> None:
        assert Annotations(priority=priority).to_wire() == {"priority": priority}
        wire = {"type": "text", "text": "x", "annotations": {"priority": priority}}
        assert TextContent.model_validate(wire).to_wire() == wire

    @pytest.mark.parametrize(
        ("priority", "message"),
        [
            (-0.1, "Input should be greater than or equal to 0"),
            (1.1, "Input should be less than or equal to 1"),
            (7, "Input should be less than or equal to 1"),
            (math.nan, "Input should be a finite number"),
            (math.inf, "Input should be a finite number"),
            (-math.inf, "Input should be a finite number"),
        ],
    )
    def test_a_priority_outside_0_to_1_is_refused(self, priority: float, message: str) -> None:
        with pytest.raises(ValidationError) as built:
            Annotations(priority=priority)
        assert only_error(built) == ("priority", message)
        with pytest.raises(ValidationError) as received:
            TextContent.model_validate(
                {"type": "text", "text": "x", "annotations": {"priority": priority}}
            )
        assert only_error(received) == ("annotations.priority", message)

    @pytest.mark.parametrize("field", ["cost_priority", "speed_priority", "intelligence_priority"])
    def test_model_preferences_are_from_0_to_1(self, field: str) -> None:
        wire_name = to_camel(field)
        for edge in (0, 1):
            assert getattr(ModelPreferences.model_validate({wire_name: edge}), field) == edge
        for bad, message in [
            (-3, "Input should be greater than or equal to 0"),
            (1.1, "Input should be less than or equal to 1"),
            (math.nan, "Input should be a finite number"),
        ]:
            with pytest.raises(ValidationError) as built:
                ModelPreferences.model_validate({wire_name: bad})
            assert only_error(built) == (wire_name, message)
            params: dict[str, Any] = {
                "messages": [],
                "maxTokens": 10,
                "modelPreferences": {wire_name: bad},
            }
            with pytest.raises(ValidationError) as received:
                CreateMessageRequestParams.model_validate(params)
            assert only_error(received) == (f"modelPreferences.{wire_name}", message)

    @pytest.mark.parametrize(
        ("result_type", "required"),
        [
            (ListToolsResult, {"tools": []}),
            (ListResourcesResult, {"resources": []}),
            (ReadResourceResult, {"contents": []}),
            (DiscoverResult, {"supportedVersions": [], "capabilities": {}}),
        ],
    )
    def test_a_cache_lifetime_is_never_negative(
        self, result_type: type[MCPModel], required: dict[str, Any]
    ) -> None:
        assert result_type.model_validate({**required, "ttlMs": 0}).to_wire()["ttlMs"] == 0
        with pytest.raises(ValidationError) as received:
            result_type.model_validate({**required, "ttlMs": -1})
        assert only_error(received) == ("ttlMs", "Input should be greater than or equal to 0")

    def test_a_completion_holds_at_most_100_values(self) -> None:
        hundred = [f"v{n}" for n in range(100)]
        assert len(Completion(values=hundred).values) == 100
        with pytest.raises(ValidationError) as built:
            Completion(values=[*hundred, "one too many"])
        assert only_error(built)[0] == "values"
        assert "at most 100 items" in only_error(built)[1]
        with pytest.raises(ValidationError) as received:
            CompleteResult.model_validate({"completion": {"values": [*hundred, "x"]}})
        assert only_error(received)[0] == "completion.values"

    @pytest.mark.parametrize("value", NOT_FINITE)
    def test_no_float_field_takes_what_json_cannot_carry(self, value: float) -> None:
        """Where the schema gives no bound, NaN and Infinity are still refused: JSON cannot
        carry them, so in-process fails just as the wire would."""
        attempts: list[tuple[str, type[MCPModel], dict[str, Any]]] = [
            ("temperature", CreateMessageRequestParams, {"messages": [], "max_tokens": 10}),
            ("progress", ProgressNotificationParams, {"progress_token": 1}),
            ("total", ProgressNotificationParams, {"progress_token": 1, "progress": 1}),
            ("minimum", NumberSchema, {}),
            ("maximum", NumberSchema, {}),
            ("default", NumberSchema, {}),
        ]
        for field, model, others in attempts:
            with pytest.raises(ValidationError) as built:
                model(**others, **{field: value})
            assert only_error(built) == (field, "Input should be a finite number")
        with pytest.raises(ValidationError, match="finite number"):
            ElicitResult(action="accept", content={"weight": value})


class TestCapabilities:
    def test_seed_shapes(self) -> None:
        caps = ClientCapabilities(
            elicitation=ElicitationCapability(),
            sampling=SamplingCapability(tools=SamplingToolsCapability()),
        )
        assert caps.to_wire() == {"elicitation": {}, "sampling": {"tools": {}}}
        parsed = ClientCapabilities.model_validate({"roots": {"listChanged": True}})
        assert parsed.roots is not None
        assert parsed.roots.list_changed is True


class TestUnionsAndTables:
    def test_client_request_union(self) -> None:
        adapter = TypeAdapter[Any](ClientRequest)
        request = adapter.validate_python({"method": "tools/call", "params": {"name": "t"}})
        assert type(request).__name__ == "CallToolRequest"

    def test_server_notification_union(self) -> None:
        adapter = TypeAdapter[Any](ServerNotification)
        message = adapter.validate_python(
            {"method": "notifications/message", "params": {"level": "info", "data": 1}}
        )
        assert isinstance(message, LoggingMessageNotification)

    def test_input_required_result_parses_kinds(self) -> None:
        result = InputRequiredResult.model_validate(
            {"resultType": "input_required", "inputRequests": {"r": {"method": "roots/list"}}}
        )
        assert result.input_requests is not None
        assert isinstance(result.input_requests["r"], ListRootsRequest)

    def test_tables_cover_methods(self) -> None:
        for method in (
            "initialize",
            "ping",
            "server/discover",
            "tools/list",
            "tools/call",
            "prompts/get",
            "resources/read",
            "completion/complete",
            "logging/setLevel",
            "subscriptions/listen",
        ):
            assert method in CLIENT_REQUEST_TYPES
        assert set(SERVER_REQUEST_TYPES) == {
            "ping",
            "elicitation/create",
            "sampling/createMessage",
            "roots/list",
        }
        assert "notifications/roots/list_changed" in CLIENT_NOTIFICATION_TYPES
        assert "notifications/message" in SERVER_NOTIFICATION_TYPES
        assert parse_as(CLIENT_REQUEST_TYPES["ping"][1], {}) == EmptyResult()

    def test_params_that_may_be_empty_parse_empty(self) -> None:
        for table in (CLIENT_REQUEST_TYPES, SERVER_REQUEST_TYPES):
            for method, (params_type, _) in table.items():
                if method == "ping" or method.endswith("/list"):
                    assert parse_as(params_type, {}) is not None


class TestJSONRPC:
    @pytest.mark.parametrize(
        ("message", "kind"),
        [
            ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, JSONRPCRequest),
            ({"jsonrpc": "2.0", "method": "notifications/initialized"}, JSONRPCNotification),
            ({"jsonrpc": "2.0", "id": "a", "result": {}}, JSONRPCResultResponse),
            (
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "bad"}},
                JSONRPCErrorResponse,
            ),
        ],
    )
    def test_message_kinds(self, message: dict[str, Any], kind: type[Any]) -> None:
        assert isinstance(TypeAdapter[Any](JSONRPCMessage).validate_python(message), kind)


class TestErrors:
    def test_new_codes_map_to_subclasses(self) -> None:
        error = ErrorData(
            code=UNSUPPORTED_PROTOCOL_VERSION,
            message="Unsupported protocol version 1999; use one of 2026-07-28",
            data={"supported": ["2026-07-28"], "requested": "1999"},
        )
        raised = MCPError.from_error_data(error)
        assert isinstance(raised, UnsupportedProtocolVersionError)
        assert raised.data == {"supported": ["2026-07-28"], "requested": "1999"}


class TestVersions:
    def test_constants(self) -> None:
        assert LEGACY_VERSIONS[0] == LATEST_LEGACY_VERSION == "2025-11-25"
        assert LATEST_VERSION == MODERN_VERSIONS[0] == "2026-07-28"
        assert list(LEGACY_VERSIONS) == sorted(LEGACY_VERSIONS, reverse=True)

    def test_is_modern(self) -> None:
        assert is_modern("2026-07-28")
        assert not any(is_modern(version) for version in LEGACY_VERSIONS)
        assert not is_modern("garbage")

    def test_method_and_feature_spans(self) -> None:
        assert has_method("2025-11-25", "initialize")
        assert not has_method("2026-07-28", "initialize")
        assert not has_method("2025-03-26", "elicitation/create")
        assert has_method("2025-06-18", "elicitation/create")
        assert has_method("2026-07-28", "server/discover")
        assert not has_method("2025-11-25", "server/discover")
        assert has_method("2024-11-05", "tools/call")
        assert has_feature("2025-06-18", "elicitation")
        assert not has_feature("2025-06-18", "elicitation_url")
        assert has_feature("2025-11-25", "sampling_tools")
        assert not has_feature("2026-07-28", "tasks")


def test_all_is_complete() -> None:
    # Ordering is ruff's (RUF022): constants, then classes, then functions.
    assert len(set(types.__all__)) == len(types.__all__)
    for name in types.__all__:
        assert hasattr(types, name), name


def test_a_tool_results_text_joins_its_text_blocks_and_skips_the_rest() -> None:
    """Hosts read a result's text without checking each block's type first."""
    image = ImageContent(data="aGk=", mime_type="image/png")
    result = CallToolResult(content=[TextContent(text="one"), image, TextContent(text="two")])
    assert result.text == "one\ntwo"
    assert CallToolResult(content=[image]).text == ""
    assert "text" not in result.model_dump(by_alias=True)  # read, never sent
