"""What a failing model endpoint tells the server that asked for sampling.

The server is a third party: it learns that the model could not answer, the status and
the kind of failure, never the host's endpoint address or the credentials in it. A
loopback server plays both APIs and fails each way a real one does, and every failure
is checked on both adapters, over httpx2 and through the official SDK clients.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anthropic
import anyio
import openai
import pytest
from http_support import free_port, serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from answerback import Client, MCPError
from answerback.interact.sampling import (
    AnthropicProvider,
    AuditLog,
    ModelCatalogue,
    ModelInfo,
    ModelProvider,
    ModelSampler,
    OpenAIChatProvider,
    OpenAIQuirks,
    ReversibleNames,
    SamplingProviderError,
    approve_all,
    from_anthropic_response,
    from_openai_response,
    to_anthropic_request,
    to_openai_request,
)
from answerback.server import Context, MCPServer
from answerback.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CreateMessageRequestParams,
    ErrorData,
    SamplingMessage,
    TextContent,
    Tool,
    ToolResultContent,
    ToolUseContent,
)

USER = "alice"
PASSWORD = "s3cret-pass"
KEY = "sk-proj-abcdef0123456789"
TOKEN = "t0ken-only-the-host-knows"
INTERNAL_HOST = "10.0.0.5"
SECRETS = (USER, PASSWORD, KEY, TOKEN, "abcdef0123456789", INTERNAL_HOST, "127.0.0.1", "localhost")
"""What the server must never read."""


@dataclass
class Script:
    """What the loopback API answers next, and what it received."""

    answers: list[Response] = field(default_factory=lambda: list[Response]())
    hang: bool = False
    bodies: list[dict[str, Any]] = field(default_factory=lambda: list[dict[str, Any]]())
    release: threading.Event = field(default_factory=threading.Event)


@asynccontextmanager
async def model_api() -> AsyncGenerator[tuple[Script, int]]:
    """Both APIs on one loopback port, answering from a script (or never, until the
    block ends, when ``hang`` is set)."""
    script = Script()

    async def answer(request: Request) -> Response:
        script.bodies.append(json.loads(await request.body()))
        if script.hang:
            await anyio.to_thread.run_sync(script.release.wait)
            return PlainTextResponse("too late")
        return script.answers.pop(0)

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", answer, methods=["POST"]),
            Route("/v1/messages", answer, methods=["POST"]),
        ]
    )
    try:
        async with serve(app, path="") as running:
            yield script, running.port
    finally:
        script.release.set()


def error_body(message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": "api_error", "message": message}}


LEAKY_MESSAGE = (
    f"upstream http://{INTERNAL_HOST}:11434/api failed for key {KEY} (token={TOKEN}); try later"
)
FAILURES: dict[str, tuple[list[Response], str, int | None]] = {
    # name: (answers, the failure class, the status)
    "http 500": ([JSONResponse(error_body(LEAKY_MESSAGE), 500)], "failing", 500),
    "http 401": (
        [JSONResponse(error_body(f"Incorrect API key provided: {KEY[:8]}****6789."), 401)],
        "refused",
        401,
    ),
    "http 429": (
        [JSONResponse(error_body("slow down"), 429, headers={"retry-after": "7"})],
        "rate_limited",
        429,
    ),
    "html 502": (
        [Response(f"<html>nginx at {INTERNAL_HOST}</html>".encode(), 502, media_type="text/html")],
        "failing",
        502,
    ),
    "malformed json": (
        [Response(b'{"choices": [', 200, media_type="application/json")],
        "malformed",
        None,
    ),
    "html 200": (
        [Response(b"<html>welcome</html>", 200, media_type="text/html")],
        "malformed",
        None,
    ),
    "error with 200": ([JSONResponse(error_body(LEAKY_MESSAGE), 200)], "malformed", None),
}
KINDS = ["openai httpx2", "openai sdk", "anthropic httpx2", "anthropic sdk"]


@asynccontextmanager
async def provider_at(
    kind: str, port: int, *, timeout: float = 30.0
) -> AsyncGenerator[ModelProvider]:
    """One adapter, one way, at a base URL that carries a user name and password."""
    root = f"http://{USER}:{PASSWORD}@127.0.0.1:{port}"
    if kind == "openai httpx2":
        yield OpenAIChatProvider(base_url=f"{root}/v1", api_key=KEY, timeout=timeout)
    elif kind == "anthropic httpx2":
        yield AnthropicProvider(base_url=root, api_key=KEY, timeout=timeout)
    elif kind == "openai sdk":
        async with openai.AsyncOpenAI(
            base_url=f"{root}/v1", api_key=KEY, max_retries=0, timeout=timeout
        ) as client:
            yield OpenAIChatProvider(client=client)
    else:
        async with anthropic.AsyncAnthropic(
            base_url=root, api_key=KEY, max_retries=0, timeout=timeout
        ) as client:
            yield AnthropicProvider(client=client)


def ask(text: str = "hello") -> CreateMessageRequestParams:
    return CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(text=text))], max_tokens=20
    )


def sampler_over(provider: ModelProvider) -> tuple[ModelSampler, io.StringIO]:
    """A sampler that runs every request on ``provider``, and the audit log it writes."""
    log = io.StringIO()
    catalogue = ModelCatalogue([ModelInfo("m", provider)])
    return ModelSampler(catalogue, approval=approve_all, audit=AuditLog(log)), log


def assert_nothing_of_the_host(error: ErrorData, audit: str) -> None:
    shown = json.dumps({"message": error.message, "data": error.data})
    for secret in SECRETS:
        assert secret not in shown, (secret, shown)
    for secret in (USER, PASSWORD, KEY):
        assert secret not in audit, (secret, audit)


async def failed(kind: str, port: int, *, timeout: float = 30.0) -> tuple[ErrorData, str]:
    async with provider_at(kind, port, timeout=timeout) as provider:
        sampler, log = sampler_over(provider)
        error = await sampler.answer("srv", None, ask())
    assert isinstance(error, ErrorData)
    assert error.code == INTERNAL_ERROR
    assert isinstance(error.data, dict)
    # The host's audit log says where the request went, without the credentials.
    outcome = json.loads(log.getvalue().splitlines()[-1])
    assert outcome["endpoint"].split("/")[:3] == ["http:", "", f"127.0.0.1:{port}"]
    return error, log.getvalue()


def data_of(error: ErrorData) -> dict[str, Any]:
    data: object = error.data
    assert isinstance(data, dict)
    return cast("dict[str, Any]", data)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("case", list(FAILURES))
async def test_a_failing_endpoint_tells_the_server_what_failed_and_nothing_of_the_host(
    kind: str, case: str
) -> None:
    answers, failure, status = FAILURES[case]
    async with model_api() as (script, port):
        script.answers = list(answers)
        error, audit = await failed(kind, port)
    assert_nothing_of_the_host(error, audit)
    assert error.message.startswith("Sampling failed: model 'm' could not answer: ")
    assert error.data == {"reason": "provider_failed", "status": status, "failure": failure} | (
        {"retryAfterSeconds": 7.0} if case == "http 429" else {}
    )
    if case == "http 500":
        # A 5xx is the host's network failing: its words (a gateway names the hosts
        # behind it) are nothing the server can act on, so they are not repeated.
        assert "upstream" not in error.message
    if case == "http 401":
        assert "Incorrect API key" not in error.message
        assert "check the API key" in error.message


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_an_unreachable_endpoint_is_named_to_nobody_but_the_host(kind: str) -> None:
    error, audit = await failed(kind, free_port())
    assert_nothing_of_the_host(error, audit)
    assert "could not be reached" in error.message
    assert error.data == {"reason": "provider_failed", "status": None, "failure": "unreachable"}


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_an_endpoint_that_does_not_answer_in_time_is_named_to_nobody_but_the_host(
    kind: str,
) -> None:
    async with model_api() as (script, port):
        script.hang = True
        error, audit = await failed(kind, port, timeout=0.5)
    assert_nothing_of_the_host(error, audit)
    assert "did not answer" in error.message
    assert error.data == {"reason": "provider_failed", "status": None, "failure": "timed_out"}


@pytest.mark.anyio
async def test_the_host_keeps_the_endpoint_without_its_credentials() -> None:
    async with model_api() as (script, port):
        script.answers = [JSONResponse(error_body("down"), 503)]
        base = f"http://{USER}:{PASSWORD}@127.0.0.1:{port}/v1?api_key={KEY}&x=1"
        provider = OpenAIChatProvider(base_url=base)
        with pytest.raises(SamplingProviderError) as caught:
            await provider.create_message(ask(), model="m")
    endpoint = caught.value.endpoint
    assert endpoint is not None
    assert endpoint.startswith(f"http://127.0.0.1:{port}/v1")
    assert USER not in endpoint
    assert PASSWORD not in endpoint
    assert KEY not in endpoint
    assert "127.0.0.1" not in str(caught.value)


@pytest.mark.anyio
async def test_a_server_catching_the_failure_reads_no_host_address() -> None:
    mcp = MCPServer("asks")

    @mcp.tool()
    async def summarise(ctx: Context) -> str:
        try:
            await ctx.sample("hello", max_tokens=20)
        except MCPError as exc:
            return json.dumps({"message": exc.error.message, "data": exc.error.data})
        return "answered"

    async with model_api() as (script, port):
        script.answers = [JSONResponse(error_body(LEAKY_MESSAGE), 502)]
        async with provider_at("openai httpx2", port) as provider:
            sampler, _log = sampler_over(provider)
            async with Client(mcp, mode="legacy", responder=sampler.responder("asks")) as c:
                result = await c.call_tool("summarise")
    block = result.content[0]
    assert isinstance(block, TextContent)
    for secret in SECRETS:
        assert secret not in block.text
    assert json.loads(block.text)["data"]["failure"] == "failing"


# --- The replies that are not answers ----------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["anthropic httpx2", "anthropic sdk"])
async def test_an_anthropic_reply_without_content_is_a_failure_not_an_empty_answer(
    kind: str,
) -> None:
    async with model_api() as (script, port):
        script.answers = [JSONResponse({"id": "msg_1", "type": "message", "role": "assistant"})]
        error, _audit = await failed(kind, port)
    assert "answered without content" in error.message
    assert data_of(error)["failure"] == "malformed"


@pytest.mark.anyio
async def test_an_anthropic_reply_with_empty_content_is_still_an_answer() -> None:
    reply: dict[str, Any] = {
        "type": "message",
        "role": "assistant",
        "content": [],
        "stop_reason": "end_turn",
    }
    async with model_api() as (script, port):
        script.answers = [JSONResponse(reply | {"model": "m"})]
        async with provider_at("anthropic httpx2", port) as provider:
            result = await provider.create_message(ask(), model="m")
    assert result.content == TextContent(text="")
    assert result.stop_reason == "endTurn"


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
async def test_an_error_sent_with_http_200_is_told_to_the_host_only(kind: str) -> None:
    body: dict[str, Any] = error_body(LEAKY_MESSAGE) | {"choices": []}
    async with model_api() as (script, port):
        script.answers = [JSONResponse(body)]
        error, audit = await failed(kind, port)
        async with provider_at(kind, port) as provider:
            script.answers = [JSONResponse(body)]
            with pytest.raises(SamplingProviderError) as caught:
                await provider.create_message(ask(), model="m")
    assert_nothing_of_the_host(error, audit)
    assert "upstream" not in error.message
    assert data_of(error)["failure"] == "malformed"
    assert caught.value.provider_message == LEAKY_MESSAGE


SHARED_WORDS = {
    # status, the provider's words, what the server reads of them
    "ipv4 and port": (
        400,
        "OllamaException - Cannot connect to host 10.20.0.7:11434 ssl:default "
        "[Connect call failed ('10.20.0.7', 11434)]",
        "OllamaException - Cannot connect to host [address] ssl:default "
        "[Connect call failed ('[address]', 11434)]",
    ),
    "host and port": (
        404,
        "no model at llm-gpu-3.internal.corp.example:8000 nor ollama:11434",
        "no model at [address] nor [address]",
    ),
    "ipv6": (
        400,
        "tried [fd00::7]:8080, fe80::1%eth0, ::ffff:10.0.0.1 and 2001:db8:0:0:0:0:0:1",
        "tried [address], [address], [address] and [address]",
    ),
    "quoted key": (
        400,
        '{"api_key": "AIzaSyD-abcdefghijklmnopqrstuvwxyz012345"} is invalid',
        '{"api_key": [key]} is invalid',
    ),
    "key header": (
        422,
        "x-api-key: sk_live_0123456789abcdef rejected",
        "x-api-key: [key] rejected",
    ),
    "hex key": (
        400,
        "api-key: 0123456789abcdef0123456789abcdef is not valid for this deployment",
        "api-key: [key] is not valid for this deployment",
    ),
    "basic": (
        400,
        "Authorization: Basic dXNlcjpwYXNz is not accepted",
        "Authorization: [key] is not accepted",
    ),
    "named values": (
        413,
        "CLIENT_SECRET='a b', Access-Token=xyz; Password = hunter2, apiKey:q",
        "CLIENT_SECRET=[key], Access-Token=[key]; Password = [key], apiKey:[key]",
    ),
    "aws and org ids": (
        429,
        "AKIAIOSFODNN7EXAMPLE of org-AbCdEf123456 is over its limit",
        "[key] of [key] is over its limit",
    ),
    "what to change": (
        400,
        "This model's maximum context length is 8192 tokens (max_tokens: 100); llama3.1:70b",
        "This model's maximum context length is 8192 tokens (max_tokens: 100); llama3.1:70b",
    ),
}


@pytest.mark.anyio
@pytest.mark.parametrize("case", list(SHARED_WORDS))
async def test_the_words_the_server_can_act_on_reach_it_without_addresses_or_credentials(
    case: str,
) -> None:
    status, words, shared = SHARED_WORDS[case]
    async with model_api() as (script, port):
        script.answers = [JSONResponse(error_body(words), status)]
        error, _audit = await failed("openai httpx2", port)
    assert f"answered HTTP {status}: {shared} (" in error.message


@pytest.mark.anyio
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [500, 502, 503, 504, 401, 403, 407, 409])
async def test_words_about_the_host_are_not_repeated(kind: str, status: int) -> None:
    async with model_api() as (script, port):
        script.answers = [JSONResponse(error_body("upstream llm-gpu-3.internal failed"), status)]
        error, _audit = await failed(kind, port)
    assert "llm-gpu-3" not in error.message
    assert data_of(error)["status"] == status


MALFORMED_REPLIES = {
    "openai content": {"choices": [{"message": {"content": 42}}]},
    "openai call": {"choices": [{"message": {"tool_calls": ["x"]}}]},
    "openai arguments not json": {
        "choices": [
            {"message": {"tool_calls": [{"id": "a", "function": {"name": "t", "arguments": "{"}}]}}
        ]
    },
    "openai arguments not an object": {
        "choices": [
            {"message": {"tool_calls": [{"id": "a", "function": {"name": "t", "arguments": "[]"}}]}}
        ]
    },
    "anthropic text": {"type": "message", "content": [{"type": "text", "text": 42}]},
    "anthropic input": {
        "type": "message",
        "content": [{"type": "tool_use", "id": "a", "name": "t", "input": [1]}],
    },
}


@pytest.mark.parametrize("case", list(MALFORMED_REPLIES))
def test_a_reply_that_breaks_the_api_is_malformed(case: str) -> None:
    reply = MALFORMED_REPLIES[case]
    if case.startswith("openai"):
        request = to_openai_request(ask(), model="m")
        read = from_openai_response
    else:
        request = to_anthropic_request(ask(), model="m")
        read = from_anthropic_response
    with pytest.raises(SamplingProviderError) as caught:
        read(reply, model="m", request=request)
    assert caught.value.failure == "malformed"
    assert caught.value.status is None


# --- Tool calls without ids, or with the same id ------------------------------------------


def calls_reply(*ids: str | None) -> dict[str, Any]:
    calls = [
        ({"id": call_id} if call_id is not None else {})
        | {"type": "function", "function": {"name": "lookup", "arguments": json.dumps({"k": k})}}
        for call_id, k in zip(ids, "abc", strict=False)
    ]
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    return {"model": "llama", "choices": [{"message": message, "finish_reason": "tool_calls"}]}


def text_reply(text: str) -> dict[str, Any]:
    message = {"role": "assistant", "content": text}
    return {"model": "llama", "choices": [{"message": message, "finish_reason": "stop"}]}


@pytest.mark.anyio
@pytest.mark.parametrize(
    "ids", [[None, None], ["", ""], ["call_0", "call_0"]], ids=["missing", "empty", "repeated"]
)
async def test_tool_calls_without_ids_of_their_own_get_unique_ones_and_the_loop_works(
    ids: list[str | None],
) -> None:
    mcp = MCPServer("ids")

    def lookup(k: str) -> str:
        """Look a key up."""
        return f"v-{k}"

    @mcp.tool()
    async def find(ctx: Context) -> str:
        result = await ctx.sample("find a and b", tools=[lookup], max_tokens=50)
        return result.text

    async with model_api() as (script, port):
        # Round two repeats round one's calls (as some servers do): they are new calls.
        script.answers = [
            JSONResponse(calls_reply(*ids)),
            JSONResponse(calls_reply(*ids)),
            JSONResponse(text_reply("done")),
        ]
        provider = OpenAIChatProvider(
            base_url=f"http://127.0.0.1:{port}/v1", quirks=OpenAIQuirks.local()
        )
        sampler = ModelSampler(
            ModelCatalogue([ModelInfo("llama", provider)]), approval=approve_all, tools=True
        )
        async with Client(mcp, mode="legacy", responder=sampler.responder("ids")) as client:
            result = await client.call_tool("find")
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert block.text == "done"
    # What the endpoint was sent back pairs each call with its result, one id each.
    last = script.bodies[-1]["messages"]
    turns = [m for m in last if m["role"] == "assistant"]
    sent_ids = [call["id"] for turn in turns for call in turn["tool_calls"]]
    assert len(sent_ids) == 4
    assert len(set(sent_ids)) == 4
    assert all(sent_ids)
    answered = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert answered == sent_ids


@pytest.mark.anyio
async def test_an_anthropic_tool_use_with_a_repeated_id_gets_one_of_its_own() -> None:
    use: dict[str, Any] = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}
    reply: dict[str, Any] = {
        "type": "message",
        "content": [use, use],
        "stop_reason": "tool_use",
        "model": "m",
    }
    params = ask().model_copy(
        update={"tools": [Tool(name="lookup", input_schema={"type": "object"})]}
    )
    async with model_api() as (script, port):
        script.answers = [JSONResponse(reply)]
        async with provider_at("anthropic httpx2", port) as provider:
            result = await provider.create_message(params, model="m")
    assert isinstance(result.content, list)
    uses = [b for b in result.content if isinstance(b, ToolUseContent)]
    assert uses[0].id == "toolu_1"
    assert uses[1].id not in ("toolu_1", "")


# --- Retry-After, names ----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["openai httpx2", "openai sdk"])
async def test_a_retry_after_in_milliseconds_is_carried_in_seconds(kind: str) -> None:
    async with model_api() as (script, port):
        script.answers = [JSONResponse(error_body("wait"), 429, headers={"retry-after-ms": "1500"})]
        error, _audit = await failed(kind, port)
    assert data_of(error)["retryAfterSeconds"] == 1.5


@pytest.mark.parametrize("order", ["stand-in first", "stand-in second"])
def test_a_name_equal_to_another_names_stand_in_never_collides(order: str) -> None:
    dotted = "x.y"
    stand_in = ReversibleNames().to_provider(dotted)
    names = ReversibleNames()
    originals = [stand_in, dotted] if order == "stand-in first" else [dotted, stand_in]
    renamed = [names.to_provider(name) for name in originals]
    assert len(set(renamed)) == 2
    assert [names.from_provider(name) for name in renamed] == originals


@pytest.mark.anyio
async def test_a_request_without_messages_is_refused_before_anyone_approves_it() -> None:
    asked: list[object] = []

    async def approval(request: object) -> bool:
        asked.append(request)
        return True

    sampler = ModelSampler(ModelCatalogue([ModelInfo("m", unused_provider())]), approval=approval)
    params = CreateMessageRequestParams(messages=[], max_tokens=20)
    error = await sampler.answer("srv", None, params)
    assert isinstance(error, ErrorData)
    assert error.code == INVALID_PARAMS
    assert "messages is empty" in error.message
    assert error.data == {"reason": "no_messages"}
    assert asked == []


def unused_provider() -> ModelProvider:
    """A provider at an address nobody listens on: the tests that use it never send."""
    return OpenAIChatProvider(base_url=f"http://127.0.0.1:{free_port()}/v1")


def test_empty_text_carried_on_is_left_out_of_the_anthropic_request() -> None:
    refused = SamplingMessage(role="assistant", content=TextContent(text=""))
    mixed = SamplingMessage(
        role="assistant",
        content=[TextContent(text=""), ToolUseContent(id="t1", name="lookup", input={})],
    )
    result = SamplingMessage(
        role="user",
        content=ToolResultContent(tool_use_id="t1", content=[TextContent(text="v")]),
    )
    params = CreateMessageRequestParams(
        messages=[ask().messages[0], refused, ask("again").messages[0], mixed, result],
        max_tokens=20,
    )
    sent = to_anthropic_request(params, model="m").body["messages"]
    assert [message["role"] for message in sent] == ["user", "user", "assistant", "user"]
    assert sent[2]["content"] == [{"type": "tool_use", "id": "t1", "name": "lookup", "input": {}}]
