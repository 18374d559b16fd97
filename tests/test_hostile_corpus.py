"""The hostile-input corpus (``tests/corpus``) thrown at a real server over every transport.

Each channel is one connection of one era: a stdio subprocess that did the handshake,
one that speaks 2026-07-28 without it, a legacy HTTP session, and sessionless 2026-07-28
POSTs to a real uvicorn server. Every case goes out as exact bytes, followed by a valid
call. A case passes when the answer is what the corpus says (a well-formed JSON-RPC error
with the right code and id, a normal result, or no answer where none is due) and the
valid call after it succeeds, so the server is still alive and still serving.

One test per channel runs the whole corpus over a single connection and reports every
case that failed, not just the first.
"""

from __future__ import annotations

import base64
import json
import re
import sys
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager, aclosing, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import anyio
import httpx2
import pytest
from anyio.abc import Process
from corpus import (
    CASES,
    ERAS,
    HEADER_MISMATCH,
    INITIALIZE_PARAMS,
    INVALID_REQUEST,
    LEGACY,
    METHOD_NOT_FOUND,
    MODERN,
    MODERN_VERSION,
    NOTHING,
    PARSE_ERROR,
    PROTOCOL_VERSION_KEY,
    RESULT,
    TOOL_ERROR,
    UNSUPPORTED_VERSION,
    Case,
    Era,
    Outcome,
    dumps,
    probe,
)
from http_support import POST_HEADERS, serve, session_headers
from support import REPO

from answerback.server import MCPServer
from answerback.transports._headers import SESSION_HEADER

pytestmark = pytest.mark.anyio

CORPUS_SERVER = REPO / "tests" / "corpus" / "server.py"
CASE_SECONDS = 5.0
"""How long one case may take before it counts as unanswered (a safety net: each case
normally takes about a millisecond)."""
PROBE_IDS = 900_000


@dataclass(slots=True)
class Observed:
    """What came back for one case: the JSON-RPC answers, and the HTTP status if any."""

    answers: list[Any] = field(default_factory=list[Any])
    status: int | None = None
    problem: str | None = None
    """Something wrong before any answer could be judged (a timeout, a non-JSON body)."""


class Channel(Protocol):
    """One connection of one era to the corpus server."""

    era: Era

    def widen(self, case: Case) -> frozenset[Outcome]:
        """The outcomes acceptable on this transport (some transports add one)."""
        ...

    async def exchange(self, case: Case, probe_id: int) -> tuple[Observed, str | None]:
        """Send the case, then the probe; what the case got, and what was wrong with
        the probe's answer (``None`` if it succeeded)."""
        ...


def as_dict(value: object) -> dict[str, Any] | None:
    """``value`` if it is a JSON object."""
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def same_id(got: object, wanted: object) -> bool:
    """JSON equality for ids: ``true`` is not ``1``, ``1.0`` is not ``1``."""
    return type(got) is type(wanted) and got == wanted


def judge(case: Case, expected: frozenset[Outcome], seen: Observed) -> str | None:
    """What is wrong with the answer to ``case``, or ``None``."""
    if seen.problem is not None:
        return seen.problem
    if not seen.answers:
        if NOTHING not in expected:
            return f"no answer (expected {sorted(map(str, expected))})"
        if seen.status is not None and seen.status != 202:
            return f"no JSON-RPC answer, HTTP {seen.status} instead of 202"
        return None
    if len(seen.answers) > 1:
        return f"answered {len(seen.answers)} times: {seen.answers}"
    answer = as_dict(seen.answers[0])
    if answer is None:
        return f"an answer that is not an object: {seen.answers[0]!r}"
    problem = _malformed(answer)
    if problem is not None:
        return f"{problem}: {answer}"
    error = answer.get("error")
    if error is not None:
        outcome: Outcome = error["code"]
    else:
        outcome = TOOL_ERROR if answer["result"].get("isError") is True else RESULT
    if outcome not in expected:
        wanted = sorted(map(str, expected))
        return f"answered {outcome!r} (expected {wanted}): {_short(answer)}"
    if not same_id(answer["id"], case.answer_id):
        return f"answered with id {answer['id']!r}, not {case.answer_id!r}"
    return None


