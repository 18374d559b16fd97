"""``ModelSampler``: answers ``sampling/createMessage`` with a real model, under a policy.

One sampler serves every server a host is connected to: it holds the catalogue, the
policy, the audit log and the approval hook, and ``responder(server, inner)`` gives each
connection a ``SamplingResponder`` that answers sampling through it and hands everything
else (forms, links, roots, logs) to ``inner``. In order, a request (refused at once if
it has no messages) is:

1. given a model (``ModelCatalogue.choose``, restricted to the allowed models),
2. admitted by the policy (server allowed, rate, budget; ``maxTokens`` capped),
3. given the host's context when it asks for it and a context source is configured,
4. approved: by the ``approval`` hook, or else by ``inner`` when it answers sampling
   itself (a ``BrokerResponder``: the person sees the request on the broker's screen,
   and the screen's draft comes from ``ModelSampler.reply``),
5. run on the chosen model, and logged: one audit line when the request is admitted
   or refused, one for its outcome.

Without an approval hook or an ``inner`` that answers sampling, nobody would be asked;
that takes an explicit ``approval=approve_all``, for hosts that run unattended and trust
their policy.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, cast

from answerback._options import flag, instance_or_none, non_empty_text
from answerback.client import ClientRequestContext, Responder, ResponderWrapper
from answerback.client._callbacks import async_callable_or_none
from answerback.interact.sampling._audit import AuditLog
from answerback.interact.sampling._models import ModelCatalogue, ModelChoice
from answerback.interact.sampling._policy import (
    MODEL_NOT_ALLOWED,
    Grant,
    SamplingPolicy,
    SamplingRefused,
)
from answerback.interact.sampling._provider import SamplingProviderError
from answerback.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    USER_REJECTED,
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ErrorData,
    SamplingCapability,
    SamplingContextCapability,
    SamplingToolsCapability,
)
from answerback.types._sampling_rules import SamplingAnswerError, check_sampling_answer


@dataclass(frozen=True)
class SamplingRequest:
    """What an approval hook decides on: the request as it will run (``maxTokens``
    capped, context included), from ``server``, and the model chosen with its reason."""

    server: str
    params: CreateMessageRequestParams
    choice: ModelChoice
    requested_max_tokens: int


Approval = Callable[[SamplingRequest], Awaitable[bool]]
"""Asks whether a sampling request may run: ``True`` runs it, ``False`` is the person's
no (error -1 for the server)."""

ContextSource = Callable[[str, Literal["thisServer", "allServers"]], Awaitable[str]]
"""The host's context for a request that asks for it (``includeContext``): called with
the server's name and which context; the text returned is added to the system prompt."""


async def approve_all(request: SamplingRequest) -> bool:
    """Approve every request the policy admits: for a host nobody watches."""
    return True


REJECTED = "User rejected sampling request"
"""The specification's words for the person's no (code -1)."""


