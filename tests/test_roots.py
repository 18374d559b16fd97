"""Roots, done for real: the client's live list and the server's path guard.

The client side is ``answerback.interact.Roots``: added and removed at run time, the
change announced to 2025-11-25 servers (``notifications/roots/list_changed``) and
simply answered to 2026-07-28 ones the next time they ask, paths and ``file://`` URIs
normalised, a person asked before a new root is exposed. The server side is
``ctx.roots()`` (cached per legacy connection until the client says the list changed)
and ``ctx.resolve_path`` (traversal, symbolic links and foreign paths refused).

Every transport (in-process, stdio, HTTP) and both eras run the same scenario in a
temporary tree; the rest are pure functions or the in-process server.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path, PurePath, PurePosixPath, PureWindowsPath
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import pytest
from http_support import serve
from support import PATIENCE_SECONDS, SERVERS, client_with_hand_driven_server, server_object, target

from answerback import Client, MCPError
from answerback.client import ClientRequestContext, Responder
from answerback.interact import RootRefusedError, Roots
from answerback.server import Context, MCPServer, PathOutsideRootsError
from answerback.server import _context as server_context
from answerback.server._roots_guard import resolve_within
from answerback.transports.http import StreamableHTTPApp
from answerback.types import (
    MODERN_VERSIONS,
    CallToolResult,
    ClientCapabilities,
    ErrorData,
    ListRootsResult,
    RootsCapability,
    TextContent,
)
from answerback.urls import file_uri_to_path, path_to_file_uri

pytestmark = pytest.mark.anyio

ROOTS_SERVER = SERVERS / "roots_server.py"
MODERN = MODERN_VERSIONS[0]
LIST_CHANGED = b"notifications/roots/list_changed"


# -- normalisation: pure functions -------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "uri"),
    [
        (PureWindowsPath("C:\\x"), "file:///C:/x"),
        (PureWindowsPath("c:\\Users\\Ada\\My notes"), "file:///C:/Users/Ada/My%20notes"),
        (PureWindowsPath("\\\\server\\share\\x"), "file://server/share/x"),
        (PureWindowsPath("\\\\?\\C:\\long\\x"), "file:///C:/long/x"),
        (PureWindowsPath("\\\\?\\UNC\\server\\share\\x"), "file://server/share/x"),
        (PurePosixPath("/home/ada/notes"), "file:///home/ada/notes"),
        (PurePosixPath("/home/ada/my notes"), "file:///home/ada/my%20notes"),
        (PurePosixPath("/home/zoë/café"), "file:///home/zo%C3%AB/caf%C3%A9"),
        (PurePosixPath("/tmp/100%/a?b#c"), "file:///tmp/100%25/a%3Fb%23c"),
    ],
)
def test_paths_become_file_uris_and_back(path: PurePath, uri: str) -> None:
    assert path_to_file_uri(path) == uri
    windows = isinstance(path, PureWindowsPath)
    back = file_uri_to_path(uri, windows=windows)
    expected = PureWindowsPath(str(path).removeprefix("\\\\?\\").replace("UNC\\", "\\\\", 1))
    assert back == (expected if windows else path)


def test_a_posix_path_gives_the_uri_pathlib_gives(tmp_path: Path) -> None:
    odd = tmp_path / "a b:c%é"
    assert path_to_file_uri(odd) == odd.as_uri()


@pytest.mark.parametrize(
    ("uri", "windows", "path"),
    [
        ("file://localhost/etc/x", False, PurePosixPath("/etc/x")),
        ("file:/etc/x", False, PurePosixPath("/etc/x")),
        ("FILE:///etc/x", False, PurePosixPath("/etc/x")),
        ("file:///C|/x", True, PureWindowsPath("C:\\x")),
        ("file:///c:/a%20b", True, PureWindowsPath("C:\\a b")),
        ("file://server/share/a%20b", True, PureWindowsPath("\\\\server\\share\\a b")),
    ],
)
def test_file_uris_in_their_other_spellings(uri: str, windows: bool, path: PurePath) -> None:
    assert file_uri_to_path(uri, windows=windows) == path


@pytest.mark.parametrize(
    ("uri", "windows", "complaint"),
    [
        ("https://example.com/x", False, "is not a file:// URI"),
        ("file://server/share/x", False, "names a file on the host 'server'"),
        ("file:///a%00b", False, "NUL"),
        ("file:///a?b", False, "query or fragment"),
        ("file:///a#b", False, "query or fragment"),
        ("file:relative", False, "no absolute path"),
        ("file:///no/drive", True, "no drive letter"),
        ("file://server", True, "no share"),
    ],
)
def test_file_uris_that_name_no_local_path_are_refused(
    uri: str, windows: bool, complaint: str
) -> None:
    with pytest.raises(ValueError, match=complaint):
        file_uri_to_path(uri, windows=windows)


def test_a_relative_path_has_no_uri() -> None:
    with pytest.raises(ValueError, match="relative path"):
        path_to_file_uri(PurePosixPath("notes"))


async def test_roots_take_paths_uris_relative_paths_and_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spaced = tmp_path / "my notes é"
    spaced.mkdir()
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    roots = Roots([])
    assert await roots.add("my notes é") == spaced
    assert await roots.add(path_to_file_uri(spaced)) == spaced  # the same, kept once
    assert await roots.add("~") == tmp_path / "home"
    assert await roots.add(f"file://localhost{tmp_path.as_posix()}") == tmp_path
    assert roots.paths == [spaced, tmp_path / "home", tmp_path]
    assert str(roots.as_roots()[0].uri).endswith("/my%20notes%20%C3%A9")
    await roots.remove(spaced.as_uri())
    await roots.remove("~")
    assert roots.paths == [tmp_path]


@pytest.mark.parametrize("one_path", ["~/", "/tmp", Path("/tmp")])
def test_roots_refuse_one_path_in_place_of_a_list(one_path: str | Path) -> None:
    """``Roots("~/")`` was read a character at a time and granted ``/``."""
    with pytest.raises(TypeError, match=r"Roots takes a list of directories, not one path"):
        Roots(one_path)  # type: ignore[arg-type]


async def test_a_root_whose_directory_became_a_link_can_still_be_removed(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    roots = Roots([project])
    project.rename(tmp_path / "moved")
    project.symlink_to(elsewhere, target_is_directory=True)
    assert await roots.remove(project) == project
    assert roots.paths == []


async def test_a_root_must_be_an_existing_directory(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    roots = Roots([tmp_path])
    with pytest.raises(ValueError, match=r"is not a directory \(it does not exist\).*Create it"):
        await roots.add(tmp_path / "later")
    # "Create it first" was the advice for a file too.
    with pytest.raises(ValueError, match=r"is not a directory \(it is a file\)") as caught:
        await roots.add(tmp_path / "file.txt")
    assert str(caught.value).endswith(f"Grant the directory that holds it, {tmp_path}.")
    with pytest.raises(ValueError, match="names a file on the host"):
        await roots.add("file://example.com/x")
    assert roots.paths == [tmp_path]


# -- asking the person first ----------------------------------------------------------------


async def test_a_new_root_is_exposed_only_if_the_person_agrees(tmp_path: Path) -> None:
    asked: list[Path] = []
    answers = iter([False, True])

    async def confirm(path: Path) -> bool:
        asked.append(path)
        return next(answers)

    changes: list[str] = []

    async def changed() -> None:
        changes.append("changed")

    (tmp_path / "secret").mkdir()
    (tmp_path / "project").mkdir()
    roots = Roots([tmp_path / "project"], confirm=confirm)  # the host's own: not asked
    roots.watch(changed)
    with pytest.raises(RootRefusedError, match="the person refused it"):
        await roots.add(tmp_path / "secret")
    assert roots.paths == [tmp_path / "project"]
    assert changes == []
    await roots.add(tmp_path / "secret")
    await roots.add(tmp_path / "secret")  # already there: not asked again
    assert asked == [tmp_path / "secret", tmp_path / "secret"]
    assert roots.paths == [tmp_path / "project", tmp_path / "secret"]
    assert changes == ["changed"]


class Asker:
    """A ``confirm`` that counts its questions and answers each when the test says."""

    def __init__(self) -> None:
        self.asked: list[Path] = []
        self.asking = anyio.Event()
        self.answer = anyio.Event()
        self.granted = True

    async def __call__(self, path: Path) -> bool:
        self.asked.append(path)
        self.asking.set()
        await self.answer.wait()
        return self.granted


@pytest.mark.parametrize("granted", [True, False])
async def test_two_adds_of_one_directory_ask_the_person_once(tmp_path: Path, granted: bool) -> None:
    asker = Asker()
    asker.granted = granted
    roots = Roots([], confirm=asker)
    changes: list[str] = []

    async def changed() -> None:
        changes.append("changed")

    roots.watch(changed)
    outcomes: list[str] = []

    async def add() -> None:
        try:
            outcomes.append(str(await roots.add(tmp_path)))
        except RootRefusedError as exc:
            outcomes.append(str(exc))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(add)
        await asker.asking.wait()
        tasks.start_soon(add)
        await anyio.wait_all_tasks_blocked()  # the second add is waiting, or asking too
        assert asker.asked == [tmp_path]
        asker.answer.set()
    expected = (
        str(tmp_path) if granted else f"{tmp_path} was not added as a root: the person refused it."
    )
    assert outcomes == [expected, expected]
    assert roots.paths == ([tmp_path] if granted else [])
    assert changes == (["changed"] if granted else [])


async def test_an_add_whose_question_was_abandoned_asks_again(tmp_path: Path) -> None:
    asker = Asker()
    roots = Roots([], confirm=asker)
    added: list[Path] = []

    async def add() -> None:
        added.append(await roots.add(tmp_path))

    async with anyio.create_task_group() as tasks:
        async with anyio.create_task_group() as first:
            first.start_soon(add)
            await asker.asking.wait()
            tasks.start_soon(add)
            await anyio.wait_all_tasks_blocked()
            first.cancel_scope.cancel()  # the person never answered the first add
        await anyio.wait_all_tasks_blocked()
        assert asker.asked == [tmp_path, tmp_path]
        asker.answer.set()
    assert added == [tmp_path]
    assert roots.paths == [tmp_path]


# -- every transport, both eras -----------------------------------------------------------


class Delivered:
    """How many ``list_changed`` notifications the HTTP server has taken in.

    A notification goes on the HTTP client's answer lane, beside the requests, so the
    next call may overtake it; the server answers its POST only once it is queued
    ahead of any later request, so waiting for that answer orders the two. Over stdio
    and in-process one stream carries both, already in order. The server may run in a
    thread of its own (on trio); the count is handed to the test's loop.
    """

    def __init__(self) -> None:
        self.count = 0
        self._changed = anyio.Event()
        self._thread = threading.get_ident()
        self._token = anyio.lowlevel.current_token()

    def seen(self) -> None:
        def apply() -> None:
            self.count += 1
            self._changed.set()
            self._changed = anyio.Event()

        if threading.get_ident() == self._thread:
            apply()
        else:
            anyio.from_thread.run_sync(apply, token=self._token)

    async def until(self, count: int) -> None:
        while self.count < count:  # bounded: each pass waits for one more
            await self._changed.wait()


class WatchedApp(StreamableHTTPApp):
    """The server's HTTP app, telling ``delivered`` of each ``list_changed`` it queued."""

    def __init__(self, server: MCPServer, delivered: Delivered) -> None:
        super().__init__(server)
        self.delivered = delivered

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body: list[bytes] = []

        async def reading() -> Any:
            message = await receive()
            body.append(message.get("body", b""))
            return message

        async def sending(message: Any) -> None:
            if message["type"] == "http.response.start" and LIST_CHANGED in b"".join(body):
                self.delivered.seen()
            await send(message)

        await super().__call__(scope, reading, sending)


