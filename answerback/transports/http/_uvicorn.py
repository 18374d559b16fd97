"""Running a ``StreamableHTTPApp`` under uvicorn with a shutdown that does not hang.

uvicorn waits for every open response to finish before it runs the application's
lifespan shutdown, and an SSE stream waiting on a person's answer never finishes by
itself. So the server here first ends the MCP sessions (open requests get an error,
streams close), then lets uvicorn shut down as usual.

``run_uvicorn`` is a program's entry point, and talks to the person who started it: one
line on stderr when it listens (uvicorn's own start-up lines stay at its ``warning`` log
level unless ``log_level=`` asks for more), a one-line error when the port is taken or
the state cannot start (Redis down), and on Ctrl-C, SIGTERM or SIGHUP a clean stop with
no traceback. Ctrl-C exits with status 130, the shell's code for a program interrupted
from the keyboard (so a script running the server stops too, as it would for any
interrupted command); SIGTERM, a supervisor's request to stop, and SIGHUP, the terminal
that started the server closing, return normally (exit status 0: the server did what it
was asked).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import logging
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Generator
from types import FrameType
from typing import Any

import anyio
import uvicorn

from answerback.transports._loop import STOPPING_SIGNALS, asyncio_loop_options
from answerback.transports.http._server import StreamableHTTPApp

logger = logging.getLogger("answerback.http")

STOP_SECONDS = 5.0
"""How long a stopping server waits for its responses once its sessions are closed
(which ends every stream at once): what is still writing then writes to a client that
does not read, and would hold the server up for as long as that client stayed."""


_HANGUP: signal.Signals | None = getattr(signal, "SIGHUP", None)
"""The terminal closed (not on Windows)."""
_STOPPING_SIGNALS = (signal.SIGINT, *STOPPING_SIGNALS)


_OFF_ASYNCIO_WAY = (
    "serve {app} with an ASGI server that runs on trio, such as hypercorn's trio worker "
    "(docs/transports.md, 'Serving HTTP from a trio program'), or run the MCP server in a "
    "process of its own (mcp.run(transport='streamable-http'))"
)
"""What a program on trio does instead of uvicorn, which needs asyncio."""


def running_async_library() -> str | None:
    """The async library running in this thread ("asyncio", "trio"), or ``None``.

    sniffio names it (anyio asks it too); it comes with trio, so without it only asyncio
    can be running."""
    with contextlib.suppress(RuntimeError):
        asyncio.get_running_loop()
        return "asyncio"
    try:
        import sniffio
    except ImportError:
        return None
    try:
        return sniffio.current_async_library()
    except sniffio.AsyncLibraryNotFoundError:
        return None


def refuse_inside_event_loop(entry_point: str, app: str) -> None:
    """Raise ``RuntimeError`` if an event loop already runs in this thread: a blocking
    entry point (``entry_point``, serving ``app``) starts one of its own, where anyio
    would only say "Already running asyncio in this thread"."""
    library = running_async_library()
    if library is None:
        return
    if library == "asyncio":
        instead = f"in async code, await answerback.transports.http.serve_uvicorn({app})"
    else:
        instead = _OFF_ASYNCIO_WAY.format(app=app)
    raise RuntimeError(
        f"{entry_point} starts an event loop of its own and blocks until the server stops, "
        f"so it cannot run inside the {library} program already running in this thread. "
        f"Instead, {instead}."
    )


class MCPUvicornServer(uvicorn.Server):
    """A ``uvicorn.Server`` that ends the app's MCP sessions before waiting on responses."""

    def __init__(
        self,
        config: uvicorn.Config,
        app: StreamableHTTPApp,
        on_started: Callable[[], None] | None = None,
    ) -> None:
        super().__init__(config)
        self.mcp_app = app
        self.on_started = on_started
        """Called once the server is ready and its sockets listen."""
        self._unfold: Callable[[], None] | None = None
        """Puts back the loop's exception handler ``startup`` wrapped."""

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve until stopped; raises ``RuntimeError`` at once on an event loop other
        than asyncio (trio), where uvicorn would fail deep inside with an
        ``AttributeError``."""
        library = running_async_library()
        if library != "asyncio":
            raise RuntimeError(
                f"uvicorn runs on asyncio, and this program runs {library or 'another loop'}. "
                f"Instead, {_OFF_ASYNCIO_WAY.format(app='the app')}."
            )
        try:
            await super().serve(sockets)
        finally:  # also when the serving task was cancelled, and shutdown never ran
            self._restore_exception_handler()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        watch = _descriptors()  # read now: with no descriptor free, even an import fails
        await super().startup(sockets)
        if not self.started:
            return
        watch.read_limit()  # again: the app's lifespan may have raised (or lowered) it
        self._unfold = _fold_accept_errors(asyncio.get_running_loop(), self._listens_on)
        if self.on_started is not None:
            self.on_started()

    def _listens_on(self, sock: Any) -> bool:
        """Whether ``sock`` (asyncio's ``TransportSocket``) is one this server listens on."""
        return any(
            listening.fileno() == sock.fileno()
            for server in self.servers
            for listening in server.sockets
        )

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        try:
            try:
                await self.mcp_app.close_sessions()
            finally:  # a session that failed to close keeps neither the lifespan nor the sockets
                await super().shutdown(sockets)
        finally:
            self._restore_exception_handler()

    def _restore_exception_handler(self) -> None:
        """The loop outlives the server (``serve_uvicorn``): its other servers' accept
        errors are theirs, and each serve would wrap one more handler."""
        if self._unfold is not None:
            self._unfold()
            self._unfold = None

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        """uvicorn's graceful stop on SIGINT and SIGTERM, and on SIGHUP too: the
        terminal that started the server has gone, whose default would end the process
        on the spot, its sessions and streams cut off unanswered."""
        with super().capture_signals():
            if _HANGUP is None or threading.current_thread() is not threading.main_thread():
                yield
                return
            # Put back before uvicorn raises the signal again for the handler it found.
            previous = signal.signal(_HANGUP, self.handle_exit)
            try:
                yield
            finally:
                signal.signal(_HANGUP, previous)


def uvicorn_server(
    app: StreamableHTTPApp,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    on_started: Callable[[], None] | None = None,
    **config: Any,
) -> MCPUvicornServer:
    """A server for ``app``; ``config`` goes to ``uvicorn.Config`` (log_level, ssl...)."""
    config.setdefault("log_level", "warning")
    config.setdefault("timeout_graceful_shutdown", STOP_SECONDS)
    config.setdefault("http", _head_bounded_protocol())
    return MCPUvicornServer(
        uvicorn.Config(app, host=host, port=port, lifespan="on", **config), app, on_started
    )


def _head_bounded_protocol() -> type[asyncio.Protocol]:
    """uvicorn's httptools protocol with bounds on request heads; where httptools is not
    installed (it is a CPython-only dependency), uvicorn's h11 protocol, which bounds
    heads itself. Either watches the process's file descriptors (``_Descriptors``)."""
    try:
        from answerback.transports.http._heads import HeadBoundedProtocol
    except ImportError:
        from uvicorn.protocols.http.h11_impl import H11Protocol

        class WatchedH11(_DescriptorWatching, H11Protocol):
            pass

        return WatchedH11

    class Watched(_DescriptorWatching, HeadBoundedProtocol):
        pass

    return Watched


DESCRIPTORS_WARNING_SECONDS = 60.0
"""How often, at most, the server warns that its connections nearly use up its file
descriptors (with the count of connections that came that close meanwhile)."""


def _descriptor_limit() -> tuple[int | None, int]:
    """The soft RLIMIT_NOFILE (``None`` where there is none to read, or it is
    unlimited) and how close to it a descriptor warns."""
    try:
        import resource
    except ImportError:  # Windows
        return None, 0
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return None, 0
    return soft, max(8, soft // 16)


class _Descriptors:
    """Warns when an accepted connection finds the process's file descriptors nearly
    all in use. Once none is left, uvloop (libuv) accepts and at once closes each new
    connection, and asyncio leaves them waiting, and neither says so where an operator
    looks: clients just see the server hang up.

    A new socket takes the lowest free descriptor, so one numbered within ``margin`` of
    the limit means at most ``margin`` are left: one comparison per connection. The
    limit is read again before a warning, since a program may change its own."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        limit: Callable[[], tuple[int | None, int]] = _descriptor_limit,
    ) -> None:
        self.clock = clock
        self._read = limit
        self.limit, self.margin = limit()
        self.near = 0
        """Connections that came this close since the last warning."""
        self.warned_at: float | None = None

    def read_limit(self) -> tuple[int | None, int]:
        """Take the limit in force now (and the margin), and return them."""
        self.limit, self.margin = self._read()
        return self.limit, self.margin

    def accepted(self, descriptor: int) -> None:
        """A connection was accepted on ``descriptor``."""
        if self.limit is not None and descriptor >= self.limit - self.margin:
            limit, margin = self.read_limit()  # only this close: ordinary ones pay nothing
            if limit is not None and descriptor >= limit - margin:
                self._near(f"a connection took descriptor {descriptor}")

    def refused(self) -> None:
        """asyncio could not accept a connection for want of a descriptor (it tries
        again a second later, and would log an error each time)."""
        self.read_limit()
        self._near("a connection could not be accepted for want of one")

    def _near(self, what: str) -> None:
        self.near += 1
        now = self.clock()
        if self.warned_at is not None and now - self.warned_at < DESCRIPTORS_WARNING_SECONDS:
            return
        since = (
            ""
            if self.warned_at is None
            else f" ({self.near} times in the last {now - self.warned_at:.0f} s.)"
        )
        logger.warning(
            "the server is running out of file descriptors, of which this process may "
            "open %s (RLIMIT_NOFILE): %s; once none is left, new "
            "connections wait or are closed unanswered. Raise the limit (ulimit -n, "
            "or LimitNOFILE= in a systemd unit) well above the connections expected, put "
            "a proxy that bounds connections in front, or lower body_timeout_seconds so "
            "slow clients let go sooner.%s",
            "no limit" if self.limit is None else self.limit,
            what,
            since,
        )
        self.near = 0
        self.warned_at = now


@functools.cache
def _descriptors() -> _Descriptors:
    """The process's one watch (the limit is the process's), made when first needed."""
    return _Descriptors()


_ACCEPT_OUT_OF_RESOURCES = "socket.accept() out of system resource"
"""What asyncio's loop reports, through its exception handler, when accepting fails
for want of a descriptor (or of memory), once a second while it lasts."""


def _fold_accept_errors(
    loop: asyncio.AbstractEventLoop, ours: Callable[[Any], bool]
) -> Callable[[], None]:
    """Have asyncio's accept failures on the sockets ``ours`` tells apart counted in
    ``_descriptors``' warning, which says what to do, instead of logged as an error
    with a traceback each second. Returns what puts the loop's handler back (if this
    one is still installed): other servers on the loop keep their errors."""
    previous = loop.get_exception_handler()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if (
            context.get("message") == _ACCEPT_OUT_OF_RESOURCES
            and isinstance(exc, OSError)
            and exc.errno in (errno.EMFILE, errno.ENFILE)
            and "socket" in context
            and ours(context["socket"])
        ):
            _descriptors().refused()
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    def unfold() -> None:
        if loop.get_exception_handler() is handle:
            loop.set_exception_handler(previous)

    loop.set_exception_handler(handle)
    return unfold


class _DescriptorWatching(asyncio.Protocol):
    """A connection's protocol that has ``_Descriptors`` look at its socket first."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            _descriptors().accepted(sock.fileno())
        super().connection_made(transport)