class ModelSampler:
    """Runs the catalogue's models for servers' sampling requests, under ``policy``
    (all allowed, no limits, when ``None``), asking ``approval`` (see the module for the
    order of things), logging to ``audit`` if given.

    ``tools``: the providers map ``tools``/``toolChoice``, so ``sampling.tools`` is
    declared. ``context``: where ``includeContext`` is answered from; only with it is
    ``sampling.context`` declared (without it the client refuses such requests).

    Each option is checked when given (``TypeError``): a ``catalogue`` that is not a
    ``ModelCatalogue`` (wrap a list of models in one), a ``policy`` or ``audit`` of
    another type (a path is not an ``AuditLog``), hooks that cannot be called or are a
    plain ``def`` (they are awaited), a ``tools`` that is not ``True`` or ``False``.
    """

    def __init__(
        self,
        catalogue: ModelCatalogue,
        *,
        policy: SamplingPolicy | None = None,
        audit: AuditLog | None = None,
        approval: Approval | None = None,
        context: ContextSource | None = None,
        tools: bool = False,
    ) -> None:
        if not isinstance(cast(object, catalogue), ModelCatalogue):
            raise TypeError(
                "catalogue must be a ModelCatalogue, such as "
                f"ModelCatalogue([ModelInfo('gpt-4o', provider)]), got {catalogue!r}"
            )
        self.catalogue = catalogue
        self.policy = (
            instance_or_none("policy", policy, SamplingPolicy, "SamplingPolicy(...)")
            or SamplingPolicy()
        )
        self.audit = instance_or_none("audit", audit, AuditLog, "AuditLog('audit.jsonl')")
        self.approval = async_callable_or_none(
            "approval", approval, "an async function of the SamplingRequest returning True to run"
        )
        self.context = async_callable_or_none(
            "context", context, "an async function (server, which) returning the context text"
        )
        self.tools = flag("tools", tools)
        self._numbers = itertools.count(1)

    def __repr__(self) -> str:
        models = [info.name for info in self.catalogue.models]
        approval = getattr(self.approval, "__qualname__", self.approval)
        return (
            f"ModelSampler(models={models!r}, policy={self.policy!r}, approval={approval}, "
            f"audit={self.audit!r}, tools={self.tools})"
        )

    def capability(self) -> SamplingCapability:
        """The sampling capability this sampler answers."""
        return SamplingCapability(
            tools=SamplingToolsCapability() if self.tools else None,
            context=SamplingContextCapability() if self.context is not None else None,
        )

    def responder(self, server: str, inner: Responder | None = None) -> SamplingResponder:
        """A responder for the connection to ``server`` (named as the policy and the
        audit log know it) that answers sampling here and the rest with ``inner``
        (``TypeError`` for a ``server`` that is not a string or an ``inner`` that is not
        a ``Responder``)."""
        non_empty_text("server", server, "the name the policy and the audit log know it by")
        inner = inner if inner is not None else _SamplingOnly()
        if not isinstance(cast(object, inner), Responder):
            raise TypeError(
                "inner must be a Responder (an object with capabilities(), elicit(), sample(), "
                "list_roots(), on_log() and on_notification(), such as a BrokerResponder) or "
                f"None, got {inner!r}"
            )
        asks_person = inner.capabilities().sampling is not None
        if self.approval is None and not asks_person:
            raise ValueError(
                f"Nobody would approve {server!r}'s sampling requests: give the ModelSampler "
                "an approval hook, or an inner responder that asks the person (a "
                "BrokerResponder); approval=approve_all runs them unasked."
            )
        return SamplingResponder(self, server, inner)

    def choose(self, params: CreateMessageRequestParams) -> ModelChoice:
        """The model for ``params`` among the allowed ones; ``SamplingRefused`` when
        the allow-list leaves none."""
        try:
            return self.catalogue.choose(params.model_preferences, allowed=self.policy.models)
        except LookupError as exc:
            raise SamplingRefused(
                ErrorData(
                    code=MODEL_NOT_ALLOWED,
                    message=f"Sampling refused: {exc}",
                    data={"reason": "model_not_allowed"},
                )
            ) from exc

    async def reply(self, params: CreateMessageRequestParams) -> CreateMessageResult:
        """Run ``params`` on the model chosen for them, as they are: the draft for
        ``TerminalPresenter(sampler=model_sampler.reply)`` (the policy was applied
        before the request reached the screen). Raises ``SamplingRefused``, or
        ``SamplingProviderError`` also for an answer that uses a tool the request did
        not let the model use."""
        return await self._run(self.choose(params), params)

    async def _run(
        self, choice: ModelChoice, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        """The chosen model's answer to ``params``, checked against the request's rules:
        the model's fault is the provider's (``SamplingProviderError``)."""
        name = choice.model.name
        answer = await choice.model.provider.create_message(params, model=name)
        try:
            check_sampling_answer(params, answer)
        except SamplingAnswerError as exc:
            raise SamplingProviderError(
                f"its answer broke the request's rules: {exc} Ask again, or offer the tool "
                "it wanted."
            ) from exc
        return answer

    async def answer(
        self,
        server: str,
        context: ClientRequestContext | None,
        params: CreateMessageRequestParams,
        person: Responder | None = None,
    ) -> CreateMessageResult | ErrorData:
        """Answer one request from ``server``, the whole way (see the module); without
        an approval hook, ``person`` (a responder that answers sampling) approves."""
        number = next(self._numbers)
        request_id = context.request_id if context is not None else None
        try:
            _check_conversation(params)
            choice = self.choose(params)
            grant = self.policy.admit(server, params)
        except SamplingRefused as refused:
            self._log(
                "request", server, number, requestId=request_id,
                outcome="refused", code=refused.error.code, message=refused.error.message,
                requestedMaxTokens=params.max_tokens,
            )  # fmt: skip
            return refused.error
        answer: CreateMessageResult | ErrorData | Exception | None = None
        endpoint: str | None = None
        try:
            run = await self._with_context(server, grant.params)
            self._log(
                "request", server, number, requestId=request_id, outcome="admitted",
                model=choice.model.name, why=choice.reason, maxTokens=grant.max_tokens,
                requestedMaxTokens=grant.requested_max_tokens, capped=grant.capped,
                messages=len(run.messages), tools=len(run.tools or []) or None,
                includeContext=params.include_context,
            )  # fmt: skip
            answer = await self._approved_answer(server, context, run, choice, grant, person)
            return answer
        except _ProviderFailed as failed:
            answer, endpoint = failed.error, failed.endpoint
            return answer
        except Exception as exc:  # logged as failed; a cancellation is "abandoned"
            answer = exc
            raise
        finally:
            answered = isinstance(answer, CreateMessageResult)
            self.policy.settle(grant, answered=answered)
            self._log_outcome(server, number, answer, grant, endpoint)

    async def _approved_answer(
        self,
        server: str,
        context: ClientRequestContext | None,
        params: CreateMessageRequestParams,
        choice: ModelChoice,
        grant: Grant,
        person: Responder | None,
    ) -> CreateMessageResult | ErrorData:
        if self.approval is None:
            if person is None or context is None:
                raise RuntimeError(
                    "This ModelSampler has no approval hook: answer through "
                    "responder(server, inner) with an inner that asks the person."
                )
            try:  # the person's screen drafts with ``reply``, which may fail the same way
                return await person.sample(context, params)
            except SamplingProviderError as exc:
                raise _ProviderFailed(choice, exc) from exc
        request = SamplingRequest(server, params, choice, grant.requested_max_tokens)
        if not await self.approval(request):
            return ErrorData(
                code=USER_REJECTED,
                message=f"{REJECTED} (the host's approval denied it).",
                data={"reason": "user_rejected"},
            )
        try:
            return await self._run(choice, params)
        except SamplingProviderError as exc:
            raise _ProviderFailed(choice, exc) from exc

    async def _with_context(
        self, server: str, params: CreateMessageRequestParams
    ) -> CreateMessageRequestParams:
        """``params`` with the host's context in the system prompt, when the request
        asks for it and a context source is configured (the client refuses such a
        request before it gets here when none is: ``sampling.context`` is undeclared)."""
        include = params.include_context
        if self.context is None or include is None or include == "none":
            return params
        text = await self.context(server, include)
        prompt = "\n\n".join(part for part in (params.system_prompt, text) if part)
        return params.model_copy(update={"system_prompt": prompt or None, "include_context": None})

    def _log(self, event: str, server: str, number: int, **fields: object) -> None:
        if self.audit is not None:
            self.audit.write(event, server=server, request=number, **fields)

    def _log_outcome(
        self,
        server: str,
        number: int,
        answer: CreateMessageResult | ErrorData | Exception | None,
        grant: Grant,
        endpoint: str | None,
    ) -> None:
        if isinstance(answer, CreateMessageResult):
            self._log(
                "outcome", server, number, outcome="answered", model=answer.model,
                stopReason=answer.stop_reason, maxTokens=grant.max_tokens,
            )  # fmt: skip
        elif isinstance(answer, ErrorData):
            outcome = "rejected" if answer.code == USER_REJECTED else "failed"
            self._log(
                "outcome", server, number, outcome=outcome, code=answer.code,
                message=answer.message, endpoint=endpoint,
            )  # fmt: skip
        elif isinstance(answer, Exception):
            self._log(
                "outcome", server, number, outcome="failed", code=INTERNAL_ERROR,
                message=f"{type(answer).__name__}: {answer}",
            )  # fmt: skip
        else:
            self._log("outcome", server, number, outcome="abandoned")


def _check_conversation(params: CreateMessageRequestParams) -> None:
    """Refuse a request with no messages before anyone approves it: the schema allows
    one, but there is nothing for a model to answer and every provider rejects it."""
    if not params.messages:
        raise SamplingRefused(
            ErrorData(
                code=INVALID_PARAMS,
                message="Sampling refused: messages is empty; send at least one user message "
                "for the model to answer.",
                data={"reason": "no_messages"},
            )
        )


class _ProviderFailed(Exception):
    """The chosen model could not answer: ``error`` is what the server is told (the
    provider error's message, which never names the endpoint, its status, how it failed
    and the wait the provider asked for), ``endpoint`` where the request went, for the
    host's audit log only."""

    def __init__(self, choice: ModelChoice, exc: SamplingProviderError) -> None:
        super().__init__(str(exc))
        data: dict[str, object] = {"reason": "provider_failed", "status": exc.status}
        if exc.failure is not None:
            data["failure"] = exc.failure
        if exc.retry_after is not None:
            data["retryAfterSeconds"] = exc.retry_after
        self.error = ErrorData(
            code=INTERNAL_ERROR,
            message=f"Sampling failed: model {choice.model.name!r} could not answer: {exc}",
            data=data,
        )
        self.endpoint = exc.endpoint


class SamplingResponder(ResponderWrapper):
    """One connection's responder: sampling through its ``ModelSampler`` (as
    ``server``), everything else by ``inner``. Made by ``ModelSampler.responder``."""

    def __init__(self, sampler: ModelSampler, server: str, inner: Responder) -> None:
        super().__init__(inner)
        self.sampler = sampler
        self.server = server

    def capabilities(self) -> ClientCapabilities:
        """The inner responder's, with sampling as the sampler answers it (none for a
        server the policy does not allow)."""
        declared = self.inner.capabilities()
        allowed = self.sampler.policy.allows_server(self.server)
        sampling = self.sampler.capability() if allowed else None
        return declared.model_copy(update={"sampling": sampling})

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        """The request answered by the sampler (see ``ModelSampler``)."""
        return await self.sampler.answer(self.server, context, params, self.inner)


class _SamplingOnly(Responder):
    """The inner responder when there is none: it declares nothing and refuses all."""

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities()
