"""One multiplexed Redis connection for the short commands every call makes.

An eliciting call through a load balancer makes about ten round trips to Redis (touch
the session, open the call, store each event, record the question, forward the answer,
close the call). Through redis-py's asyncio client each costs ~130 µs of this process's
CPU (a pool lock, a retry wrapper, a timeout, observability hooks, a RESP3 parser),
several times the round trip itself, and on a busy replica that CPU is the cost of
scaling out. Here every such command goes down one connection: commands issued while
the previous write was under way go out together in one write, and replies are matched
to their commands in order (Redis answers a connection's commands in the order sent).
Blocking reads (``XREAD BLOCK``) would hold up every command behind them, so they stay
on redis-py's pool, as does anything rare. URLs this link does not speak itself (TLS,
or options in the query string) go through redis-py unchanged.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import unquote, urlparse

import anyio
from anyio.abc import ByteStream, TaskGroup
from redis.exceptions import ResponseError

Arg = bytes | str | int | float
Reply = bytes | int | list["Reply"] | None
"""A RESP2 reply: a bulk or simple string, an integer, an array, or nil."""


class Script:
    """A Lua script run with ``EVALSHA`` (``EVAL`` once more if Redis lost it)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.sha = hashlib.sha1(text.encode()).hexdigest()


class _Waiting:
    """One command's reply, once it has come."""

    __slots__ = ("done", "reply")

    def __init__(self) -> None:
        self.done = anyio.Event()
        self.reply: Reply | BaseException = None


class _Connection:
    """One open connection: what waits to be written, and the commands awaiting replies."""

    def __init__(self, stream: ByteStream) -> None:
        self.stream = stream
        self.out: list[bytes] = []
        self.waiting: deque[_Waiting] = deque()
        self.wake = anyio.Event()
        self.open = True

    def send(self, payload: bytes) -> _Waiting:
        waiting = _Waiting()
        self.waiting.append(waiting)
        self.out.append(payload)
        self.wake.set()
        return waiting

    async def write(self) -> None:
        """Write what waits, all of it at once, until the connection ends."""
        try:
            while self.open:
                await self.wake.wait()
                self.wake = anyio.Event()
                if self.out and self.open:
                    data = b"".join(self.out)
                    self.out.clear()
                    await self.stream.send(data)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            await self.close(ConnectionError(f"writing to Redis failed: {exc!r}"))

    async def read(self) -> None:
        """Hand each reply to the oldest command awaiting one, until the connection ends."""
        buffer = b""
        try:
            while self.open:
                buffer += await self.stream.receive()
                position = 0
                while self.waiting:
                    parsed = _parse(buffer, position)
                    if parsed is None:
                        break
                    reply, position = parsed
                    waiting = self.waiting.popleft()
                    waiting.reply = reply
                    waiting.done.set()
                buffer = buffer[position:]
        except (
            OSError,
            anyio.EndOfStream,
            anyio.BrokenResourceError,
            anyio.ClosedResourceError,
        ) as exc:
            await self.close(ConnectionError(f"reading from Redis failed: {exc!r}"))

    async def close(self, error: BaseException) -> None:
        """Fail every command still waiting (the link opens a new connection next)."""
        self.open = False
        self.out.clear()
        self.wake.set()
        while self.waiting:
            waiting = self.waiting.popleft()
            waiting.reply = error
            waiting.done.set()
        with anyio.CancelScope(shield=True):
            await self.stream.aclose()


class RedisLink:
    """Short commands to the Redis at ``url``, down one connection opened on first use.

    ``redis`` is the redis-py client for the same URL, used instead when the URL asks
    for what this link does not do. Raises ``OSError`` (a ``ConnectionError`` or a
    ``TimeoutError``) when Redis cannot be reached or does not answer within
    ``reply_timeout`` seconds, and redis-py's ``ResponseError`` for an error reply.
    """

    def __init__(
        self, url: str, redis: Any, *, connect_timeout: float = 2.0, reply_timeout: float = 10.0
    ) -> None:
        self._redis = redis
        self._target = _target(url)
        self._connect_timeout = connect_timeout
        self._reply_timeout = reply_timeout
        self._connection: _Connection | None = None
        self._connecting: anyio.Lock | None = None
        self._task_group: TaskGroup | None = None
        self._scripts: dict[str, Any] = {}
        """redis-py's script objects, when redis-py carries the commands."""

    @asynccontextmanager
    async def running(self) -> AsyncGenerator[None]:
        """Where the connection's reader and writer run; closes it at the end."""
        async with anyio.create_task_group() as tg:
            self._task_group = tg
            self._connecting = anyio.Lock()
            try:
                yield
            finally:
                self._task_group = None
                connection, self._connection = self._connection, None
                if connection is not None:
                    await connection.close(ConnectionError("the Redis link was closed"))
                tg.cancel_scope.cancel()

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
        reply = await self._send_once(payload)
        if isinstance(reply, ConnectionError):
            reply = await self._send_once(payload)
        if isinstance(reply, BaseException):
            raise reply
        return reply

    async def _send_once(self, payload: bytes) -> Reply | BaseException:
        connection = self._connection
        if connection is None or not connection.open:
            connection = await self._connect()
        waiting = connection.send(payload)
        with anyio.move_on_after(self._reply_timeout):
            await waiting.done.wait()
            return waiting.reply
        raise TimeoutError(f"Redis did not answer within {self._reply_timeout:g} s")

    async def _connect(self) -> _Connection:
        if self._task_group is None or self._connecting is None:
            raise ConnectionError("the Redis link is not running (outside the lifespan)")
        async with self._connecting:
            connection = self._connection
            if connection is not None and connection.open:
                return connection
            assert self._target is not None
            host, port, path, hello = self._target
            with anyio.fail_after(self._connect_timeout):
                if path is not None:
                    stream: ByteStream = await anyio.connect_unix(path)
                else:
                    stream = await anyio.connect_tcp(host, port)
            connection = _Connection(stream)
            self._task_group.start_soon(connection.read)
            self._task_group.start_soon(connection.write)
            for command in hello:  # AUTH and SELECT, before any other command
                waiting = connection.send(_pack(command))
                await waiting.done.wait()
                if isinstance(waiting.reply, BaseException):
                    await connection.close(waiting.reply)
                    raise waiting.reply
            self._connection = connection
            return connection


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
