"""Programs sharing a token store refresh one at a time, under the store's lock.

The authorization server is the local fake of test_oauth_client.py with rotating refresh
tokens (each works once; a reused one is ``invalid_grant``), served on loopback behind a
gate that holds every successful refresh answer until the test releases it. So the race
is not left to chance: while one program's refresh is in flight, the other one either
waits on the lock (the test sees it say so, and releases) or, with no lock, spends the
same refresh token, is refused and asks the person to log in (the test sees it end, and
releases). Two real processes share one token file (one on asyncio, one on trio); two
clients in one process with two store objects share it too.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from http_support import serve
from support import ReportingEventLoop
from test_oauth_client import Fake, fake_app, follow

import answerback
from answerback.client import FileTokenStore, InMemoryTokenStore, OAuth
from answerback.transports.http import LockingTokenStore, TokenStore

pytestmark = pytest.mark.anyio

REDIRECT_URI = "http://127.0.0.1:1/callback"
WAITING = "waiting for another task's or program's lock"
"""What FileTokenStore logs (at DEBUG, on answerback.oauth) when another holds the lock."""

PROGRAM = """
import logging, sys

import anyio, httpx2

from answerback.client import FileTokenStore, OAuth


async def refuse_login(url):
    print("LOGIN ASKED", flush=True)
    raise RuntimeError("this program was sent to log in again")


async def main(path, url):
    logging.basicConfig(stream=sys.stdout, format="%(levelname)s %(message)s")
    logging.getLogger("answerback.oauth").setLevel(logging.DEBUG)
    auth = OAuth(
        redirect_uri="http://127.0.0.1:1/callback",
        authorize=refuse_login,
        store=FileTokenStore(path),
    )
    async with httpx2.AsyncClient() as http:
        response = await http.get(url, auth=auth)
    print("ANSWER", response.text, flush=True)


