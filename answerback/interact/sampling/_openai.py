"""MCP sampling over the OpenAI Chat Completions API (OpenAI, Ollama, vLLM, llama.cpp, LM Studio).

``to_openai_request`` and ``from_openai_response`` are pure, so every mapping rule is
tested without a network; ``OpenAIChatProvider`` adds the HTTP (httpx2, or an
``openai.AsyncOpenAI`` client the caller already has).

The shapes differ in three ways worth knowing. The system prompt is a ``system``
message. Tool results are not user content but one ``tool`` message per result, which
takes only text. And ``finish_reason: "stop"`` does not say whether a stop sequence
matched, so it maps to ``endTurn`` unless the stop was emulated here.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

import httpx2

from answerback._options import http_url, instance_or_none, positive_seconds
from answerback.interact.sampling._http import (
    check_sdk_client,
    checked_api_key,
    post_json,
    provider_message,
    through_sdk,
)
from answerback.interact.sampling._names import ToolNames
from answerback.interact.sampling._provider import (
    REFUSAL,
    MappedRequest,
    SamplingProviderError,
    blocks_of,
    clamp_temperature,
    content_of,
    cut_at_stop,
    shown_endpoint,
    text_of,
)
from answerback.interact.sampling._quirks import OpenAIQuirks
from answerback.types import (
    AudioContent,
    CreateMessageRequestParams,
    CreateMessageResult,
    ImageContent,
    SamplingMessage,
    SamplingMessageContentBlock,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)
from answerback.types._sampling_rules import check_tool_balance

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types.chat import ChatCompletion

OPENAI_BASE_URL = "https://api.openai.com/v1"
OPENAI_TEMPERATURE_MAX = 2.0
_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
_STOP_REASONS = {
    "stop": "endTurn",
    "length": "maxTokens",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    "content_filter": REFUSAL,
}
_REQUIRED_INSTRUCTION = "You must answer by calling one or more of the tools."


def _refuse(where: str, what: str, why: str) -> SamplingProviderError:
    return SamplingProviderError(f"{where}: {what} cannot be sent to this endpoint: {why}.")


def _user_part(
    block: SamplingMessageContentBlock, where: str, quirks: OpenAIQuirks
) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageContent):
        if not quirks.image_input:
            raise _refuse(where, "an image", "its quirks say it takes no image input")
        url = f"data:{block.mime_type};base64,{block.data}"
        return {"type": "image_url", "image_url": {"url": url}}
    if isinstance(block, AudioContent):
        if not quirks.audio_input:
            raise _refuse(where, "audio", "its quirks say it takes no audio input")
        audio_format = _AUDIO_FORMATS.get(block.mime_type.lower())
        if audio_format is None:
            raise _refuse(
                where, f"audio of type {block.mime_type!r}", "OpenAI takes only wav and mp3"
            )
        return {"type": "input_audio", "input_audio": {"data": block.data, "format": audio_format}}
    raise _refuse(where, f"a {block.type} block", "it is not user content")


def _tool_message(result: ToolResultContent, where: str, names: ToolNames) -> dict[str, Any]:
    texts: list[str] = []
    for index, block in enumerate(result.content):
        text = text_of(block)
        if text is None:
            raise _refuse(
                f"{where}.content[{index}]",
                f"a tool result's {block.type}",
                "OpenAI tool messages take only text",
            )
        texts.append(text)
    if not texts and result.structured_content is not None:
        texts.append(json.dumps(result.structured_content))
    text = "\n".join(texts)
    if result.is_error:
        # The Chat Completions API has no error flag on tool messages; say it in words.
        text = f"Error: {text}" if text else "Error"
    return {
        "role": "tool",
        "tool_call_id": names.ids.to_provider(result.tool_use_id),
        "content": text,
    }


def _messages(
    message: SamplingMessage, index: int, quirks: OpenAIQuirks, names: ToolNames
) -> list[dict[str, Any]]:
    blocks = blocks_of(message.content)
    where = f"messages[{index}]"
    if message.role == "assistant":
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for position, block in enumerate(blocks):
            if isinstance(block, TextContent):
                texts.append(block.text)
            elif isinstance(block, ToolUseContent):
                calls.append(
                    {
                        "id": names.ids.to_provider(block.id),
                        "type": "function",
                        "function": {
                            "name": names.names.to_provider(block.name),
                            "arguments": json.dumps(block.input),
                        },
                    }
                )
            else:
                raise _refuse(
                    f"{where}.content[{position}]",
                    f"an assistant {block.type} block",
                    "assistant messages take only text and tool calls",
                )
        turn: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) if texts else None}
        if calls:
            turn["tool_calls"] = calls
        return [turn]
    if any(isinstance(block, ToolResultContent) for block in blocks):
        return [
            _tool_message(block, f"{where}.content[{position}]", names)
            for position, block in enumerate(blocks)
            if isinstance(block, ToolResultContent)
        ]
    if len(blocks) == 1 and isinstance(blocks[0], TextContent):
        # Plain string content: the one shape every OpenAI-compatible server reads.
        return [{"role": "user", "content": blocks[0].text}]
    parts = [
        _user_part(block, f"{where}.content[{position}]", quirks)
        for position, block in enumerate(blocks)
    ]
    return [{"role": "user", "content": parts}]


def to_openai_request(
    params: CreateMessageRequestParams, *, model: str, quirks: OpenAIQuirks | None = None
) -> MappedRequest:
    """The Chat Completions request for ``params`` (pure; raises ``SamplingProviderError``
    for content the endpoint cannot take and ``InvalidParamsError`` for unbalanced tool use)."""
    quirks = quirks or OpenAIQuirks()
    check_tool_balance(params.messages)
    names = ToolNames()
    system = params.system_prompt
    mode = params.tool_choice.mode if params.tool_choice else None
    send_tools = bool(params.tools) and not (mode == "none" and not quirks.tool_choice)
    if send_tools and mode == "required" and not quirks.tool_choice:
        system = f"{system}\n\n{_REQUIRED_INSTRUCTION}" if system else _REQUIRED_INSTRUCTION
    messages: list[dict[str, Any]] = []
    if system:
        messages.append({"role": "system", "content": system})
    for index, message in enumerate(params.messages):
        messages.extend(_messages(message, index, quirks, names))
    body: dict[str, Any] = {"model": model, "messages": messages}
    body[quirks.max_tokens_field] = params.max_tokens
    if params.temperature is not None:
        body["temperature"] = clamp_temperature(params.temperature, OPENAI_TEMPERATURE_MAX)
    emulated: tuple[str, ...] = ()
    if params.stop_sequences:
        if not quirks.stop:
            emulated = tuple(params.stop_sequences)
        elif quirks.max_stop_sequences is not None and (
            len(params.stop_sequences) > quirks.max_stop_sequences
        ):
            raise SamplingProviderError(
                f"stopSequences has {len(params.stop_sequences)} entries and this endpoint takes "
                f"at most {quirks.max_stop_sequences}; send fewer, or set "
                "OpenAIQuirks(stop=False) to cut the reply here instead."
            )
        else:
            body["stop"] = list(params.stop_sequences)
    if send_tools and params.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": names.names.to_provider(tool.name),
                    **({"description": tool.description} if tool.description else {}),
                    "parameters": tool.input_schema,
                },
            }
            for tool in params.tools
        ]
        if mode is not None and quirks.tool_choice:
            body["tool_choice"] = mode
    return MappedRequest(body, names, emulated)


def _tool_use(call: object, names: ToolNames, seen: set[str]) -> ToolUseContent:
    if not isinstance(call, dict):
        raise SamplingProviderError(
            "the endpoint answered a tool call that is not an object.", failure="malformed"
        )
    call = cast("dict[str, Any]", call)
    function = cast("dict[str, Any]", call.get("function") or {})
    name = function.get("name")
    raw = function.get("arguments") or "{}"
    try:
        arguments: object = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as exc:
        raise SamplingProviderError(
            f"the model called {name!r} with arguments that are not JSON ({raw[:200]!r}); "
            "ask again, or use a model that is better at tool calls.",
            failure="malformed",
        ) from exc
    if not isinstance(arguments, dict) or not isinstance(name, str):
        raise SamplingProviderError(
            f"the model called {name!r} with arguments that are not a JSON object; "
            "ask again, or use a model that is better at tool calls.",
            failure="malformed",
        )
    return ToolUseContent(
        id=names.answered_id(call.get("id"), seen),
        name=names.names.from_provider(name),
        input=cast("dict[str, Any]", arguments),
    )


def _reply_text(content: object) -> str | None:
    """The text of a reply's ``content``: a string, or (as some compatible servers send)
    a list of parts whose ``text`` parts are joined, other parts (thinking) dropped.
    Anything else would pass for an empty answer, so it is the endpoint's failure."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = cast("list[object]", content)
        if all(_is_part(part) for part in parts):
            texts = (cast("dict[str, Any]", part) for part in parts)
            return "".join(part["text"] for part in texts if part.get("type") == "text")
    raise SamplingProviderError(
        f"the endpoint answered a message whose content is {content!r:.60}, neither text "
        "nor a list of text parts; check that base_url points at an OpenAI-compatible "
        "/chat/completions endpoint.",
        failure="malformed",
    )