async def serve_uvicorn(
    app: StreamableHTTPApp, *, host: str = "127.0.0.1", port: int = 8000, **config: Any
) -> None:
    """Serve ``app`` in the running event loop until interrupted."""
    await uvicorn_server(app, host=host, port=port, **config).serve()


def run_uvicorn(
    app: StreamableHTTPApp, *, host: str = "127.0.0.1", port: int = 8000, **config: Any
) -> None:
    """Serve ``app`` until Ctrl-C, SIGTERM or SIGHUP: a server program's blocking entry point.

    Once listening it writes ``answerback: serving MCP at <url> (Ctrl-C to stop)`` to
    stderr (``port=0`` picks a free port, and the line shows which; with a shared state,
    ``as replica <id> (process <pid>)`` follows the url), and
    ``answerback: stopped`` when a signal has stopped it. ``config`` goes to
    ``uvicorn.Config``. Returns after SIGTERM or SIGHUP (or if uvicorn stops by itself); raises
    ``SystemExit(130)`` after Ctrl-C, and ``SystemExit`` with a one-line message (exit
    status 1) if it cannot listen on ``host:port``, a port already in use for one, or if
    its state cannot start (``StateUnavailable``: Redis down, a wrong password).
    Raises ``RuntimeError`` when called inside a running event loop.
    """
    refuse_inside_event_loop("run_uvicorn()", "app")
    try:
        listening = listening_socket(host, port)
    except OSError as exc:
        raise SystemExit(f"answerback: {_cannot_listen(host, port, exc)}") from None
    scheme = "https" if config.get("ssl_certfile") else "http"
    address = f"[{host}]" if ":" in host else host
    url = f"{scheme}://{address}:{listening.getsockname()[1]}{app.path}"

    # A replica names itself, so that other replicas' logs ("replica X stopped ...")
    # can be traced to a process.
    replica = (
        f" as replica {app.state.replica_id} (process {os.getpid()})" if app.state.shared else ""
    )

    def announce() -> None:
        _say(f"answerback: serving MCP at {url}{replica} (Ctrl-C to stop)")

    server = uvicorn_server(app, host=host, port=port, on_started=announce, **config)
    with (
        listening,
        _SignalsStop() as stopped_by,
        contextlib.suppress(_Stopped),
        _start_failure_unlogged(app),
    ):
        try:
            anyio.run(server.serve, [listening], backend_options=asyncio_loop_options())
        except SystemExit:  # uvicorn's, status 3, after a lifespan that failed to start
            if app.start_failure is None:
                raise
            raise SystemExit(f"answerback: the server cannot start: {app.start_failure}") from None
    if stopped_by:
        _say("answerback: stopped")
    if signal.SIGINT in stopped_by:
        raise SystemExit(130)


