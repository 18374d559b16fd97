"""What answers a server's questions for a person when no person is there.

A program that runs unattended (a scheduled job, a pipeline, a client whose stdin is
not a terminal) must still answer an elicitation, and must never make one up: an
invented "accept" is a decision nobody took. ``Headless`` answers by an explicit
policy, and always so that the server can tell it from a person's answer:

- ``"decline"`` / ``"cancel"``: that action, with the reason in the result's ``_meta``
  under ``answerback/headless`` (a person's answer never carries it);
- ``"fail"``: no answer at all, but an error (-32603) whose message and ``data`` give
  the reason, so the server's call fails instead of taking a refusal for a choice.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal, get_args

from answerback._options import text
from answerback.client._callbacks import ClientRequestContext
from answerback.client._responder import CallbackResponder, Responder, ResponderWrapper
from answerback.types import (
    ClientCapabilities,
    ElicitationCapability,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
)
from answerback.types._errors import INTERNAL_ERROR

HeadlessPolicy = Literal["decline", "cancel", "fail"]
ElicitationMode = Literal["form", "url"]

HEADLESS_META = "answerback/headless"
"""The ``_meta`` key (of a result) or ``data`` key (of an error) that marks an answer
given by policy, not by a person: ``{"policy": ..., "reason": ...}``."""

DEFAULT_REASON = "nobody is present to answer (the client runs unattended)"


class Headless(ResponderWrapper):
    """Answers every elicitation by ``policy``; everything else goes to ``inner``.

    It declares elicitation in ``modes`` (both by default) so that servers ask and
    learn the policy, rather than failing on an undeclared capability; sampling and
    roots are whatever ``inner`` declares (nothing if there is no ``inner``).
    """

    def __init__(
        self,
        policy: HeadlessPolicy,
        *,
        reason: str = DEFAULT_REASON,
        inner: Responder | None = None,
        modes: Collection[ElicitationMode] = ("form", "url"),
    ) -> None:
        if policy not in get_args(HeadlessPolicy):
            raise ValueError(
                f"Unknown headless policy {policy!r}: use 'decline', 'cancel' or 'fail' "
                "(a policy never accepts on a person's behalf)."
            )
        unknown = set(modes) - set(get_args(ElicitationMode))
        if not modes or unknown:
            raise ValueError(f"modes must name 'form', 'url' or both; got {sorted(modes)!r}.")
        if not text("reason", reason, "why nobody answers; the server shows it").strip():
            raise ValueError("reason must say why nobody answers; the server shows it.")
        super().__init__(inner or CallbackResponder())
        self.policy: HeadlessPolicy = policy
        self.reason = reason
        self.modes = frozenset(modes)

    def __repr__(self) -> str:
        modes = sorted(self.modes)
        return (
            f"Headless({self.policy!r}, reason={self.reason!r}, modes={modes!r}, "
            f"inner={self.inner!r})"
        )

    def capabilities(self) -> ClientCapabilities:
        elicitation = ElicitationCapability(
            form={} if "form" in self.modes else None,
            url={} if "url" in self.modes else None,
        )
        return self.inner.capabilities().model_copy(update={"elicitation": elicitation})

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        marker = {HEADLESS_META: {"policy": self.policy, "reason": self.reason}}
        if self.policy == "fail":
            return ErrorData(
                code=INTERNAL_ERROR,
                message=f"No one can answer this question: {self.reason}.",
                data=marker,
            )
        return ElicitResult(action=self.policy, meta=marker)
