"""Leftovers of the option checks: a relative audit path stays where it was given, the
methods of ``Roots`` say what they take, a Redis URL is checked past its scheme, and an
error answer with a null id (the peer could not read what we sent) fails the calls it
may concern instead of leaving them waiting for ever.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from http_support import (
    PATIENCE_SECONDS,
    raw_initialize,
    read_events,
    read_request_body,
    replaying,
    rpc,
    serve,
    session_headers,
)
from http_support.apps import http_app
from support import client_with_hand_driven_server, stable_id

from answerback import Client, MCPError, StdioServer
from answerback.interact import Roots
from answerback.interact.sampling import AuditLog
from answerback.transports.http import RedisState
from answerback.types import PARSE_ERROR, TextContent

# -- 1. AuditLog: a relative path is fixed when the log is made -------------------------


@pytest.fixture
def in_directory(tmp_path: Path) -> Iterator[Path]:
    """Runs the test in ``tmp_path/first`` and goes back afterwards."""
    first = tmp_path / "first"
    first.mkdir()
    before = os.getcwd()
    os.chdir(first)
    try:
        yield first
    finally:
        os.chdir(before)


def test_a_relative_audit_path_does_not_follow_a_later_chdir(
    in_directory: Path, tmp_path: Path
) -> None:
    log = AuditLog("audit.jsonl")
    assert log.target == str(in_directory / "audit.jsonl")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)
    log.write("request", server="github", request=1)
    log.write("outcome", server="github", request=1, outcome="answered")
    assert not (elsewhere / "audit.jsonl").exists()
    lines = (in_directory / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["event"] for line in lines] == ["request", "outcome"]


def test_an_absolute_audit_path_is_kept_as_given(tmp_path: Path) -> None:
    assert AuditLog(tmp_path / "audit.jsonl").target == str(tmp_path / "audit.jsonl")


# -- 2. Roots: each method says what it takes ------------------------------------------

NOT_PATHS = [1, None, b"/tmp", ["/tmp"], 2.5]


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    """A directory (resolved) with two subdirectories, ``a`` and ``b``."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    return tmp_path.resolve()


@pytest.mark.anyio
@pytest.mark.parametrize("method", ["add", "remove"])
@pytest.mark.parametrize("wrong", NOT_PATHS, ids=stable_id)
async def test_add_and_remove_refuse_what_is_not_a_path_saying_what_to_pass(
    method: str, wrong: object, directory: Path
) -> None:
    roots = Roots([directory])
    with pytest.raises(TypeError) as raised:
        await getattr(roots, method)(wrong)
    message = str(raised.value)
    assert message.startswith(f"Roots.{method} takes one directory: a str or Path")
    assert "file://" in message
    assert repr(wrong) in message
    assert roots.paths == [directory]


class BytesPath:
    """A path object whose path is bytes, which a root cannot be."""

    def __fspath__(self) -> bytes:
        return b"/tmp"


@pytest.mark.anyio
async def test_a_path_object_of_bytes_is_refused_by_every_entry_point(directory: Path) -> None:
    with pytest.raises(TypeError, match="paths must be a list of directories"):
        Roots([BytesPath()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"Roots\.add takes one directory"):
        await Roots([directory]).add(BytesPath())  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_add_and_remove_still_take_paths_and_file_uris(directory: Path) -> None:
    a, b = directory / "a", directory / "b"
    roots = Roots([directory])
    assert await roots.add(a) == a
    assert await roots.add(b.as_uri()) == b
    assert roots.paths == [directory, a, b]
    assert await roots.remove(str(a)) == a
    assert await roots.remove(b.as_uri()) == b
    assert roots.paths == [directory]


@pytest.mark.parametrize("wrong", ["client", None, object()], ids=stable_id)
def test_attach_refuses_what_is_not_a_client(wrong: object, tmp_path: Path) -> None:
    with pytest.raises(TypeError) as raised:
        Roots([tmp_path]).attach(wrong)  # type: ignore[arg-type]
    assert str(raised.value).startswith("Roots.attach takes the Client")
    assert "async with Client(" in str(raised.value)


@pytest.mark.parametrize("wrong", ["refresh", None, 3], ids=stable_id)
def test_watch_refuses_what_cannot_be_called(wrong: object, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"Roots\.watch takes an async function"):
        Roots([tmp_path]).watch(wrong)  # type: ignore[arg-type]


# -- 3. Redis URLs: checked past the scheme --------------------------------------------


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("redis://:::", "has a port that is not a number from 1 to 65535"),
        ("redis://host:notaport/", "has a port that is not a number from 1 to 65535"),
        ("redis://host:99999/0", "has a port that is not a number from 1 to 65535"),
        ("redis://host:0/0", "has a port that is not a number from 1 to 65535"),
        ("redis://host/notadb", "names the database 'notadb'"),
        ("redis://host/2/x", "names the database '2/x'"),
        ("rediss://host:6380/cache", "names the database 'cache'"),
        ("redis://host/0?db=zero", "has a db= option that is not a database number"),
        ("redis://ho st:6379/0", "has a host, 'ho st', that no host name or address can be"),
        ("unix://", "must give the socket's absolute path after unix://"),
        ("unix://run/redis.sock", "must give the socket's absolute path after unix://"),
    ],
)
def test_a_redis_url_that_means_nothing_after_its_scheme_is_refused_when_made(
    url: str, problem: str
) -> None:
    with pytest.raises(ValueError, match=r"^url ") as raised:
        RedisState(url)
    message = str(raised.value)
    assert message.startswith("url "), message
    assert problem in message, message
    assert "write it as" in message