def _malformed(answer: dict[str, Any]) -> str | None:
    if answer.get("jsonrpc") != "2.0":
        return 'not "jsonrpc": "2.0"'
    if "id" not in answer:
        return "no id"
    if ("result" in answer) == ("error" in answer):
        return "not exactly one of result and error"
    if "result" in answer:
        return None if as_dict(answer["result"]) is not None else "a result that is not an object"
    error = as_dict(answer["error"])
    if error is None:
        return "an error that is not an object"
    code, message = error.get("code"), error.get("message")
    if not isinstance(code, int) or isinstance(code, bool):
        return "an error code that is not an integer"
    if not isinstance(message, str) or not message:
        return "an error without a message"
    return None


def _short(answer: object) -> str:
    text = json.dumps(answer, ensure_ascii=False)
    return text if len(text) <= 300 else text[:300] + "..."


def probe_problem(era: Era, probe_id: int, answer: object) -> str | None:
    """What is wrong with the answer to the probe, or ``None`` if it succeeded."""
    wanted = f"probe {probe_id}"
    message = as_dict(answer) or {}
    result = as_dict(message.get("result")) or {}
    if result.get("content") == [{"type": "text", "text": wanted}] and message["id"] == probe_id:
        return None
    return f"the valid call after it failed ({era}): {_short(answer)}"


async def run_corpus(channel: Channel) -> list[str]:
    """Every case of the channel's era, one after the other; what went wrong."""
    cases = [case for case in CASES if case.era == channel.era]
    failures: list[str] = []
    for index, case in enumerate(cases):
        seen, probe_failed = await channel.exchange(case, PROBE_IDS + index)
        problem = judge(case, channel.widen(case), seen)
        for what in (problem, probe_failed):
            if what is not None:
                failures.append(f"{case.name}\n    sent {case.body[:160]!r}\n    {what}")
    return failures


# -- stdio ---------------------------------------------------------------------------------


class StdioChannel:
    """The corpus server as a subprocess; its stdout read line by line."""

    def __init__(self, process: Process, era: Era) -> None:
        self.process = process
        self.era: Era = era
        self._buffer = bytearray()

    def widen(self, case: Case) -> frozenset[Outcome]:
        return case.expected

    async def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(data)

    async def receive(self) -> Any:
        assert self.process.stdout is not None
        while b"\n" not in self._buffer:
            chunk = await self.process.stdout.receive()
            self._buffer += chunk
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer[:] = rest
        return json.loads(line)

    async def exchange(self, case: Case, probe_id: int) -> tuple[Observed, str | None]:
        """The case and the probe go out in one write. Answers to what needs no handler
        (parse errors, invalid envelopes) come before the probe's; an answer from a
        handler may come after it, so a case that needs an answer waits for one."""
        seen = Observed()
        probe_answer: object = None
        await self.send(case.body + b"\n" + dumps(probe(self.era, probe_id)) + b"\n")
        wants_answer = NOTHING not in case.expected
        with anyio.move_on_after(CASE_SECONDS):
            while probe_answer is None or (wants_answer and not seen.answers):
                message = await self.receive()
                if (as_dict(message) or {}).get("id") == probe_id:
                    probe_answer = message
                else:
                    seen.answers.append(message)
        if probe_answer is None:
            return seen, f"no answer to the valid call after it within {CASE_SECONDS} s"
        return seen, probe_problem(self.era, probe_id, probe_answer)


@asynccontextmanager
async def stdio_channel(era: Era) -> AsyncGenerator[StdioChannel, None]:
    async with await anyio.open_process([sys.executable, str(CORPUS_SERVER)]) as process:
        channel = StdioChannel(process, era)
        if era == LEGACY:
            initialize = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "corpus", "version": "0"},
                },
            }
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await channel.send(dumps(initialize) + b"\n" + dumps(initialized) + b"\n")
            with anyio.fail_after(CASE_SECONDS):
                assert "result" in await channel.receive()
        yield channel
        assert process.returncode is None, "the server process died"
        assert process.stdin is not None
        await process.stdin.aclose()
        with anyio.fail_after(CASE_SECONDS):
            assert await process.wait() == 0


# -- HTTP ----------------------------------------------------------------------------------

