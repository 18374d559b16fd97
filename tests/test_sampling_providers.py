"""Provider adapters: MCP sampling to and from OpenAI Chat Completions and Anthropic Messages.

The golden fixtures (tests/sampling_fixtures) were written by hand from each provider's
documented format; every mapped request is also checked against the official SDK's own
request type, and every fixture response against its response model. A loopback server
plays both APIs so the providers are exercised over real HTTP, through httpx2 and
through the official SDK clients.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import AsyncGenerator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import anthropic
import anyio
import httpx2
import openai
import pytest
from anthropic.types import Message
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from http_support import free_port, serve
from hypothesis import given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from pydantic import TypeAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.interact.sampling import (
    REFUSAL,
    AnthropicProvider,
    ModelProvider,
    OpenAIChatProvider,
    OpenAIQuirks,
    ReversibleNames,
    SamplingProviderError,
    from_anthropic_response,
    from_openai_response,
    to_anthropic_request,
    to_openai_request,
)
from answerback.server import Context, MCPServer
from answerback.types import (
    AudioContent,
    CreateMessageRequestParams,
    CreateMessageResult,
    ImageContent,
    InvalidParamsError,
    SamplingCapability,
    SamplingMessage,
    SamplingMessageContentBlock,
    SamplingToolsCapability,
    TextContent,
    Tool,
    ToolChoice,
    ToolResultContent,
    ToolUseContent,
)

FIXTURES = Path(__file__).parent / "sampling_fixtures"
OPENAI_FIXTURES = sorted((FIXTURES / "openai").glob("*.json"))
ANTHROPIC_FIXTURES = sorted((FIXTURES / "anthropic").glob("*.json"))
ACCEPTED_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PNG = "iVBORw0KGgo="

OPENAI_REQUEST = TypeAdapter(CompletionCreateParamsNonStreaming)
ANTHROPIC_REQUEST = TypeAdapter(MessageCreateParamsNonStreaming)


def load(path: Path) -> dict[str, Any]:
    return cast("dict[str, Any]", json.loads(path.read_text()))


def plain(value: object) -> object:
    """``value`` with the SDK types' lazily validated iterables drawn out into lists
    (drawing them out is what validates them)."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in cast("dict[str, object]", value).items()}
    if value is None or isinstance(value, str | bytes | int | float | bool):
        return value
    return [plain(item) for item in cast("Iterable[object]", value)]


def assert_sdk_accepts(adapter: TypeAdapter[Any], body: dict[str, Any]) -> None:
    """The SDK's request type takes ``body`` as it is: validation passes and drops
    nothing (a key it does not know would be dropped)."""
    assert plain(adapter.validate_python(body)) == body


def params(*messages: SamplingMessage, **fields: Any) -> CreateMessageRequestParams:
    return CreateMessageRequestParams(messages=list(messages), max_tokens=100, **fields)


def user(*blocks: SamplingMessageContentBlock) -> SamplingMessage:
    return SamplingMessage(role="user", content=list(blocks))


def assistant(*blocks: SamplingMessageContentBlock) -> SamplingMessage:
    return SamplingMessage(role="assistant", content=list(blocks))


# --- Golden fixtures ---------------------------------------------------------------------


@pytest.mark.parametrize("path", OPENAI_FIXTURES, ids=lambda path: path.stem)
def test_openai_golden_exchange(path: Path) -> None:
    case = load(path)
    quirks = OpenAIQuirks(**case.get("quirks", {}))
    mcp = CreateMessageRequestParams.model_validate(case["params"])
    request = to_openai_request(mcp, model=case["model"], quirks=quirks)
    assert request.body == case["request"]
    assert_sdk_accepts(OPENAI_REQUEST, request.body)
    ChatCompletion.model_validate(case["response"])
    result = from_openai_response(case["response"], model=case["model"], request=request)
    assert result.model_dump(by_alias=True, exclude_none=True) == case["result"]


