"""The scenarios of issues 6 and 17 and how each is run, answerback and official alternating.

Every scenario runs ``config.rounds`` rounds (``config.burst_rounds`` for the bursts of
concurrent calls); a round runs answerback, then the official SDK, then (where there is
one) the floor, so slow drifts of a shared machine hit all sides alike. Scenarios that
are compared with each other run their rounds interleaved, for the same reason. Each side's
measurement is bounded by ``config.timeout`` so the run always ends. The result of a
scenario is the per-round numbers and their medians.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from benchmarks import floor, library
from benchmarks.clients import IMPLS, Mode, Transport, connect
from benchmarks.config import Config
from benchmarks.measure import Call, Run, burst, concurrent, cpu_reading, median, sequential
from benchmarks.memory import rss_per_session
from benchmarks.procs import child_pids
from benchmarks.startup import ENTRY_POINTS, import_seconds, warm_bytecode

Kind = Literal["calls", "startup", "memory", "library"]
Side = Literal["answerback", "official", "floor"]

MRTR_NOTE = "official: resolver API (Resolve + Elicit); its ctx.elicit is refused on 2026-07-28"
LIBRARY_NOTE = (
    "answerback only, timed in-process (pure code, no I/O): "
    "the official SDK has no form engine or URL verdict to compare with"
)
POOL_NOTE = (
    "official: its HTTP client has httpx's default pool of 100 connections; beyond 100 open "
    "call streams, its answers wait for a free connection and fail with PoolTimeout after 30 s"
)
INPROC_2026_NOTE = (
    "official: in-process non-legacy mode skips JSON-RPC (direct dispatch); "
    "answerback still speaks JSON-RPC over memory streams"
)


@dataclass(frozen=True, slots=True)
class Scenario:
    """One row of the results table."""

    id: str
    title: str
    kind: Kind
    transport: Transport | None = None
    call: Literal["echo", "elicit"] = "echo"
    mode: Mode = "legacy"
    concurrent: bool = False
    """20 clients calling at once, each one call at a time."""
    burst: bool = False
    """``config.burst_calls`` calls at once from one client."""
    floor: bool = False
    entry_point: str = ""
    operation: library.Operation | None = None
    """What a ``library`` scenario times."""
    notes: tuple[str, ...] = field(default_factory=tuple)

    def title_for(self, config: Config) -> str:
        """The row title; a burst's says how many calls ran at once."""
        return f"{self.title}, {config.burst_calls:,} at once" if self.burst else self.title

    def rounds(self, config: Config) -> int:
        return config.burst_rounds if self.burst else config.rounds

    @property
    def metric(self) -> str:
        metrics = {"calls": "calls/s", "startup": "ms", "memory": "KiB/session", "library": "ops/s"}
        return metrics[self.kind]

    @property
    def better(self) -> Literal["higher", "lower"]:
        return "higher" if self.kind in ("calls", "library") else "lower"

    @property
    def sides(self) -> list[Side]:
        """Who is measured: answerback and the official SDK, and the floor if any."""
        if self.kind == "library":
            return ["answerback"]
        return [*IMPLS, *(["floor"] if self.floor else [])]