@contextlib.contextmanager
def _start_failure_unlogged(app: StreamableHTTPApp) -> Generator[None]:
    """Keep uvicorn from logging a start that failed for want of the server's state
    (Redis down, a wrong password): ``run_uvicorn`` says why in one line instead."""
    uvicorn_logger = logging.getLogger("uvicorn.error")
    quiet = _UnlessStartFailed(app)
    uvicorn_logger.addFilter(quiet)
    try:
        yield
    finally:
        uvicorn_logger.removeFilter(quiet)


class _UnlessStartFailed(logging.Filter):
    """Drops every record once ``app``'s state has failed to start."""

    def __init__(self, app: StreamableHTTPApp) -> None:
        super().__init__()
        self.app = app

    def filter(self, record: logging.LogRecord) -> bool:
        return self.app.start_failure is None


class _Stopped(Exception):
    """Raised by the signal handler of ``_signals_stop``: the signal has been handled."""


class _SignalsStop:
    """SIGINT, SIGTERM and SIGHUP end the server cleanly, and are recorded.

    While uvicorn serves, its own handlers ask it to shut down gracefully, and once it has
    it raises the same signal again, for the handler it found: this one, which records the
    signal and unwinds with ``_Stopped`` (not ``KeyboardInterrupt``, whose traceback
    asyncio would print). Before uvicorn starts, the same handler stops at once. Only the
    main thread can set handlers; elsewhere signals are left to whoever owns them.
    """

    def __enter__(self) -> list[int]:
        """Install the handlers; the list returned fills with the signals received."""
        self.stopped_by: list[int] = []
        self.previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for number in _STOPPING_SIGNALS:
                self.previous[number] = signal.signal(number, self._handle)
        return self.stopped_by

    def __exit__(self, *exc_info: object) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)

    def _handle(self, number: int, frame: FrameType | None) -> None:
        self.stopped_by.append(number)
        raise _Stopped


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (uvicorn listens on it), so that a port in use is
    found before anything starts and a port of 0 is known before the line shows it."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP spelled out: accepted connections inherit it, and asyncio turns Nagle's
    # algorithm off (TCP_NODELAY) only on sockets that say TCP. With proto 0, every small
    # response waits for the client's delayed ACK, some 40 ms per call.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # restart at once
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def _cannot_listen(host: str, port: int, exc: OSError) -> str:
    """Why the server cannot listen on ``host:port`` and what to do, in one line."""
    where = f"cannot listen on {host}:{port}"
    if isinstance(exc, socket.gaierror):
        return f"{where}: the host name {host!r} is unknown ({exc.strerror})."
    if exc.errno in (errno.EADDRINUSE, getattr(errno, "WSAEADDRINUSE", None)):
        return (
            f"{where}: port {port} is already in use (is another server running?). Stop "
            "that program, or choose another port."
        )
    if exc.errno in (errno.EACCES, getattr(errno, "WSAEACCES", None)):
        return f"{where}: permission denied (ports below 1024 need privileges)."
    if exc.errno == errno.EADDRNOTAVAIL:
        return (
            f"{where}: {host} is not an address of this machine; use 127.0.0.1 (this "
            "machine only) or 0.0.0.0 (every network interface)."
        )
    return f"{where}: {exc.strerror or exc}."


def _say(line: str) -> None:
    """A line for the person running the server: stderr, since stdout may be a pipe
    another program reads."""
    print(line, file=sys.stderr, flush=True)