@pytest.mark.parametrize("path", ANTHROPIC_FIXTURES, ids=lambda path: path.stem)
def test_anthropic_golden_exchange(path: Path) -> None:
    case = load(path)
    mcp = CreateMessageRequestParams.model_validate(case["params"])
    request = to_anthropic_request(mcp, model=case["model"])
    assert request.body == case["request"]
    assert_sdk_accepts(ANTHROPIC_REQUEST, request.body)
    Message.model_validate(case["response"])
    result = from_anthropic_response(case["response"], model=case["model"], request=request)
    assert result.model_dump(by_alias=True, exclude_none=True) == case["result"]


# --- Round trips -------------------------------------------------------------------------


def openai_back(body: dict[str, Any]) -> list[SamplingMessage]:
    """The MCP messages a Chat Completions request carries (the mapper's inverse, for
    the round trips; tool messages fold back into one user turn)."""
    messages: list[SamplingMessage] = []
    for turn in cast("list[dict[str, Any]]", body["messages"]):
        role = turn["role"]
        blocks: list[SamplingMessageContentBlock] = []
        if role == "tool":
            result = ToolResultContent(
                tool_use_id=turn["tool_call_id"], content=[TextContent(text=turn["content"])]
            )
            if messages and messages[-1].role == "user":
                previous = messages[-1].content
                assert isinstance(previous, list)
                previous.append(result)
                continue
            messages.append(user(result))
            continue
        if role == "system":
            continue
        content = turn.get("content")
        if isinstance(content, str):
            blocks.append(TextContent(text=content))
        for part in cast("list[dict[str, Any]]", content if isinstance(content, list) else []):
            if part["type"] == "text":
                blocks.append(TextContent(text=part["text"]))
            elif part["type"] == "image_url":
                header, data = part["image_url"]["url"].split(",", 1)
                mime = header.removeprefix("data:").removesuffix(";base64")
                blocks.append(ImageContent(data=data, mime_type=mime))
            else:
                audio = part["input_audio"]
                blocks.append(
                    AudioContent(data=audio["data"], mime_type=f"audio/{audio['format']}")
                )
        for call in cast("list[dict[str, Any]]", turn.get("tool_calls", [])):
            function = call["function"]
            blocks.append(
                ToolUseContent(
                    id=call["id"], name=function["name"], input=json.loads(function["arguments"])
                )
            )
        messages.append(SamplingMessage(role=role, content=blocks))
    return messages


def anthropic_back(body: dict[str, Any]) -> list[SamplingMessage]:
    """The MCP messages an Anthropic request carries (the mapper's inverse)."""
    adapter = TypeAdapter[SamplingMessageContentBlock](SamplingMessageContentBlock)

    def block(part: dict[str, Any]) -> SamplingMessageContentBlock:
        if part["type"] == "image":
            source = part["source"]
            return ImageContent(data=source["data"], mime_type=source["media_type"])
        if part["type"] == "tool_result":
            return ToolResultContent(
                tool_use_id=part["tool_use_id"],
                content=[
                    cast("Any", block(item))
                    for item in cast("list[dict[str, Any]]", part["content"])
                ],
                is_error=part.get("is_error"),
            )
        return adapter.validate_python(part)

    return [
        SamplingMessage(
            role=turn["role"],
            content=[block(part) for part in cast("list[dict[str, Any]]", turn["content"])],
        )
        for turn in cast("list[dict[str, Any]]", body["messages"])
    ]


TEXT = TextContent(text="hello")
IMAGE = ImageContent(data=PNG, mime_type="image/png")
AUDIO = AudioContent(data="UklGRg==", mime_type="audio/wav")
CONTENT_KINDS: dict[str, list[SamplingMessage]] = {
    "text": [user(TEXT)],
    "image": [user(TEXT, IMAGE)],
    "audio": [user(TEXT, AUDIO)],
    "tool_use_and_result": [
        user(TEXT),
        assistant(
            TextContent(text="checking"),
            ToolUseContent(id="a", name="lookup", input={"q": "x", "n": [1, 2]}),
            ToolUseContent(id="b", name="other", input={}),
        ),
        user(
            ToolResultContent(tool_use_id="a", content=[TextContent(text="found")]),
            ToolResultContent(tool_use_id="b", content=[TextContent(text="nothing")]),
        ),
    ],
}


