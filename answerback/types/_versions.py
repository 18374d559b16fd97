"""Protocol versions, and which methods and features each one has.

Versions are ISO dates, so string order is release order. The legacy generation
negotiates a version with ``initialize``; the modern one names it in every request.
"""

from __future__ import annotations

import re
from typing import Literal, TypeAlias

LEGACY_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""Handshake-era versions, newest first."""
LATEST_LEGACY_VERSION: str = LEGACY_VERSIONS[0]
MODERN_VERSIONS: tuple[str, ...] = ("2026-07-28",)
"""Handshake-free versions, newest first."""
LATEST_VERSION: str = MODERN_VERSIONS[0]
SUPPORTED_VERSIONS: tuple[str, ...] = MODERN_VERSIONS + LEGACY_VERSIONS
"""Every version answerback speaks, newest first."""

_FIRST_MODERN = MODERN_VERSIONS[-1]
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def per_request_refusal(version: object) -> tuple[str, list[str]]:
    """Why a request naming ``version`` in its ``_meta`` is refused (-32022), and the
    versions to list as ``supported``. A handshake-era version is spoken, but only in a
    session opened with ``initialize``: listing it as supported would have the client
    retry the very request refused."""
    if version in LEGACY_VERSIONS:
        return (
            f"Unsupported protocol version: {version} is spoken here only in a session "
            "opened with initialize, whose requests carry no _meta protocol version. Send "
            "initialize to use it, or use a version listed here.",
            list(MODERN_VERSIONS),
        )
    return "Unsupported protocol version", list(SUPPORTED_VERSIONS)


def is_modern(version: str) -> bool:
    """Whether ``version`` belongs to the handshake-free generation (2026-07-28 and later)."""
    return _DATE.fullmatch(version) is not None and version >= _FIRST_MODERN


Feature: TypeAlias = Literal[
    "audio_content",
    "tool_annotations",
    "completions_capability",
    "progress_message",
    "elicitation",
    "structured_content",
    "resource_links",
    "titles",
    "completion_context",
    "elicitation_url",
    "elicitation_defaults",
    "titled_enums",
    "sampling_tools",
    "icons",
    "implementation_description",
    "tasks",
    "input_required",
    "result_type",
    "cacheable_results",
    "per_request_meta",
]

FEATURE_SINCE: dict[Feature, str] = {
    "audio_content": "2025-03-26",
    "tool_annotations": "2025-03-26",
    "completions_capability": "2025-03-26",
    "progress_message": "2025-03-26",
    "elicitation": "2025-06-18",
    "structured_content": "2025-06-18",
    "resource_links": "2025-06-18",
    "titles": "2025-06-18",
    "completion_context": "2025-06-18",
    "elicitation_url": "2025-11-25",
    "elicitation_defaults": "2025-11-25",
    "titled_enums": "2025-11-25",
    "sampling_tools": "2025-11-25",
    "icons": "2025-11-25",
    "implementation_description": "2025-11-25",
    "tasks": "2025-11-25",
    "input_required": "2026-07-28",
    "result_type": "2026-07-28",
    "cacheable_results": "2026-07-28",
    "per_request_meta": "2026-07-28",
}
"""The first version that has each wire feature. ``tasks`` was dropped again in 2026."""

FEATURE_UNTIL: dict[Feature, str] = {"tasks": "2025-11-25"}
"""The last version that has a feature, for the few that were removed."""

_LEGACY_ONLY = ("2024-11-05", LATEST_LEGACY_VERSION)

METHOD_VERSIONS: dict[str, tuple[str, str | None]] = {
    # legacy only: the handshake, session state and server-to-client requests
    "initialize": _LEGACY_ONLY,
    "notifications/initialized": _LEGACY_ONLY,
    "ping": _LEGACY_ONLY,
    "logging/setLevel": _LEGACY_ONLY,
    "resources/subscribe": _LEGACY_ONLY,
    "resources/unsubscribe": _LEGACY_ONLY,
    "sampling/createMessage": _LEGACY_ONLY,
    "roots/list": _LEGACY_ONLY,
    "notifications/roots/list_changed": _LEGACY_ONLY,
    "elicitation/create": ("2025-06-18", LATEST_LEGACY_VERSION),
    "notifications/elicitation/complete": ("2025-11-25", LATEST_LEGACY_VERSION),
    # modern only
    "server/discover": ("2026-07-28", None),
    "subscriptions/listen": ("2026-07-28", None),
    "notifications/subscriptions/acknowledged": ("2026-07-28", None),
}
"""method -> (first version, last version or ``None`` if current). Methods not listed are
in every version. In 2026 ``sampling/createMessage``, ``roots/list`` and
``elicitation/create`` live on only as input requests inside an ``InputRequiredResult``."""


def _within(version: str, since: str, until: str | None) -> bool:
    return version >= since and (until is None or version <= until)


def has_feature(version: str, feature: Feature) -> bool:
    """Whether a peer speaking ``version`` understands ``feature``."""
    return _within(version, FEATURE_SINCE[feature], FEATURE_UNTIL.get(feature))


def has_method(version: str, method: str) -> bool:
    """Whether ``method`` exists as a JSON-RPC method in ``version``."""
    span = METHOD_VERSIONS.get(method)
    return span is None or _within(version, *span)
