"""The seam between a sampling request and whatever runs the model.

A ``ModelProvider`` takes MCP's ``sampling/createMessage`` parameters and returns MCP's
result, so the policy and model choice above it never see a provider's wire format, and
a provider is swapped (OpenAI, Anthropic, a test double) without touching them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from answerback.interact.sampling._names import ToolNames
from answerback.types import (
    ContentBlock,
    CreateMessageRequestParams,
    CreateMessageResult,
    EmbeddedResource,
    ResourceLink,
    SamplingContent,
    SamplingMessageContentBlock,
    TextContent,
    TextResourceContents,
)


class ModelProvider(Protocol):
    """One endpoint that runs models (an OpenAI-compatible server, Anthropic)."""

    async def create_message(
        self, params: CreateMessageRequestParams, *, model: str
    ) -> CreateMessageResult:
        """Map ``params`` to the provider's request, send it, and map the reply back.

        Raises ``SamplingProviderError`` for what the provider cannot take (said before
        anything is sent) and when the provider fails or rejects the request; a model
        that declines to answer is a result with stop reason ``"refusal"``.
        """
        ...


@dataclass(slots=True)
class MappedRequest:
    """A provider request body and what is needed to read its answer: the request's
    name maps, and the stop sequences to apply here when the endpoint ignores ``stop``."""

    body: dict[str, Any]
    names: ToolNames = field(default_factory=ToolNames)
    emulated_stops: tuple[str, ...] = ()


class SamplingProviderError(Exception):
    """A sampling request a provider cannot take, or a provider that failed.

    The message is what the requesting server may read: its own words never name the
    endpoint, and the provider's words it repeats (for a few statuses only) have URLs,
    addresses and credentials taken out. ``status`` is the HTTP status when the provider answered
    with an error (``None`` when the request was refused before sending, or never
    arrived); ``failure`` says which way it failed, for programs (``"timed_out"``,
    ``"unreachable"``, ``"rate_limited"``, ``"refused"``, ``"failing"``, ``"malformed"``;
    ``None`` for a request refused before sending); ``retry_after`` is the wait in seconds
    the provider asked for. For the host only: ``provider_message``, the provider's own
    explanation as it gave it, and ``endpoint``, where the request went (without a user
    name, password or query).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider_message: str | None = None,
        failure: str | None = None,
        retry_after: float | None = None,
        endpoint: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.provider_message = provider_message
        self.failure = failure
        self.retry_after = retry_after
        self.endpoint = endpoint


REFUSAL = "refusal"
"""The ``stopReason`` for a reply the provider's safety system refused or cut off
(OpenAI ``content_filter`` or a ``refusal`` message, Anthropic ``refusal``).
``stopReason`` is an open string in MCP; ``refusal`` is this library's name for it."""


def shown_endpoint(base_url: str) -> str:
    """``base_url`` for a ``repr`` or a log: scheme, host and path, without what may be a
    secret (a user name and password, a query that carries a key)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


def blocks_of(content: SamplingContent) -> list[SamplingMessageContentBlock]:
    """A message's content as a list, whichever of the two allowed shapes it came in."""
    return list(content) if isinstance(content, list) else [content]


def content_of(blocks: Sequence[SamplingMessageContentBlock]) -> SamplingContent:
    """One block as itself and several as a list (what readers of older versions expect)."""
    return blocks[0] if len(blocks) == 1 else list(blocks)


def clamp_temperature(temperature: float, highest: float) -> float:
    """``temperature`` inside ``0..highest``: MCP sets no range, providers reject values
    outside theirs, and the nearest allowed value is what the server meant."""
    return min(max(temperature, 0.0), highest)


def cut_at_stop(text: str, stops: Sequence[str]) -> str | None:
    """``text`` up to its first stop sequence, or ``None`` if none occurs: emulates
    ``stop`` for endpoints that ignore it."""
    positions = [index for stop in stops if stop and (index := text.find(stop)) >= 0]
    return text[: min(positions)] if positions else None


def text_of(block: ContentBlock) -> str | None:
    """A tool result block as text, or ``None`` for bytes (images, audio, blobs) that
    need a provider's own block type: embedded text resources are inlined, links named."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        return resource.text if isinstance(resource, TextResourceContents) else None
    if isinstance(block, ResourceLink):
        return f"[resource {block.name}: {block.uri}]"
    return None
