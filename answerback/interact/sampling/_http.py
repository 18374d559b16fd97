"""Posting a provider request over httpx2 and turning every failure into one clear error.

Both providers speak JSON over HTTPS and fail the same ways (a wrong key, a wrong URL, a
rate limit, a timeout); one function says for each what happened and what to do.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Awaitable, Mapping
from typing import Any, cast

import httpx2

from answerback._options import text_or_none
from answerback.interact.sampling._provider import SamplingProviderError, shown_endpoint

_ADVICE = {
    400: "the provider refused the request; check the model name and the endpoint's quirk flags",
    401: "check the API key",
    403: "check the API key and that it may use this model",
    404: "check the base URL (OpenAI-compatible servers usually end in /v1) and the model name",
    408: "the provider timed out; try again",
    413: "the request is too large; send fewer or smaller messages",
    422: "the provider refused the request; check the model name and the endpoint's quirk flags",
    429: "the provider is rate limiting or out of quota; wait and try again",
}


def advice(status: int) -> str:
    """What a user should do about an HTTP error ``status`` from a provider."""
    if status >= 500:
        return "the provider is failing; try again later"
    return _ADVICE.get(status, "see the provider's message")


def provider_message(body: object) -> str | None:
    """The human-readable message in a provider's error body (OpenAI and Anthropic
    both use ``{"error": {"message": ...}}``), if there is one."""
    if isinstance(body, dict):
        error = cast("dict[str, Any]", body).get("error")
        if isinstance(error, dict):
            message = cast("dict[str, Any]", error).get("message")
            if isinstance(message, str):
                return message
        elif isinstance(error, str):
            return error
    return None


def message_in(content: bytes | str) -> str | None:
    """The provider's message in an error response's raw body, if it holds one."""
    try:
        return provider_message(json.loads(content))
    except ValueError:
        return None


_SHARED_STATUSES = frozenset({400, 404, 413, 422, 429})
"""Statuses whose words tell the requesting server what to change (the context is too
long, the model is unknown, wait). The rest are about the host: its credentials
(401, 403, 407; OpenAI's names part of the key) or its network (5xx, where gateways name
the hosts behind them), nothing the server can act on."""
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
_HEX = r"[0-9A-Fa-f]{1,4}"
_ADDRESS = re.compile(
    # IPv6 (full, or shortened with ::), bracketed or not, with an optional port
    rf"\[?(?<![\w:.])(?:{_HEX}(?::{_HEX}){{7}}|(?:{_HEX}(?::{_HEX})*)?::(?:{_HEX}(?::{_HEX})*)?)"
    r"(?:\.\d{1,3}){0,3}(?:%\w+)?(?![\w:])\]?(?::\d{1,5}\b)?"
    # IPv4, and any host name with a port
    r"|\b(?:\d{1,3}\.){3}\d{1,3}\b(?::\d{1,5}\b)?"
    r"|(?<![\w.-])[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*:\d{1,5}\b(?!\.\d)"
)
_CREDENTIAL = re.compile(
    # a value named as a key, token, secret, password or authorization (x-api-key: ...,
    # "api_key": "...", client_secret=..., Authorization: Basic ...)
    r"(?<![\w-])([\w-]*(?:key|token|secret|password|authorization)[\"']?\s*[:=]\s*)"
    r"(?:\"[^\"]*\"|'[^']*'|(?:(?:basic|bearer|digest|token)\s+)?[^\s,;&)\]}\"']+)",
    re.IGNORECASE,
)
_KEY = re.compile(
    r"\b(?:sk|pk|rk)[-_][A-Za-z0-9*_.-]{4,}|\bBearer\s+\S+|\bAIza[\w-]{20,}"
    r"|\b(?:AKIA|ASIA)[A-Z0-9]{12,}|\borg-[A-Za-z0-9]{8,}",
    re.IGNORECASE,
)
_SHARED_LENGTH = 300
_READ_LENGTH = 4000
"""How much of a message is scrubbed: enough to leave ``_SHARED_LENGTH`` after the
replacements, and a bound on the work (the patterns scan back and forth on some text)."""


def shareable(status: int, message: str | None) -> str | None:
    """The part of a provider's ``message`` a requesting server may read: none unless
    ``status`` is one whose words say what to change, none of a web page (a proxy's);
    otherwise the text without URLs, addresses (IP literals, ``host:port``), named
    credentials and key-like tokens, cut to a few hundred characters."""
    if not message or status not in _SHARED_STATUSES or message.lstrip().startswith("<"):
        return None
    text = _URL.sub("[URL]", " ".join(message[:_READ_LENGTH].split()))
    text = _CREDENTIAL.sub(r"\1[key]", text)
    text = _KEY.sub("[key]", _ADDRESS.sub("[address]", text))
    return text if len(text) <= _SHARED_LENGTH else f"{text[: _SHARED_LENGTH - 3]}..."


def failure_of(status: int) -> str:
    """The failure class of HTTP ``status``, for programs reading the error."""
    if status == 408:
        return "timed_out"
    if status == 429:
        return "rate_limited"
    return "failing" if status >= 500 else "refused"


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait a provider asked for, in seconds: ``retry-after-ms`` (OpenAI) or a
    ``retry-after`` in seconds; ``None`` for none, or for an HTTP date, which would need
    a clock this side does not trust to match the provider's."""
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def status_error(
    label: str,
    status: int,
    message: str | None,
    *,
    headers: Mapping[str, str] | None = None,
    endpoint: str | None = None,
) -> SamplingProviderError:
    """The error for a provider that answered HTTP ``status`` (``headers`` for the wait
    it asks for); the message keeps only the ``shareable`` part of the provider's."""
    shared = shareable(status, message)
    said = f": {shared}" if shared else ""
    return SamplingProviderError(
        f"{label} answered HTTP {status}{said} ({advice(status)}).",
        status=status,
        provider_message=message,
        failure=failure_of(status),
        retry_after=retry_after(headers) if headers is not None else None,
        endpoint=endpoint,
    )


def malformed(label: str, what: str, *, endpoint: str | None = None) -> SamplingProviderError:
    """The error for a provider whose answer is ``what`` instead of the API's reply."""
    return SamplingProviderError(
        f"{label} answered {what}; check that the base URL points at the API, not a web page.",
        failure="malformed",
        endpoint=endpoint,
    )


async def post_json(
    client: httpx2.AsyncClient | None,
    url: str,
    *,
    headers: Mapping[str, str],
    body: Mapping[str, Any],
    timeout: float,
    label: str,
) -> dict[str, Any]:
    """POST ``body`` to ``url`` and return the JSON object it answers.

    ``client`` is reused when given (connection pooling); otherwise one is made for this
    request. ``label`` names the provider in errors, which never name ``url``: they
    reach the requesting server, a third party (``endpoint`` tells the host).
    """
    endpoint = shown_endpoint(url)
    try:
        if client is None:
            async with httpx2.AsyncClient(timeout=timeout) as own:
                response = await own.post(url, headers=dict(headers), json=dict(body))
        else:
            response = await client.post(
                url, headers=dict(headers), json=dict(body), timeout=timeout
            )
    except httpx2.TimeoutException as exc:
        raise timed_out(label, timeout, endpoint=endpoint) from exc
    except httpx2.HTTPError as exc:
        raise unreachable(label, type(exc).__name__, endpoint=endpoint) from exc
    try:
        answer: object = json.loads(response.content)
    except ValueError:
        answer = None
    if response.status_code >= 400:
        text = provider_message(answer) or (response.text.strip()[:500] or None)
        raise status_error(
            label, response.status_code, text, headers=response.headers, endpoint=endpoint
        )
    if not isinstance(answer, dict):
        raise malformed(
            label,
            f"HTTP {response.status_code} with something other than a JSON object",
            endpoint=endpoint,
        )
    return cast("dict[str, Any]", answer)


def timed_out(
    label: str, timeout: float | None, *, endpoint: str | None = None
) -> SamplingProviderError:
    """The error for a provider that did not answer in time."""
    within = f" within {timeout:g} s" if timeout is not None else " in time"
    return SamplingProviderError(
        f"{label} did not answer{within}; try again, or allow more time with timeout=.",
        failure="timed_out",
        endpoint=endpoint,
    )


def unreachable(label: str, kind: str, *, endpoint: str | None = None) -> SamplingProviderError:
    """The error for a provider that could not be reached (``kind``: the error's class
    name; its text may name the host's addresses, so it stays in ``__cause__``)."""
    return SamplingProviderError(
        f"{label} could not be reached ({kind}); check the base URL and the network.",
        failure="unreachable",
        endpoint=endpoint,
    )


async def through_sdk(
    sdk: Any, call: Awaitable[object], *, label: str, endpoint: str
) -> dict[str, Any]:
    """Await ``call``, a request through the official ``sdk`` module (``openai`` or
    ``anthropic``, whose errors have the same names), and return its reply as JSON:
    every way it fails is the ``SamplingProviderError`` the httpx2 path gives, including
    a body that is not the API's (the SDKs then return a string, or raise a parsing
    error)."""
    try:
        reply = await call
    except sdk.APIStatusError as exc:
        response = exc.response
        message = message_in(response.content) or exc.message
        raise status_error(
            label, exc.status_code, message, headers=response.headers, endpoint=endpoint
        ) from exc
    except sdk.APITimeoutError as exc:
        raise timed_out(label, None, endpoint=endpoint) from exc
    except sdk.APIConnectionError as exc:
        raise unreachable(label, type(exc).__name__, endpoint=endpoint) from exc
    except (sdk.APIError, ValueError) as exc:
        raise malformed(
            label, f"a reply the SDK could not read ({type(exc).__name__})", endpoint=endpoint
        ) from exc
    dump = getattr(reply, "model_dump", None)
    if not callable(dump):
        raise malformed(label, "something other than a JSON object", endpoint=endpoint)
    return cast("dict[str, Any]", dump(mode="json"))


def checked_api_key(value: object) -> str | None:
    """``value`` if it can be a provider's ``api_key``: a string with something in it, or
    ``None`` for an endpoint that needs none. Named by its type only, never shown."""
    key = text_or_none("api_key", value, "the provider's API key", secret=True)
    if key == "":
        raise ValueError(
            "api_key must not be empty: pass the key, or None for an endpoint that needs "
            "none (an environment variable that is set but empty reads as '')"
        )
    return key


def check_sdk_client(
    value: object, *, sdk: str, method: tuple[str, ...], asynchronous: str, synchronous: str
) -> None:
    """Refuse ``value`` as the ``client`` of a provider unless it has ``method`` (the path
    to the SDK call, such as ``("messages", "create")``) and is not one of the SDK's
    synchronous clients, whose calls cannot be awaited. The SDK (module ``sdk``) is not
    imported for it: an object of its classes means it already was. Named by its type
    only: a key passed here by mistake is not repeated."""
    if value is None:
        return
    module = sys.modules.get(sdk)
    refused = tuple(
        kind
        for name in synchronous.split(", ")
        if isinstance(kind := getattr(module, name, None), type)
    )
    found: object = value
    for name in method:
        found = getattr(found, name, None)
    if refused and isinstance(value, refused):
        raise TypeError(
            f"client must be an asynchronous {sdk} client such as {sdk}.{asynchronous}(...), "
            f"got a synchronous {type(value).__name__}, whose calls cannot be awaited"
        )
    if not callable(found):
        raise TypeError(
            f"client must be an {sdk}.{asynchronous}(...) or None, got a "
            f"{type(value).__name__} (it has no {'.'.join(method)}())"
        )