def _calls(
    transport: Transport,
    call: Literal["echo", "elicit"],
    mode: Mode,
    *,
    concurrent: bool = False,
    burst: bool = False,
    title: str,
    notes: tuple[str, ...] = (),
) -> Scenario:
    era = "legacy" if mode == "legacy" else "2026"
    parts = [transport, call, era] + (["c20"] if concurrent else []) + (["burst"] if burst else [])
    if mode == "2026-07-28" and call == "elicit":
        notes = (*notes, MRTR_NOTE)
    return Scenario(
        id="-".join(parts),
        title=title,
        kind="calls",
        transport=transport,
        call=call,
        mode=mode,
        concurrent=concurrent,
        burst=burst,
        floor=True,
        notes=notes,
    )


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("startup-client", "start-up: import the client", "startup", entry_point="client"),
    Scenario("startup-server", "start-up: import the server", "startup", entry_point="server"),
    _calls("inproc", "echo", "legacy", title="in-process echo"),
    _calls("inproc", "elicit", "legacy", title="in-process elicit, legacy"),
    _calls(
        "inproc",
        "elicit",
        "2026-07-28",
        title="in-process elicit, 2026 (MRTR)",
        notes=(INPROC_2026_NOTE,),
    ),
    _calls("stdio", "echo", "legacy", title="stdio echo"),
    _calls("stdio", "elicit", "legacy", title="stdio elicit"),
    _calls("http", "echo", "legacy", title="HTTP echo, legacy"),
    _calls("http", "elicit", "legacy", title="HTTP elicit, legacy"),
    _calls("http", "echo", "2026-07-28", title="HTTP echo, 2026"),
    _calls("http", "elicit", "2026-07-28", title="HTTP elicit, 2026 (MRTR)"),
    _calls("http", "echo", "legacy", concurrent=True, title="HTTP echo, legacy, 20 clients"),
    _calls("http", "elicit", "legacy", concurrent=True, title="HTTP elicit, legacy, 20 clients"),
    _calls("http", "echo", "2026-07-28", concurrent=True, title="HTTP echo, 2026, 20 clients"),
    _calls(
        "http",
        "elicit",
        "2026-07-28",
        concurrent=True,
        title="HTTP elicit, 2026 (MRTR), 20 clients",
    ),
    _calls("inproc", "elicit", "legacy", burst=True, title="in-process elicit, legacy"),
    _calls("stdio", "elicit", "legacy", burst=True, title="stdio elicit"),
    _calls("http", "elicit", "legacy", burst=True, title="HTTP elicit, legacy", notes=(POOL_NOTE,)),
    _calls("http", "elicit", "2026-07-28", burst=True, title="HTTP elicit, 2026 (MRTR)"),
    Scenario("memory-http-session", "memory: server RSS per idle legacy HTTP session", "memory"),
    Scenario(
        "forms-check-10",
        "forms: parse a 10-field form and check an answer",
        "library",
        operation="form",
        notes=(LIBRARY_NOTE,),
    ),
    Scenario(
        "urls-verdict",
        "URL verdict (judge_url over 8 mixed URLs)",
        "library",
        operation="url",
        notes=(LIBRARY_NOTE,),
    ),
)


def select(patterns: list[str] | None) -> list[Scenario]:
    """The scenarios whose id starts with one of ``patterns`` (all when none given)."""
    if not patterns:
        return list(SCENARIOS)
    return [s for s in SCENARIOS if any(s.id.startswith(p) for p in patterns)]


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass
class Servers:
    """The long-lived HTTP servers the HTTP call scenarios talk to (one per side)."""

    urls: dict[Side, str] = field(default_factory=dict[Side, str])
    pids: dict[Side, int] = field(default_factory=dict[Side, int])


async def run_scenarios(
    scenarios: list[Scenario], config: Config, servers: Servers
) -> list[dict[str, Any]]:
    """Measure ``scenarios`` with their rounds interleaved (round 1 of each, then round 2
    of each, ...); their JSON results, in order.

    Scenarios compared with each other (2026-07-28 HTTP against legacy HTTP) run this
    way, so that the machine's drift over the minutes a scenario takes hits both alike.
    """
    progress = [_Progress(scenario) for scenario in scenarios]
    for number in range(1, max(scenario.rounds(config) for scenario in scenarios) + 1):
        for each in progress:
            if number <= each.scenario.rounds(config):
                await each.round(number, config, servers)
    return [each.result(config) for each in progress]


class _Progress:
    """One scenario's rounds so far, side by side.

    A side that fails or runs out of time is recorded with its error (and not retried in
    later rounds), so one unsupported combination does not cost the rest of the run.
    """

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.rounds: dict[Side, list[dict[str, float]]] = {side: [] for side in scenario.sides}
        self.errors: dict[Side, str] = {}

    async def round(self, number: int, config: Config, servers: Servers) -> None:
        scenario, errors = self.scenario, self.errors
        for side in scenario.sides:
            if side in errors:
                continue
            began = time.perf_counter()
            where = f"  {scenario.id} round {number} {side}"
            sample: dict[str, float] = {}
            with anyio.move_on_after(config.timeout) as limit:
                try:
                    sample = await _measure(scenario, side, config, servers)
                except Exception as exc:
                    errors[side] = describe(exc)
            if limit.cancel_called:
                # Whatever the cancelled side raised on its way out, the time ran out.
                errors[side] = f"did not finish within {config.timeout:g} s"
            if side in errors:
                log(f"{where}: FAILED after {time.perf_counter() - began:.1f} s: {errors[side]}")
                continue
            self.rounds[side].append(sample)
            headline = _headline(scenario, sample)
            spent = time.perf_counter() - began
            log(f"{where}: {headline:.1f} {scenario.metric} ({spent:.1f} s)")

    def result(self, config: Config) -> dict[str, Any]:
        scenario = self.scenario
        result: dict[str, Any] = {
            "id": scenario.id,
            "title": scenario.title_for(config),
            "metric": scenario.metric,
            "better": scenario.better,
            "notes": list(scenario.notes),
        }
        for side in scenario.sides:
            samples = self.rounds[side]
            if side in self.errors:
                result[side] = {"median": None, "error": self.errors[side], "rounds": samples}
                continue
            result[side] = {
                "median": median([_headline(scenario, s) for s in samples]),
                **{f"median_{key}": median([s[key] for s in samples]) for key in samples[0]},
                "rounds": samples,
            }
        ours = result["answerback"]["median"]
        theirs = result["official"]["median"] if "official" in result else None
        result["ratio"] = ours / theirs if ours and theirs else None
        if scenario.floor:
            bottom = result["floor"]["median"]
            result["floor_ratio"] = ours / bottom if ours and bottom else None
        return result


