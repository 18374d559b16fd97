"""One multiplexed Redis connection for the short commands every call makes.

An eliciting call through a load balancer makes about ten round trips to Redis (touch
the session, open the call, store each event, record the question, forward the answer,
close the call). Through redis-py's asyncio client each costs ~130 µs of this process's
CPU (a pool lock, a retry wrapper, a timeout, observability hooks, a RESP3 parser),
several times the round trip itself, and on a busy replica that CPU is the cost of
scaling out. Here every such command goes down one connection: the commands issued in
one turn of the event loop go out in one write, and replies are matched to their
commands in order (Redis answers a connection's commands in the order sent). It is an
asyncio protocol, not anyio streams, for the same reason: the fewest steps per command,
and ``RedisState`` runs on asyncio only anyway (as redis-py does). Blocking reads
(``XREAD BLOCK``) would hold up every command behind them, so they stay on redis-py's
pool, as does anything rare. URLs this link does not speak itself (TLS, or options in
the query string) go through redis-py unchanged.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import deque
from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import unquote, urlparse

import anyio
from redis.exceptions import ResponseError

Arg = bytes | str | int | float
Reply = bytes | int | list["Reply"] | None
"""A RESP2 reply: a bulk or simple string, an integer, an array, or nil."""


def array_items(reply: Reply) -> list[Any]:
    """The items of an array reply; ``[]`` for nil (a blocking read that found nothing)."""
    if reply is None:
        return []
    if not isinstance(reply, list):
        raise TypeError(f"expected an array from Redis, got {reply!r}")
    return reply


class Script:
    """A Lua script run with ``EVALSHA`` (``EVAL`` once more if Redis lost it)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()