@pytest.mark.parametrize("kind", CONTENT_KINDS)
def test_openai_round_trip_keeps_every_content_kind(kind: str) -> None:
    messages = CONTENT_KINDS[kind]
    request = to_openai_request(params(*messages), model="m")
    assert_sdk_accepts(OPENAI_REQUEST, request.body)
    assert openai_back(request.body) == messages


@pytest.mark.parametrize("kind", [kind for kind in CONTENT_KINDS if kind != "audio"])
def test_anthropic_round_trip_keeps_every_content_kind(kind: str) -> None:
    messages = CONTENT_KINDS[kind]
    request = to_anthropic_request(params(*messages), model="m")
    assert_sdk_accepts(ANTHROPIC_REQUEST, request.body)
    assert anthropic_back(request.body) == messages


def openai_tool_call_reply(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }
    return {
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }


def test_openai_tool_loop_round_trip_gives_the_provider_back_its_own_names_and_ids() -> None:
    tools = [Tool(name="fs/read.file", input_schema={"type": "object"})]
    messages = [user(TEXT)]
    request = to_openai_request(params(*messages, tools=tools), model="m")
    safe_name = request.body["tools"][0]["function"]["name"]
    reply = openai_tool_call_reply("call_1", safe_name, '{"path": "a"}')
    result = from_openai_response(reply, model="m", request=request)
    assert result.content == ToolUseContent(id="call_1", name="fs/read.file", input={"path": "a"})
    assert result.stop_reason == "toolUse"

    messages += [
        SamplingMessage(role="assistant", content=result.content),
        user(ToolResultContent(tool_use_id="call_1", content=[TextContent(text="contents")])),
    ]
    again = to_openai_request(params(*messages, tools=tools), model="m").body["messages"]
    assert again[1]["tool_calls"][0]["id"] == "call_1"
    assert again[1]["tool_calls"][0]["function"]["name"] == safe_name
    assert again[2] == {"role": "tool", "tool_call_id": "call_1", "content": "contents"}


def test_anthropic_tool_loop_round_trip_gives_the_provider_back_its_own_names_and_ids() -> None:
    tools = [Tool(name="fs/read.file", input_schema={"type": "object"})]
    messages = [user(TEXT)]
    request = to_anthropic_request(params(*messages, tools=tools), model="m")
    safe_name = request.body["tools"][0]["name"]
    reply = {
        "model": "m",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": safe_name, "input": {"path": "a"}}
        ],
        "stop_reason": "tool_use",
    }
    result = from_anthropic_response(reply, model="m", request=request)
    assert result.content == ToolUseContent(id="toolu_1", name="fs/read.file", input={"path": "a"})

    messages += [
        SamplingMessage(role="assistant", content=result.content),
        user(ToolResultContent(tool_use_id="toolu_1", content=[TextContent(text="contents")])),
    ]
    again = to_anthropic_request(params(*messages, tools=tools), model="m").body["messages"]
    assert again[1]["content"][0] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": safe_name,
        "input": {"path": "a"},
    }
    assert again[2]["content"][0]["tool_use_id"] == "toolu_1"