def _is_part(part: object) -> bool:
    if not isinstance(part, dict):
        return False
    part = cast("dict[str, Any]", part)
    return part.get("type") != "text" or isinstance(part.get("text"), str)


def from_openai_response(
    response: dict[str, Any], *, model: str, request: MappedRequest
) -> CreateMessageResult:
    """The MCP result for a Chat Completions response (pure). A refusal (a ``refusal``
    message or ``finish_reason: "content_filter"``) comes back as text with stop reason
    ``"refusal"``; tool names and ids are mapped back through ``request``'s maps."""
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        raise SamplingProviderError(
            "The OpenAI-compatible endpoint answered without choices; check the model name.",
            provider_message=provider_message(response),
            failure="malformed",
        )
    choice = cast("dict[str, Any]", cast("list[Any]", choices)[0])
    message = cast("dict[str, Any]", choice.get("message") or {})
    finish = choice.get("finish_reason")
    stop_reason = _STOP_REASONS.get(finish, finish) if isinstance(finish, str) else None
    blocks: list[SamplingMessageContentBlock] = []
    refusal = message.get("refusal")
    text = _reply_text(message.get("content"))
    if isinstance(refusal, str) and refusal:
        blocks.append(TextContent(text=refusal))
        stop_reason = REFUSAL
    elif isinstance(text, str) and text:
        cut = cut_at_stop(text, request.emulated_stops)
        if cut is not None:
            text, stop_reason = cut, "stopSequence"
        blocks.append(TextContent(text=text))
    calls = cast("list[object]", message.get("tool_calls") or [])
    seen: set[str] = set()
    blocks.extend(_tool_use(call, request.names, seen) for call in calls)
    if not blocks:
        blocks.append(TextContent(text=""))
    answered = response.get("model")
    return CreateMessageResult(
        role="assistant",
        content=content_of(blocks),
        model=answered if isinstance(answered, str) and answered else model,
        stop_reason=stop_reason,
    )


