"""``ctx.report_progress`` does not send progress that does not increase.

The specification says progress MUST increase with each notification: a report not
above the request's last one (lower, or the same again) never reaches the client, in
either era and whether or not the client asked for progress. It does not fail the tool
(counters that stall on some data are common); the first one of a request logs a
warning naming both values on the ``answerback.server`` logger.
"""

from __future__ import annotations

import logging

import pytest

from answerback import Client
from answerback.server import Context, MCPServer

pytestmark = pytest.mark.anyio

Reported = list[tuple[float, float | None, str | None]]


def reporting_server() -> MCPServer:
    server = MCPServer("Progress")

    @server.tool()
    async def report(ctx: Context, steps: list[int | float]) -> str:
        for step in steps:
            await ctx.report_progress(step, 10)
        return "reported"

    @server.tool()
    async def report_on_session(ctx: Context, steps: list[int | float]) -> str:
        for step in steps:
            await ctx.session.send_progress(step)
        return "reported"

    return server


async def run(tool: str, steps: list[float], mode: str, asked: bool) -> tuple[str, bool, Reported]:
    reported: Reported = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total, message))

    async with Client(reporting_server(), mode=mode) as client:
        result = await client.call_tool(
            tool, {"steps": steps}, progress_callback=on_progress if asked else None
        )
    return result.text, result.is_error, reported


def order_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    """The warnings about dropped progress the server logged."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "answerback.server" and "was not sent" in record.getMessage()
    ]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("asked", [True, False], ids=["asked", "not-asked"])
@pytest.mark.parametrize(
    ("steps", "last", "then"),
    [
        pytest.param([5, 3], "5", "3", id="backwards"),
        pytest.param([5, 5], "5", "5", id="the-same-again"),
        pytest.param([1, 2.5, 2.5], "2.5", "2.5", id="the-same-after-a-rise"),
    ],
)
async def test_progress_that_does_not_increase_is_dropped_with_a_warning(
    mode: str,
    asked: bool,
    steps: list[float],
    last: str,
    then: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="answerback.server")
    text, is_error, reported = await run("report", steps, mode, asked)
    assert (text, is_error) == ("reported", False)
    assert reported == ([(float(step), 10.0, None) for step in steps[:-1]] if asked else [])
    [warning] = order_warnings(caplog)
    assert warning.startswith(f"progress {then} of request ")
    assert f"not more than the request's last report, {last}, and MCP requires" in warning


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_request_warns_once_and_later_rises_are_still_sent(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="answerback.server")
    text, is_error, reported = await run("report", [1, 1, 0, 2, 2, 3], mode, True)
    assert (text, is_error) == ("reported", False)
    assert [progress for progress, _, _ in reported] == [1, 2, 3]
    assert len(order_warnings(caplog)) == 1


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_session_drops_it_too(mode: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="answerback.server")
    text, is_error, reported = await run("report_on_session", [2, 1], mode, True)
    assert (text, is_error) == ("reported", False)
    assert reported == [(2.0, None, None)]
    [warning] = order_warnings(caplog)
    assert warning.startswith("progress 1 of request ")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_increasing_progress_is_reported_and_each_call_starts_afresh(mode: str) -> None:
    for _ in range(2):  # a second call may start low again: the order is per request
        text, is_error, reported = await run("report", [0, 0.5, 3, 10], mode, True)
        assert (text, is_error) == ("reported", False)
        assert [progress for progress, _, _ in reported] == [0, 0.5, 3, 10]
