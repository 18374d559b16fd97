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
from benchmarks.procs import http_server, server_script
from benchmarks.report import machine, tables, update_readme
from benchmarks.scenarios import Scenario, Servers, Side, log, run_scenario, select, warm_up_startup

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
                servers.urls[side] = stack.enter_context(http_server(server_script(script))).url
        for scenario in scenarios:
            log(f"{scenario.id}: {scenario.title}")
            results.append(await run_scenario(scenario, config, servers))
    return results


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
