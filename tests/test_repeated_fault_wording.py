"""The count of a repeated fault said in words a person reads as written: one fault
past the tenth is "1 more line" or "1 more message", never "1 more lines"."""

from __future__ import annotations

import logging

import anyio
import pytest
import test_repeated_faults
from http_support import PATIENCE_SECONDS, serve
from test_repeated_faults import garbling_server

from answerback import Client
from answerback.client import IncomingMessage
from answerback.jsonrpc import MalformedMessage
from answerback.transports import StrayOutputError
from answerback.transports import _stdio as stdio_module
from answerback.transports.http import StreamableHTTPTransport
from answerback.types import TextContent

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("strays", "said"),
    [
        (
            11,
            "wrote 1 more line that is not JSON-RPC to stdout since the last report "
            "(the latest: 'debug 10'); it was skipped.",
        ),
        (
            12,
            "wrote 2 more lines that are not JSON-RPC to stdout since the last report "
            "(the latest: 'debug 11'); they were skipped.",
        ),
    ],
    ids=["one", "two"],
)
def test_stray_lines_past_the_tenth_are_counted_in_words_that_agree(
    monkeypatch: pytest.MonkeyPatch, strays: int, said: str
) -> None:
    """The minute's summary of one stray line said "1 more lines that are not"."""
    now = [0.0]
    monkeypatch.setattr(stdio_module, "_clock", lambda: now[0])
    output = stdio_module._ServerOutput(1024, "noisy")  # pyright: ignore[reportPrivateUsage]
    reports = [output.decode_line(f"debug {n}".encode()) for n in range(strays - 1)]
    now[0] = 61.0  # the summary is due: the next line brings it
    reports.append(output.decode_line(f"debug {strays - 1}".encode()))
    summaries = [r for r in reports[10:] if r is not None]
    assert len(summaries) == 1, reports
    assert isinstance(summaries[0], StrayOutputError)
    assert str(summaries[0]).startswith(f"The server `noisy` {said}"), str(summaries[0])


@pytest.mark.parametrize(
    ("events", "said"),
    [
        (11, "1 more message that could not be read since the last report, and it was"),
        (12, "2 more messages that could not be read since the last report, and they were"),
    ],
    ids=["one", "two"],
)
async def test_unreadable_events_past_the_tenth_are_counted_in_words_that_agree(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, events: int, said: str
) -> None:
    """The summary of one unreadable event said "1 more messages ... they were"."""
    monkeypatch.setattr(test_repeated_faults, "GARBAGE_EVENTS", events)
    reports: list[MalformedMessage] = []

    async def message_handler(message: IncomingMessage) -> None:
        if isinstance(message, MalformedMessage):
            reports.append(message)

    with caplog.at_level(logging.WARNING, logger="answerback.transports"):
        async with serve(garbling_server) as server:
            transport = StreamableHTTPTransport(server.url)
            transport._clock = lambda: 0.0  # pyright: ignore[reportPrivateUsage]
            async with Client(transport, mode="legacy", message_handler=message_handler) as client:
                with anyio.fail_after(PATIENCE_SECONDS):
                    result = await client.call_tool("garbled")
    assert result.content == [TextContent(text="done")]
    assert len(reports) == 10, [str(r) for r in reports]
    summaries = [r.getMessage() for r in caplog.records if "since the last" in r.getMessage()]
    assert len(summaries) == 1, summaries
    assert summaries[0].startswith(f"the server sent {said} skipped (the latest: "), summaries