# --- What a provider cannot take ---------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "quirks", "words"),
    [
        ([user(TEXT, IMAGE)], OpenAIQuirks(image_input=False), "messages[0].content[1]: an image"),
        ([user(AUDIO)], OpenAIQuirks.local(), "messages[0].content[0]: audio"),
        (
            [user(AudioContent(data="T2dn", mime_type="audio/ogg"))],
            OpenAIQuirks(),
            "'audio/ogg'",
        ),
        ([assistant(IMAGE)], OpenAIQuirks(), "an assistant image block"),
        (
            [
                user(TEXT),
                assistant(ToolUseContent(id="a", name="shot", input={})),
                user(ToolResultContent(tool_use_id="a", content=[IMAGE])),
            ],
            OpenAIQuirks(),
            "messages[2].content[0].content[0]: a tool result's image",
        ),
    ],
    ids=["image-off", "audio-off", "audio-format", "assistant-image", "tool-result-image"],
)
def test_openai_refuses_what_the_endpoint_cannot_take(
    messages: list[SamplingMessage], quirks: OpenAIQuirks, words: str
) -> None:
    with pytest.raises(SamplingProviderError, match=re.escape(words)) as caught:
        to_openai_request(params(*messages), model="m", quirks=quirks)
    assert caught.value.status is None


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (user(TEXT, AUDIO), "messages[0].content[1]: audio cannot be sent to Anthropic"),
        (user(ImageContent(data=PNG, mime_type="image/bmp")), "'image/bmp'"),
        (assistant(TEXT, IMAGE), "messages[0].content[1]: an image in an assistant message"),
    ],
    ids=["audio", "bitmap", "assistant-image"],
)
def test_anthropic_refuses_what_it_cannot_take(message: SamplingMessage, words: str) -> None:
    with pytest.raises(SamplingProviderError, match=re.escape(words)):
        to_anthropic_request(params(message), model="m")


def test_too_many_stop_sequences_are_refused_with_the_way_out() -> None:
    request = params(user(TEXT), stop_sequences=["a", "b", "c", "d", "e"])
    with pytest.raises(SamplingProviderError, match=r"at most 4.*OpenAIQuirks\(stop=False\)"):
        to_openai_request(request, model="m")
    body = to_openai_request(request, model="m", quirks=OpenAIQuirks.local()).body
    assert body["stop"] == ["a", "b", "c", "d", "e"]


@pytest.mark.parametrize("to_request", [to_openai_request, to_anthropic_request])
def test_unbalanced_tool_use_is_invalid_params(to_request: Any) -> None:
    unanswered = [user(TEXT), assistant(ToolUseContent(id="a", name="t", input={}))]
    with pytest.raises(InvalidParamsError, match="have no results"):
        to_request(params(*unanswered), model="m")


def test_tool_arguments_that_are_not_json_are_a_clear_error() -> None:
    request = to_openai_request(params(user(TEXT)), model="m")
    with pytest.raises(SamplingProviderError, match="'lookup' with arguments that are not JSON"):
        from_openai_response(
            openai_tool_call_reply("c", "lookup", "{oops"), model="m", request=request
        )


@pytest.mark.parametrize(
    ("content", "shown"),
    [(42, "42"), ({"text": "hi"}, "{'text': 'hi'}"), ([1], "[1]"), ([{"type": "text"}], "[{")],
)
def test_openai_content_that_is_not_text_is_the_endpoints_failure(
    content: object, shown: str
) -> None:
    request = to_openai_request(params(user(TEXT)), model="m")
    reply = {"choices": [{"message": {"role": "assistant", "content": content}}]}
    with pytest.raises(SamplingProviderError) as caught:
        from_openai_response(reply, model="m", request=request)
    assert str(caught.value).startswith(f"the endpoint answered a message whose content is {shown}")
    assert "neither text nor a list of text parts; check that base_url points at" in str(
        caught.value
    )


def test_openai_content_as_a_list_of_parts_keeps_the_text_parts() -> None:
    request = to_openai_request(params(user(TEXT)), model="m")
    parts = [
        {"type": "thinking", "thinking": "the user greets me"},
        {"type": "text", "text": "Hello, "},
        {"type": "text", "text": "Grace."},
    ]
    reply = {"choices": [{"message": {"content": parts}, "finish_reason": "stop"}]}
    result = from_openai_response(reply, model="m", request=request)
    assert result.content == TextContent(text="Hello, Grace.")


def test_openai_content_filter_and_anthropic_refusal_share_one_stop_reason() -> None:
    assert REFUSAL == "refusal"
    case = load(FIXTURES / "openai" / "content_filter.json")
    mcp = CreateMessageRequestParams.model_validate(case["params"])
    request = to_openai_request(mcp, model="m")
    assert from_openai_response(case["response"], model="m", request=request).stop_reason == REFUSAL