class _Protocol(asyncio.Protocol):
    """One open connection: commands go out together once per loop turn, and each
    reply settles the oldest command awaiting one (Redis answers in order)."""

    def __init__(self, reply_timeout: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.reply_timeout = reply_timeout
        self.transport: asyncio.Transport | None = None
        self.waiting: deque[tuple[asyncio.Future[Reply], float, bytes | None]] = deque()
        self.out: list[bytes] = []
        self.lost: list[bytes] = []
        """Commands sent ahead that this connection lost: the next one sends them again."""
        self.buffer = b""
        self.open = True
        self._watchdog: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A cast, not an isinstance check: uvloop's transports (a server program's loop,
        # ``transports/_loop.py``) implement asyncio's but do not inherit from them.
        self.transport = cast(asyncio.Transport, transport)

    def send(self, payload: bytes, *, ahead: bool = False) -> asyncio.Future[Reply]:
        reply: asyncio.Future[Reply] = self.loop.create_future()
        self.waiting.append((reply, time.monotonic(), payload if ahead else None))
        if not self.out:
            self.loop.call_soon(self._flush)
        self.out.append(payload)
        if self._watchdog is None:
            self._watchdog = self.loop.call_later(self.reply_timeout, self._check)
        return reply

    def _flush(self) -> None:
        if self.open and self.transport is not None and self.out:
            self.transport.write(b"".join(self.out))
        self.out.clear()

    def _check(self) -> None:
        """Redis must answer the oldest command within ``reply_timeout``, or the
        connection is given up (every command on it fails)."""
        self._watchdog = None
        if not self.waiting:
            return
        waited = time.monotonic() - self.waiting[0][1]
        if waited >= self.reply_timeout:
            self.fail(TimeoutError(f"Redis did not answer within {self.reply_timeout:g} s"))
        else:
            self._watchdog = self.loop.call_later(self.reply_timeout - waited, self._check)

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer + data
        position = 0
        try:
            while self.waiting:
                parsed = _parse(buffer, position)
                if parsed is None:
                    break
                value, position = parsed
                reply, _, _ = self.waiting.popleft()
                if reply.done():  # its caller was cancelled
                    continue
                if isinstance(value, ResponseError):
                    reply.set_exception(value)
                else:
                    reply.set_result(value)
        except ConnectionError as exc:
            self.fail(exc)
            return
        self.buffer = buffer[position:]

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(ConnectionError(f"Redis closed the connection ({exc!r})"))

    def fail(self, error: Exception) -> None:
        """The connection is over: every command still waiting fails with ``error``."""
        if not self.open:
            return
        self.open = False
        self.out.clear()
        if self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
        while self.waiting:
            reply, _, ahead = self.waiting.popleft()
            if ahead is not None:
                self.lost.append(ahead)
            if not reply.done():
                reply.set_exception(error)
        if self.transport is not None:
            self.transport.abort()


class RedisLink:
    """Short commands to the Redis at ``url``, down one connection opened on first use.

    ``redis`` is the redis-py client for the same URL, used instead when the URL asks
    for what this link does not do. Raises ``OSError`` (a ``ConnectionError`` or a
    ``TimeoutError``) when Redis cannot be reached or does not answer within
    ``reply_timeout`` seconds, and redis-py's ``ResponseError`` for an error reply.
    Like redis-py's asyncio client, it runs on asyncio only.
    """

    def __init__(
        self, url: str, redis: Any, *, connect_timeout: float = 2.0, reply_timeout: float = 10.0
    ) -> None:
        self._redis = redis
        self._target = _target(url)
        self._connect_timeout = connect_timeout
        self._reply_timeout = reply_timeout
        self._connection: _Protocol | None = None
        self._connecting: asyncio.Lock | None = None
        self._scripts: dict[str, Any] = {}
        """redis-py's script objects, when redis-py carries the commands."""

    def close(self) -> None:
        """Close the connection (the next command opens another)."""
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.fail(ConnectionError("the Redis link was closed"))

    @property
    def lean(self) -> bool:
        """Whether this link speaks to Redis itself (``False``: redis-py carries its
        commands, and replies are shaped by redis-py)."""
        return self._target is not None

    def send_ahead(self, *args: Arg) -> bool:
        """Queue a command whose reply nobody waits for on the open connection, so that
        Redis runs it before any command this link sends after it (one connection's
        commands run in order; if the connection drops first, the next one sends it
        again first, so it must be safe to run twice); ``False`` when that cannot be
        promised (no connection is open, or redis-py carries the commands): then
        ``call`` it."""
        connection = self._connection
        if self._target is None or connection is None or not connection.open:
            return False
        connection.send(_pack(args), ahead=True).add_done_callback(_unawaited)
        return True

    async def call(self, *args: Arg) -> Reply:
        """Send one command and return its reply."""
        if self._target is None:
            return await self._redis.execute_command(*args)
        return await self._send(_pack(args))

    async def eval(self, script: Script, keys: Sequence[Arg], args: Sequence[Arg]) -> Reply:
        """Run ``script`` with ``keys`` and ``args``."""
        if self._target is None:
            registered = self._scripts.get(script.sha)
            if registered is None:
                registered = self._scripts[script.sha] = self._redis.register_script(script.text)
            return await registered(keys=list(keys), args=list(args))
        try:
            return await self._send(_pack(("EVALSHA", script.sha, len(keys), *keys, *args)))
        except ResponseError as exc:
            if not str(exc).startswith("NOSCRIPT"):
                raise
        return await self._send(_pack(("EVAL", script.text, len(keys), *keys, *args)))

    async def _send(self, payload: bytes) -> Reply:
        """Send on the open connection, or a new one; a command lost with a connection
        that dropped (Redis restarted, a proxy closed it) is sent once more on a new
        one, as redis-py does."""
        try:
            return await (await self._open()).send(payload)
        except ConnectionError:
            return await (await self._open()).send(payload)

    async def _open(self) -> _Protocol:
        connection = self._connection
        if connection is not None and connection.open:
            return connection
        if self._connecting is None:
            self._connecting = asyncio.Lock()
        async with self._connecting:
            connection = self._connection
            if connection is not None and connection.open:
                return connection
            assert self._target is not None
            host, port, path, hello = self._target
            loop = asyncio.get_running_loop()
            connection = _Protocol(self._reply_timeout)
            with anyio.fail_after(self._connect_timeout):
                if path is not None:
                    await loop.create_unix_connection(lambda: connection, path)
                else:
                    await loop.create_connection(lambda: connection, host, port)
                for command in hello:  # AUTH and SELECT, before any other command
                    try:
                        await connection.send(_pack(command))
                    except BaseException:
                        connection.fail(ConnectionError("Redis refused AUTH or SELECT"))
                        raise
            previous, self._connection = self._connection, connection
            for payload in previous.lost if previous is not None else ():
                connection.send(payload, ahead=True).add_done_callback(_unawaited)
            return connection


def _unawaited(reply: asyncio.Future[Reply]) -> None:
    """A reply sent ahead is not waited for: its error, if any, is dropped here."""
    if not reply.cancelled():
        reply.exception()


def _target(url: str) -> tuple[str, int, str | None, list[tuple[Arg, ...]]] | None:
    """``(host, port, unix path, AUTH/SELECT commands)`` for a URL this link speaks
    (``redis://`` or ``unix://`` without query options), else ``None``."""
    parsed = urlparse(url)
    if parsed.query or parsed.scheme not in ("redis", "unix"):
        return None
    hello: list[tuple[Arg, ...]] = []
    if parsed.password:
        user = (unquote(parsed.username),) if parsed.username else ()
        hello.append(("AUTH", *user, unquote(parsed.password)))
    if parsed.scheme == "unix":
        return ("", 0, unquote(parsed.path), hello)
    db = unquote(parsed.path).strip("/")
    if db not in ("", "0"):
        if not db.isdigit():
            return None
        hello.append(("SELECT", db))
    return (parsed.hostname or "localhost", parsed.port or 6379, None, hello)


def _pack(args: Sequence[Arg]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, str):
            data = arg.encode()
        elif isinstance(arg, bytes):
            data = arg
        else:
            data = repr(arg).encode()
        parts.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(parts)


def _parse(buffer: bytes, position: int) -> tuple[Reply | ResponseError, int] | None:
    """The reply starting at ``position`` and where the next one starts, or ``None``
    if it has not arrived in full."""
    end = buffer.find(b"\r\n", position)
    if end < 0:
        return None
    kind, line = buffer[position : position + 1], buffer[position + 1 : end]
    position = end + 2
    if kind == b"+":
        return line, position
    if kind == b":":
        return int(line), position
    if kind == b"$":
        size = int(line)
        if size < 0:
            return None, position
        if len(buffer) < position + size + 2:
            return None
        return buffer[position : position + size], position + size + 2
    if kind == b"*":
        count = int(line)
        if count < 0:
            return None, position
        items: list[Reply] = []
        for _ in range(count):
            parsed = _parse(buffer, position)
            if parsed is None:
                return None
            item, position = parsed
            if isinstance(item, ResponseError):
                item = None  # an error inside a script's table: Redis never sends one
            items.append(item)
        return items, position
    if kind == b"-":
        return ResponseError(line.decode(errors="replace")), position
    raise ConnectionError(f"Redis sent a reply this client cannot read: {buffer[:40]!r}")
