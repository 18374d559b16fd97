"""The goal table of ``make bench`` (``benchmarks/goals.py``), from made-up results."""

from __future__ import annotations

from typing import Any

from benchmarks.goals import goal_table


def _side(*calls_per_s: float) -> dict[str, Any]:
    ordered = sorted(calls_per_s)
    return {
        "median": ordered[len(ordered) // 2],
        "rounds": [{"calls_per_s": value} for value in calls_per_s],
    }


def test_a_goal_shows_its_median_ratio_and_the_spread_of_its_rounds() -> None:
    stdio: dict[str, Any] = {
        "id": "stdio-echo-legacy",
        "answerback": _side(300, 700, 600),
        "floor": _side(1000, 1000, 750),
        "floor_ratio": 600 / 1000,
    }
    legacy = {"id": "http-echo-legacy", "answerback": _side(100, 200, 300)}
    # Its floor failed: the ratio to it is n/a.
    modern = {"id": "http-echo-2026", "answerback": _side(150, 150, 150), "floor_ratio": None}

    table = goal_table([stdio, legacy, modern]).splitlines()

    assert table[0].startswith(
        "Goals of issue 17 (answerback's median ÷ the floor's, same run): 0 of 4 met."
    )
    assert "| stdio echo ÷ floor | ≥ 0.67x floor | 0.60x | 0.30 to 0.80 | **not met** |" in table
    # 2026 against legacy pairs each 2026 round with the legacy round run beside it.
    versus = "| HTTP echo: 2026 ÷ legacy | ≥ 1.00x legacy | 0.75x | 0.50 to 1.50 | **not met** |"
    assert versus in table
    assert "| HTTP echo, 2026 ÷ floor | ≥ 0.75x floor | n/a | n/a | n/a |" in table


def test_no_goal_ran_no_table() -> None:
    assert goal_table([{"id": "forms-check-10", "answerback": _side(5)}]) == ""
