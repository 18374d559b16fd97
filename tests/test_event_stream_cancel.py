"""An open SSE response cancelled from outside: only uvicorn's cancel at the end of its
graceful shutdown is ended quietly; an ``asyncio.timeout`` or a ``task.cancel()`` around
the response still gets its cancellation, as asyncio's contract wants."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from starlette.types import Message

from answerback.transports.http._serving import EventStreamResponse

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.parametrize("anyio_backend", ["asyncio"], ids=["asyncio"]),
]

SCOPE: dict[str, Any] = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.4"}}
UVICORNS_CANCEL = "Task cancelled, timeout graceful shutdown exceeded"  # uvicorn 0.55's words


class OpenStream:
    """An SSE response that sends one event and then waits for ever, as a GET stream
    with nothing to say does; ``on_open`` runs once that event has been produced."""

    def __init__(self, on_open: Callable[[], None] = lambda: None) -> None:
        self.on_open = on_open
        self.opened = asyncio.Event()
        self.sent: list[Message] = []

    async def events(self) -> AsyncIterator[bytes]:
        yield b"event: message\ndata: {}\n\n"
        self.on_open()
        self.opened.set()
        await asyncio.Event().wait()

    async def serve(self) -> int:
        """Serve the response; the task's ``cancelling()`` count once it has returned."""

        async def receive() -> Message:
            await asyncio.Event().wait()  # the client never hangs up
            return {"type": "http.disconnect"}

        async def send(message: Message) -> None:
            self.sent.append(message)

        await EventStreamResponse(self.events())(SCOPE, receive, send)
        task = asyncio.current_task()
        assert task is not None
        return task.cancelling()


async def test_an_asyncio_timeout_around_the_response_still_times_out() -> None:
    loop = asyncio.get_running_loop()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(None) as deadline:
            await OpenStream(lambda: deadline.reschedule(loop.time())).serve()


async def test_a_task_cancelled_by_its_owner_is_cancelled() -> None:
    stream = OpenStream()
    task = asyncio.create_task(stream.serve())
    await stream.opened.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelled()


async def test_uvicorns_cancel_at_shutdown_ends_the_stream_and_is_undone() -> None:
    stream = OpenStream()
    task = asyncio.create_task(stream.serve())
    await stream.opened.wait()
    task.cancel(msg=UVICORNS_CANCEL)
    assert await task == 0  # uncancelled: later awaits in the task are not cancelled
    assert stream.sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}
