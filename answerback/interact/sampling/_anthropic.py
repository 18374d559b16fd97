"""MCP sampling over the Anthropic Messages API.

``to_anthropic_request`` and ``from_anthropic_response`` are pure; ``AnthropicProvider``
adds the HTTP (httpx2, or an ``anthropic.AsyncAnthropic`` client the caller already has).

MCP's sampling was modelled on this API, so most blocks map one to one: the system prompt
is a field, tool results stay user content with ``is_error``, and ``toolChoice: required``
is ``{"type": "any"}``. What does not map is refused before sending: audio, and images
other than JPEG, PNG, GIF and WebP.
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
    shown_endpoint,
    text_of,
)
from answerback.types import (
    ContentBlock,
    CreateMessageRequestParams,
    CreateMessageResult,
    ImageContent,
    SamplingMessageContentBlock,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)
from answerback.types._sampling_rules import check_tool_balance

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from anthropic.types import Message

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
ANTHROPIC_TEMPERATURE_MAX = 1.0
_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_STOP_REASONS = {
    "end_turn": "endTurn",
    "max_tokens": "maxTokens",
    "stop_sequence": "stopSequence",
    "tool_use": "toolUse",
    "refusal": REFUSAL,
    "model_context_window_exceeded": "maxTokens",
}
_TOOL_CHOICES = {"auto": "auto", "required": "any", "none": "none"}


def _image(block: ImageContent, where: str) -> dict[str, Any]:
    if block.mime_type.lower() not in _IMAGE_TYPES:
        raise SamplingProviderError(
            f"{where}: an image of type {block.mime_type!r} cannot be sent to Anthropic, "
            "which takes only JPEG, PNG, GIF and WebP; convert it first."
        )
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": block.mime_type.lower(), "data": block.data},
    }


def _result_part(block: ContentBlock, where: str) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        return _image(block, where)
    text = text_of(block)
    if text is None:
        raise SamplingProviderError(
            f"{where}: a tool result's {block.type} cannot be sent to Anthropic, "
            "whose tool results take only text and images."
        )
    return {"type": "text", "text": text}


def _block(block: SamplingMessageContentBlock, where: str, names: ToolNames) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text}
    if isinstance(block, ImageContent):
        return _image(block, where)
    if isinstance(block, ToolUseContent):
        return {
            "type": "tool_use",
            "id": names.ids.to_provider(block.id),
            "name": names.names.to_provider(block.name),
            "input": block.input,
        }
    if isinstance(block, ToolResultContent):
        parts = [
            _result_part(part, f"{where}.content[{index}]")
            for index, part in enumerate(block.content)
        ]
        if not parts and block.structured_content is not None:
            parts.append({"type": "text", "text": json.dumps(block.structured_content)})
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": names.ids.to_provider(block.tool_use_id),
            "content": parts,
        }
        if block.is_error:
            result["is_error"] = True
        return result
    raise SamplingProviderError(
        f"{where}: audio cannot be sent to Anthropic, which takes no audio input; "
        "transcribe it first or choose a model that hears."
    )


def to_anthropic_request(params: CreateMessageRequestParams, *, model: str) -> MappedRequest:
    """The Messages API request for ``params`` (pure; raises ``SamplingProviderError``
    for content Anthropic cannot take and ``InvalidParamsError`` for unbalanced tool use)."""
    check_tool_balance(params.messages)
    names = ToolNames()
    messages: list[dict[str, Any]] = []
    for index, message in enumerate(params.messages):
        content: list[dict[str, Any]] = []
        for position, block in enumerate(blocks_of(message.content)):
            where = f"messages[{index}].content[{position}]"
            if message.role == "assistant" and isinstance(block, ImageContent):
                raise SamplingProviderError(
                    f"{where}: an image in an assistant message cannot be sent to Anthropic, "
                    "whose assistant turns take only text and tool uses."
                )
            if isinstance(block, TextContent) and not block.text:
                continue  # Anthropic refuses empty text blocks (a refusal's, carried on)
            content.append(_block(block, where, names))
        if content:  # a turn left empty is dropped; Anthropic joins the turns around it
            messages.append({"role": message.role, "content": content})
    body: dict[str, Any] = {"model": model, "max_tokens": params.max_tokens, "messages": messages}
    if params.system_prompt:
        body["system"] = params.system_prompt
    if params.temperature is not None:
        body["temperature"] = clamp_temperature(params.temperature, ANTHROPIC_TEMPERATURE_MAX)
    if params.stop_sequences:
        body["stop_sequences"] = list(params.stop_sequences)
    if params.tools:
        body["tools"] = [
            {
                "name": names.names.to_provider(tool.name),
                **({"description": tool.description} if tool.description else {}),
                "input_schema": tool.input_schema,
            }
            for tool in params.tools
        ]
        mode = params.tool_choice.mode if params.tool_choice else None
        if mode is not None:
            body["tool_choice"] = {"type": _TOOL_CHOICES[mode]}
    return MappedRequest(body, names)


def from_anthropic_response(
    response: dict[str, Any], *, model: str, request: MappedRequest
) -> CreateMessageResult:
    """The MCP result for a Messages API response (pure). Text and tool uses are kept
    in order (names and ids mapped back); thinking blocks are the provider's own and
    dropped. ``stop_reason: "refusal"`` comes back as ``"refusal"``."""
    content = response.get("content")
    failed = response.get("type") == "error" or "error" in response
    if failed or not isinstance(content, list):
        # An error object sent with HTTP 200, or no content at all, is not an answer,
        # not even an empty one (``"content": []`` is one, and passes).
        what = "an error" if failed else "without content"
        raise SamplingProviderError(
            f"The Anthropic API answered {what} (HTTP 200); check that base_url points at "
            "the Anthropic Messages API.",
            provider_message=provider_message(response),
            failure="malformed",
        )
    blocks: list[SamplingMessageContentBlock] = []
    seen: set[str] = set()
    for part in cast("list[object]", content):
        if not isinstance(part, dict):
            continue
        part = cast("dict[str, Any]", part)
        if part.get("type") == "text":
            text: object = part.get("text", "")
            if not isinstance(text, str):
                raise SamplingProviderError(
                    f"The Anthropic API answered a text block whose text is {text!r:.40}, not "
                    "a string; check that base_url points at the Anthropic Messages API.",
                    failure="malformed",
                )
            blocks.append(TextContent(text=text))
        elif part.get("type") == "tool_use":
            name = request.names.names.from_provider(str(part.get("name", "")))
            tool_input: object = part.get("input") or {}
            if not isinstance(tool_input, dict):
                raise SamplingProviderError(
                    f"the model called {name[:64]!r} with input that is not a JSON object "
                    f"({tool_input!r:.200}); ask again, or use a model that is better at "
                    "tool calls.",
                    failure="malformed",
                )
            blocks.append(
                ToolUseContent(
                    id=request.names.answered_id(part.get("id"), seen),
                    name=name,
                    input=cast("dict[str, Any]", tool_input),
                )
            )
    if not blocks:
        blocks.append(TextContent(text=""))
    reason = response.get("stop_reason")
    answered = response.get("model")
    return CreateMessageResult(
        role="assistant",
        content=content_of(blocks),
        model=answered if isinstance(answered, str) and answered else model,
        stop_reason=_STOP_REASONS.get(reason, reason) if isinstance(reason, str) else None,
    )


class AnthropicProvider:
    """A ``ModelProvider`` for the Anthropic Messages API.

    Requests go over httpx2 (``http_client`` to reuse one), or through ``client``, an
    ``anthropic.AsyncAnthropic`` the caller configured (then ``base_url``, ``api_key``
    and ``timeout`` are the client's own).

    Refused when given (``TypeError``, ``ValueError``): a ``base_url`` that is not an
    absolute http(s) URL, an empty ``api_key``, a ``timeout`` that is not a positive,
    finite number of seconds, a synchronous ``anthropic.Anthropic`` as ``client``.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str = ANTHROPIC_BASE_URL,
        client: AsyncAnthropic | None = None,
        http_client: httpx2.AsyncClient | None = None,
        timeout: float = 120.0,
    ) -> None:
        base_url = http_url("base_url", base_url, "the Anthropic API")
        self.base_url = base_url.rstrip("/")
        self._api_key = checked_api_key(api_key)
        check_sdk_client(
            client,
            sdk="anthropic",
            method=("messages", "create"),
            asynchronous="AsyncAnthropic",
            synchronous="Anthropic, AnthropicBedrock, AnthropicVertex",
        )
        self._client = client
        self._http = instance_or_none(
            "http_client", http_client, httpx2.AsyncClient, "an httpx2.AsyncClient"
        )
        self._timeout = positive_seconds("timeout", timeout)

    def __repr__(self) -> str:
        """Where requests go, never the key."""
        if self._client is not None:
            return f"AnthropicProvider(client={type(self._client).__name__})"
        return f"AnthropicProvider(base_url={shown_endpoint(self.base_url)!r})"

    async def create_message(
        self, params: CreateMessageRequestParams, *, model: str
    ) -> CreateMessageResult:
        """Map ``params``, send them to ``model``, and map the answer back."""
        request = to_anthropic_request(params, model=model)
        if self._client is not None:
            endpoint = shown_endpoint(str(self._client.base_url))
            response = await self._through_sdk(self._client, request.body, endpoint)
        else:
            url = f"{self.base_url}/v1/messages"
            endpoint = shown_endpoint(url)
            headers = {"anthropic-version": ANTHROPIC_VERSION}
            if self._api_key:
                headers["x-api-key"] = self._api_key
            response = await post_json(
                self._http,
                url,
                headers=headers,
                body=request.body,
                timeout=self._timeout,
                label="The Anthropic API",
            )
        try:
            return from_anthropic_response(response, model=model, request=request)
        except SamplingProviderError as exc:  # the answer is not one: say where it came from
            exc.endpoint = endpoint
            raise

    @staticmethod
    async def _through_sdk(
        client: AsyncAnthropic, body: dict[str, Any], endpoint: str
    ) -> dict[str, Any]:
        import anthropic

        # Without ``stream``, the SDK answers a whole Message; the overloads cannot tell
        # that from a dict of arguments.
        create = cast("Callable[..., Awaitable[Message]]", client.messages.create)
        return await through_sdk(
            anthropic,
            create(**body),
            label="The Anthropic API",
            endpoint=endpoint,
        )