# --- Quirks and clamping -----------------------------------------------------------------


def test_required_tool_choice_without_tool_choice_support_is_asked_for_in_the_system_prompt() -> (
    None
):
    request = params(
        user(TEXT),
        system_prompt="Be brief.",
        tools=[Tool(name="t")],
        tool_choice=ToolChoice(mode="required"),
    )
    body = to_openai_request(request, model="m", quirks=OpenAIQuirks(tool_choice=False)).body
    assert "tool_choice" not in body
    assert [tool["function"]["name"] for tool in body["tools"]] == ["t"]
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][0]["content"].startswith("Be brief.\n\nYou must answer by calling")
    honoured = to_openai_request(request, model="m").body
    assert honoured["tool_choice"] == "required"
    assert honoured["messages"][0] == {"role": "system", "content": "Be brief."}


@pytest.mark.parametrize(
    ("asked", "openai_sent", "anthropic_sent"),
    [(-1.0, 0.0, 0.0), (0.7, 0.7, 0.7), (1.5, 1.5, 1.0), (9.0, 2.0, 1.0)],
)
def test_temperature_is_clamped_into_each_providers_range(
    asked: float, openai_sent: float, anthropic_sent: float
) -> None:
    request = params(user(TEXT), temperature=asked)
    assert to_openai_request(request, model="m").body["temperature"] == openai_sent
    assert to_anthropic_request(request, model="m").body["temperature"] == anthropic_sent


def test_emulated_stop_leaves_a_reply_without_the_sequence_alone() -> None:
    request = to_openai_request(
        params(user(TEXT), stop_sequences=["END"]), model="m", quirks=OpenAIQuirks(stop=False)
    )
    reply = {"choices": [{"message": {"content": "all done"}, "finish_reason": "length"}]}
    result = from_openai_response(reply, model="asked-for", request=request)
    assert result == CreateMessageResult(
        role="assistant",
        content=TextContent(text="all done"),
        model="asked-for",
        stop_reason="maxTokens",
    )


# --- Name remapping ----------------------------------------------------------------------


def test_names_a_provider_accepts_pass_unchanged_and_others_are_renamed_reversibly() -> None:
    names = ReversibleNames()
    long_name = "n" * 70
    assert names.to_provider("read_file-2") == "read_file-2"
    assert names.to_provider("files.read") == "files_read_601e4eb6"
    renamed = names.to_provider(long_name)
    assert len(renamed) == 64
    assert names.from_provider(renamed) == long_name
    assert names.from_provider("files_read_601e4eb6") == "files.read"
    assert names.from_provider("invented_by_model") == "invented_by_model"


def test_a_safe_name_equal_to_another_names_stand_in_is_renamed_too() -> None:
    names = ReversibleNames()
    assert names.to_provider("files.read") == "files_read_601e4eb6"
    clash = names.to_provider("files_read_601e4eb6")
    assert clash != "files_read_601e4eb6"
    assert names.from_provider(clash) == "files_read_601e4eb6"
    assert names.from_provider("files_read_601e4eb6") == "files.read"


@given(st.lists(st.text(min_size=1, max_size=80), unique=True, max_size=8))
def test_renaming_is_safe_injective_and_reversible(originals: list[str]) -> None:
    names = ReversibleNames()
    renamed = [names.to_provider(name) for name in originals]
    assert all(ACCEPTED_NAME.match(name) for name in renamed)
    assert len(set(renamed)) == len(renamed)
    assert [names.from_provider(name) for name in renamed] == originals


# --- Over HTTP: a loopback server playing both APIs --------------------------------------


@dataclass
class FakeEndpoint:
    """What the loopback server received, and what it answers next."""

    url: str = ""
    bodies: list[dict[str, Any]] = field(default_factory=lambda: list[dict[str, Any]]())
    headers: list[dict[str, str]] = field(default_factory=lambda: list[dict[str, str]]())
    status: int = 200
    answer: dict[str, Any] = field(default_factory=lambda: dict[str, Any]())
    script: list[dict[str, Any]] = field(default_factory=lambda: list[dict[str, Any]]())
    """Answers for the requests in order, when given (else ``answer`` for every one)."""


