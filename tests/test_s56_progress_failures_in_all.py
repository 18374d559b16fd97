"""A progress callback failing at every notification (stop 56): besides one traceback and
counts at 10, 100..., the total is said when the request ends, so 25 failures are not
left reported as 10; a request whose callback failed once, or a power of ten times, says
nothing more."""

from __future__ import annotations

import logging

import anyio
import pytest
from support import peer_pair

from answerback.jsonrpc import Endpoint, Envelope, JSONObject
from answerback.types import MethodNotFoundError

pytestmark = pytest.mark.anyio


async def no_requests(*_: object) -> JSONObject:
    raise MethodNotFoundError("no requests here")


async def no_notifications(method: str, params: JSONObject | None, envelope: Envelope) -> None:
    pass


async def broken(progress: float, total: float | None, message: str | None) -> None:
    raise RuntimeError(f"the progress bar is gone at {progress}")


async def counts_said(caplog: pytest.LogCaptureFixture, failures: int) -> list[str]:
    """The warnings without a traceback logged for one request whose progress callback
    failed ``failures`` times before it was answered."""
    caplog.set_level(logging.WARNING, logger="answerback.jsonrpc")
    with peer_pair() as ((read_stream, write_stream), peer):
        async with (
            Endpoint(
                read_stream, write_stream, on_request=no_requests, on_notification=no_notifications
            ) as endpoint,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(lambda: endpoint.request("work", on_progress=broken))
            request = await peer.receive()
            for step in range(failures):
                progress = {"progressToken": request["id"], "progress": step}
                await peer.send(
                    {"jsonrpc": "2.0", "method": "notifications/progress", "params": progress}
                )
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
    assert len([record for record in caplog.records if record.exc_info]) == 1
    return [record.getMessage() for record in caplog.records if not record.exc_info]


async def test_the_total_is_said_when_the_request_ends(caplog: pytest.LogCaptureFixture) -> None:
    said = await counts_said(caplog, 25)
    assert [line.split(" for this request")[0] for line in said] == [
        "progress callback for 'work' to the peer has failed 10 times",
        "progress callback for 'work' to the peer failed 25 times in all",
    ]


@pytest.mark.parametrize("failures", [1, 10])
async def test_no_total_when_the_last_count_said_it(
    caplog: pytest.LogCaptureFixture, failures: int
) -> None:
    said = await counts_said(caplog, failures)
    assert not [line for line in said if "in all" in line]
