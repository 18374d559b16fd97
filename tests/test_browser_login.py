"""BrowserLogin: the loopback redirect receiver and the browser step of an OAuth login.

The "browser" here is a real HTTP client following the redirect to the real loopback
listener: ``open_browser`` runs in a worker thread, as ``webbrowser.open`` does, and
GETs the redirect URI the authorization server would have sent the browser to.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import anyio
import httpx2
import pytest

from answerback.client import AuthorizationError
from answerback.interact import BrowserLogin
from answerback.urls import RiskLevel, UrlVerdict

pytestmark = pytest.mark.anyio

LOGIN_PAGE = "https://auth.example.com/authorize?client_id=c&state=s-123&response_type=code"


class Browser:
    """A browser stand-in: opens the login page by going straight back to the redirect
    URI with what ``back(state)`` says the authorization server answered."""

    def __init__(self, back: Callable[[str], dict[str, str]]) -> None:
        self.back = back
        self.redirect_uri = ""
        self.opened: list[str] = []
        self._pages: list[httpx2.Response] = []
        self._finished = threading.Event()

    def open(self, url: str) -> bool:
        self.opened.append(url)
        state = dict(parse_qsl(urlsplit(url).query))["state"]
        self._pages.append(httpx2.get(self.redirect_uri, params=self.back(state)))
        self._finished.set()
        return True

    async def pages(self) -> list[httpx2.Response]:
        """The pages the browser was shown, once it has them (the login returns as soon as
        it has answered, which may be before the browser has read the answer)."""
        assert await anyio.to_thread.run_sync(self._finished.wait, 30)
        return self._pages


def with_browser(
    back: Callable[[str], dict[str, str]], **options: Any
) -> tuple[BrowserLogin, Browser]:
    browser = Browser(back)
    login = BrowserLogin(open_browser=browser.open, **options)
    browser.redirect_uri = login.redirect_uri
    return login, browser


def quiet(text: str) -> None:
    """``tell`` for tests that do not look at what the person is told."""


def granted(state: str) -> dict[str, str]:
    return {"code": "the-code", "state": state, "iss": "https://auth.example.com"}


async def test_the_redirect_comes_back_with_the_code() -> None:
    told: list[str] = []
    login, browser = with_browser(granted, tell=told.append)
    with login:
        assert urlsplit(login.redirect_uri).hostname == "127.0.0.1"
        assert urlsplit(login.redirect_uri).path == "/callback"
        assert (urlsplit(login.redirect_uri).port or 0) > 0
        params = await login(LOGIN_PAGE)
    assert params == granted("s-123")
    assert browser.opened == [LOGIN_PAGE]
    [page] = await browser.pages()
    assert page.status_code == 200
    assert "You are logged in" in page.text
    assert page.headers["cache-control"] == "no-store"
    assert told == [f"Opening the login page in your browser: {LOGIN_PAGE}"]


async def test_other_requests_and_stale_states_are_answered_and_the_login_waits() -> None:
    def follow(url: str) -> bool:
        base = login.redirect_uri.removesuffix("/callback")
        browser_pages.append(httpx2.get(f"{base}/favicon.ico"))
        browser_pages.append(httpx2.get(login.redirect_uri, params=granted("an-old-login")))
        browser_pages.append(httpx2.post(login.redirect_uri, params=granted("s-123")))
        browser_pages.append(httpx2.get(login.redirect_uri, params=granted("s-123")))
        finished.set()
        return True

    browser_pages: list[httpx2.Response] = []
    finished = threading.Event()
    with BrowserLogin(open_browser=follow, tell=quiet) as login:
        assert await login.login(LOGIN_PAGE) == granted("s-123")
    assert await anyio.to_thread.run_sync(finished.wait, 30)
    assert [page.status_code for page in browser_pages] == [404, 400, 404, 200]
    assert "does not belong to the login in progress" in browser_pages[1].text


async def test_a_silent_connection_does_not_hold_up_the_login() -> None:
    login, _ = with_browser(granted, tell=quiet)
    with login:
        port = urlsplit(login.redirect_uri).port
        assert port is not None
        with socket.create_connection(("127.0.0.1", port)):  # a browser's preconnect
            assert await login(LOGIN_PAGE) == granted("s-123")


@pytest.mark.parametrize(
    "back",
    [
        {"error": "access_denied", "error_description": "\x1b[2JYour session expired"},
        {},
    ],
)
async def test_a_redirect_without_a_code_is_handed_back_unread(back: dict[str, str]) -> None:
    """An error (or nothing) comes back as it is, for OAuth to judge once it knows which
    server sent it; until then its text is not shown, not even in the browser."""
    login, browser = with_browser(lambda state: {**back, "state": state}, tell=quiet)
    with login:
        assert await login(LOGIN_PAGE) == {**back, "state": "s-123"}
    [page] = await browser.pages()
    assert page.status_code == 400
    assert "the login did not complete" in page.text
    assert "expired" not in page.text


@pytest.mark.parametrize(
    "url",
    [
        "javascript:alert(1)//?state=x",
        "http://auth.example.com/authorize?state=x",
        "https://user:pw@auth.example.com/authorize?state=x",
    ],
)
async def test_a_blocked_login_page_is_never_opened(url: str) -> None:
    opened: list[str] = []
    login = BrowserLogin(open_browser=lambda u: bool(opened.append(u)), tell=opened.append)
    with login, pytest.raises(AuthorizationError, match="not safe to open") as caught:
        await login(url)
    assert "block:" in str(caught.value)
    assert opened == []


async def test_a_high_risk_login_page_opens_only_when_confirmed() -> None:
    risky = "https://192.0.2.1/authorize?state=s-123"
    asked: list[UrlVerdict] = []

    async def refuse(verdict: UrlVerdict) -> bool:
        asked.append(verdict)
        return False

    async def accept(verdict: UrlVerdict) -> bool:
        asked.append(verdict)
        return True

    login, browser = with_browser(granted, tell=quiet)
    with login, pytest.raises(AuthorizationError, match="looks risky"):
        await login(risky)
    with (
        BrowserLogin(confirm=refuse, tell=quiet) as login,
        pytest.raises(AuthorizationError, match="looks risky"),
    ):
        await login(risky)
    assert browser.opened == []
    login, browser = with_browser(granted, confirm=accept, tell=quiet)
    with login:
        assert await login(risky) == granted("s-123")
    assert browser.opened == [risky]
    assert [verdict.level for verdict in asked] == [RiskLevel.HIGH_RISK] * 2


async def test_a_login_page_on_this_computer_opens_with_its_warning() -> None:
    told: list[str] = []
    local = "http://127.0.0.1:9/authorize?state=s-123"
    login, _ = with_browser(granted, tell=told.append)
    with login:
        assert await login(local) == granted("s-123")
    assert "127.0.0.1 is this computer" in told[0]


async def test_without_a_browser_the_person_is_told_the_link() -> None:
    told: list[str] = []
    shown = anyio.Event()

    def tell(text: str) -> None:
        told.append(text)
        if text.startswith("No browser"):
            shown.set()

    async def person(login: BrowserLogin) -> None:
        await shown.wait()
        async with httpx2.AsyncClient() as http:
            await http.get(login.redirect_uri, params=granted("s-123"))

    with BrowserLogin(open_browser=lambda _: False, tell=tell) as login:
        async with anyio.create_task_group() as group:
            group.start_soon(person, login)
            assert await login(LOGIN_PAGE) == granted("s-123")
    assert told[1:] == [
        "No browser could be opened. To log in, open this link in a browser on this "
        f"computer:\n  {LOGIN_PAGE}"
    ]


async def test_a_browser_that_fails_to_start_counts_as_no_browser() -> None:
    told: list[str] = []

    def broken(url: str) -> bool:
        raise OSError("no display")

    with (
        BrowserLogin(open_browser=broken, tell=told.append, timeout=0.05) as login,
        pytest.raises(AuthorizationError, match=r"No login came back within 0\.05 s "),
    ):
        await login(LOGIN_PAGE)
    assert told[1].startswith("No browser could be opened.")


async def test_a_login_with_no_time_limit_waits_until_the_browser_comes_back() -> None:
    """``timeout=None`` is no limit: the login waits, however long the person takes,
    until the browser comes back (here once the test has seen the login waiting)."""
    waiting = anyio.Event()

    def browser(url: str) -> bool:
        anyio.from_thread.run_sync(waiting.set)
        return True

    async def person(login: BrowserLogin) -> None:
        await waiting.wait()
        async with httpx2.AsyncClient() as http:
            await http.get(login.redirect_uri, params=granted("s-123"))

    with BrowserLogin(open_browser=browser, tell=quiet, timeout=None) as login:
        assert login.timeout is None
        async with anyio.create_task_group() as group:
            group.start_soon(person, login)
            assert await login(LOGIN_PAGE) == granted("s-123")


async def test_a_login_with_no_time_limit_ends_when_its_caller_cancels() -> None:
    """With no limit of its own, the caller's cancellation is what ends the wait (and
    nothing else does: no ``AuthorizationError`` for a timeout)."""
    waiting = anyio.Event()

    def browser(url: str) -> bool:
        anyio.from_thread.run_sync(waiting.set)
        return True

    with BrowserLogin(open_browser=browser, tell=quiet, timeout=None) as login:
        async with anyio.create_task_group() as group:
            group.start_soon(login, LOGIN_PAGE)
            await waiting.wait()
            group.cancel_scope.cancel()
    assert group.cancel_scope.cancelled_caught


async def test_a_url_without_state_is_refused() -> None:
    with (
        BrowserLogin(open_browser=lambda _: True, tell=quiet) as login,
        pytest.raises(AuthorizationError, match="no state parameter"),
    ):
        await login("https://auth.example.com/authorize?client_id=c")


async def test_a_cancelled_login_leaves_the_listener_ready_for_the_next() -> None:
    opened = anyio.Event()
    comes_back = False

    def browser(url: str) -> bool:
        if comes_back:
            httpx2.get(login.redirect_uri, params=granted("s-123"))
        else:
            anyio.from_thread.run_sync(opened.set)
        return True

    with BrowserLogin(open_browser=browser, tell=quiet) as login:
        async with anyio.create_task_group() as group:

            async def attempt() -> None:
                await login(LOGIN_PAGE)

            group.start_soon(attempt)
            await opened.wait()
            group.cancel_scope.cancel()
        comes_back = True
        assert await login(LOGIN_PAGE) == granted("s-123")


async def test_a_closed_login_frees_its_port() -> None:
    login = BrowserLogin()
    port = urlsplit(login.redirect_uri).port
    login.close()
    with pytest.raises(RuntimeError, match="closed"):
        await login(LOGIN_PAGE)
    with socket.socket() as again:
        again.bind(("127.0.0.1", port or 0))


async def test_logins_started_together_take_turns() -> None:
    """Two servers stepping up at once through one listener: each redirect reaches its
    own login (without turns, one login's listener turns the other's redirect away)."""
    login, browser = with_browser(granted, tell=quiet, timeout=30)
    first, second = LOGIN_PAGE, LOGIN_PAGE.replace("s-123", "s-456")
    results: dict[str, dict[str, str]] = {}

    async def log_in(url: str) -> None:
        results[url] = await login(url)

    with login:
        async with anyio.create_task_group() as group:
            group.start_soon(log_in, first)
            group.start_soon(log_in, second)
    assert results == {first: granted("s-123"), second: granted("s-456")}
    assert sorted(browser.opened) == sorted([first, second])