@asynccontextmanager
async def fake_provider() -> AsyncGenerator[FakeEndpoint]:
    endpoint = FakeEndpoint()

    async def answer(request: Request) -> JSONResponse:
        endpoint.bodies.append(cast("dict[str, Any]", await request.json()))
        endpoint.headers.append(dict(request.headers))
        scripted = endpoint.script[len(endpoint.bodies) - 1] if endpoint.script else None
        return JSONResponse(scripted or endpoint.answer, status_code=endpoint.status)

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", answer, methods=["POST"]),
            Route("/v1/messages", answer, methods=["POST"]),
        ]
    )
    async with serve(app, path="") as running:
        endpoint.url = running.url
        yield endpoint


def case_for(provider: str, name: str) -> tuple[CreateMessageRequestParams, dict[str, Any]]:
    case = load(FIXTURES / provider / f"{name}.json")
    return CreateMessageRequestParams.model_validate(case["params"]), case


@pytest.mark.anyio
async def test_openai_provider_over_httpx2_sends_the_golden_body() -> None:
    mcp, case = case_for("openai", "tool_loop")
    async with fake_provider() as endpoint:
        endpoint.answer = case["response"]
        provider = OpenAIChatProvider(base_url=f"{endpoint.url}/v1/", api_key="sk-test")
        result = await provider.create_message(mcp, model=case["model"])
    assert endpoint.bodies == [case["request"]]
    assert endpoint.headers[0]["authorization"] == "Bearer sk-test"
    assert result.model_dump(by_alias=True, exclude_none=True) == case["result"]


@pytest.mark.anyio
async def test_openai_provider_through_the_official_sdk_sends_the_same_body() -> None:
    mcp, case = case_for("openai", "tool_loop")
    async with fake_provider() as endpoint:
        endpoint.answer = case["response"]
        async with openai.AsyncOpenAI(
            base_url=f"{endpoint.url}/v1", api_key="sk-sdk", max_retries=0
        ) as client:
            provider: ModelProvider = OpenAIChatProvider(client=client)
            result = await provider.create_message(mcp, model=case["model"])
    assert endpoint.bodies == [case["request"]]
    assert endpoint.headers[0]["authorization"] == "Bearer sk-sdk"
    assert result.model_dump(by_alias=True, exclude_none=True) == case["result"]


@pytest.mark.anyio
async def test_anthropic_provider_over_httpx2_sends_the_golden_body() -> None:
    mcp, case = case_for("anthropic", "tool_loop")
    async with fake_provider() as endpoint:
        endpoint.answer = case["response"]
        provider = AnthropicProvider(api_key="ak-test", base_url=endpoint.url)
        result = await provider.create_message(mcp, model=case["model"])
    assert endpoint.bodies == [case["request"]]
    assert endpoint.headers[0]["x-api-key"] == "ak-test"
    assert endpoint.headers[0]["anthropic-version"] == "2023-06-01"
    assert result.model_dump(by_alias=True, exclude_none=True) == case["result"]


@pytest.mark.anyio
async def test_anthropic_provider_through_the_official_sdk_sends_the_same_body() -> None:
    mcp, case = case_for("anthropic", "tool_loop")
    async with fake_provider() as endpoint:
        endpoint.answer = case["response"]
        async with anthropic.AsyncAnthropic(
            base_url=endpoint.url, api_key="ak-sdk", max_retries=0
        ) as client:
            provider: ModelProvider = AnthropicProvider(client=client)
            result = await provider.create_message(mcp, model=case["model"])
    assert endpoint.bodies == [case["request"]]
    assert endpoint.headers[0]["x-api-key"] == "ak-sdk"
    assert result.model_dump(by_alias=True, exclude_none=True) == case["result"]


