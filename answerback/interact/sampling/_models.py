"""``ModelCatalogue``: which of the host's models answers a sampling request, and why.

A server cannot name the client's model: it sends ``modelPreferences``, hints (name
substrings, best first) and three priorities between 0 and 1 (cost, speed,
intelligence). The specification leaves the mapping to the client; this module makes it
deterministic and explainable. Hints are tried first, in the server's order; the first
hint that matches any model decides the candidates. The priorities then rank the
candidates by a weighted score, and a tie goes to the model listed first, so the
catalogue's order is the host's own preference. The choice carries a sentence saying
why, for the person approving the request and for the audit log.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import cast

from answerback._options import having_methods, text
from answerback.interact.sampling._provider import ModelProvider
from answerback.types import ModelPreferences


@dataclass(frozen=True)
class ModelInfo:
    """One model the host can run, scored from 0 to 1 on each axis a server may weigh.

    ``cost`` is how expensive it is (0 free, 1 the dearest you have); ``speed`` and
    ``intelligence`` are better when higher. Scores are relative to the rest of the
    catalogue, not absolute. ``name`` is what the provider calls the model (and what
    hints are matched against). A ``name`` that is not a string, a ``provider`` without
    ``create_message`` or a score that is not a number (``True`` is not one) is refused."""

    name: str
    provider: ModelProvider
    cost: float = 0.5
    speed: float = 0.5
    intelligence: float = 0.5

    def __post_init__(self) -> None:
        text("name", self.name, "the model's name, as its provider spells it")
        if not self.name:
            raise ValueError("A ModelInfo needs the model's name, as its provider spells it.")
        having_methods(
            "provider",
            self.provider,
            ("create_message",),
            "a ModelProvider (an object with async create_message(params, *, model)), such "
            "as OpenAIChatProvider(...)",
        )
        for axis in ("cost", "speed", "intelligence"):
            value: object = getattr(self, axis)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(
                    f"Model {self.name!r}: {axis} must be a number between 0 and 1, got {value!r}"
                )
            if not 0 <= value <= 1:
                raise ValueError(
                    f"Model {self.name!r}: {axis} must be between 0 and 1, not {value}."
                )


@dataclass(frozen=True)
class ModelChoice:
    """The model that answers, and a sentence saying why (shown to the person, logged)."""

    model: ModelInfo
    reason: str


class ModelCatalogue:
    """The models a host offers for sampling, in the host's order of preference."""

    def __init__(self, models: Sequence[ModelInfo]) -> None:
        """``TypeError`` unless ``models`` is a list of ``ModelInfo`` (one model is
        written ``[ModelInfo(...)]``); ``ValueError`` if it is empty or repeats a name."""
        if isinstance(cast(object, models), str | bytes | ModelInfo) or not isinstance(
            cast(object, models), Collection
        ):
            raise TypeError(
                "models must be a list of ModelInfo, such as [ModelInfo('gpt-4o', provider)], "
                f"got {models!r}"
            )
        for model in models:
            if not isinstance(cast(object, model), ModelInfo):
                raise TypeError(
                    "models must be a list of ModelInfo, such as "
                    f"[ModelInfo('gpt-4o', provider)], got {model!r} in it"
                )
        if not models:
            raise ValueError("A ModelCatalogue needs at least one model to choose from.")
        names = [model.name for model in models]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"Each model name may appear once; repeated: {', '.join(duplicates)}.")
        self.models = tuple(models)

    def choose(
        self, preferences: ModelPreferences | None, *, allowed: Collection[str] | None = None
    ) -> ModelChoice:
        """The model for a request with these ``preferences``, among the ``allowed``
        names (all when ``None``).

        Hints are matched first, in order, as case-insensitive substrings of model
        names; the first hint that matches decides the candidates (all models when
        none does). Among the candidates the highest score wins, where the score is
        ``costPriority * (1 - cost) + speedPriority * speed + intelligencePriority *
        intelligence``; on a tie, the one listed first. Raises ``LookupError`` when
        ``allowed`` leaves no model."""
        models = [m for m in self.models if allowed is None or m.name in allowed]
        if not models:
            raise LookupError(
                f"None of the catalogue's models ({', '.join(m.name for m in self.models)}) "
                "is allowed: add one to the allowed models."
            )
        preferences = preferences or ModelPreferences()
        candidates, because = _hinted(models, preferences)
        if len(candidates) == 1:
            return ModelChoice(candidates[0], f"{candidates[0].name!r} {because}.")
        weights = _weights(preferences)
        scores = [_score(model, weights) for model in candidates]
        best = max(range(len(candidates)), key=lambda i: (scores[i], -i))
        winner = candidates[best]
        if not any(weights):
            ranking = "the server set no priorities, so the first listed wins"
        else:
            others = sorted(
                (i for i in range(len(candidates)) if i != best), key=lambda i: -scores[i]
            )
            runner_up = candidates[others[0]]
            tie = scores[others[0]] == scores[best]
            ranking = (
                f"it scores {scores[best]:.2f} on the priorities ({_priorities(weights)}); "
                f"{runner_up.name!r} scores {scores[others[0]]:.2f}"
                + (", a tie broken by catalogue order" if tie else "")
            )
        return ModelChoice(winner, f"{winner.name!r} {because}; {ranking}.")


def _hinted(models: list[ModelInfo], preferences: ModelPreferences) -> tuple[list[ModelInfo], str]:
    hints = [hint.name for hint in preferences.hints or [] if hint.name]
    for position, hint in enumerate(hints, start=1):
        matching = [m for m in models if hint.casefold() in m.name.casefold()]
        if matching:
            of = f" (hint {position} of {len(hints)})" if len(hints) > 1 else ""
            return matching, f"matches the server's hint {hint!r}{of}"
    if hints:
        return models, f"was chosen as no model matches the hints {', '.join(map(repr, hints))}"
    return models, "was chosen as the server gave no hints"


def _weights(preferences: ModelPreferences) -> tuple[float, float, float]:
    return (
        preferences.cost_priority or 0.0,
        preferences.speed_priority or 0.0,
        preferences.intelligence_priority or 0.0,
    )


def _score(model: ModelInfo, weights: tuple[float, float, float]) -> float:
    cost, speed, intelligence = weights
    total = cost * (1 - model.cost) + speed * model.speed + intelligence * model.intelligence
    return round(total, 9)  # so that float noise cannot break a tie the scores declare


def _priorities(weights: tuple[float, float, float]) -> str:
    names = ("cost", "speed", "intelligence")
    return ", ".join(f"{name} {weight:g}" for name, weight in zip(names, weights, strict=True))
