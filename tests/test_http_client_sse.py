"""The SSE reader follows the WHATWG event stream rules, on bytes split anywhere, and
what the server writes with ``encode_event`` always reads back as it was written.

The end-to-end check sends U+2028, U+2029 and U+0085 (which ``str.splitlines`` treats as
line ends, and SSE does not) through a real elicitation over HTTP.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pydantic_core
import pytest
from http_support import PATIENCE_SECONDS, serve
from http_support.apps import http_app

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.transports.http._sse import (
    Event,
    EventParser,
    MessageTooLarge,
    encode_event,
    encode_event_pieces,
)
from answerback.types import (
    ElicitRequestParams,
    ElicitResult,
    LoggingMessageNotificationParams,
    TextContent,
)

TRICKY = "a\u2028b\u2029c\u0085d\x1ce\x1df\x1eg\x0bh\x0ci"
"""Every character ``str.splitlines`` breaks on that SSE does not."""


def parse(stream: bytes, *, split: int | None = None) -> tuple[list[Event], EventParser]:
    """Parse ``stream`` in one chunk, or cut into chunks of ``split`` bytes."""
    parser = EventParser()
    size = split or max(len(stream), 1)
    events: list[Event] = []
    for start in range(0, len(stream), size):
        events.extend(parser.feed(stream[start : start + size]))
    return events, parser


def test_only_cr_lf_and_crlf_end_a_line() -> None:
    data = json.dumps({"text": TRICKY}, ensure_ascii=False)
    stream = f"data: {data}\r\n\r\nid: 2\rdata: x\r\rdata: y\n\n".encode()
    events, _ = parse(stream)
    assert [e.data for e in events] == [data, "x", "y"]
    assert json.loads(events[0].data)["text"] == TRICKY


def test_every_split_point_gives_the_same_events() -> None:
    """A CRLF, a UTF-8 sequence or the BOM cut between two chunks changes nothing."""
    stream = (
        "\ufeffid: é1\r\nretry: 250\r\ndata: \u2028one\r\ndata: two\r\n\r\n"
        ": comment\rdata:three\r\r"
    ).encode()
    whole, _ = parse(stream)
    assert [(e.data, e.event_id, e.retry_ms) for e in whole] == [
        ("\u2028one\ntwo", "é1", 250),
        ("three", "é1", None),
    ]
    for split in range(1, len(stream)):
        assert parse(stream, split=split)[0] == whole, split


def test_field_parsing_rules() -> None:
    stream = (
        b"data\n\n"  # a field name alone: an empty value
        b"data:  two spaces\n\n"  # only one space is dropped
        b"event: ping\ndata: p\n\n"
        b"event:\ndata: typed\n\n"  # an empty type means "message"
        b"unknown: field\ndata: u\n\n"
        b"DATA: case matters\n\n"
    )
    events, _ = parse(stream)
    assert [(e.event, e.data) for e in events] == [
        ("message", ""),
        ("message", " two spaces"),
        ("ping", "p"),
        ("message", "typed"),
        ("message", "u"),
        ("message", ""),
    ]


def test_ids_carry_over_and_nul_ids_are_ignored() -> None:
    stream = b"id: 1\ndata: a\n\ndata: b\n\nid: 2\x003\ndata: c\n\nid\ndata: d\n\n"
    events, parser = parse(stream)
    assert [e.event_id for e in events] == ["1", "1", "1", None]
    assert parser.last_event_id == ""


def test_an_unfinished_block_commits_nothing_but_its_retry() -> None:
    """At the end of a stream a half-read block is dropped; its id is not the one to
    resume from, but a retry hint counts as soon as it is read (as browsers do)."""
    events, parser = parse(b"id: 1\ndata: a\n\nid: 2\nretry: 700\ndata: half")
    assert [e.data for e in events] == ["a"]
    assert parser.last_event_id == "1"
    assert parser.retry_ms == 700


@pytest.mark.parametrize("value", ["", "-5", "1.5", "12a", "  3", "\u0663", "\u00b2"])
def test_retry_takes_ascii_digits_only(value: str) -> None:
    _, parser = parse(f"retry: 9\n\nretry:{value}\n\n".encode())
    assert parser.retry_ms == 9


def test_a_retry_of_thousands_of_digits_is_the_longest_not_an_error() -> None:
    """``int()`` refuses more than 4,300 digits: a hostile ``retry`` must not end the
    stream with a ``ValueError``; it is read as longer than any delay is ever waited."""
    _, parser = parse(b"retry: " + b"9" * 5000 + b"\n\n")
    assert parser.retry_ms == 10**12
    _, parser = parse(b"retry: " + b"0" * 5000 + b"250\n\n")
    assert parser.retry_ms == 250


def test_restart_keeps_the_cursor_and_drops_the_half_read_event() -> None:
    parser = EventParser()
    parser.feed(b"id: 7\nretry: 40\ndata: done\n\ndata: half")
    parser.restart()
    [event] = parser.feed(b"\xef\xbb\xbfdata: fresh\n\n")  # a new stream may start with a BOM
    assert event.data == "fresh"
    assert event.event_id == "7"
    assert parser.retry_ms == 40


def test_invalid_utf8_becomes_replacement_characters() -> None:
    [event], _ = parse(b"data: a\xffb\n\n")
    assert event.data == "a\ufffdb"


@pytest.mark.parametrize(
    "stream",
    [
        b"data: " + b"x" * 200 + b"\n\n",
        (b"data: " + b"x" * 50 + b"\n") * 5,
        b": " + b"x" * 300,
        b"data:\n" * 200,
    ],
    ids=["one-line", "many-lines", "no-line-end", "empty-data-lines"],
)
def test_an_event_over_the_limit_is_refused(stream: bytes) -> None:
    parser = EventParser(max_event_bytes=100)

    def feed_in_small_chunks() -> None:
        for start in range(0, len(stream), 7):
            parser.feed(stream[start : start + 7])

    with pytest.raises(MessageTooLarge, match="larger than 100 bytes"):
        feed_in_small_chunks()


def test_events_at_the_limit_pass() -> None:
    parser = EventParser(max_event_bytes=100)
    for _ in range(50):  # the budget is per event, not per stream
        [event] = parser.feed(b"data: " + b"x" * 100 + b"\n\n")
        assert len(event.data) == 100


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "m", "params": {"text": TRICKY}},
        {"jsonrpc": "2.0", "id": 1, "result": {"text": "line\r\nbreak\rand\nmore\x00"}},
        {"jsonrpc": "2.0", "id": "x", "result": {"t": "data: fake\n\nid: 9\n\n"}},
    ],
    ids=["unicode-separators", "control-characters", "framing-lookalike"],
)
def test_what_the_server_writes_reads_back_unchanged(message: dict[str, Any]) -> None:
    """The server frames pydantic's compact JSON with ``encode_event``: nothing inside a
    message can end a line, an event or the stream early."""
    data = pydantic_core.to_json(message).decode()
    assert "\n" not in data
    assert "\r" not in data
    [event], _ = parse(encode_event(data, "s1-42", 500))
    assert json.loads(event.data) == message
    assert (event.event, event.event_id, event.retry_ms) == ("message", "s1-42", 500)


def test_encode_event_frames_any_text() -> None:
    [event], _ = parse(encode_event("one\r\ntwo\rthree\nfour"))
    assert event.data == "one\ntwo\nthree\nfour"
    [prime], _ = parse(encode_event("", "p1", 100))
    assert (prime.data, prime.event_id, prime.retry_ms) == ("", "p1", 100)


@pytest.mark.parametrize(
    "data",
    [
        b"{}",
        b'{"t":"' + b"x" * 100 + b'"}',
        b'{"t":"' + "\u00e9".encode() * 70 + b'"}',
        b"a\nb" * 50,
    ],
    ids=["small", "large", "split-inside-a-character", "several-lines"],
)
def test_an_event_in_pieces_is_the_event_whole(data: bytes) -> None:
    """A replay writes large stored events in slices (even inside a UTF-8 character),
    which put together are the event framed whole."""
    pieces = list(encode_event_pieces(data, "s1_7", 16))
    assert b"".join(pieces) == encode_event(data.decode(), "s1_7")
    if b"\n" not in data and len(data) > 16:  # the framing, then the data in slices
        assert [len(piece) for piece in pieces[1:-1]] == [16] * (len(data) // 16) + (
            [len(data) % 16] if len(data) % 16 else []
        )


@pytest.mark.parametrize("event_id", ["a\nb", "a\rb", "a\x00b"])
def test_encode_event_refuses_an_id_that_would_break_framing(event_id: str) -> None:
    with pytest.raises(ValueError, match="CR, LF or NUL"):
        encode_event("{}", event_id)


# -- end to end -------------------------------------------------------------------------


async def echo_message(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"value": params.message[::-1]})


@pytest.mark.anyio
async def test_unicode_line_separators_in_an_elicitation_over_http() -> None:
    """The question holds U+2028, U+2029 and U+0085; it reaches the callback intact and
    the call completes (the line-splitting reader left it hanging for ever)."""
    tag = f"x{TRICKY}y"
    async with (
        serve(http_app()) as running,
        Client(running.url, mode="legacy", elicitation_callback=echo_message) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("echo_elicit", {"tag": tag})
    assert result.content == [TextContent(text=f"{tag}:{f'tag={tag}'[::-1]}")]


@pytest.mark.anyio
async def test_unicode_line_separators_in_a_2026_log_stream() -> None:
    """On 2026-07-28 a notification before the answer turns the response into an SSE
    stream; the log line with the separators arrives whole, and so does the answer."""
    mcp = MCPServer("Separators")

    @mcp.tool()
    async def shout(ctx: Context, text: str) -> str:
        await ctx.info(text)
        return text.upper()

    seen: list[object] = []

    async def record(params: LoggingMessageNotificationParams) -> None:
        seen.append(params.data)

    async with (
        serve(http_app(mcp)) as running,
        Client(running.url, mode="2026-07-28", logging_callback=record, log_level="info") as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("shout", {"text": TRICKY})
    assert seen == [TRICKY]
    assert result.content == [TextContent(text=TRICKY.upper())]