_SAFE_HEADER = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$")
_NAMED = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def _decoded(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return None


def _header_safe(value: str) -> bool:
    return _SAFE_HEADER.match(value) is not None


def modern_headers(body: bytes) -> tuple[dict[str, str], bool]:
    """The headers a 2026-07-28 client sends with ``body``, mirrored from it as the
    specification says, and whether every header it requires could be mirrored."""
    headers = {**POST_HEADERS, "mcp-protocol-version": MODERN_VERSION}
    message = as_dict(_decoded(body))
    if message is None:
        return headers, True
    mirrored = True
    params = as_dict(message.get("params"))
    meta = as_dict(params.get("_meta")) if params is not None else None
    version = meta.get(PROTOCOL_VERSION_KEY) if meta is not None else None
    if isinstance(version, str) and _header_safe(version):
        headers["mcp-protocol-version"] = version
    elif meta is not None and PROTOCOL_VERSION_KEY in meta:
        mirrored = False
    if "method" in message:
        method: object = message["method"]
        if isinstance(method, str) and _header_safe(method):
            headers["mcp-method"] = method
        else:
            mirrored = False
        name_key = _NAMED.get(method) if isinstance(method, str) else None
        if name_key is not None:
            name = params.get(name_key) if params is not None else None
            if isinstance(name, str):
                headers["mcp-name"] = _encoded_name(name)
            else:
                mirrored = False
    return headers, mirrored


def _encoded_name(value: str) -> str:
    sentinel = value.startswith("=?base64?") and value.endswith("?=")
    if _SAFE_HEADER.match(value) and not sentinel:
        return value
    return "=?base64?" + base64.b64encode(value.encode()).decode() + "?="


async def read_answer(response: httpx2.Response, seen: Observed) -> None:
    """The JSON-RPC answers in a POST's response, into ``seen``: none (202), a JSON body,
    or the responses on an SSE stream (notifications and requests are skipped), which is
    read to its end, as the server ends it after the answer."""
    seen.status = response.status_code
    content_type = response.headers.get("content-type", "")
    if response.status_code == 202:
        if body := await response.aread():
            seen.problem = f"202 with a body: {body[:200]!r}"
    elif content_type.startswith("application/json"):
        body = await response.aread()
        try:
            seen.answers.append(json.loads(body))
        except ValueError:
            seen.problem = f"HTTP {response.status_code}, JSON that does not parse: {body[:200]!r}"
    elif content_type.startswith("text/event-stream"):
        async with aclosing(sse_messages(response)) as messages:
            async for message in messages:
                if "method" not in (as_dict(message) or {}):
                    seen.answers.append(message)
    else:
        body = await response.aread()
        seen.problem = f"HTTP {response.status_code} {content_type!r}, not JSON-RPC: {body[:200]!r}"


async def sse_messages(response: httpx2.Response) -> AsyncGenerator[Any, None]:
    """The JSON messages of an SSE stream. Lines end only at CR, LF or CRLF (not at the
    other line breaks Python knows, such as U+2028, which JSON leaves unescaped)."""
    buffer = b""
    data: list[bytes] = []
    async with aclosing(response.aiter_bytes()) as chunks:
        async for chunk in chunks:
            buffer += chunk
            *lines, buffer = re.split(rb"\r\n|\r|\n", buffer)
            for line in lines:
                if line.startswith(b"data:"):
                    data.append(line[5:].removeprefix(b" "))
                elif not line and data:
                    text = b"\n".join(data)
                    data.clear()
                    if text:  # an empty one is a priming event: an id to resume from
                        yield json.loads(text)


class HTTPChannel:
    """POSTs to one MCP endpoint: in one legacy session, or sessionless 2026-07-28."""

    def __init__(self, http: httpx2.AsyncClient, url: str, era: Era) -> None:
        self.http = http
        self.url = url
        self.era: Era = era
        self.session_id: str | None = None

    async def open_session(self) -> None:
        initialize = dumps(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INITIALIZE_PARAMS}
        )
        seen = Observed()
        opening = self.http.stream("POST", self.url, content=initialize, headers=POST_HEADERS)
        async with opening as r:
            self.session_id = r.headers[SESSION_HEADER]
            await read_answer(r, seen)
        assert "result" in seen.answers[0], seen
        initialized = dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})
        done = await self.http.post(self.url, content=initialized, headers=self.headers(b"")[0])
        assert done.status_code == 202, done.text

    def headers(self, body: bytes) -> tuple[dict[str, str], bool]:
        if self.era == MODERN:
            return modern_headers(body)
        assert self.session_id is not None
        return session_headers(self.session_id), True

    def widen(self, case: Case) -> frozenset[Outcome]:
        if self.era == LEGACY:
            return case.expected
        _, mirrored = modern_headers(case.body)
        extra: set[Outcome] = set() if mirrored else {HEADER_MISMATCH}
        message = as_dict(_decoded(case.body)) or {}
        if "method" not in message and "id" in message:
            extra.add(INVALID_REQUEST)  # a client must not POST answers in 2026-07-28
        return case.expected | extra

    async def post(self, body: bytes) -> Observed:
        headers, _ = self.headers(body)
        seen = Observed()
        with anyio.move_on_after(CASE_SECONDS) as waited:
            async with self.http.stream("POST", self.url, content=body, headers=headers) as r:
                await read_answer(r, seen)
        if waited.cancelled_caught:
            late = "its stream stayed open after the answer" if seen.answers else "no answer"
            seen.problem = f"{late} within {CASE_SECONDS} s"
        elif self.era == MODERN and seen.answers and seen.problem is None:
            seen.problem = _modern_status_problem(seen)
        return seen

    async def exchange(self, case: Case, probe_id: int) -> tuple[Observed, str | None]:
        seen = await self.post(case.body)
        checked = await self.post(dumps(probe(self.era, probe_id)))
        answer = checked.answers[0] if checked.answers else checked.problem
        probe_failed = probe_problem(self.era, probe_id, answer)
        if probe_failed is not None and self.era == LEGACY:
            await self.open_session()  # carry on with the rest of the corpus
        return seen, probe_failed


