"""The conformance runner forgives a timed scenario only for being late under load.

A client leg starts every scenario at once, so a reconnect timed by ``sse-retry`` can be
late for reasons that have nothing to do with the client; the runner then runs that
scenario again alone (``TIMED_ALONE``). It must never forgive anything else: an early
reconnect, or any other failed check, stands. These tests hand ``only_late`` the suite's
``checks.json`` as it writes them.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

RUNNER = Path(__file__).resolve().parent.parent / "conformance" / "run.py"


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("conformance_run", RUNNER)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)  # its dataclasses look it up there
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "OUTPUT", tmp_path)
    return module


def timing(status: str, *, too_early: bool = False) -> dict[str, Any]:
    """The timing check as the suite writes it: a FAILURE past twice the delay (or
    before it), a WARNING when slightly late."""
    late = not too_early
    details = {
        "tooEarly": too_early,
        "slightlyLate": late,
        "veryLate": late and status == "FAILURE",
        "actualDelayMs": 1588 if late else 20,
    }
    return {"id": "client-sse-retry-timing", "status": status, "details": details}


def only_late(runner: ModuleType, *checks: dict[str, Any]) -> bool:
    """``only_late`` for one ``sse-retry`` run of the bare client leg with these checks."""
    leg = runner.Leg("client", None)
    run_dir = runner.OUTPUT / leg.name / "results" / "sse-retry-2026-12-02T17-00-00-000Z"
    run_dir.mkdir(parents=True)
    passed = {"id": "client-sse-graceful-reconnect", "status": "SUCCESS"}
    (run_dir / "checks.json").write_text(json.dumps([passed, *checks]))
    return bool(runner.only_late(runner.Outcome(leg, exit_code=1), "sse-retry"))


def test_late_past_the_very_late_line_is_run_again(runner: ModuleType) -> None:
    assert only_late(runner, timing("FAILURE"))


def test_slightly_late_is_run_again(runner: ModuleType) -> None:
    assert only_late(runner, timing("WARNING"))


def test_early_stands(runner: ModuleType) -> None:
    assert not only_late(runner, timing("FAILURE", too_early=True))


def test_a_timing_check_that_could_not_measure_stands(runner: ModuleType) -> None:
    """No reconnect time recorded: nothing says the client was late."""
    unmeasured: dict[str, Any] = {
        "id": "client-sse-retry-timing",
        "status": "WARNING",
        "details": {},
    }
    assert not only_late(runner, unmeasured)


def test_another_failed_check_stands(runner: ModuleType) -> None:
    missing_id: dict[str, Any] = {"id": "client-sse-last-event-id", "status": "WARNING"}
    assert not only_late(runner, timing("FAILURE"), missing_id)


def test_a_scenario_that_is_not_timed_stands(runner: ModuleType) -> None:
    leg = runner.Leg("client", None)
    assert not runner.only_late(runner.Outcome(leg, exit_code=1), "elicitation-defaults")
