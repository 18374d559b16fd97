"""The targets of issue 17 (answerback within reach of a hand-written JSON-RPC path),
checked against one run's medians.

Most targets are answerback ÷ floor on one scenario; one compares answerback with itself
(2026-07-28 HTTP against legacy HTTP). A target whose scenarios did not run (``--only``)
is left out of the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Goal:
    """answerback on ``scenario`` ÷ the floor (or ÷ answerback on ``versus``) ≥ ``minimum``."""

    title: str
    scenario: str
    minimum: float
    versus: str | None = None

    def measured(self, by_id: dict[str, dict[str, Any]]) -> float | None:
        """The run's value for this goal (a ratio of medians); None when not measured."""
        sides = self._sides(by_id)
        ours, theirs = (side["median"] for side in sides) if sides else (None, None)
        return ours / theirs if ours and theirs else None

    def per_round(self, by_id: dict[str, dict[str, Any]]) -> list[float]:
        """The same ratio round by round: both sides of a round ran back to back, so the
        spread shows how much of a miss the machine's drift could explain."""
        sides = self._sides(by_id)
        if sides is None:
            return []
        ours, theirs = (_calls_per_s(side) for side in sides)
        return [mine / bottom for mine, bottom in zip(ours, theirs, strict=False) if bottom]

    def _sides(self, by_id: dict[str, dict[str, Any]]) -> tuple[dict[str, Any], ...] | None:
        """answerback's results on ``scenario`` and those it is divided by (the floor's,
        or answerback's on ``versus``); None unless both ran."""
        scenario = by_id.get(self.scenario)
        other = scenario if self.versus is None else by_id.get(self.versus)
        if scenario is None or other is None:
            return None
        ours = scenario.get("answerback")
        theirs = other.get("floor" if self.versus is None else "answerback")
        return (ours, theirs) if ours and theirs else None

    @property
    def target(self) -> str:
        against = "floor" if self.versus is None else "legacy"
        return f"≥ {self.minimum:.2f}x {against}"


def _calls_per_s(side: dict[str, Any]) -> list[float]:
    rounds: list[dict[str, float]] = side.get("rounds", [])
    return [sample["calls_per_s"] for sample in rounds]


def _of_floor(title: str, scenario: str, minimum: float) -> Goal:
    return Goal(f"{title} ÷ floor", scenario, minimum)


GOALS: tuple[Goal, ...] = (
    _of_floor("in-process echo", "inproc-echo-legacy", 0.67),
    _of_floor("stdio echo", "stdio-echo-legacy", 0.67),
    _of_floor("HTTP echo, legacy", "http-echo-legacy", 0.75),
    _of_floor("HTTP echo, 2026", "http-echo-2026", 0.75),
    _of_floor("HTTP echo, legacy, 20 clients", "http-echo-legacy-c20", 0.75),
    _of_floor("HTTP echo, 2026, 20 clients", "http-echo-2026-c20", 0.75),
    Goal("HTTP echo: 2026 ÷ legacy", "http-echo-2026", 1.0, versus="http-echo-legacy"),
    Goal(
        "HTTP echo, 20 clients: 2026 ÷ legacy",
        "http-echo-2026-c20",
        1.0,
        versus="http-echo-legacy-c20",
    ),
    _of_floor("in-process elicit, legacy", "inproc-elicit-legacy", 0.5),
    _of_floor("in-process elicit, 2026 (MRTR)", "inproc-elicit-2026", 0.5),
    _of_floor("stdio elicit", "stdio-elicit-legacy", 0.5),
    _of_floor("HTTP elicit, legacy", "http-elicit-legacy", 0.5),
    _of_floor("HTTP elicit, 2026 (MRTR)", "http-elicit-2026", 0.5),
    _of_floor("HTTP elicit, legacy, 20 clients", "http-elicit-legacy-c20", 0.5),
    _of_floor("HTTP elicit, 2026 (MRTR), 20 clients", "http-elicit-2026-c20", 0.5),
)


def goal_table(scenarios: list[dict[str, Any]]) -> str:
    """The Markdown table of every goal whose scenarios ran ('' if none did)."""
    by_id = {scenario["id"]: scenario for scenario in scenarios}
    rows: list[str] = []
    met = 0
    for goal in GOALS:
        if goal.scenario not in by_id or (goal.versus and goal.versus not in by_id):
            continue
        value = goal.measured(by_id)
        verdict = "n/a" if value is None else "met" if value >= goal.minimum else "**not met**"
        met += verdict == "met"
        shown = "n/a" if value is None else f"{value:.2f}x"
        spread = goal.per_round(by_id) if value is not None else []
        rounds = f"{min(spread):.2f} to {max(spread):.2f}" if spread else "n/a"
        rows.append(f"| {goal.title} | {goal.target} | {shown} | {rounds} | {verdict} |")
    if not rows:
        return ""
    header = [
        f"Goals of issue 17 (answerback's median ÷ the floor's, same run): {met} of "
        f"{len(rows)} met. Each round's ratio (the two sides ran back to back) varies "
        "within the range shown.",
        "",
        "| goal | target | measured | rounds | verdict |",
        "|---|--:|--:|--:|---|",
    ]
    return "\n".join(header + rows)