OPENAI_ERROR = {
    "error": {"message": "Incorrect API key provided.", "type": "invalid_request_error"}
}
ANTHROPIC_ERROR = {
    "type": "error",
    "error": {"type": "authentication_error", "message": "invalid x-api-key"},
}


@pytest.mark.anyio
@pytest.mark.parametrize("through_sdk", [False, True], ids=["httpx2", "sdk"])
async def test_openai_error_says_status_message_and_what_to_do(through_sdk: bool) -> None:
    async with fake_provider() as endpoint:
        endpoint.status, endpoint.answer = 401, OPENAI_ERROR
        async with openai.AsyncOpenAI(
            base_url=f"{endpoint.url}/v1", api_key="wrong", max_retries=0
        ) as client:
            provider = OpenAIChatProvider(
                base_url=f"{endpoint.url}/v1",
                api_key="wrong",
                client=client if through_sdk else None,
            )
            with pytest.raises(SamplingProviderError) as caught:
                await provider.create_message(params(user(TEXT)), model="m")
    assert caught.value.status == 401
    assert caught.value.failure == "refused"
    # The provider's words about the key are the host's; the server reading the
    # message gets the status and what to do.
    assert caught.value.provider_message == "Incorrect API key provided."
    assert str(caught.value).endswith("answered HTTP 401 (check the API key).")


@pytest.mark.anyio
@pytest.mark.parametrize("through_sdk", [False, True], ids=["httpx2", "sdk"])
async def test_anthropic_error_says_status_message_and_what_to_do(through_sdk: bool) -> None:
    async with fake_provider() as endpoint:
        endpoint.status, endpoint.answer = (
            429,
            ANTHROPIC_ERROR
            | {
                "error": {
                    "type": "rate_limit_error",
                    "message": "Number of requests has exceeded your rate limit.",
                }
            },
        )
        async with anthropic.AsyncAnthropic(
            base_url=endpoint.url, api_key="k", max_retries=0
        ) as client:
            provider = AnthropicProvider(
                api_key="k", base_url=endpoint.url, client=client if through_sdk else None
            )
            with pytest.raises(SamplingProviderError) as caught:
                await provider.create_message(params(user(TEXT)), model="m")
    assert caught.value.status == 429
    assert "rate limit" in str(caught.value)
    assert "wait and try again" in str(caught.value)


@pytest.mark.anyio
async def test_an_endpoint_nobody_listens_on_is_reported_without_its_url() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    provider = OpenAIChatProvider(base_url=url)
    with pytest.raises(SamplingProviderError, match=r"could not be reached .*check the base URL"):
        await provider.create_message(params(user(TEXT)), model="m")


@pytest.mark.anyio
async def test_a_timeout_is_reported_with_the_time_allowed() -> None:
    def time_out(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("read timed out", request=request)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(time_out)) as http:
        provider = AnthropicProvider(api_key="k", http_client=http, timeout=1)
        with pytest.raises(SamplingProviderError, match=r"did not answer within 1 s; try again"):
            await provider.create_message(params(user(TEXT)), model="m")


@pytest.mark.anyio
async def test_a_web_page_instead_of_the_api_is_reported() -> None:
    def web_page(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(200, text="<html>welcome</html>")

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(web_page)) as http:
        provider = OpenAIChatProvider(base_url="http://example.test", http_client=http)
        with pytest.raises(SamplingProviderError, match="not a web page"):
            await provider.create_message(params(user(TEXT)), model="m")


# --- End to end: a server's tool loop answered by the OpenAI provider --------------------


