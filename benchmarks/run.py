"""Run the benchmark suite: ``python -m benchmarks.run [--quick] [--only ID ...]``.

Writes the results as JSON (``benchmarks/results/latest.json`` by default), regenerates
the table in ``benchmarks/README.md`` and prints it.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import Any

import anyio

from benchmarks.config import FULL, QUICK, Config
from benchmarks.goals import GOALS
from benchmarks.procs import http_server, server_script
from benchmarks.report import machine, tables, update_readme
from benchmarks.scenarios import (
    Scenario,
    Servers,
    Side,
    log,
    run_scenarios,
    select,
    warm_up_startup,
)

HERE = Path(__file__).resolve().parent
DEFAULT_OUTPUT = HERE / "results" / "latest.json"
DEFAULT_README = HERE / "README.md"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run",
        description="answerback vs the official MCP SDK, side by side, with floors.",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run (under a minute)")
    parser.add_argument("--rounds", type=int, help="alternating rounds per scenario")
    parser.add_argument("--duration", type=float, help="seconds per timed run")
    parser.add_argument(
        "--only", nargs="+", metavar="ID", help="run scenarios whose id starts with ID"
    )
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="JSON results file")
    parser.add_argument("--readme", type=Path, default=DEFAULT_README, help="README to update")
    parser.add_argument("--no-readme", action="store_true", help="leave the README alone")
    return parser.parse_args(argv)


async def run_all(scenarios: list[Scenario], config: Config) -> list[dict[str, Any]]:
    """Every scenario in order; the HTTP servers live for as long as they are needed."""
    results: list[dict[str, Any]] = []
    if any(s.kind == "startup" for s in scenarios):
        await anyio.to_thread.run_sync(warm_up_startup)
    with ExitStack() as stack:
        servers = Servers()
        if any(s.kind == "calls" and s.transport == "http" for s in scenarios):
            sides: tuple[tuple[Side, str], ...] = (
                ("answerback", "answerback_server"),
                ("official", "official_server"),
                ("floor", "floor_http"),
            )
            for side, script in sides:
                server = stack.enter_context(http_server(server_script(script)))
                servers.urls[side], servers.pids[side] = server.url, server.pid
        for group in _interleaved(scenarios):
            for scenario in group:
                log(f"{scenario.id}: {scenario.title}")
            results.extend(await run_scenarios(group, config, servers))
    order = {scenario.id: position for position, scenario in enumerate(scenarios)}
    return sorted(results, key=lambda result: order[result["id"]])


def _interleaved(scenarios: list[Scenario]) -> list[list[Scenario]]:
    """The scenarios in groups to run together: a goal's two scenarios (2026-07-28 ÷
    legacy) in one group, at the first one's place, every other scenario alone."""
    partner = {goal.scenario: goal.versus for goal in GOALS if goal.versus is not None}
    partner.update({versus: scenario for scenario, versus in list(partner.items())})
    by_id = {scenario.id: scenario for scenario in scenarios}
    groups: list[list[Scenario]] = []
    placed: set[str] = set()
    for scenario in scenarios:
        if scenario.id in placed:
            continue
        group = [scenario]
        other = by_id.get(partner.get(scenario.id, ""))
        if other is not None:
            group.append(other)
        placed.update(member.id for member in group)
        groups.append(group)
    return groups


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    config = (QUICK if args.quick else FULL).with_overrides(
        rounds=args.rounds, duration=args.duration
    )
    scenarios = select(args.only)
    if not scenarios:
        print(f"no scenario id starts with any of {args.only}", file=sys.stderr)
        return 2
    began = time.perf_counter()
    measured = anyio.run(run_all, scenarios, config, backend="asyncio")
    results: dict[str, Any] = {
        "command": shlex.join(["python", "-m", "benchmarks.run", *(argv or sys.argv[1:])]),
        "machine": machine(),
        "config": asdict(config),
        "seconds": time.perf_counter() - began,
        "scenarios": measured,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(results, indent=2) + "\n")
    if not args.no_readme:
        update_readme(args.readme, results)
    print(tables(results))
    print(f"\n{len(measured)} scenarios in {results['seconds']:.0f} s; results in {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
