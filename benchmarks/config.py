"""How long and how often each measurement runs: the full run and the ``--quick`` smoke run."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True, slots=True)
class Config:
    """Counts and durations for one benchmark run."""

    quick: bool
    rounds: int
    """Alternating rounds per scenario (answerback, official, floor, answerback, ...)."""
    duration: float
    """Seconds of timed calls in one run of a throughput scenario."""
    warmup_calls: int
    """Untimed calls per client before the clock starts."""
    concurrency: int
    """Clients calling at once in the concurrent HTTP scenarios."""
    burst_calls: int
    """Eliciting calls started at once from one client in the burst scenarios."""
    burst_rounds: int
    """Alternating rounds of the burst scenarios (each round is one burst per side)."""
    timeout: float
    """Seconds one side's measurement may take (connecting included) before it is
    recorded as failed, so a side that cannot cope never stalls the run."""
    import_repetitions: int
    """Fresh interpreters per implementation and entry point in the start-up scenarios."""
    sessions: int
    """Idle legacy HTTP sessions opened in the memory scenario."""

    def with_overrides(self, *, rounds: int | None, duration: float | None) -> Config:
        """This config with ``rounds`` (the bursts' too) and ``duration`` replaced where given."""
        return replace(
            self,
            rounds=self.rounds if rounds is None else rounds,
            burst_rounds=self.burst_rounds if rounds is None else rounds,
            duration=self.duration if duration is None else duration,
        )


FULL = Config(
    quick=False,
    rounds=5,  # medians of three swung by a sixth between back-to-back runs of one row
    duration=1.5,
    warmup_calls=30,
    concurrency=20,
    burst_calls=1000,
    burst_rounds=2,
    timeout=60.0,
    import_repetitions=7,
    sessions=200,
)

QUICK = Config(
    quick=True,
    rounds=1,
    duration=0.2,
    warmup_calls=3,
    concurrency=20,
    burst_calls=50,
    burst_rounds=1,
    timeout=30.0,
    import_repetitions=2,
    sessions=20,
)
