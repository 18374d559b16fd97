"""Two answerback endpoints, one reading the other through stdio's line framing with a
small limit, where an answer over that limit does not start with its id (some peers'
serializers put "id" last): only the call it answered fails; the reader sends nothing
back for it, so the peer's own calls go on."""

from __future__ import annotations

import json

import anyio
import pytest
from support import PATIENCE_SECONDS

from answerback.jsonrpc import Endpoint, Envelope, IncomingRequest, JSONObject
from answerback.jsonrpc._channel import ChannelReceiver, ChannelSender, open_channel
from answerback.transports._framing import LineReader
from answerback.types import INTERNAL_ERROR, MCPError

pytestmark = pytest.mark.anyio

LIMIT = 4096


async def id_last_lines(
    source: ChannelReceiver[Envelope], reader: LineReader, sink: ChannelSender[Envelope | Exception]
) -> None:
    """What the reading side's stdio transport makes of the peer's messages, each written
    as one line with its "id" last."""
    async with source, sink:
        async for envelope in source:
            message = dict(envelope.message)
            if "id" in message:
                message["id"] = message.pop("id")
            incoming, replies = reader.feed(json.dumps(message).encode() + b"\n")
            assert replies == []
            for item in incoming:
                sink.send_nowait(item)


async def test_an_oversized_answer_fails_its_call_only_and_nothing_goes_back() -> None:
    small_may_answer = anyio.Event()
    reader_asked = anyio.Event()
    results: dict[str, object] = {}
    all_done = anyio.Event()

    async def answering(request: IncomingRequest) -> JSONObject:
        if request.method == "big":
            return {"text": "x" * 2 * LIMIT}
        if request.method == "small":
            await small_may_answer.wait()
            return {"text": "small"}
        raise AssertionError(request.method)

    async def reading(request: IncomingRequest) -> JSONObject:
        assert request.method == "question"
        reader_asked.set()
        await small_may_answer.wait()
        return {"answer": 42}

    async def ignore(*_: object) -> None:
        pass

    async def call(endpoint: Endpoint, method: str) -> None:
        try:
            results[method] = await endpoint.request(method)
        except MCPError as exc:
            results[method] = exc
        if len(results) == 3:
            all_done.set()

    to_answering_send, to_answering_read = open_channel[Envelope | Exception]()
    from_answering_send, from_answering_read = open_channel[Envelope]()
    to_reader_send, to_reader_read = open_channel[Envelope | Exception]()
    lines = LineReader(LIMIT, setting="max_message_bytes=...")
    skipped = anyio.Event()

    async def on_transport_error(exc: Exception) -> None:
        skipped.set()  # the big answer, skipped

    async with (
        Endpoint(
            to_answering_read, from_answering_send, on_request=answering, on_notification=ignore
        ) as answerer,
        Endpoint(
            to_reader_read,
            to_answering_send,
            on_request=reading,
            on_notification=ignore,
            on_transport_error=on_transport_error,
        ) as reader,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(id_last_lines, from_answering_read, lines, to_reader_send)
        with anyio.fail_after(PATIENCE_SECONDS):
            tg.start_soon(call, answerer, "question")
            await reader_asked.wait()
            tg.start_soon(call, reader, "small")
            tg.start_soon(call, reader, "big")
            await skipped.wait()
            small_may_answer.set()
            await all_done.wait()
        tg.cancel_scope.cancel()
    assert results["question"] == {"answer": 42}
    assert results["small"] == {"text": "small"}
    big = results["big"]
    assert isinstance(big, MCPError)
    assert big.error.code == INTERNAL_ERROR
    assert big.message.startswith(
        f"The answer was larger than this connection's limit of {LIMIT} bytes per message"
    ), big.message
