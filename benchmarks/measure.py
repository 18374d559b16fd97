"""Timing loops and statistics shared by every throughput scenario.

Besides wall-clock time, a timed run can meter the CPU time the client and the server
spent on its calls. On a shared two-core machine calls per second swing with where the
scheduler puts the two processes (on one CPU, each message waits for the other process to
stop; on two, for the other CPU to wake up), while CPU time per call barely moves: it
says what each side costs, whatever the placement.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.lowlevel

Call = Callable[[], Awaitable[None]]
"""One round trip to time (an echo call, an eliciting call...)."""

CpuUse = tuple[float, float | None]
"""CPU seconds of this process (the clients) and of the server's process (``None`` when
the server runs in this process, so that the first number is both)."""
CpuReading = Callable[[], CpuUse]
"""Reads the ``CpuUse`` so far."""


def process_cpu_seconds(pid: int) -> float:
    """CPU time used so far by every thread of process ``pid``, from the scheduler's own
    count (``/proc/<pid>/task/*/schedstat``, in nanoseconds: exact, where
    ``/proc/<pid>/stat`` counts 10 ms ticks). A thread that has ended is no longer
    counted, so read it around a run whose server keeps its threads. Raises
    ``ProcessLookupError`` if the process has ended: a server that died mid-run must
    fail its side, not report its CPU time as nothing."""
    tasks = Path(f"/proc/{pid}/task")
    if not tasks.is_dir():
        raise ProcessLookupError(
            f"process {pid} has ended, so its CPU time cannot be read: see why the server "
            "exited (its side's error, or run that scenario alone with --only)"
        )
    total = 0
    for schedstat in tasks.glob("*/schedstat"):
        try:
            total += int(schedstat.read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # the thread ended while we looked
    return total / 1e9


def cpu_reading(server_pid: int | None) -> CpuReading:
    """Read this process's CPU time (``time.process_time``, every thread's, ended ones
    included) and, if it runs apart, the server's."""

    def read() -> CpuUse:
        server = process_cpu_seconds(server_pid) if server_pid is not None else None
        return time.process_time(), server

    return read


@dataclass(frozen=True, slots=True)
class Run:
    """One timed run: how many calls finished in how long, and their latencies."""

    calls: int
    seconds: float
    latencies: list[float]
    cpu_seconds: CpuUse | None = None
    """The CPU time the run took in this process and in the server's (see ``CpuReading``)."""

    @property
    def calls_per_second(self) -> float:
        return self.calls / self.seconds if self.seconds > 0 else 0.0

    @property
    def p50_ms(self) -> float:
        return percentile(self.latencies, 50) * 1000

    @property
    def p99_ms(self) -> float:
        return percentile(self.latencies, 99) * 1000

    def summary(self) -> dict[str, float]:
        """The run's numbers; with CPU metered, also microseconds of CPU per call in this
        process (``client_cpu_us``) and in the server's (``server_cpu_us``)."""
        numbers = {
            "calls_per_s": self.calls_per_second,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
            "calls": float(self.calls),
        }
        if self.cpu_seconds is not None and self.calls:
            client, server = self.cpu_seconds
            numbers["client_cpu_us"] = client / self.calls * 1e6
            if server is not None:
                numbers["server_cpu_us"] = server / self.calls * 1e6
        return numbers

    def metered(self, before: CpuUse | None, after: CpuUse | None) -> Run:
        """This run with the CPU time between two readings (unmetered without them)."""
        if before is None or after is None:
            return self
        server = None if before[1] is None or after[1] is None else after[1] - before[1]
        return Run(self.calls, self.seconds, self.latencies, (after[0] - before[0], server))


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct``-th percentile (nearest rank) of ``values``; 0 when there are none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


async def sequential(
    call: Call, *, duration: float, warmup: int, cpu: CpuReading | None = None
) -> Run:
    """``warmup`` untimed calls, then back-to-back calls for ``duration`` seconds."""
    for _ in range(warmup):
        await call()
    before = _read(cpu)
    run = await _timed_loop(call, duration=duration, start=None)
    return run.metered(before, _read(cpu))


async def concurrent(
    calls: Sequence[Call], *, duration: float, warmup: int, cpu: CpuReading | None = None
) -> Run:
    """Every caller loops at once for ``duration`` seconds; throughput is their sum."""
    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(_warm, call, warmup)
    start = anyio.Event()
    runs: list[Run] = []

    async def worker(call: Call) -> None:
        runs.append(await _timed_loop(call, duration=duration, start=start))

    began = 0.0
    before: CpuUse | None = None
    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(worker, call)
        await anyio.lowlevel.checkpoint()  # let every worker reach start.wait()
        before = _read(cpu)
        began = time.perf_counter()
        start.set()
    elapsed = time.perf_counter() - began
    latencies = [lat for run in runs for lat in run.latencies]
    run = Run(calls=len(latencies), seconds=elapsed, latencies=latencies)
    return run.metered(before, _read(cpu))


async def burst(call: Call, count: int, *, warmup: int, cpu: CpuReading | None = None) -> Run:
    """``warmup`` untimed calls at once, then ``count`` calls started together on ``call``'s
    one connection; throughput is ``count`` over the time until the last one ends, and
    each call's latency runs from the common start to its own end."""
    async with anyio.create_task_group() as tg:
        for _ in range(warmup):
            tg.start_soon(_warm, call, 1)
    clock = time.perf_counter
    latencies: list[float] = []

    async def timed() -> None:
        await call()
        latencies.append(clock() - began)

    before = _read(cpu)
    began = clock()
    async with anyio.create_task_group() as tg:
        for _ in range(count):
            tg.start_soon(timed)
    run = Run(calls=count, seconds=clock() - began, latencies=latencies)
    return run.metered(before, _read(cpu))


def _read(cpu: CpuReading | None) -> CpuUse | None:
    return cpu() if cpu is not None else None


async def _warm(call: Call, count: int) -> None:
    for _ in range(count):
        await call()


async def _timed_loop(call: Call, *, duration: float, start: anyio.Event | None) -> Run:
    if start is not None:
        await start.wait()
    clock = time.perf_counter
    latencies: list[float] = []
    began = clock()
    deadline = began + duration
    now = began
    while now < deadline:
        await call()
        after = clock()
        latencies.append(after - now)
        now = after
    return Run(calls=len(latencies), seconds=now - began, latencies=latencies)
