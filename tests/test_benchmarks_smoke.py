"""Smoke test of the benchmark suite: ``--quick`` measures every scenario once.

No timing is asserted (the numbers of a quick run on a shared machine mean nothing);
the test checks that every scenario of issues 6 and 17 ran on every side and produced
positive numbers, CPU time per call included (in the server's own process where it has
one). It runs the official SDK as the comparison peer, hence the ``interop`` mark.
The rows of answerback's own features (forms, URL verdicts) have no official side.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent

EXPECTED = {
    "startup-client": False,
    "startup-server": False,
    "inproc-echo-legacy": True,
    "inproc-elicit-legacy": True,
    "inproc-elicit-2026": True,
    "stdio-echo-legacy": True,
    "stdio-elicit-legacy": True,
    "http-echo-legacy": True,
    "http-elicit-legacy": True,
    "http-echo-2026": True,
    "http-elicit-2026": True,
    "http-echo-legacy-c20": True,
    "http-elicit-legacy-c20": True,
    "http-echo-2026-c20": True,
    "http-elicit-2026-c20": True,
    "inproc-elicit-legacy-burst": True,
    "stdio-elicit-legacy-burst": True,
    "http-elicit-legacy-burst": True,
    "http-elicit-2026-burst": True,
    "memory-http-session": False,
    "forms-check-10": False,
    "urls-verdict": False,
}
"""Scenario id -> whether it has a floor (a hand-written JSON-RPC client and server) beside it."""

ANSWERBACK_ONLY = {"forms-check-10", "urls-verdict"}
"""Scenarios with nothing to compare in the official SDK: answerback is measured alone."""


def cpu_problems(scenario: dict[str, Any]) -> list[str]:
    """What is missing from a call scenario's CPU time per call: every side has its
    client's, and its server's unless the server ran in the benchmark's process."""
    in_process = scenario["id"].startswith("inproc-")
    problems: list[str] = []
    for side in ("answerback", "official", "floor"):
        measured = scenario[side]
        if "error" in measured:
            continue  # reported with the failures already
        if not measured.get("median_client_cpu_us", 0) > 0:
            problems.append(f"{scenario['id']} {side}: no client CPU per call")
        server_cpu = measured.get("median_server_cpu_us")
        if in_process and server_cpu is not None:
            problems.append(f"{scenario['id']} {side}: server CPU apart from the client's")
        if not in_process and not (server_cpu is not None and server_cpu > 0):
            problems.append(f"{scenario['id']} {side}: no server CPU per call")
    return problems


@pytest.mark.interop
@pytest.mark.timeout(240)
def test_quick_run_measures_every_scenario(tmp_path: Path) -> None:
    output = tmp_path / "latest.json"
    readme = tmp_path / "README.md"
    command = [sys.executable, "-m", "benchmarks.run", "--quick"]
    subprocess.run(
        [*command, "--output", str(output), "--readme", str(readme)],
        cwd=ROOT,
        check=True,
        timeout=230,
        stdout=subprocess.DEVNULL,
    )
    results: dict[str, Any] = json.loads(output.read_text())
    by_id = {scenario["id"]: scenario for scenario in results["scenarios"]}
    # In the suite's order, though the scenarios a goal compares run interleaved.
    assert [scenario["id"] for scenario in results["scenarios"]] == list(EXPECTED)
    failures: list[str] = []
    for scenario_id, has_floor in EXPECTED.items():
        scenario = by_id[scenario_id]
        alone = scenario_id in ANSWERBACK_ONLY
        sides = ["answerback"] + ([] if alone else ["official"]) + (["floor"] if has_floor else [])
        assert ("floor" in scenario) == has_floor, scenario_id
        assert ("official" in scenario) != alone, scenario_id
        for side in sides:
            measured = scenario[side]
            if "error" in measured:
                failures.append(f"{scenario_id} {side}: {measured['error']}")
            elif not (measured["median"] > 0 and measured["rounds"]):
                failures.append(f"{scenario_id} {side}: no positive number ({measured})")
        if not alone and not any(f.startswith(f"{scenario_id} ") for f in failures):
            assert scenario["ratio"] > 0, scenario_id
        if has_floor:
            failures += cpu_problems(scenario)
    assert not failures, "\n".join(failures)
    text = readme.read_text()
    assert "answerback/official" in text
    assert "CPU per call" in text
    assert results["machine"]["uname"]
