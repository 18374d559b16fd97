"""Timing loops and statistics shared by every throughput scenario."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import anyio
import anyio.lowlevel

Call = Callable[[], Awaitable[None]]
"""One round trip to time (an echo call, an eliciting call...)."""


@dataclass(frozen=True, slots=True)
class Run:
    """One timed run: how many calls finished in how long, and their latencies."""

    calls: int
    seconds: float
    latencies: list[float]

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
        return {
            "calls_per_s": self.calls_per_second,
            "p50_ms": self.p50_ms,
            "p99_ms": self.p99_ms,
            "calls": float(self.calls),
        }


def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct``-th percentile (nearest rank) of ``values``; 0 when there are none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


async def sequential(call: Call, *, duration: float, warmup: int) -> Run:
    """``warmup`` untimed calls, then back-to-back calls for ``duration`` seconds."""
    for _ in range(warmup):
        await call()
    return await _timed_loop(call, duration=duration, start=None)


async def concurrent(calls: Sequence[Call], *, duration: float, warmup: int) -> Run:
    """Every caller loops at once for ``duration`` seconds; throughput is their sum."""
    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(_warm, call, warmup)
    start = anyio.Event()
    runs: list[Run] = []

    async def worker(call: Call) -> None:
        runs.append(await _timed_loop(call, duration=duration, start=start))

    began = 0.0
    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(worker, call)
        await anyio.lowlevel.checkpoint()  # let every worker reach start.wait()
        began = time.perf_counter()
        start.set()
    elapsed = time.perf_counter() - began
    latencies = [lat for run in runs for lat in run.latencies]
    return Run(calls=len(latencies), seconds=elapsed, latencies=latencies)


async def burst(call: Call, count: int, *, warmup: int) -> Run:
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

    began = clock()
    async with anyio.create_task_group() as tg:
        for _ in range(count):
            tg.start_soon(timed)
    return Run(calls=count, seconds=clock() - began, latencies=latencies)


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