@asynccontextmanager
async def reach(transport: str) -> AsyncGenerator[tuple[Any, Delivered | None], None]:
    """What to give ``Client`` to reach the roots server over ``transport``, and (over
    HTTP) how to wait until a change notification has reached it."""
    if transport == "http":
        delivered = Delivered()
        async with serve(WatchedApp(server_object(ROOTS_SERVER), delivered)) as running:
            yield running.url, delivered
    else:
        yield target(transport, ROOTS_SERVER), None


class CountingRoots:
    """A ``list_roots_callback`` over ``roots`` that counts the server's questions."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self.asked = 0

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        self.asked += 1
        return await self.roots.list_roots(context)


def text(result: CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, TextContent), content
    return content.text


def refusal(result: CallToolResult) -> str:
    assert result.is_error, result
    return text(result)


def tree(tmp_path: Path) -> tuple[Path, Path, Path]:
    """work/ (a root, with a note and a link to secret/), secret/, other/."""
    work, secret, other = tmp_path / "work", tmp_path / "secret", tmp_path / "other"
    for directory in (work / "notes", secret, other):
        directory.mkdir(parents=True)
    (work / "notes" / "today.md").write_text("tea at four", encoding="utf-8")
    (secret / "key.txt").write_text("hunter2", encoding="utf-8")
    (other / "b.txt").write_text("from other", encoding="utf-8")
    (work / "escape").symlink_to(secret, target_is_directory=True)
    return work, secret, other


@pytest.mark.parametrize("mode", ["legacy", MODERN])
@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
async def test_roots_reach_the_server_and_guard_its_paths(
    transport: str, mode: str, tmp_path: Path
) -> None:
    work, secret, other = tree(tmp_path)
    roots = Roots([work])
    counting = CountingRoots(roots)
    legacy = mode == "legacy"
    async with (
        reach(transport) as (server, delivered),
        Client(server, mode=mode, list_roots_callback=counting.list_roots) as client,
    ):

        async def changed(count: int) -> None:
            if delivered is not None and legacy:
                await delivered.until(count)

        listed = await client.call_tool("my_roots")
        assert listed.structured_content == {"result": [work.as_uri()]}
        await client.call_tool("my_roots")
        # Legacy: asked once for the connection. 2026-07-28: once per request.
        assert counting.asked == (1 if legacy else 2)

        assert text(await client.call_tool("read", {"path": "notes/today.md"})) == "tea at four"
        inside = await client.call_tool("where", {"path": "notes/../notes/today.md"})
        assert text(inside) == str(work / "notes" / "today.md")
        climbing = await client.call_tool("read", {"path": "../secret/key.txt"})
        assert "climbs out of its root through '..'" in refusal(climbing)
        linked = await client.call_tool("read", {"path": "escape/key.txt"})
        assert "symbolic link that leads outside every root" in refusal(linked)
        assert str(secret) not in refusal(linked)  # where the link leads stays private
        foreign = await client.call_tool("read", {"path": str(other / "b.txt")})
        assert f"is outside every root (the roots are: {work})" in refusal(foreign)

        await roots.add(other)
        await changed(1)
        listed = await client.call_tool("my_roots")
        assert listed.structured_content == {"result": [work.as_uri(), other.as_uri()]}
        uri = (other / "b.txt").as_uri()
        assert text(await client.call_tool("read", {"path": uri})) == "from other"

        await roots.remove(other)
        await changed(2)
        removed = await client.call_tool("read", {"path": str(other / "b.txt")})
        assert "is outside every root" in refusal(removed)
    # Legacy: the first listing, then one after each change; 2026-07-28: one for each
    # of the ten calls.
    assert counting.asked == (3 if legacy else 10)


async def test_a_listing_that_straddles_a_change_is_not_kept(tmp_path: Path) -> None:
    """The client announces a change while its answer is on the way: the server uses
    that answer once, and asks again next time instead of trusting it."""
    asked = 0

    async def changing(context: ClientRequestContext) -> ListRootsResult:
        nonlocal asked
        asked += 1
        if asked == 1:
            await context.session.send_notification("notifications/roots/list_changed")
        return ListRootsResult.model_validate({"roots": [{"uri": tmp_path.as_uri()}]})

    server = server_object(ROOTS_SERVER)
    async with Client(server, mode="legacy", list_roots_callback=changing) as client:
        for _ in range(3):
            await client.call_tool("my_roots")
    assert asked == 2


# -- how a host attaches its roots ------------------------------------------------------------


async def nothing_more(server: Any) -> None:
    """The client sent nothing since: a ping's answer is the next message."""
    await server.send({"jsonrpc": "2.0", "id": "check", "method": "ping"})
    assert await server.receive() == {"jsonrpc": "2.0", "id": "check", "result": {}}