def test_a_refused_redis_url_does_not_repeat_its_password() -> None:
    with pytest.raises(ValueError, match=r"^url ") as raised:
        RedisState("redis://user:hunter2@host:notaport/0")
    assert "hunter2" not in str(raised.value)
    assert "redis://user:***@host:notaport/0" in str(raised.value)


@pytest.mark.parametrize(
    "url",
    [
        "redis://localhost",
        "redis://",
        "redis://localhost:6379",
        "redis://user:pw@host:6380/2",
        "redis://:pw@host/15",
        "redis://[::1]:6379/0",
        "REDIS://Host.Example:6379/1",
        "rediss://user:pw@host:6380/0?ssl_cert_reqs=none",
        "redis://host/0?db=3",
        "unix:///run/redis.sock",
        "unix://:pw@/run/redis.sock?db=2",
    ],
)
def test_valid_redis_urls_are_still_taken(url: str) -> None:
    assert RedisState(url).url == url  # nothing connects until used


# -- 4. an error answer with a null id -------------------------------------------------

UNREADABLE = {"code": PARSE_ERROR, "message": "Parse error: unexpected end of input"}


async def failure_of(call: Any) -> MCPError:
    with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
        await call
    return caught.value


@pytest.mark.anyio
async def test_a_null_id_error_fails_the_only_request_waiting() -> None:
    failures: list[MCPError] = []
    async with client_with_hand_driven_server() as (client, peer, _):
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                failures.append(await failure_of(client.call_tool("anything")))

            tg.start_soon(call)
            await peer.receive_until(lambda m: m.get("method") == "tools/call")
            await peer.send({"jsonrpc": "2.0", "id": None, "error": UNREADABLE})
        [error] = failures
        assert error.code == PARSE_ERROR
        assert error.message.startswith("Parse error: unexpected end of input (the server")
        assert "'tools/call' was the only request waiting" in error.message


