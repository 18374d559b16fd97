"""CPU time per call in ``make bench``: metered around the timed calls only, per process,
and tabled beside the floor's (``benchmarks/measure.py``, ``benchmarks/report.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import anyio
import pytest

from benchmarks.measure import CpuUse, Run, process_cpu_seconds, sequential
from benchmarks.procs import child_pids
from benchmarks.report import cpu_table
from benchmarks.scenarios import Servers, server_pid_of


def test_a_metered_run_reports_microseconds_per_call_for_each_process() -> None:
    run = Run(calls=1000, seconds=1.0, latencies=[0.001] * 1000)
    metered = run.metered((2.0, 10.0), (2.1, 10.05)).summary()
    assert round(metered["client_cpu_us"], 6) == 100.0
    assert round(metered["server_cpu_us"], 6) == 50.0
    # The server in this process: one number for both.
    alone = run.metered((2.0, None), (2.3, None)).summary()
    assert round(alone["client_cpu_us"], 6) == 300.0
    assert "server_cpu_us" not in alone
    assert "client_cpu_us" not in run.metered(None, None).summary()


def test_only_the_timed_calls_are_metered() -> None:
    """The warm-up calls come before the first reading."""
    readings: list[CpuUse] = []
    calls = 0

    def read() -> CpuUse:
        readings.append((float(calls), None))
        return readings[-1]

    async def call() -> None:
        nonlocal calls
        calls += 1

    run = anyio.run(lambda: sequential(call, duration=0.01, warmup=7, cpu=read))
    assert readings[0] == (7.0, None)
    assert run.cpu_seconds == (float(run.calls), None)


def test_another_process_is_metered_by_its_own_threads_time() -> None:
    """A child that works between two readings shows more CPU time at the second."""
    work = "import sys\nfor line in sys.stdin:\n    sum(range(200_000))\n    print(flush=True)"
    with subprocess.Popen(
        [sys.executable, "-c", work], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as child:
        assert child.stdin is not None
        assert child.stdout is not None
        first = process_cpu_seconds(child.pid)
        for _ in range(20):  # one pass of its loop each, answered once done
            child.stdin.write(b"\n")
            child.stdin.flush()
            assert child.stdout.readline() == b"\n"
        second = process_cpu_seconds(child.pid)
        child.kill()
    assert second > first
    assert process_cpu_seconds(os.getpid()) > 0


def test_a_server_that_has_ended_is_an_error_not_zero_cpu() -> None:
    with subprocess.Popen([sys.executable, "-c", "pass"]) as child:
        child.wait()
    with pytest.raises(ProcessLookupError, match=f"process {child.pid} has ended"):
        process_cpu_seconds(child.pid)


def test_a_stdio_side_that_started_no_server_process_is_an_error() -> None:
    """The server's CPU cannot be metered without its process: the side fails, saying so."""
    with pytest.raises(RuntimeError, match="start one server process, found none"):
        server_pid_of("stdio", "answerback", Servers(), child_pids())


def _side(client: float, server: float | None) -> dict[str, Any]:
    side: dict[str, Any] = {"median": 1.0, "median_client_cpu_us": client}
    if server is not None:
        side["median_server_cpu_us"] = server
    return side


def test_the_table_gives_each_process_and_the_total_against_the_floor() -> None:
    stdio = {
        "title": "stdio echo",
        "answerback": _side(90, 110),
        "official": {"median": None, "error": "TimeoutError"},
        "floor": _side(90, 30),
    }
    inproc = {
        "title": "in-process echo",
        "answerback": _side(75, None),
        "official": _side(1100, None),
        "floor": _side(60, None),
    }
    unmetered = {"title": "forms", "answerback": {"median": 5.0}}
    table = cpu_table([stdio, inproc, unmetered]).splitlines()
    assert "| stdio echo | 90 | 110 | n/a | n/a | 90 | 30 | 1.67x |" in table
    same = "(same process)"
    assert f"| in-process echo | 75 | {same} | 1,100 | {same} | 60 | {same} | 1.25x |" in table
    assert not any(row.startswith("| forms") for row in table)
    assert cpu_table([unmetered]) == ""
