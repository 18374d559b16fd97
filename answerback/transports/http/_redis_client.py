"""Reaching Redis for the shared server state: the optional import, and what a failure means.

redis-py is an optional extra (``pip install 'answerback[redis]'``), so it is imported
only when a Redis class is built, with a message naming the extra when it is missing.
Every Redis failure to connect or answer becomes ``StateUnavailable``, which the HTTP
application turns into a 503: a replica that cannot see the shared state must not serve
from its own memory, where the other replicas cannot see what it does.
"""

from __future__ import annotations

import importlib
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

from answerback.transports.http._state import StateUnavailable


def redis_asyncio() -> Any:
    """The ``redis.asyncio`` module, or an ImportError that says what to install."""
    try:
        return importlib.import_module("redis.asyncio")
    except ImportError as missing:
        raise ImportError(
            "RedisState needs redis-py, an optional extra: pip install 'answerback[redis]'."
        ) from missing


def connect(url: str) -> Any:
    """A client for ``url`` (it connects on first use) that fails fast when Redis is
    down, so a request waits seconds, not minutes, before its 503."""
    client: Any = redis_asyncio().Redis.from_url(
        url, socket_connect_timeout=2.0, socket_timeout=10.0, decode_responses=False
    )
    return client


@contextmanager
def reaching(url: str) -> Generator[None]:
    """Turn Redis being unreachable (or failing) into ``StateUnavailable``."""
    from redis.exceptions import RedisError

    try:
        yield
    except (RedisError, OSError) as exc:
        raise StateUnavailable(f"Redis at {safe_url(url)} failed: {exc}") from exc


def milliseconds(seconds: float) -> int:
    """A duration as Redis takes it (``PX``, ``PEXPIRE``, ``BLOCK``): whole ms, at least 1."""
    return max(1, int(seconds * 1000))


def safe_url(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    scheme, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return url
    credentials, _, host = rest.rpartition("@")
    user = credentials.partition(":")[0]
    return f"{scheme}://{user + ':***@' if user else '***@'}{host}"
