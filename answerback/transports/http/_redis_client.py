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


SCHEMES = ("redis", "rediss", "unix")
"""The URL schemes redis-py connects by: TCP, TLS and a Unix socket."""


def checked_url(value: object) -> str:
    """``value`` if it can be the URL of a Redis (scheme ``redis://``, ``rediss://`` or
    ``unix://``); nothing is connected to. A password in it is not repeated."""
    example = "such as 'redis://127.0.0.1:6379/0'"
    if not isinstance(value, str):
        raise TypeError(
            f"url must be a string (where Redis is, {example}), got a {type(value).__name__}"
        )
    scheme, sep, _ = value.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise ValueError(
            f"url must start with redis://, rediss:// (TLS) or unix:// (a socket), {example}, "
            f"got {safe_url(value)!r}"
        )
    return value


def check_client(name: str, value: object, methods: tuple[str, ...]) -> None:
    """Refuse ``value`` unless it is an asynchronous redis-py client (one with
    ``methods``): a URL is not one, nor is a synchronous ``redis.Redis``, whose calls
    cannot be awaited. Nothing is connected to; the client is named by its type only
    (the text of a URL, which may hold a password, is not repeated)."""
    example = "redis.asyncio.Redis.from_url('redis://127.0.0.1:6379/0')"
    if isinstance(value, str):
        raise TypeError(
            f"{name} must be a redis.asyncio client made from the URL, such as {example}, "
            "got a string"
        )
    redis: Any = importlib.import_module("redis")
    if isinstance(value, redis.Redis | redis.RedisCluster):
        raise TypeError(
            f"{name} must be an asynchronous client, such as {example}, got a synchronous "
            f"{type(value).__name__}, whose calls cannot be awaited"
        )
    if not all(callable(getattr(value, method, None)) for method in methods):
        got = "None" if value is None else f"a {type(value).__name__}"
        raise TypeError(f"{name} must be a redis.asyncio client, such as {example}, got {got}")


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
