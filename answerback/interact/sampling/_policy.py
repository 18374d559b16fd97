"""``SamplingPolicy``: which servers may sample, how often, and how many tokens.

Sampling spends the host's money on a server's behalf, and a server that loops can
spend a lot of it. The policy answers before anyone is asked or any model runs: is this
server allowed at all, is it within its rate (requests per sliding window) and its token
budget, and how many tokens may this one request ask for. Limits are kept per server, so
one greedy server cannot exhaust another's allowance.

The choices, and why:

- A request above the ``max_tokens`` cap is *capped*, not refused: the specification
  lets the client change a request before running it, and a shorter answer is more
  useful to a server than none. The audit log records both numbers.
- The budget counts the ``maxTokens`` granted (after the cap) of every request that was
  answered: that is known before the model runs, bounds what the answer can cost, and
  does not depend on a provider reporting usage (MCP's result carries none). A request
  whose grant does not fit in what is left is refused. A grant is held while the request
  is in flight and given back if it ends unanswered (refused, or the model failed).
- The rate limit counts every request admitted, answered or not: asking the person
  also costs their attention.

Refusals are ``SamplingRefused`` carrying the ``ErrorData`` the server receives.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import cast

from answerback._options import instance_or_none, positive_int_or_none, positive_seconds, strings
from answerback.types import CreateMessageRequestParams, ErrorData

SERVER_NOT_ALLOWED = -32030
"""The server is not on the allow-list for sampling (answerback's own code, in JSON-RPC's
range for implementation-defined errors, -32000 to -32099)."""
MODEL_NOT_ALLOWED = -32031
"""No model of the catalogue is on the allow-list of models."""
RATE_LIMITED = -32032
"""The server sent more sampling requests than its rate allows; ``data.retryAfterSeconds``
says when one fits again."""
BUDGET_EXHAUSTED = -32033
"""The request's ``maxTokens`` does not fit in what is left of the server's token budget."""


class SamplingRefused(Exception):
    """A sampling request the policy will not run; ``error`` goes back to the server."""

    def __init__(self, error: ErrorData) -> None:
        super().__init__(error.message)
        self.error = error


@dataclass(frozen=True)
class Limits:
    """The limits for one server (``None``: no limit of that kind).

    - ``max_tokens``: the most ``maxTokens`` one request is granted; more is capped.
    - ``requests`` per ``window_seconds``: the rate, over a sliding window.
    - ``token_budget``: the sum of ``maxTokens`` granted to answered requests, for the
      life of the policy.

    Each is checked: a count that is not a positive ``int`` (``True`` is not one) or
    ``None``, or a window that is not a positive, finite number of seconds, is refused.
    """

    max_tokens: int | None = None
    requests: int | None = None
    window_seconds: float = 60.0
    token_budget: int | None = None

    def __post_init__(self) -> None:
        for name, unit in (
            ("max_tokens", "tokens"),
            ("requests", "requests per window"),
            ("token_budget", "tokens"),
        ):
            positive_int_or_none(f"Limits.{name}", getattr(self, name), unit, "no limit")
        positive_seconds("Limits.window_seconds", self.window_seconds)


@dataclass(eq=False)
class Grant:
    """A request the policy admitted: the parameters to run (``maxTokens`` capped) and
    the tokens held against the server's budget until ``settle`` is called."""

    server: str
    params: CreateMessageRequestParams
    requested_max_tokens: int
    settled: bool = field(default=False, init=False)

    @property
    def max_tokens(self) -> int:
        """The ``maxTokens`` granted: the request's, or the cap if lower."""
        return self.params.max_tokens

    @property
    def capped(self) -> bool:
        """Whether the cap lowered the request's ``maxTokens``."""
        return self.max_tokens < self.requested_max_tokens


@dataclass
class _Account:
    admitted: deque[float] = field(default_factory=deque[float])
    spent: int = 0
    held: int = 0