anyio.run(main, sys.argv[1], sys.argv[2], backend=sys.argv[3])
"""


def gated(app: Any, release: threading.Event) -> Any:
    """``app``, but the answer to a refresh that succeeded waits for ``release``: the
    refreshing program is caught between spending its refresh token and saving the new
    one. (A ``threading.Event``: on trio the app runs in a thread of its own.)"""

    async def gate(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] != "/token":
            await app(scope, receive, send)
            return
        body = bytearray()

        async def reading() -> Any:
            message = await receive()
            body.extend(message.get("body", b""))
            return message

        async def holding(message: Any) -> None:
            if (
                message["type"] == "http.response.start"
                and message["status"] == 200
                and b"grant_type=refresh_token" in body
            ):
                await anyio.to_thread.run_sync(release.wait)
            await send(message)

        await app(scope, reading, holding)

    return gate


@pytest.fixture
def release() -> threading.Event:
    return threading.Event()


@pytest.fixture
def fake() -> Fake:
    return Fake(expires_in=1, rotating=True)


@pytest.fixture
async def base(fake: Fake, release: threading.Event) -> AsyncIterator[str]:
    async with serve(gated(fake_app(fake), release), path="") as running:
        fake.base = running.url
        try:
            yield running.url
        finally:
            release.set()  # a failed test leaves no answer waiting as the server stops


async def log_in(base: str, path: Path) -> None:
    """The person logs in once; the token file then holds tokens that are already due
    for a refresh (they expire within the client's leeway)."""
    auth = OAuth(redirect_uri=REDIRECT_URI, authorize=follow, store=FileTokenStore(path))
    async with httpx2.AsyncClient() as http:
        assert (await http.get(f"{base}/mcp", auth=auth)).text == "hello"


@contextmanager
def watching(handler: logging.Handler) -> Generator[None]:
    """``handler`` sees answerback.oauth's records, DEBUG ones too, until the block ends."""
    oauth_logger = logging.getLogger("answerback.oauth")
    level = oauth_logger.level
    oauth_logger.addHandler(handler)
    oauth_logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        oauth_logger.removeHandler(handler)
        oauth_logger.setLevel(level)


def refreshes(fake: Fake) -> list[str]:
    return [form["refresh_token"] for form in fake.token_requests if "refresh_token" in form]


async def test_two_processes_refreshing_at_once_spend_the_refresh_token_once(
    fake: Fake, base: str, release: threading.Event, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"
    await log_in(base, path)
    project = Path(answerback.__file__).parents[1]  # the processes use this same code
    environment = os.environ | {"PYTHONPATH": str(project)}
    outputs = {"asyncio": "", "trio": ""}
    something_happened = anyio.Event()

    async def run(backend: str) -> None:
        command = [sys.executable, "-c", PROGRAM, str(path), f"{base}/mcp", backend]
        async with await anyio.open_process(
            command, stderr=subprocess.STDOUT, env=environment, cwd=project
        ) as process:
            assert process.stdout is not None
            async for chunk in process.stdout:
                outputs[backend] += chunk.decode(errors="replace")
                if WAITING in outputs[backend]:
                    something_happened.set()  # it waits on the lock: let the refresh end
            something_happened.set()  # it ended (without a lock: sent to log in)
            await process.wait()
            outputs[backend] += f"\nexit {process.returncode}"

    async def release_when_something_happened() -> None:
        await something_happened.wait()
        release.set()

    async with anyio.create_task_group() as group:
        group.start_soon(release_when_something_happened)
        group.start_soon(run, "asyncio")
        group.start_soon(run, "trio")

    for output in outputs.values():
        assert "LOGIN ASKED" not in output, output
        assert "ANSWER hello" in output, output
        assert output.endswith("exit 0"), output
    assert refreshes(fake) == ["refresh-1"]  # spent once, by whichever came first
    assert len(fake.authorizations) == 1
    assert any(WAITING in output for output in outputs.values())


async def test_two_clients_of_one_process_with_two_stores_on_one_file_refresh_once(
    fake: Fake, base: str, release: threading.Event, tmp_path: Path
) -> None:
    path = tmp_path / "tokens.json"
    await log_in(base, path)
    something_happened = anyio.Event()
    answers: list[str] = []
    logins: list[str] = []

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if WAITING in record.getMessage():
                something_happened.set()  # logged by the waiting task, on this loop

    async def refuse_login(url: str) -> dict[str, str]:
        logins.append(url)
        raise RuntimeError("this client was sent to log in again")

    async def client() -> None:
        auth = OAuth(redirect_uri=REDIRECT_URI, authorize=refuse_login, store=FileTokenStore(path))
        try:
            async with httpx2.AsyncClient() as http:
                answers.append((await http.get(f"{base}/mcp", auth=auth)).text)
        except RuntimeError:
            pass  # counted in logins
        finally:
            something_happened.set()

    async def release_when_something_happened() -> None:
        await something_happened.wait()
        release.set()

    with watching(Watch()):
        async with anyio.create_task_group() as group:
            group.start_soon(release_when_something_happened)
            group.start_soon(client)
            group.start_soon(client)
    assert logins == []
    assert answers == ["hello", "hello"]
    assert refreshes(fake) == ["refresh-1"]


class RecordingStore(InMemoryTokenStore):
    """A store of a program's own that offers the lock: it notes what it did, in order."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    async def set(self, key: str, value: dict[str, Any]) -> None:
        self.events.append(f"set {key}")
        await super().set(key, value)

    @asynccontextmanager
    async def lock_record(self, key: str) -> AsyncGenerator[None]:
        self.events.append(f"lock {key}")
        async with super().lock_record(key):
            yield
        self.events.append(f"unlock {key}")


async def test_a_store_that_offers_a_lock_holds_it_across_the_refresh_and_the_save(
    fake: Fake, base: str, release: threading.Event
) -> None:
    release.set()
    store = RecordingStore()
    assert isinstance(store, LockingTokenStore)
    for _ in range(2):  # a login, then a refresh
        auth = OAuth(redirect_uri=REDIRECT_URI, authorize=follow, store=store)
        async with httpx2.AsyncClient() as http:
            assert (await http.get(f"{base}/mcp", auth=auth)).text == "hello"
    key = f"oauth:tokens:{base}/mcp"
    refresh = store.events[store.events.index(f"lock {key}") :]
    assert refresh == [f"lock {key}", f"set {key}", f"unlock {key}"]
    assert refreshes(fake) == ["refresh-1"]


class StoreWithItsOwnLock:
    """A store written before ``LockingTokenStore`` existed, guarding its records with
    an attribute that happens to be called ``lock``."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.records: dict[str, dict[str, Any]] = {}

    async def get(self, key: str) -> dict[str, Any] | None:
        async with self.lock:
            return self.records.get(key)

    async def set(self, key: str, value: dict[str, Any]) -> None:
        async with self.lock:
            self.records[key] = value

    async def delete(self, key: str) -> None:
        async with self.lock:
            self.records.pop(key, None)


@pytest.mark.parametrize(
    "anyio_backend", [("asyncio", {"loop_factory": ReportingEventLoop})], ids=["asyncio"]
)  # the store's own lock is an asyncio one
async def test_a_store_with_an_attribute_named_lock_still_refreshes_as_a_plain_store(
    fake: Fake, base: str, release: threading.Event
) -> None:
    release.set()
    store = StoreWithItsOwnLock()
    assert isinstance(store, TokenStore)
    assert not isinstance(store, LockingTokenStore)
    for _ in range(2):  # a login, then a refresh
        auth = OAuth(redirect_uri=REDIRECT_URI, authorize=follow, store=store)
        async with httpx2.AsyncClient() as http:
            assert (await http.get(f"{base}/mcp", auth=auth)).text == "hello"
    assert refreshes(fake) == ["refresh-1"]


def test_the_stores_offer_the_lock_and_a_plain_store_still_is_a_store(tmp_path: Path) -> None:
    assert isinstance(InMemoryTokenStore(), LockingTokenStore)
    assert isinstance(FileTokenStore(tmp_path / "tokens.json"), LockingTokenStore)

    class Plain:
        async def get(self, key: str) -> dict[str, Any] | None:
            return None

        async def set(self, key: str, value: dict[str, Any]) -> None:
            return None

        async def delete(self, key: str) -> None:
            return None

    assert isinstance(Plain(), TokenStore)
    assert not isinstance(Plain(), LockingTokenStore)


@pytest.mark.parametrize("kind", ["memory", "file"])
async def test_a_second_holder_of_a_key_waits_for_the_first(kind: str, tmp_path: Path) -> None:
    """Two store objects on one file (or one memory store) hold a key in turn; another
    key is not held up."""
    first: LockingTokenStore
    second: LockingTokenStore
    if kind == "memory":
        first = second = InMemoryTokenStore()
    else:
        first, second = FileTokenStore(tmp_path / "t.json"), FileTokenStore(tmp_path / "t.json")
    order: list[str] = []
    first_holds, let_go, second_waits = anyio.Event(), anyio.Event(), anyio.Event()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if WAITING in record.getMessage():
                second_waits.set()

    async def hold_first() -> None:
        async with first.lock_record("a"):
            order.append("first in")
            first_holds.set()
            await let_go.wait()
            order.append("first out")

    async def hold_second() -> None:
        async with second.lock_record("a"):
            order.append("second in")

    async with anyio.create_task_group() as group:
        group.start_soon(hold_first)
        await first_holds.wait()
        async with second.lock_record("b"):  # another key: free
            order.append("other key")
        with watching(Watch()):
            group.start_soon(hold_second)
            if kind == "memory":
                await anyio.wait_all_tasks_blocked()  # no threads: it is at the lock
            else:
                await second_waits.wait()  # it found the file locked
        order.append("let go")
        let_go.set()
    assert order == ["first in", "other key", "let go", "first out", "second in"]


async def test_a_file_lock_held_too_long_is_given_up_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A program stuck holding the lock (suspended, in a debugger) does not stop the
    others: after ``lock_timeout`` they go on without it, and say so."""
    path = tmp_path / "tokens.json"
    impatient = FileTokenStore(path, lock_timeout=0.05)
    caplog.set_level(logging.WARNING, logger="answerback.oauth")
    async with FileTokenStore(path).lock_record("k"), impatient.lock_record("k"):
        await impatient.set("k", {"went": "on"})
    assert await impatient.get("k") == {"went": "on"}
    assert "another task or program has held the token lock" in caplog.text
    assert "lock_timeout" in caplog.text


@pytest.mark.parametrize("lock_timeout", [0, -1, float("inf"), "5", True])
def test_lock_timeout_must_be_positive_seconds(tmp_path: Path, lock_timeout: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="lock_timeout"):
        FileTokenStore(tmp_path / "tokens.json", lock_timeout=lock_timeout)
