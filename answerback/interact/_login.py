"""Logging a person in through their browser: open the login page, catch the redirect.

An OAuth client on someone's computer cannot keep a secret and has no web address of
its own, so it logs in the way RFC 8252 describes for native apps: it listens on a
loopback port (``http://127.0.0.1:PORT/callback``), sends the person's browser to the
authorization server's login page, and the server sends the browser back to that port
with a code. ``BrowserLogin`` is that listener and the browser step. It binds the port
when it is made, so ``redirect_uri`` is known before the client registers, and keeps it
for its whole life, so a second login (a scope step-up) comes back to the same address.

The login page's URL comes from the server the client is connecting to, so it is judged
exactly like a URL-mode elicitation link (``answerback.urls.judge_url``) before anything
opens it: a blocked one is refused, a high-risk one opens only if ``confirm`` says so.
"""

from __future__ import annotations

import contextlib
import html
import logging
import socket
import webbrowser
from collections.abc import Awaitable, Callable
from types import TracebackType
from urllib.parse import parse_qsl, urlsplit

import anyio
import anyio.to_thread
import h11
from anyio.abc import SocketListener, SocketStream

from answerback._options import (
    callable_or_none,
    instance_or_none,
    positive_seconds,
    text,
)
from answerback.client import AuthorizationError
from answerback.client._callbacks import async_callable_or_none
from answerback.urls import ApprovedDomains, RiskLevel, UrlVerdict, judge_url

logger = logging.getLogger("answerback.interact.login")

OpenBrowser = Callable[[str], bool]
"""Opens a URL in the person's browser; ``False`` (or an exception) when none opened."""
Tell = Callable[[str], None]
"""Shows the person a line of text (where the login page is, what went wrong)."""
Confirm = Callable[[UrlVerdict], Awaitable[bool]]
"""Asks the person whether to open a high-risk login page; ``True`` to open it."""

_REQUEST_LIMIT = 16 * 1024
_IDLE_CONNECTION_SECONDS = 30.0