def _modern_status_problem(seen: Observed) -> str | None:
    """The HTTP statuses 2026-07-28 prescribes for some errors."""
    answer = as_dict(seen.answers[0]) or {}
    code = (as_dict(answer.get("error")) or {}).get("code")
    wanted = (
        {
            METHOD_NOT_FOUND: 404,
            HEADER_MISMATCH: 400,
            UNSUPPORTED_VERSION: 400,
            PARSE_ERROR: 400,
        }.get(code)
        if isinstance(code, int)
        else None
    )
    if wanted is not None and seen.status != wanted:
        return f"error {code} with HTTP {seen.status}, not {wanted}: {_short(seen.answers[0])}"
    return None


def corpus_server() -> MCPServer:
    from support import server_object

    return server_object(CORPUS_SERVER)


@asynccontextmanager
async def http_channel(era: Era) -> AsyncGenerator[HTTPChannel, None]:
    async with (
        serve(corpus_server().http_app()) as server,
        httpx2.AsyncClient(timeout=CASE_SECONDS) as http,
    ):
        channel = HTTPChannel(http, server.url, era)
        if era == LEGACY:
            await channel.open_session()
        yield channel


# -- the tests -----------------------------------------------------------------------------

CHANNELS: dict[str, Callable[[], AbstractAsyncContextManager[Channel]]] = {
    "stdio-legacy": lambda: stdio_channel(LEGACY),
    "stdio-2026": lambda: stdio_channel(MODERN),
    "http-legacy": lambda: http_channel(LEGACY),
    "http-2026": lambda: http_channel(MODERN),
}


@pytest.mark.parametrize("channel_name", list(CHANNELS))
async def test_every_hostile_message_is_answered_and_the_server_carries_on(
    channel_name: str,
) -> None:
    async with CHANNELS[channel_name]() as channel:
        failures = await run_corpus(channel)
    era_cases = sum(case.era == channel.era for case in CASES)
    summary = f"{len(failures)} problems in {era_cases} cases:\n"
    assert not failures, summary + "\n".join(failures)


def test_the_corpus_is_large_and_well_formed() -> None:
    """Hundreds of cases per era, each one line (stdio frames by newline), each expecting
    something known, and no two alike."""
    for era in ERAS:
        assert sum(case.era == era for case in CASES) >= 300
    known = {NOTHING, RESULT, TOOL_ERROR}
    for case in CASES:
        assert b"\n" not in case.body
        assert b"\r" not in case.body
        assert case.expected
        assert all(isinstance(o, int) or o in known for o in case.expected), case
    assert len({(case.era, case.body) for case in CASES}) == len(CASES)
