"""``ctx.report_progress`` refuses progress that does not increase.

The specification says progress MUST increase with each notification: a report not
above the request's last one (lower, or the same again) raises ``ValueError`` naming
both values, in either era and whether or not the client asked for progress, and
nothing of it reaches the client.
"""

from __future__ import annotations

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
async def test_progress_that_does_not_increase_fails_the_tool(
    mode: str, asked: bool, steps: list[float], last: str, then: str
) -> None:
    text, is_error, reported = await run("report", steps, mode, asked)
    assert is_error
    assert text == (
        f"Error executing tool: progress {then} is not more than this request's last "
        f"report, {last}: progress must increase with each report (MCP requires it). "
        "Report how much is done so far, not the step just finished or what is left; to "
        "say something new without progress, log it instead."
    )
    expected = [(float(step), 10.0, None) for step in steps[:-1]] if asked else []
    assert reported == expected


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_the_session_refuses_it_too(mode: str) -> None:
    text, is_error, reported = await run("report_on_session", [2, 1], mode, True)
    assert is_error
    assert text.startswith("Error executing tool: progress 1 is not more than this request's")
    assert reported == [(2.0, None, None)]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_increasing_progress_is_reported_and_each_call_starts_afresh(mode: str) -> None:
    for _ in range(2):  # a second call may start low again: the order is per request
        text, is_error, reported = await run("report", [0, 0.5, 3, 10], mode, True)
        assert (text, is_error) == ("reported", False)
        assert [progress for progress, _, _ in reported] == [0, 0.5, 3, 10]