async def test_an_attached_client_hears_every_change_until_detached_or_closed(
    tmp_path: Path,
) -> None:
    roots = Roots([tmp_path])
    (tmp_path / "a").mkdir()
    async with client_with_hand_driven_server(list_roots_callback=roots.list_roots) as (
        client,
        server,
        _,
    ):
        detach = roots.attach(client)
        roots.attach(client)  # twice is once
        await roots.add(tmp_path / "a")
        assert await server.receive() == {
            "jsonrpc": "2.0",
            "method": "notifications/roots/list_changed",
        }
        await nothing_more(server)
        detach()
        await roots.remove(tmp_path / "a")
        await nothing_more(server)
        roots.attach(client)
    await roots.add(tmp_path / "a")  # the client has closed: dropped, nothing raised
    assert roots.paths == [tmp_path, tmp_path / "a"]


async def test_a_server_that_asked_hears_changes_without_attach(tmp_path: Path) -> None:
    """Wired only as the callback: answering ``roots/list`` attaches the connection."""
    roots = Roots([tmp_path])
    (tmp_path / "a").mkdir()
    async with client_with_hand_driven_server(list_roots_callback=roots.list_roots) as (
        _,
        server,
        _,
    ):
        await server.send({"jsonrpc": "2.0", "id": 1, "method": "roots/list"})
        answer = await server.receive()
        assert answer["result"] == {"roots": [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]}
        await roots.add(tmp_path / "a")
        assert (await server.receive())["method"] == "notifications/roots/list_changed"