class BrowserLogin:
    """The ``authorize`` step of ``OAuth`` for a person at this computer.

    ``await login(authorization_url)`` judges the URL, opens it with ``open_browser``
    (``webbrowser.open`` by default; it runs in a worker thread), tells the person the
    URL (so they can open it by hand if no browser opened), waits up to ``timeout``
    seconds (``None``: until it comes back or the caller cancels) for the browser to
    come back to ``redirect_uri`` with the same ``state`` (logins started together
    take turns),
    answers the browser with a short page, and returns the redirect's query parameters,
    an error the authorization server sends back (``error=access_denied``) included:
    ``OAuth`` acts on it only once it has checked where it comes from (``iss``).
    A blocked URL, a refused high-risk one and the timeout raise ``AuthorizationError``.

    ``tell`` shows the person text (default: the ``answerback.interact.login`` logger);
    ``confirm`` is asked before a high-risk URL opens (without it, one is refused);
    ``approved_domains`` are sites the person approved before, as for URL elicitation.
    Close it (``close()``, or use it as a context manager) to free the port.

    Its options are checked before the port is bound: a ``timeout`` that is not a
    positive, finite number of seconds or ``None``, a ``path`` that does not start with
    ``/``, a hook that cannot be called or ``approved_domains`` that are not
    ``ApprovedDomains`` raise ``TypeError`` or ``ValueError``.
    """

    def __init__(
        self,
        *,
        open_browser: OpenBrowser | None = None,
        tell: Tell | None = None,
        confirm: Confirm | None = None,
        approved_domains: ApprovedDomains | None = None,
        timeout: float | None = 300.0,
        path: str = "/callback",
    ) -> None:
        self._open_browser = (
            callable_or_none(
                "open_browser", open_browser, "a function of the URL returning whether it opened"
            )
            or webbrowser.open
        )
        self._tell = callable_or_none("tell", tell, "a function that shows a line of text")
        self._confirm = async_callable_or_none(
            "confirm", confirm, "an async function of the URL's verdict returning True to open"
        )
        self._approved_domains = instance_or_none(
            "approved_domains", approved_domains, ApprovedDomains, "ApprovedDomains([...])"
        )
        # None is Python's "no limit" (a caller with its own deadline, or none at all).
        self.timeout = None if timeout is None else positive_seconds("timeout", timeout)
        self._path = text("path", path, "the redirect's path, such as '/callback'")
        if not path.startswith("/"):
            raise ValueError(f"path must start with '/', such as '/callback', got {path!r}")
        self._turn: anyio.Lock | None = None
        # Bound now, not on the first login: the client registers redirect_uri (dynamic
        # registration) before it ever calls login().
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            self._socket.bind(("127.0.0.1", 0))
            self._socket.listen(8)
        except OSError:
            self._socket.close()
            raise
        self._socket.setblocking(False)
        port: int = self._socket.getsockname()[1]
        self.redirect_uri = f"http://127.0.0.1:{port}{path}"
        """Where the authorization server sends the browser back: register this one."""

    def __repr__(self) -> str:
        return f"BrowserLogin(redirect_uri={self.redirect_uri!r})"

    async def __call__(self, authorization_url: str) -> dict[str, str]:
        """``OAuth(authorize=login)`` calls this: the same as ``login()``."""
        return await self.login(authorization_url)

    async def login(self, authorization_url: str) -> dict[str, str]:
        """Send the person to ``authorization_url`` and return the redirect's parameters."""
        if self._socket.fileno() == -1:
            raise RuntimeError("This BrowserLogin is closed; make a new one to log in again.")
        verdict = judge_url(authorization_url, approved_domains=self._approved_domains)
        if verdict.blocked or verdict.canonical_url is None:
            raise AuthorizationError(
                "The authorization server's login page is not safe to open, so the login "
                f"was stopped ({verdict.explain()}). Ask the server's operator to fix "
                "its authorization server address."
            )
        state = dict(parse_qsl(urlsplit(authorization_url).query)).get("state")
        if not state:
            raise AuthorizationError(
                "The authorization URL has no state parameter, so the redirect could not be "
                "told apart from a forged one; the login was stopped."
            )
        if verdict.level >= RiskLevel.HIGH_RISK and not (
            self._confirm is not None and await self._confirm(verdict)
        ):
            raise AuthorizationError(
                "The authorization server's login page looks risky and was not opened "
                f"({verdict.explain()})."
            )
        url = verdict.canonical_url
        waiter = _Waiter(self._path, state)
        if self._turn is None:
            self._turn = anyio.Lock()
        try:
            # One login at a time: both would accept on the same socket, and each would
            # turn the other's redirect away as a stale one.
            async with self._turn:
                with anyio.fail_after(self.timeout):
                    async with anyio.create_task_group() as group:
                        group.start_soon(_serve, self._socket, waiter)
                        group.start_soon(self._open, url, verdict)
                        await waiter.done.wait()
                        group.cancel_scope.cancel()
        except TimeoutError:
            raise AuthorizationError(
                f"No login came back within {self.timeout:g} s (the browser never "
                f"returned to {self.redirect_uri}). Try again, and finish the login in the "
                "browser."
            ) from None
        assert waiter.params is not None
        return waiter.params

    def close(self) -> None:
        """Stop listening: the port is free again (a login in progress is not affected
        until it next accepts a connection)."""
        self._socket.close()

    def __enter__(self) -> BrowserLogin:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def __aenter__(self) -> BrowserLogin:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    async def _open(self, url: str, verdict: UrlVerdict) -> None:
        # Said before the browser opens: the redirect may come back (and end the login)
        # before a slow opener returns.
        reasons = "".join(f"\n  - {reason.message}" for reason in verdict.reasons)
        self._say(f"Opening the login page in your browser: {url}{reasons}", logging.INFO)
        try:
            # A console browser holds the thread until it exits: never wait for it once
            # the redirect has come back.
            opened = await anyio.to_thread.run_sync(self._open_browser, url, abandon_on_cancel=True)
        except Exception as exc:  # webbrowser.Error, or a custom opener's failure
            logger.debug("the browser could not be opened", exc_info=exc)
            opened = False
        if not opened:
            self._say(
                "No browser could be opened. To log in, open this link in a browser on "
                f"this computer:\n  {url}",
                logging.WARNING,
            )

    def _say(self, text: str, level: int) -> None:
        if self._tell is not None:
            self._tell(text)
        else:
            logger.log(level, "%s", text)