def describe(exc: BaseException) -> str:
    """The innermost error of ``exc`` (unwrapping exception groups) as one line."""
    children: tuple[BaseException, ...] = getattr(exc, "exceptions", ())
    while children:
        exc = children[0]
        children = getattr(exc, "exceptions", ())
    first_line = (str(exc).splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first_line}"[:300] if first_line else type(exc).__name__


def _headline(scenario: Scenario, sample: dict[str, float]) -> float:
    key = {
        "calls": "calls_per_s",
        "library": "calls_per_s",
        "startup": "ms",
        "memory": "kib_per_session",
    }[scenario.kind]
    return sample[key]


async def _measure(
    scenario: Scenario, side: Side, config: Config, servers: Servers
) -> dict[str, float]:
    if scenario.kind == "startup":
        assert side != "floor"
        statement = ENTRY_POINTS[scenario.entry_point][side]
        seconds = [
            await anyio.to_thread.run_sync(import_seconds, statement)
            for _ in range(config.import_repetitions)
        ]
        return {"ms": median(seconds) * 1000, "best_ms": min(seconds) * 1000}
    if scenario.kind == "memory":
        assert side != "floor"
        return await rss_per_session(side, config.sessions)
    if scenario.kind == "library":
        assert side == "answerback"
        assert scenario.operation is not None
        timed = library.operation(scenario.operation)
        ops = await sequential(timed, duration=config.duration, warmup=config.warmup_calls)
        return ops.summary()
    async with _callers(scenario, side, config, servers) as (calls, server_pid):
        cpu = cpu_reading(server_pid)
        warmup = config.warmup_calls
        run: Run
        if scenario.burst:
            run = await burst(calls[0], config.burst_calls, warmup=warmup, cpu=cpu)
        elif scenario.concurrent:
            run = await concurrent(calls, duration=config.duration, warmup=warmup, cpu=cpu)
        else:
            run = await sequential(calls[0], duration=config.duration, warmup=warmup, cpu=cpu)
    return run.summary()


@asynccontextmanager
async def _callers(
    scenario: Scenario, side: Side, config: Config, servers: Servers
) -> AsyncGenerator[tuple[list[Call], int | None], None]:
    """One connected ``Call`` per client of ``scenario`` on ``side``, and the process id
    of the server they call (``None`` in-process: the server runs in this process)."""
    transport = scenario.transport
    assert transport is not None
    count = config.concurrency if scenario.concurrent else 1
    pick: Callable[[Any], Call] = (
        (lambda s: s.echo) if scenario.call == "echo" else (lambda s: s.elicit)
    )
    before = child_pids()
    async with AsyncExitStack() as stack:
        calls: list[Call]
        if side == "floor":
            calls = await stack.enter_async_context(
                floor.floor_calls(
                    transport,
                    scenario.call,
                    scenario.mode,
                    url=servers.urls.get("floor"),
                    clients=count,
                    calls_at_once=config.burst_calls if scenario.burst else 1,
                )
            )
        else:
            calls = []
            for _ in range(count):
                session = await stack.enter_async_context(
                    connect(side, transport, scenario.mode, servers.urls.get(side))
                )
                calls.append(pick(session))
        yield calls, server_pid_of(transport, side, servers, before)


def server_pid_of(
    transport: Transport, side: Side, servers: Servers, children_before: set[int]
) -> int | None:
    """The process id of the server a side's clients call: the side's HTTP server, the
    one child started since ``children_before`` over stdio, ``None`` in-process."""
    if transport == "http":
        return servers.pids[side]
    if transport == "stdio":
        started = child_pids() - children_before
        if len(started) != 1:
            raise RuntimeError(
                f"expected the stdio client to start one server process, found {started or 'none'}:"
                " CPU per call needs the server's process, so run nothing else from the "
                "benchmark's process while it measures"
            )
        return started.pop()
    return None


def warm_up_startup() -> None:
    """Compile bytecode for the start-up scenarios before any timed import."""
    warm_bytecode()