class RootsResponder(Responder):
    """A host's own responder that answers ``roots/list`` from its ``Roots``."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(roots=RootsCapability(list_changed=True))

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        return await self.roots.list_roots(context)


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_one_roots_for_several_clients_through_a_responder(mode: str, tmp_path: Path) -> None:
    work, _, other = tree(tmp_path)
    roots = Roots([work])
    server = server_object(ROOTS_SERVER)
    async with (
        Client(server, mode=mode, responder=RootsResponder(roots)) as first,
        Client(server, mode=mode, responder=RootsResponder(roots)) as second,
    ):
        roots.attach(first)
        roots.attach(second)
        for client in (first, second):
            assert (await client.call_tool("my_roots")).structured_content == {
                "result": [work.as_uri()]
            }
        await roots.add(other)
        for client in (first, second):
            assert (await client.call_tool("my_roots")).structured_content == {
                "result": [work.as_uri(), other.as_uri()]
            }


# -- the guard's rules, in-process ---------------------------------------------------------


def guard_server(**options: Any) -> MCPServer:
    server = MCPServer("guard", **options)

    @server.tool()
    async def where(ctx: Context, path: str) -> str:
        return str(await ctx.resolve_path(path))

    @server.tool()
    async def refused(ctx: Context, path: str) -> list[str]:
        """What the error carries, for a tool that catches it."""
        try:
            await ctx.resolve_path(path)
        except PathOutsideRootsError as exc:
            return [exc.path, *exc.roots]
        return []

    return server


@asynccontextmanager
async def guarded(*paths: Path) -> AsyncGenerator[Callable[[str], Awaitable[str]], None]:
    """``where(path)`` on an in-process server whose client grants ``paths``."""

    async def grant(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult.model_validate({"roots": [{"uri": path.as_uri()} for path in paths]})

    async with Client(guard_server(), mode="legacy", list_roots_callback=grant) as client:

        async def where(path: str) -> str:
            return text(await client.call_tool("where", {"path": path}))

        yield where


async def test_resolving_a_path_leaves_the_server_answering(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resolving touches the file system, which can hang for minutes (a network share,
    an automount): it runs in a worker thread, so the server answers meanwhile. On the
    event loop, the ping below could not be answered until the resolution ended."""
    work, _, _ = tree(tmp_path)
    entered, release = threading.Event(), threading.Event()

    def hanging(path: str, roots: Any) -> Path:
        entered.set()
        if not release.wait(PATIENCE_SECONDS):
            raise AssertionError("never released: the server could not answer meanwhile")
        return resolve_within(path, roots)

    monkeypatch.setattr(server_context, "resolve_within", hanging)

    async def grant(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult.model_validate({"roots": [{"uri": work.as_uri()}]})

    answers: list[str] = []
    async with Client(guard_server(), mode="legacy", list_roots_callback=grant) as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:

                async def resolve() -> None:
                    answers.append(text(await client.call_tool("where", {"path": "notes"})))

                tg.start_soon(resolve)
                assert await anyio.to_thread.run_sync(entered.wait, PATIENCE_SECONDS)
                await client.ping()
                release.set()
    assert answers == [str(work / "notes")]


async def test_a_relative_path_is_taken_against_the_first_root_directory(tmp_path: Path) -> None:
    work, _, other = tree(tmp_path)
    today = work / "notes" / "today.md"
    (work / "notes" / "tomorrow.md").write_text("", encoding="utf-8")
    async with guarded(today, other) as where:  # a root may be a single file
        assert await where("b.txt") == str(other / "b.txt")
        assert await where(str(today)) == str(today)
        assert "outside every root" in await where(str(work / "notes" / "tomorrow.md"))


async def test_a_link_inside_a_root_to_elsewhere_in_it_is_followed(tmp_path: Path) -> None:
    work, _, _ = tree(tmp_path)
    (work / "today").symlink_to(work / "notes" / "today.md")
    async with guarded(work) as where:
        assert await where("today") == str(work / "notes" / "today.md")
        assert await where(work.as_uri() + "/notes/../today") == str(work / "notes" / "today.md")


async def test_a_root_reached_through_a_link_guards_its_target(tmp_path: Path) -> None:
    work, _, _ = tree(tmp_path)
    (tmp_path / "shortcut").symlink_to(work, target_is_directory=True)
    async with guarded(tmp_path / "shortcut") as where:
        assert await where(str(tmp_path / "shortcut" / "notes")) == str(work / "notes")
        assert "symbolic link" in await where("escape")


async def test_a_file_root_grants_that_file_only(tmp_path: Path) -> None:
    work, _, _ = tree(tmp_path)
    today = work / "notes" / "today.md"
    async with guarded(today) as where:
        assert await where(str(today)) == str(today)
        assert "outside every root" in await where(str(today / "x"))


async def test_a_loop_of_links_is_refused_and_a_looping_root_guards_nothing(
    tmp_path: Path,
) -> None:
    """A loop raised RuntimeError (before Python 3.13): a failed tool, and a looping root
    broke every call, the healthy roots' too."""
    work, _, _ = tree(tmp_path)
    (work / "a").symlink_to(work / "b")
    (work / "b").symlink_to(work / "a")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    async with guarded(tmp_path / "loop", work) as where:
        answer = await where(str(work / "a" / "x"))
        assert sys.version_info >= (3, 13) or "a loop of symbolic links" in answer
        assert await where(str(work / "notes")) == str(work / "notes")


async def test_a_root_swapped_for_a_link_after_it_was_listed_is_not_followed(
    tmp_path: Path,
) -> None:
    work, secret, _ = tree(tmp_path)
    async with guarded(work) as where:
        assert await where(str(work / "notes")) == str(work / "notes")
        work.rename(tmp_path / "moved")
        work.symlink_to(secret, target_is_directory=True)
        assert "outside every root" in await where(str(work / "key"))


async def test_control_characters_in_a_root_are_escaped_in_the_refusal(tmp_path: Path) -> None:
    work, secret, _ = tree(tmp_path)
    hostile = tmp_path / "\x1b[2Jroot\x07"
    hostile.mkdir()
    async with guarded(hostile, work) as where:
        answer = await where(str(secret))
    assert "\x1b" not in answer
    assert "\x07" not in answer
    assert repr(str(hostile)) in answer
    assert str(work) in answer


async def test_a_path_outside_every_root_is_refused_without_touching_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resolving it would stat every directory on the way: an automount, a hung network
    share, or on Windows a UNC path naming a host to connect to."""
    work, secret, _ = tree(tmp_path)
    resolved: list[str] = []
    resolve = Path.resolve

    def watched(self: Path, strict: bool = False) -> Path:
        resolved.append(str(self))
        return resolve(self, strict)

    monkeypatch.setattr(Path, "resolve", watched)
    async with guarded(work) as where:
        assert "is outside every root" in await where(str(secret / "key.txt"))
        assert "climbs out of its root through '..'" in await where("../secret/key.txt")
    assert not [path for path in resolved if "secret" in path]


async def test_roots_that_name_no_local_path_say_so(tmp_path: Path) -> None:
    async def grant(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult.model_validate({"roots": [{"uri": "file://fileserver/share"}]})

    async with Client(guard_server(), mode="legacy", list_roots_callback=grant) as client:
        answer = text(await client.call_tool("where", {"path": str(tmp_path)}))
    assert "none of the client's 1 roots names a path on this machine" in answer


async def test_no_roots_no_paths(tmp_path: Path) -> None:
    async with guarded() as where:
        assert "the client granted no roots" in await where(str(tmp_path))


async def test_the_error_names_the_path_and_the_roots(tmp_path: Path) -> None:
    work, secret, _ = tree(tmp_path)
    async with Client(
        guard_server(), list_roots_callback=CountingRoots(Roots([work])).list_roots
    ) as client:
        result = await client.call_tool("refused", {"path": str(secret)})
    assert result.structured_content == {"result": [str(secret), str(work)]}


async def test_a_refusal_reaches_even_a_client_that_gets_no_error_text(tmp_path: Path) -> None:
    """The refusal is about the client's own path and roots: never redacted."""
    work, secret, _ = tree(tmp_path)
    grant = CountingRoots(Roots([work])).list_roots
    server = guard_server(error_details="redacted")
    async with Client(server, list_roots_callback=grant) as client:
        result = await client.call_tool("where", {"path": str(secret)})
    assert f"Refusing {str(secret)!r}: it is outside every root" in refusal(result)


async def test_a_client_without_roots_is_told_what_to_declare(tmp_path: Path) -> None:
    async with Client(guard_server(), mode="legacy") as client:
        with pytest.raises(MCPError, match="List roots not supported"):
            await client.call_tool("where", {"path": str(tmp_path)})


@pytest.mark.skipif(os.name == "nt", reason="POSIX file URIs")
async def test_a_uri_of_another_host_is_refused(tmp_path: Path) -> None:
    async with guarded(tmp_path) as where:
        assert "names a file on the host" in await where("file://elsewhere/x")