@pytest.mark.anyio
async def test_a_null_id_error_that_is_no_read_failure_fails_no_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Only a parse error or an invalid request says the peer could not read a message
    of ours. A peer answering a notification it does not know with a null-id -32601
    must not fail the call it is still working on."""
    async with (
        client_with_hand_driven_server() as (client, peer, _),
        anyio.create_task_group() as tg,
    ):

        async def answer() -> None:
            request = await peer.receive_until(lambda m: m.get("method") == "tools/call")
            unknown = {"code": -32601, "message": "Method not found"}
            await peer.send({"jsonrpc": "2.0", "id": None, "error": unknown})
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}})

        tg.start_soon(answer)
        with anyio.fail_after(PATIENCE_SECONDS):
            assert (await client.call_tool("anything")).content == []
    assert any(
        "sent an error with no id that answers nothing of ours: Method not found"
        in record.getMessage()
        for record in caplog.records
    )


@pytest.mark.anyio
async def test_a_null_id_error_fails_every_request_waiting_when_it_cannot_say_which() -> None:
    failures: list[MCPError] = []
    ids: list[Any] = []
    async with client_with_hand_driven_server() as (client, peer, _):
        async with anyio.create_task_group() as tg:

            async def call(tag: str) -> None:
                failures.append(await failure_of(client.call_tool("anything", {"tag": tag})))

            tg.start_soon(call, "a")
            tg.start_soon(call, "b")
            for _ in range(2):
                request = await peer.receive_until(lambda m: m.get("method") == "tools/call")
                ids.append(request["id"])
            await peer.send({"jsonrpc": "2.0", "id": None, "error": UNREADABLE})
        assert len(failures) == 2
        for error in failures:
            assert error.code == PARSE_ERROR
            assert "could not read one of the 2 requests waiting" in error.message
            assert "send again those still needed" in error.message
        # A late answer to one the server did read is dropped; the client carries on.
        await peer.send({"jsonrpc": "2.0", "id": ids[0], "result": {"content": []}})
        async with anyio.create_task_group() as tg:

            async def answer() -> None:
                request = await peer.receive_until(lambda m: m.get("method") == "tools/call")
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"content": []}})

            tg.start_soon(answer)
            with anyio.fail_after(PATIENCE_SECONDS):
                assert (await client.call_tool("anything")).content == []


UNREADING_PROGRAM = textwrap.dedent(
    """
    import json, sys
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "Unreading", "version": "1"},
            }
            print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}))
        elif message.get("method") == "tools/call":
            error = {"code": -32700, "message": "Parse error: unexpected end of input"}
            print(json.dumps({"jsonrpc": "2.0", "id": None, "error": error}))
        sys.stdout.flush()
    """
)


@pytest.mark.anyio
async def test_a_null_id_error_over_stdio_fails_the_call_instead_of_hanging(
    tmp_path: Path,
) -> None:
    script = tmp_path / "unreading.py"
    script.write_text(UNREADING_PROGRAM, encoding="utf-8")
    async with Client(StdioServer(sys.executable, [str(script)]), mode="legacy") as client:
        error = await failure_of(client.call_tool("anything"))
    assert error.code == PARSE_ERROR
    assert error.message.startswith("Parse error: unexpected end of input")


class AnswersCallsUnread:
    """Wraps an HTTP app: a POST carrying ``tools/call`` is answered here, by hand, with
    an error whose id is null (the server could not read it), in ``form``: a JSON body
    (200 or 400) or an event stream."""

    def __init__(self, app: Any, form: str) -> None:
        self.app, self.form = app, form

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_request_body(receive)
        if json.loads(body).get("method") != "tools/call":
            await self.app(scope, replaying(body, receive), send)
            return
        answer = json.dumps({"jsonrpc": "2.0", "id": None, "error": UNREADABLE}).encode()
        status, kind = 200, b"application/json"
        if self.form == "sse":
            answer, kind = b"event: message\ndata: " + answer + b"\n\n", b"text/event-stream"
        elif self.form == "json-400":
            status = 400
        headers = [(b"content-type", kind), (b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": answer})


@pytest.mark.anyio
@pytest.mark.parametrize("form", ["sse", "json-200", "json-400"])
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_over_http_a_null_id_error_answers_the_request_its_post_carried(
    form: str, mode: str
) -> None:
    app = http_app()
    async with (
        serve(AnswersCallsUnread(app, form)) as running,
        Client(running.url, mode=mode) as client,
    ):
        failures: list[MCPError] = []
        async with anyio.create_task_group() as tg:  # two at once: each fails alone

            async def call(tag: str) -> None:
                failures.append(await failure_of(client.call_tool("echo_elicit", {"tag": tag})))

            tg.start_soon(call, "a")
            tg.start_soon(call, "b")
        with anyio.fail_after(PATIENCE_SECONDS):
            listed = await client.list_tools()
        await running.call(app.close_sessions)
    assert [(e.code, e.message) for e in failures] == [(PARSE_ERROR, UNREADABLE["message"])] * 2
    assert "echo_elicit" in [tool.name for tool in listed.tools]


class UnattributedOnTheSideStream:
    """Wraps an HTTP app: once a ``tools/call`` has come in, the GET stream (messages of
    no request) carries an error with a null id, then ends."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.called: anyio.Event | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.called is None:
            self.called = anyio.Event()
        if scope["type"] != "http" or scope["method"] not in ("GET", "POST"):
            await self.app(scope, receive, send)
            return
        if scope["method"] == "POST":
            body = await read_request_body(receive)
            if json.loads(body).get("method") == "tools/call":
                self.called.set()
            await self.app(scope, replaying(body, receive), send)
            return
        with anyio.fail_after(PATIENCE_SECONDS):
            await self.called.wait()
        answer = json.dumps({"jsonrpc": "2.0", "id": None, "error": UNREADABLE}).encode()
        body = b"event: message\ndata: " + answer + b"\n\n"
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


@pytest.mark.anyio
async def test_over_http_a_null_id_error_on_the_get_stream_fails_no_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each request has its own POST, so an error of no id on the GET stream answers
    none of them: it is logged, and the call waiting meanwhile still gets its answer."""
    app = http_app()
    async with (
        serve(UnattributedOnTheSideStream(app)) as running,
        Client(running.url, mode="legacy") as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("pause", {"seconds": 1.0})
        await running.call(app.close_sessions)
    assert result.content == [TextContent(text="done")]
    warnings = [record.getMessage() for record in caplog.records]
    assert any("error with no id on its own stream" in text for text in warnings), warnings


@pytest.mark.anyio
async def test_a_server_whose_question_the_client_could_not_read_does_not_wait_for_ever() -> None:
    """The same rule on the server's side: a client POSTs an error with a null id (it
    could not read the server's question); the question waiting fails with it, and so
    does the tool call that asked, instead of both waiting for an answer."""
    app = http_app()
    async with serve(app) as running, httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        session_id, _ = await raw_initialize(http, running.url, elicitation={})
        headers = session_headers(session_id)
        call = rpc("tools/call", {"name": "echo_elicit", "arguments": {"tag": "t"}}, id=7)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("POST", running.url, json=call, headers=headers) as response:
                answer: dict[str, Any] | None = None
                async for event in read_events(response):
                    message = event.message or {}
                    if message.get("method") == "elicitation/create":
                        unread = {"jsonrpc": "2.0", "id": None, "error": UNREADABLE}
                        posted = await http.post(running.url, json=unread, headers=headers)
                        assert posted.status_code == 202, posted.text
                    elif message.get("id") == 7:
                        answer = message
                        break
        await running.call(app.close_sessions)
    assert answer is not None
    assert "Parse error: unexpected end of input" in json.dumps(answer)
