"""Posting a provider request over httpx2 and turning every failure into one clear error.

Both providers speak JSON over HTTPS and fail the same ways (a wrong key, a wrong URL, a
rate limit, a timeout); one function says for each what happened and what to do.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any, cast

import httpx2

from answerback._options import text_or_none
from answerback.interact.sampling._provider import SamplingProviderError

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


def status_error(label: str, status: int, message: str | None) -> SamplingProviderError:
    """The error for a provider that answered HTTP ``status``."""
    said = f": {message}" if message else ""
    return SamplingProviderError(
        f"{label} answered HTTP {status}{said} ({advice(status)}).",
        status=status,
        provider_message=message,
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
    request. ``label`` names the provider in errors.
    """
    try:
        if client is None:
            async with httpx2.AsyncClient(timeout=timeout) as own:
                response = await own.post(url, headers=dict(headers), json=dict(body))
        else:
            response = await client.post(
                url, headers=dict(headers), json=dict(body), timeout=timeout
            )
    except httpx2.TimeoutException as exc:
        raise SamplingProviderError(
            f"{label} at {url} did not answer within {timeout:g} s; "
            "try again, or allow more time with timeout=."
        ) from exc
    except httpx2.HTTPError as exc:
        raise SamplingProviderError(
            f"{label} at {url} could not be reached ({exc}); check the base URL and the network."
        ) from exc
    try:
        answer: object = json.loads(response.content)
    except ValueError:
        answer = None
    if response.status_code >= 400:
        text = provider_message(answer) or (response.text.strip()[:500] or None)
        raise status_error(f"{label} at {url}", response.status_code, text)
    if not isinstance(answer, dict):
        raise SamplingProviderError(
            f"{label} at {url} answered HTTP {response.status_code} with something other than "
            "a JSON object; check that the base URL points at the API, not a web page."
        )
    return cast("dict[str, Any]", answer)


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