class SamplingPolicy:
    """Allow-lists and per-server limits for sampling (see the module for the choices).

    ``limits`` apply to every server, ``per_server`` replaces them for the servers it
    names. ``servers`` and ``models`` are allow-lists (``None`` allows all). ``clock``
    returns seconds (``time.monotonic``); tests pass their own.

    Refused when given (``TypeError``): ``limits`` that are not a ``Limits``, a
    ``per_server`` that is not a dict of server names to ``Limits``, allow-lists that are
    not lists of strings (one string is not a list of its letters), a ``clock`` that
    cannot be called.
    """

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        per_server: Mapping[str, Limits] | None = None,
        servers: Collection[str] | None = None,
        models: Collection[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = instance_or_none("limits", limits, Limits, "Limits(...)") or Limits()
        self.per_server = _per_server(per_server)
        self.servers = (
            frozenset(strings("servers", servers, "the servers allowed", example="['github']"))
            if servers is not None
            else None
        )
        self.models = (
            frozenset(strings("models", models, "the models allowed", example="['gpt-4o']"))
            if models is not None
            else None
        )
        if not callable(clock):
            raise TypeError(f"clock must be a function returning seconds, got {clock!r}")
        self._clock = clock
        self._accounts: dict[str, _Account] = {}

    def __repr__(self) -> str:
        def listed(names: frozenset[str] | None) -> list[str] | None:
            return sorted(names) if names is not None else None

        return (
            f"SamplingPolicy(limits={self.limits!r}, per_server={self.per_server!r}, "
            f"servers={listed(self.servers)!r}, models={listed(self.models)!r})"
        )

    def limits_for(self, server: str) -> Limits:
        """The limits that apply to ``server``."""
        return self.per_server.get(server, self.limits)

    def allows_server(self, server: str) -> bool:
        """Whether ``server`` may sample at all."""
        return self.servers is None or server in self.servers

    def remaining_budget(self, server: str) -> int | None:
        """Tokens ``server`` may still be granted (``None``: no budget)."""
        budget = self.limits_for(server).token_budget
        if budget is None:
            return None
        account = self._accounts.get(server, _Account())
        return max(0, budget - account.spent - account.held)

    def admit(self, server: str, params: CreateMessageRequestParams) -> Grant:
        """Admit one request from ``server`` or raise ``SamplingRefused``: the server is
        allowed, within its rate and budget; ``maxTokens`` is capped to the limit."""
        if not self.allows_server(server):
            raise SamplingRefused(
                ErrorData(
                    code=SERVER_NOT_ALLOWED,
                    message=f"Sampling refused: server {server!r} is not allowed to sample on "
                    "this client (the host's allow-list of servers does not name it).",
                    data={"reason": "server_not_allowed"},
                )
            )
        limits = self.limits_for(server)
        account = self._accounts.setdefault(server, _Account())
        now = self._clock()
        if limits.requests is not None:
            while account.admitted and account.admitted[0] <= now - limits.window_seconds:
                account.admitted.popleft()
            if len(account.admitted) >= limits.requests:
                retry = account.admitted[0] + limits.window_seconds - now
                raise SamplingRefused(
                    ErrorData(
                        code=RATE_LIMITED,
                        message=f"Sampling refused: rate limit reached ({limits.requests} "
                        f"request{'s' if limits.requests != 1 else ''} per "
                        f"{limits.window_seconds:g} s for {server!r}); "
                        f"retry in {retry:.1f} s.",
                        data={"reason": "rate_limited", "retryAfterSeconds": retry},
                    )
                )
        granted = params.max_tokens
        if limits.max_tokens is not None:
            granted = min(granted, limits.max_tokens)
        remaining = self.remaining_budget(server)
        if remaining is not None and granted > remaining:
            raise SamplingRefused(
                ErrorData(
                    code=BUDGET_EXHAUSTED,
                    message=f"Sampling refused: token budget exhausted for {server!r} "
                    f"({remaining} of {limits.token_budget} tokens left; this request "
                    f"needs maxTokens {granted}). Ask for fewer tokens, or ask the host "
                    "to raise the budget.",
                    data={
                        "reason": "budget_exhausted",
                        "remainingTokens": remaining,
                        "maxTokens": granted,
                    },
                )
            )
        account.admitted.append(now)
        account.held += granted
        capped = params.model_copy(update={"max_tokens": granted})
        return Grant(server, capped, params.max_tokens)

    def settle(self, grant: Grant, *, answered: bool) -> None:
        """End ``grant``: its tokens are spent if the request was ``answered``, else
        given back to the budget. Settling twice changes nothing."""
        if grant.settled:
            return
        grant.settled = True
        account = self._accounts[grant.server]
        account.held -= grant.max_tokens
        if answered:
            account.spent += grant.max_tokens


def _per_server(given: object) -> dict[str, Limits]:
    """``per_server`` as a new dict, if it maps server names to ``Limits``."""
    if given is None:
        return {}
    example = "{'github': Limits(requests=5)}"
    if not isinstance(given, Mapping):
        raise TypeError(
            f"per_server must be a dict of server names to Limits, such as {example}, got {given!r}"
        )
    checked: dict[str, Limits] = {}
    for server, limits in cast(Mapping[object, object], given).items():
        if not isinstance(server, str) or not isinstance(limits, Limits):
            raise TypeError(
                f"per_server must be a dict of server names to Limits, such as {example}, "
                f"got {server!r}: {limits!r} in it"
            )
        checked[server] = limits
    return checked