class _Waiter:
    """What the listener is waiting for, and what it found."""

    def __init__(self, path: str, state: str) -> None:
        self.path = path
        self.state = state
        self.done = anyio.Event()
        self.params: dict[str, str] | None = None

    def judge(self, method: str, target: str) -> tuple[int, str, str]:
        """The browser's request → (status, title, text) of the page to answer with;
        sets ``params`` once the redirect of this login has come."""
        parts = urlsplit(target)
        if method != "GET" or parts.path != self.path:
            return 404, "Not found", "This address only receives a login's redirect."
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        if params.get("state") != self.state:
            logger.warning("a redirect with a state of another login came in; still waiting")
            return (
                400,
                "Not this login",
                "This redirect does not belong to the login in progress (its state does "
                "not match). Start the login again from the program you are using.",
            )
        self.params = params
        if "code" not in params:
            # An error (or nothing): handed back unread. Until OAuth has checked that it
            # comes from the right server (iss), its text is not shown, here or anywhere.
            return (
                400,
                "Login not completed",
                "No authorization code came back, so the login did not complete. The "
                "program you are logging in to says why. You can close this tab.",
            )
        return 200, "Logged in", "You are logged in. You can close this tab and go back."


async def _serve(listening: socket.socket, waiter: _Waiter) -> None:
    # A duplicate, closed with this login: the login's own socket stays open between logins.
    duplicate = listening.dup()
    try:
        listener = await SocketListener.from_socket(duplicate)
    except BaseException:
        duplicate.close()
        raise
    async with listener, anyio.create_task_group() as group:
        while True:
            stream = await listener.accept()
            group.start_soon(_answer, stream, waiter)


async def _answer(stream: SocketStream, waiter: _Waiter) -> None:
    """One browser connection: read its request, answer with a page, close.

    A browser may open a connection and send nothing (a speculative preconnect), so each
    connection is its own task, dropped after a while idle.
    """
    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=_REQUEST_LIMIT)
    async with stream:
        with anyio.move_on_after(_IDLE_CONNECTION_SECONDS):
            while True:
                try:
                    event = connection.next_event()
                except h11.RemoteProtocolError:
                    return  # not HTTP, or a request too large to be a redirect
                if event is h11.NEED_DATA:
                    try:
                        connection.receive_data(await stream.receive(4096))
                    except (anyio.EndOfStream, anyio.BrokenResourceError):
                        connection.receive_data(b"")
                    continue
                if isinstance(event, h11.Request):
                    target = event.target.decode("ascii", "replace")
                    status, title, text = waiter.judge(event.method.decode("ascii"), target)
                else:  # a malformed request, or the connection closed before one came
                    return
                break
            body = _page(title, text)
            headers = [
                ("content-type", "text/html; charset=utf-8"),
                ("content-length", str(len(body))),
                ("cache-control", "no-store"),
                ("referrer-policy", "no-referrer"),
                ("connection", "close"),
            ]
            # A browser that went away without reading the page changes nothing.
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await stream.send(
                    connection.send(h11.Response(status_code=status, headers=headers))
                    + connection.send(h11.Data(data=body))
                    + connection.send(h11.EndOfMessage())
                )
    if waiter.params is not None:
        waiter.done.set()


def _page(title: str, text: str) -> bytes:
    title, text = html.escape(title), html.escape(text)
    return (
        f'<!doctype html><meta charset="utf-8"><title>{title}</title>'
        f'<body style="font-family:sans-serif;margin:3em"><h1>{title}</h1><p>{text}</p>'
    ).encode()