class OpenAIChatProvider:
    """A ``ModelProvider`` for any OpenAI-compatible ``/chat/completions`` endpoint.

    ``base_url`` ends where ``/chat/completions`` starts (``http://localhost:11434/v1``
    for Ollama). Requests go over httpx2 (``http_client`` to reuse one), or through
    ``client``, an ``openai.AsyncOpenAI`` the caller configured (then ``base_url``,
    ``api_key`` and ``timeout`` are the client's own).

    Refused when given (``TypeError``, ``ValueError``): a ``base_url`` that is not an
    absolute http(s) URL, an empty ``api_key`` (``None`` is the endpoint that needs no
    key), a ``timeout`` that is not a positive, finite number of seconds, ``quirks`` that
    are not ``OpenAIQuirks``, a synchronous ``openai.OpenAI`` as ``client``.
    """

    def __init__(
        self,
        *,
        base_url: str = OPENAI_BASE_URL,
        api_key: str | None = None,
        quirks: OpenAIQuirks | None = None,
        client: AsyncOpenAI | None = None,
        http_client: httpx2.AsyncClient | None = None,
        timeout: float = 120.0,
    ) -> None:
        base_url = http_url("base_url", base_url, "the API, where /chat/completions starts")
        self.base_url = base_url.rstrip("/")
        self.quirks = (
            instance_or_none(
                "quirks", quirks, OpenAIQuirks, "OpenAIQuirks(...) or OpenAIQuirks.local()"
            )
            or OpenAIQuirks()
        )
        self._api_key = checked_api_key(api_key)
        check_sdk_client(
            client,
            sdk="openai",
            method=("chat", "completions", "create"),
            asynchronous="AsyncOpenAI",
            synchronous="OpenAI",
        )
        self._client = client
        self._http = instance_or_none(
            "http_client", http_client, httpx2.AsyncClient, "an httpx2.AsyncClient"
        )
        self._timeout = positive_seconds("timeout", timeout)

    def __repr__(self) -> str:
        """Where requests go, never the key."""
        if self._client is not None:
            return f"OpenAIChatProvider(client={type(self._client).__name__})"
        base_url = shown_endpoint(self.base_url)
        return f"OpenAIChatProvider(base_url={base_url!r}, quirks={self.quirks!r})"

    async def create_message(
        self, params: CreateMessageRequestParams, *, model: str
    ) -> CreateMessageResult:
        """Map ``params``, send them to ``model``, and map the answer back."""
        request = to_openai_request(params, model=model, quirks=self.quirks)
        if self._client is not None:
            endpoint = shown_endpoint(str(self._client.base_url))
            response = await self._through_sdk(self._client, request.body, endpoint)
        else:
            url = f"{self.base_url}/chat/completions"
            endpoint = shown_endpoint(url)
            headers = {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            response = await post_json(
                self._http,
                url,
                headers=headers,
                body=request.body,
                timeout=self._timeout,
                label="The OpenAI-compatible endpoint",
            )
        try:
            return from_openai_response(response, model=model, request=request)
        except SamplingProviderError as exc:  # the answer is not one: say where it came from
            exc.endpoint = endpoint
            raise

    @staticmethod
    async def _through_sdk(
        client: AsyncOpenAI, body: dict[str, Any], endpoint: str
    ) -> dict[str, Any]:
        import openai

        # Without ``stream``, the SDK answers a whole ChatCompletion; the overloads cannot tell
        # that from a dict of arguments.
        create = cast("Callable[..., Awaitable[ChatCompletion]]", client.chat.completions.create)
        return await through_sdk(
            openai,
            create(**body),
            label="The OpenAI-compatible endpoint",
            endpoint=endpoint,
        )