def openai_calls_reply(*calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    tool_calls = [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for call_id, name, args in calls
    ]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return {
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }


def assert_openai_balanced(messages: list[dict[str, Any]]) -> None:
    """Every assistant turn with tool calls is followed by one tool message per call,
    for exactly its ids, and tool messages appear nowhere else."""
    expected: set[str] = set()
    for turn in messages:
        if turn["role"] == "tool":
            assert turn["tool_call_id"] in expected, turn
            expected.discard(turn["tool_call_id"])
            continue
        assert not expected, f"unanswered tool calls {expected} before {turn}"
        if turn["role"] == "assistant":
            expected = {call["id"] for call in turn.get("tool_calls", [])}
    assert not expected


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_five_round_tool_loop_through_the_openai_provider_stays_balanced(
    mode: str,
) -> None:
    mcp = MCPServer("Travel desk")

    @mcp.tool(name="units.convert")
    def convert(celsius: float) -> float:
        """Celsius to Fahrenheit."""
        return celsius * 9 / 5 + 32

    def weather(city: str) -> str:
        """Today's weather in a city."""
        return f"{city}: {len(city) * 3} C"

    @mcp.tool()
    async def plan(ctx: Context) -> str:
        reply = await ctx.sample("Plan a trip.", tools=[weather, "units.convert"], max_rounds=5)
        return f"{reply.text} ({reply.rounds} rounds)"

    convert_name = ReversibleNames().to_provider("units.convert")
    async with fake_provider() as endpoint:
        endpoint.script = [
            openai_calls_reply(
                ("c1", "weather", {"city": "Paris"}), ("c2", "weather", {"city": "Rome"})
            ),
            openai_calls_reply(("c3", convert_name, {"celsius": 15})),
            openai_calls_reply(("c4", "weather", {"city": "Lisbon"})),
            openai_calls_reply(
                ("c5", convert_name, {"celsius": 18}), ("c6", "weather", {"city": "Oslo"})
            ),
            {
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": "Lisbon."},
                        "finish_reason": "stop",
                    }
                ],
            },
        ]
        provider = OpenAIChatProvider(base_url=f"{endpoint.url}/v1", api_key="k")

        async def sample(
            context: ClientRequestContext, params: CreateMessageRequestParams
        ) -> CreateMessageResult:
            return await provider.create_message(params, model="gpt-test")

        async with Client(
            mcp,
            mode=mode,
            sampling_callback=sample,
            sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()),
        ) as connected:
            result = await connected.call_tool("plan")
    assert result.content == [TextContent(text="Lisbon. (5 rounds)")]
    assert len(endpoint.bodies) == 5
    for body in endpoint.bodies:
        assert_openai_balanced(body["messages"])
        assert_sdk_accepts(OPENAI_REQUEST, body)
        assert {tool["function"]["name"] for tool in body["tools"]} == {"weather", convert_name}
    assert [body.get("tool_choice") for body in endpoint.bodies] == [None, None, None, None, "none"]
    last = endpoint.bodies[-1]["messages"]
    rounds = "user | assistant tool tool | assistant tool | assistant tool | assistant tool tool"
    assert [turn["role"] for turn in last] == rounds.replace("|", "").split()
    assert {turn["tool_call_id"]: turn["content"] for turn in last if turn["role"] == "tool"} == {
        "c1": "Paris: 15 C",
        "c2": "Rome: 12 C",
        "c3": "59.0",
        "c4": "Lisbon: 18 C",
        "c5": "64.4",
        "c6": "Oslo: 12 C",
    }


@pytest.mark.anyio
async def test_the_example_answers_sampling_through_an_openai_compatible_endpoint() -> None:
    example = Path(__file__).parent.parent / "examples" / "sampling_with_a_model.py"
    async with fake_provider() as endpoint:
        message = {"role": "assistant", "content": "Lima."}
        endpoint.answer = {
            "model": "fake-llama",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        env = os.environ | {"OPENAI_BASE_URL": f"{endpoint.url}/v1", "OPENAI_MODEL": "llama3.2"}
        env.pop("OPENAI_API_KEY", None)
        completed = await anyio.run_process([sys.executable, str(example)], env=env, check=False)
    assert completed.returncode == 0, completed.stderr.decode()
    assert completed.stdout.decode().splitlines() == ["fake-llama said: Lima."]
    [body] = endpoint.bodies
    assert body["model"] == "llama3.2"
    assert body["max_tokens"] == 200
    assert body["messages"][0] == {"role": "system", "content": "Answer in one short sentence."}
    assert "authorization" not in endpoint.headers[0]
