"""Reaching Redis for the shared server state: the optional import, and what a failure means.

redis-py is an optional extra (``pip install 'answerback[redis]'``), so it is imported
only when a Redis class is built, with a message naming the extra when it is missing.
Every Redis failure to connect or answer becomes ``StateUnavailable``, which the HTTP
application turns into a 503: a replica that cannot see the shared state must not serve
from its own memory, where the other replicas cannot see what it does.
"""

from __future__ import annotations

import importlib
import ipaddress
import re
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from answerback.transports.http._state import StateFull, StateRefused, StateUnavailable


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


_HOST = re.compile(r"[A-Za-z0-9._-]+")
"""A host name or IPv4 address as a URL writes it (an IPv6 one is checked apart)."""


def checked_url(value: object) -> str:
    """``value`` if it can be the URL of a Redis (scheme ``redis://``, ``rediss://`` or
    ``unix://``); nothing is connected to. A password in it is not repeated.

    What follows the scheme is checked too: a port that is not a number from 1 to 65535,
    a host that no name or address could be, a database that is not a number, or a
    ``unix://`` URL without a socket path. redis-py would refuse some of these only when
    the client is made, with an error that does not say which option was wrong, and
    quietly ignore others (``redis://host/notadb`` uses database 0).
    """
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
    problem = _url_problem(value)
    if problem is not None:
        form = (
            "unix:///path/to/redis.sock[?db=database]"
            if scheme.lower() == "unix"
            else f"redis://[user:password@]host[:port][/database], {example}"
        )
        raise ValueError(f"url {safe_url(value)!r} {problem}; write it as {form}")
    return value


def _url_problem(url: str) -> str | None:
    """What is wrong after the scheme of a Redis URL (a phrase), or ``None``."""
    parts = urlsplit(url)
    try:
        port = parts.port  # ValueError: not a number, or past 65535
    except ValueError:
        port = 0
    if port == 0:
        return (
            "has a port that is not a number from 1 to 65535 (an IPv6 address goes in "
            "brackets: redis://[::1]:6379/0)"
        )
    query = parse_qs(parts.query)
    if "db" in query and not all(db.isdigit() for db in query["db"]):
        return "has a db= option that is not a database number"
    if parts.scheme.lower() == "unix":
        if parts.hostname or not parts.path:
            return "must give the socket's absolute path after unix:// (three slashes)"
        return None
    host = parts.hostname or ""
    if host and not _HOST.fullmatch(host):
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            return f"has a host, {host!r}, that no host name or address can be"
    database = unquote(parts.path).strip("/")
    if database and "db" not in query and not database.isdigit():
        return (
            f"names the database {database!r}: after the host comes the database's "
            "number (0 to 15 on a default Redis), or nothing for 0"
        )
    return None


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
    """Turn Redis being unreachable (or failing) into ``StateUnavailable``; a Redis that
    is full, or that refuses a command, says so, since it is reachable and the fix is
    another."""
    from redis.exceptions import RedisError, ResponseError

    try:
        yield
    except (RedisError, OSError) as exc:
        if _out_of_memory(exc):
            raise StateFull(
                f"Redis at {safe_url(url)} is full ({exc}): raise its maxmemory or free keys"
            ) from exc
        if isinstance(exc, ResponseError):
            raise StateRefused(safe_url(url), str(exc)) from exc
        raise StateUnavailable(f"Redis at {safe_url(url)} failed: {exc}") from exc


def _out_of_memory(error: Exception) -> bool:
    """Whether ``error`` is Redis refusing a write for want of memory: the ``OOM`` reply
    as answerback's own link reports it, or redis-py's ``OutOfMemoryError``, whose text a
    pipeline rewrites ("Command # 1 (...) of pipeline caused error: command not
    allowed when used memory > 'maxmemory'")."""
    from redis.exceptions import OutOfMemoryError

    return isinstance(error, OutOfMemoryError) or str(error).startswith("OOM")


def unreachable(error: StateUnavailable) -> bool:
    """Whether ``error`` is Redis not answering at all (not up yet, or a network
    failure), which waiting may cure, rather than Redis refusing (a wrong password, a
    full Redis, an error reply)."""
    from redis.exceptions import AuthenticationError, ConnectionError, TimeoutError

    cause = error.__cause__
    if isinstance(cause, AuthenticationError):
        return False
    return isinstance(cause, OSError | ConnectionError | TimeoutError)


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


def login_refused(error: StateUnavailable) -> bool:
    """Whether ``error`` is Redis refusing the url's user or password, or wanting one
    (answerback's own link reports those replies as they are: ``WRONGPASS``, ``NOAUTH``)."""
    from redis.exceptions import AuthenticationError, ResponseError

    cause = error.__cause__
    if isinstance(cause, AuthenticationError):
        return True
    said = str(cause)
    return isinstance(cause, ResponseError) and (
        said.startswith(("WRONGPASS", "NOAUTH")) or "without any password configured" in said
    )
