"""A notification handler or progress callback that fails (stop 54): the counts by
method are bounded, a count's warning writes out the control characters of the
handler's message (which may quote the peer) instead of passing them to the terminal
showing the log, and a progress callback failing on every notification logs one
traceback for its request, then counts."""

from __future__ import annotations

import logging

import anyio
import pytest
from support import RawPeer, peer_pair

from answerback.jsonrpc import Endpoint, Envelope, JSONObject
from answerback.types import MethodNotFoundError

pytestmark = pytest.mark.anyio


async def refusing(method: str, params: JSONObject | None, envelope: Envelope) -> None:
    raise RuntimeError(f"no handler for {method}\x1b]0;owned\x07")


async def no_requests(*_: object) -> JSONObject:
    raise MethodNotFoundError("no requests here")


async def notify_then_wait_for_the_reader(peer: RawPeer, methods: list[str]) -> None:
    """Send each notification, then a request: its answer comes after all are handled."""
    for method in methods:
        await peer.send({"jsonrpc": "2.0", "method": method})
    await peer.send({"jsonrpc": "2.0", "id": "after", "method": "anything"})
    assert (await peer.receive())["id"] == "after"


async def test_failures_of_ever_new_methods_share_one_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A peer sending a new method name each time to a handler that raises on unknown
    methods gets a traceback for the first 32 methods and one for all the rest."""
    caplog.set_level(logging.WARNING, logger="answerback.jsonrpc")
    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream, write_stream, on_request=no_requests, on_notification=refusing
        ) as endpoint:
            await notify_then_wait_for_the_reader(peer, [f"made/up/{n}" for n in range(100)])
            assert len(endpoint._notification_failures) == 33  # pyright: ignore[reportPrivateUsage]
    tracebacks = [record for record in caplog.records if record.exc_info]
    assert len(tracebacks) == 33
    assert "and other methods" in tracebacks[-1].getMessage()


async def test_a_counts_warning_writes_out_control_characters(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="answerback.jsonrpc")
    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream, write_stream, on_request=no_requests, on_notification=refusing
        ):
            await notify_then_wait_for_the_reader(peer, ["notifications/loud"] * 10)
    [count] = [record for record in caplog.records if "10 times" in record.getMessage()]
    said = count.getMessage()
    assert "\x1b" not in said
    assert "\x07" not in said
    assert "\\x1b]0;owned\\x07" in said


async def test_a_progress_callback_failing_each_time_logs_one_traceback_then_counts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(progress: float, total: float | None, message: str | None) -> None:
        raise RuntimeError(f"the progress bar is gone at {progress}")

    caplog.set_level(logging.WARNING, logger="answerback.jsonrpc")
    with peer_pair() as ((read_stream, write_stream), peer):
        async with (
            Endpoint(
                read_stream, write_stream, on_request=no_requests, on_notification=refusing
            ) as endpoint,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(lambda: endpoint.request("work", on_progress=broken))
            request = await peer.receive()
            for step in range(12):
                progress = {"progressToken": request["id"], "progress": step}
                await peer.send(
                    {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}
                )
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
    tracebacks = [record for record in caplog.records if record.exc_info]
    assert len(tracebacks) == 1
    count, in_all = [record.getMessage() for record in caplog.records if not record.exc_info]
    assert "has failed 10 times for this request" in count
    assert "failed 12 times in all for this request" in in_all  # stop 56
