"""Sampling on the client: which model answers, whether it may, and the record of it.

``ModelCatalogue`` is checked over a small catalogue (hints, priorities, ties);
``SamplingPolicy`` with an injected clock (cap, rate, budget, allow-lists); the
``ModelSampler`` end to end through the asking test server in both protocol
generations, in-process and over stdio, with approval by a hook and by the broker. The
model itself is ``ScriptedModel``, a stand-in for a cloud API implementing the
``ModelProvider`` protocol.
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio
import pytest
from support import SERVERS, target

from answerback import Client, MCPError
from answerback.client import ClientRequestContext, Responder
from answerback.interact import Answer, Broker, Question
from answerback.interact.sampling import (
    BUDGET_EXHAUSTED,
    MODEL_NOT_ALLOWED,
    RATE_LIMITED,
    SERVER_NOT_ALLOWED,
    AuditLog,
    Limits,
    ModelCatalogue,
    ModelInfo,
    ModelSampler,
    SamplingPolicy,
    SamplingProviderError,
    SamplingRefused,
    SamplingRequest,
    approve_all,
)
from answerback.interact.terminal import Sampler
from answerback.types import (
    INTERNAL_ERROR,
    USER_REJECTED,
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationCapability,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ModelHint,
    ModelPreferences,
    SamplingContextCapability,
    SamplingMessage,
    TextContent,
)

pytestmark = pytest.mark.anyio

ASKING_SERVER = SERVERS / "asking_server.py"


class ScriptedModel:
    """A provider that records what it was asked and answers with a fixed sentence."""

    def __init__(self, *, fail: str | None = None) -> None:
        self.asked: list[tuple[str, CreateMessageRequestParams]] = []
        self.fail = fail

    async def create_message(
        self, params: CreateMessageRequestParams, *, model: str
    ) -> CreateMessageResult:
        self.asked.append((model, params))
        if self.fail is not None:
            raise SamplingProviderError(self.fail, status=529)
        return CreateMessageResult(
            role="assistant",
            content=TextContent(text="The answer is 42."),
            model=model,
            stop_reason="endTurn",
        )


class Clock:
    """Seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def catalogue(provider: ScriptedModel | None = None) -> ModelCatalogue:
    provider = provider or ScriptedModel()
    return ModelCatalogue(
        [
            ModelInfo("claude-haiku", provider, cost=0.1, speed=0.9, intelligence=0.4),
            ModelInfo("claude-sonnet", provider, cost=0.5, speed=0.5, intelligence=0.8),
            ModelInfo("gpt-mini", provider, cost=0.05, speed=0.8, intelligence=0.3),
            ModelInfo("GPT-Large", provider, cost=0.9, speed=0.2, intelligence=1.0),
        ]
    )


def preferences(*hints: str, **priorities: float) -> ModelPreferences:
    return ModelPreferences(hints=[ModelHint(name=hint) for hint in hints] or None, **priorities)


def request(max_tokens: int = 50, **fields: Any) -> CreateMessageRequestParams:
    return CreateMessageRequestParams(
        messages=[SamplingMessage(role="user", content=TextContent(text="6 x 7?"))],
        max_tokens=max_tokens,
        **fields,
    )


def audit_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


# -- choosing a model ----------------------------------------------------------------------


def test_the_first_hint_that_matches_decides() -> None:
    choice = catalogue().choose(preferences("sonnet", "claude"))
    assert choice.model.name == "claude-sonnet"
    assert choice.reason == "'claude-sonnet' matches the server's hint 'sonnet' (hint 1 of 2)."


def test_a_later_hint_is_tried_when_earlier_ones_match_nothing() -> None:
    """ "gemini" matches nothing; "claude" matches two, and the priorities pick one."""
    choice = catalogue().choose(preferences("gemini", "claude", speed_priority=1.0))
    assert choice.model.name == "claude-haiku"
    assert choice.reason.startswith(
        "'claude-haiku' matches the server's hint 'claude' (hint 2 of 2); it scores 0.90"
    )
    assert "'claude-sonnet' scores 0.50" in choice.reason


def test_hints_match_whatever_the_case() -> None:
    assert catalogue().choose(preferences("gpt-large")).model.name == "GPT-Large"


@pytest.mark.parametrize(
    ("priorities", "expected"),
    [
        ({"cost_priority": 1.0}, "gpt-mini"),
        ({"speed_priority": 1.0}, "claude-haiku"),
        ({"intelligence_priority": 1.0}, "GPT-Large"),
        # 0.5*(1-cost) + 0.8*intelligence: sonnet 0.89, large 0.85, haiku 0.77, mini 0.715
        ({"cost_priority": 0.5, "intelligence_priority": 0.8}, "claude-sonnet"),
    ],
)
def test_without_a_matching_hint_the_priorities_choose(
    priorities: dict[str, float], expected: str
) -> None:
    choice = catalogue().choose(preferences("gemini", **priorities))
    assert choice.model.name == expected
    assert "no model matches the hints 'gemini'" in choice.reason


def test_a_tie_goes_to_the_model_listed_first() -> None:
    provider = ScriptedModel()
    twins = ModelCatalogue(
        [
            ModelInfo("first", provider, cost=0.2, speed=0.5),
            ModelInfo("second", provider, cost=0.2, speed=0.5),
        ]
    )
    choice = twins.choose(preferences(cost_priority=0.7, speed_priority=0.3))
    assert choice.model.name == "first"
    assert choice.reason.endswith("'second' scores 0.71, a tie broken by catalogue order.")
    nothing = twins.choose(None)
    assert nothing.model.name == "first"
    assert nothing.reason == (
        "'first' was chosen as the server gave no hints; the server set no priorities, "
        "so the first listed wins."
    )


def test_only_allowed_models_are_chosen() -> None:
    models = catalogue()
    chosen = models.choose(preferences("claude"), allowed={"gpt-mini", "claude-sonnet"})
    assert chosen.model.name == "claude-sonnet"
    with pytest.raises(LookupError, match=r"None of the catalogue's models .* is allowed"):
        models.choose(None, allowed={"o9"})


def test_catalogue_and_scores_are_checked() -> None:
    provider = ScriptedModel()
    with pytest.raises(ValueError, match=r"'m': speed must be between 0 and 1, not 1.5"):
        ModelInfo("m", provider, speed=1.5)
    with pytest.raises(ValueError, match="at least one model"):
        ModelCatalogue([])
    with pytest.raises(ValueError, match="repeated: m"):
        ModelCatalogue([ModelInfo("m", provider), ModelInfo("m", provider)])


# -- the policy ----------------------------------------------------------------------------


def test_max_tokens_above_the_cap_is_capped() -> None:
    policy = SamplingPolicy(limits=Limits(max_tokens=100))
    grant = policy.admit("weather", request(max_tokens=500))
    assert (grant.max_tokens, grant.requested_max_tokens, grant.capped) == (100, 500, True)
    assert grant.params.max_tokens == 100
    under = policy.admit("weather", request(max_tokens=80))
    assert (under.max_tokens, under.capped) == (80, False)


def test_rate_limit_over_a_sliding_window() -> None:
    clock = Clock()
    policy = SamplingPolicy(limits=Limits(requests=2, window_seconds=10), clock=clock)
    policy.admit("weather", request())
    clock.now += 4
    policy.admit("weather", request())
    policy.admit("notes", request())  # each server has its own allowance
    clock.now += 2
    with pytest.raises(SamplingRefused) as refused:
        policy.admit("weather", request())
    error = refused.value.error
    assert error.code == RATE_LIMITED
    assert error.message == (
        "Sampling refused: rate limit reached (2 requests per 10 s for 'weather'); retry in 4.0 s."
    )
    assert error.data == {"reason": "rate_limited", "retryAfterSeconds": 4.0}
    clock.now += 4  # the first request leaves the window
    policy.admit("weather", request())


def test_budget_counts_granted_tokens_of_answered_requests() -> None:
    policy = SamplingPolicy(
        limits=Limits(token_budget=100), per_server={"big": Limits(token_budget=1000)}
    )
    answered = policy.admit("weather", request(max_tokens=60))
    assert policy.remaining_budget("weather") == 40  # held while in flight
    policy.settle(answered, answered=True)
    refused_by_person = policy.admit("weather", request(max_tokens=40))
    policy.settle(refused_by_person, answered=False)
    policy.settle(refused_by_person, answered=True)  # a second settle changes nothing
    assert policy.remaining_budget("weather") == 40
    with pytest.raises(SamplingRefused) as refused:
        policy.admit("weather", request(max_tokens=41))
    assert refused.value.error.code == BUDGET_EXHAUSTED
    assert refused.value.error.message.startswith(
        "Sampling refused: token budget exhausted for 'weather' (40 of 100 tokens left; "
        "this request needs maxTokens 41)."
    )
    assert policy.remaining_budget("big") == 1000
    assert SamplingPolicy().remaining_budget("weather") is None


def test_limits_are_checked() -> None:
    with pytest.raises(ValueError, match=r"Limits.requests must be positive, or None \(no limit\)"):
        Limits(requests=0)
    with pytest.raises(ValueError, match=r"window_seconds must be a positive, finite number"):
        Limits(window_seconds=0)


# -- the sampler ---------------------------------------------------------------------------


async def test_an_approved_request_runs_on_the_chosen_model_and_is_audited() -> None:
    provider = ScriptedModel()
    log = io.StringIO()
    seen: list[SamplingRequest] = []

    async def approve(asked: SamplingRequest) -> bool:
        seen.append(asked)
        return True

    sampler = ModelSampler(
        catalogue(provider),
        policy=SamplingPolicy(limits=Limits(max_tokens=20)),
        audit=AuditLog(log),
        approval=approve,
    )
    answer = await sampler.answer("weather", None, request(max_tokens=50))
    assert isinstance(answer, CreateMessageResult)
    assert answer.model == "claude-haiku"  # no preferences: the first listed
    [(model, params)] = provider.asked
    assert (model, params.max_tokens) == ("claude-haiku", 20)
    [asked] = seen
    assert (asked.server, asked.params.max_tokens, asked.requested_max_tokens) == (
        "weather",
        20,
        50,
    )
    assert asked.choice.model.name == "claude-haiku"
    first, second = audit_lines(log)
    assert (first["event"], second["event"]) == ("request", "outcome")
    assert first["server"] == second["server"] == "weather"
    assert first["request"] == second["request"] == 1
    assert first["outcome"] == "admitted"
    assert first["model"] == "claude-haiku"
    assert first["why"] == asked.choice.reason
    assert (first["maxTokens"], first["requestedMaxTokens"], first["capped"]) == (20, 50, True)
    assert first["messages"] == 1
    assert second["outcome"] == "answered"
    assert (second["model"], second["stopReason"], second["maxTokens"]) == (
        "claude-haiku",
        "endTurn",
        20,
    )
    assert first["time"].endswith("+00:00")


async def test_denial_by_the_approval_hook_is_the_persons_no() -> None:
    provider = ScriptedModel()
    log = io.StringIO()

    async def deny(asked: SamplingRequest) -> bool:
        return False

    policy = SamplingPolicy(limits=Limits(token_budget=100))
    sampler = ModelSampler(catalogue(provider), policy=policy, audit=AuditLog(log), approval=deny)
    answer = await sampler.answer("weather", None, request(max_tokens=50))
    assert isinstance(answer, ErrorData)
    assert answer.code == USER_REJECTED
    assert answer.message == "User rejected sampling request (the host's approval denied it)."
    assert provider.asked == []
    assert policy.remaining_budget("weather") == 100  # nothing was spent
    outcome = audit_lines(log)[-1]
    assert (outcome["outcome"], outcome["code"]) == ("rejected", USER_REJECTED)


async def test_a_request_abandoned_while_awaiting_approval_gives_its_tokens_back() -> None:
    """The call died while the person was deciding: logged as abandoned, nothing spent."""
    log = io.StringIO()
    asked = anyio.Event()

    async def never_decides(request: SamplingRequest) -> bool:
        asked.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    policy = SamplingPolicy(limits=Limits(token_budget=100))
    sampler = ModelSampler(catalogue(), policy=policy, audit=AuditLog(log), approval=never_decides)
    async with anyio.create_task_group() as group:
        group.start_soon(sampler.answer, "weather", None, request(max_tokens=50))
        await asked.wait()
        assert policy.remaining_budget("weather") == 50  # held while in flight
        group.cancel_scope.cancel()
    assert policy.remaining_budget("weather") == 100
    assert [line["outcome"] for line in audit_lines(log)] == ["admitted", "abandoned"]


async def test_policy_refusals_are_audited_with_their_code() -> None:
    log = io.StringIO()
    sampler = ModelSampler(
        catalogue(),
        policy=SamplingPolicy(servers={"weather"}, models={"o9"}),
        audit=AuditLog(log),
        approval=approve_all,
    )
    model_refused = await sampler.answer("weather", None, request())
    assert isinstance(model_refused, ErrorData)
    assert model_refused.code == MODEL_NOT_ALLOWED
    sampler.policy = SamplingPolicy(servers={"weather"})
    server_refused = await sampler.answer("notes", None, request(max_tokens=7))
    assert isinstance(server_refused, ErrorData)
    assert server_refused.code == SERVER_NOT_ALLOWED
    assert "server 'notes' is not allowed to sample" in server_refused.message
    [first, second] = audit_lines(log)
    assert (first["event"], first["outcome"], first["code"]) == (
        "request",
        "refused",
        MODEL_NOT_ALLOWED,
    )
    assert (second["server"], second["code"], second["requestedMaxTokens"]) == (
        "notes",
        SERVER_NOT_ALLOWED,
        7,
    )
    assert second["message"] == server_refused.message


async def test_a_failing_provider_is_an_internal_error_and_gives_the_tokens_back() -> None:
    policy = SamplingPolicy(limits=Limits(token_budget=100))
    sampler = ModelSampler(
        catalogue(ScriptedModel(fail="overloaded, try later")),
        policy=policy,
        approval=approve_all,
    )
    answer = await sampler.answer("weather", None, request(max_tokens=50))
    assert isinstance(answer, ErrorData)
    assert answer.code == INTERNAL_ERROR
    assert answer.message == (
        "Sampling failed: model 'claude-haiku' could not answer: overloaded, try later"
    )
    assert policy.remaining_budget("weather") == 100


async def test_context_is_declared_and_included_only_with_a_source() -> None:
    provider = ScriptedModel()
    asked_for: list[tuple[str, str]] = []

    async def history(server: str, which: Literal["thisServer", "allServers"]) -> str:
        asked_for.append((server, which))
        return "Earlier, the person asked about Paris."

    plain = ModelSampler(catalogue(provider), approval=approve_all)
    assert plain.responder("weather").capabilities().sampling == plain.capability()
    assert plain.capability().context is None
    with_context = ModelSampler(catalogue(provider), approval=approve_all, context=history)
    assert with_context.capability().context == SamplingContextCapability()
    await with_context.answer(
        "weather", None, request(system_prompt="Be brief.", include_context="thisServer")
    )
    assert asked_for == [("weather", "thisServer")]
    [(_, params)] = provider.asked
    assert params.system_prompt == "Be brief.\n\nEarlier, the person asked about Paris."
    assert params.include_context is None


def test_someone_must_approve() -> None:
    with pytest.raises(ValueError, match=r"Nobody would approve 'weather'.*approve_all"):
        ModelSampler(catalogue()).responder("weather")


class FormsOnly(Responder):
    """An inner responder for what is not sampling: it accepts every form empty."""

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(elicitation=ElicitationCapability(form={}))

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        return ElicitResult(action="accept", content={})


def test_responder_declares_sampling_and_keeps_the_inner_declarations() -> None:
    sampler = ModelSampler(catalogue(), approval=approve_all, policy=SamplingPolicy(servers={"a"}))
    allowed = sampler.responder("a", FormsOnly()).capabilities()
    assert allowed.elicitation == ElicitationCapability(form={})
    assert allowed.sampling == sampler.capability()
    # A server the policy does not allow is not offered sampling at all.
    assert sampler.responder("b", FormsOnly()).capabilities().sampling is None


async def test_reply_is_a_terminal_sampler() -> None:
    """``reply`` fits ``TerminalPresenter(sampler=...)``: the draft on the approval screen."""
    provider = ScriptedModel()
    draft: Sampler = ModelSampler(catalogue(provider)).reply
    result = await draft(request(model_preferences=preferences("large")))
    assert result.model == "GPT-Large"


# -- end to end through a real server ------------------------------------------------------


@pytest.fixture(params=["memory", "stdio"])
def asking(request: pytest.FixtureRequest) -> Any:
    """The asking test server, in-process or as a stdio subprocess."""
    return target(request.param, ASKING_SERVER)


ERAS = pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])


@ERAS
async def test_a_server_samples_through_the_policy(asking: Any, mode: str) -> None:
    provider = ScriptedModel()
    log = io.StringIO()
    sampler = ModelSampler(
        catalogue(provider),
        policy=SamplingPolicy(limits=Limits(max_tokens=30, requests=1, window_seconds=60)),
        audit=AuditLog(log),
        approval=approve_all,
    )
    async with Client(asking, mode=mode, responder=sampler.responder("asking")) as client:
        result = await client.call_tool("ask_model", {"question": "What is 6 x 7?"})
        assert result.content == [TextContent(text="claude-haiku said: The answer is 42.")]
        with pytest.raises(MCPError) as refused:
            await client.call_tool("ask_model")
    assert refused.value.error.code == RATE_LIMITED
    assert "rate limit reached (1 request per 60 s for 'asking')" in str(refused.value)
    [(_, params)] = provider.asked
    assert params.max_tokens == 30  # the server asked for 50
    assert params.system_prompt == "Answer in one sentence."
    lines = audit_lines(log)
    assert [(line["event"], line["outcome"]) for line in lines] == [
        ("request", "admitted"),
        ("outcome", "answered"),
        ("request", "refused"),
    ]
    assert lines[0]["requestId"] is not None


class ApprovingPerson:
    """The person at the broker's screen: approves each sampling request and sends the
    sampler's draft unchanged, or denies them all."""

    def __init__(self, draft: Sampler, *, approve: bool) -> None:
        self.draft = draft
        self.approve = approve
        self.shown: list[Question] = []

    async def present(self, question: Question) -> Answer:
        self.shown.append(question)
        assert isinstance(question.params, CreateMessageRequestParams)
        if not self.approve:
            return ErrorData(code=USER_REJECTED, message="User rejected sampling request")
        return await self.draft(question.params)

    async def withdrawn(self, question: Question, reason: str) -> None:
        raise AssertionError(f"nothing should be withdrawn here ({reason})")


@asynccontextmanager
async def brokered(
    sampler: ModelSampler, *, approve: bool
) -> AsyncGenerator[tuple[Broker, ApprovingPerson], None]:
    person = ApprovingPerson(sampler.reply, approve=approve)
    async with Broker(person) as broker:
        yield broker, person


@ERAS
async def test_the_brokers_screen_is_the_approval(mode: str) -> None:
    provider = ScriptedModel()
    log = io.StringIO()
    sampler = ModelSampler(
        catalogue(provider),
        policy=SamplingPolicy(limits=Limits(max_tokens=30)),
        audit=AuditLog(log),
    )
    async with brokered(sampler, approve=True) as (broker, person):
        responder = sampler.responder("asking", broker.responder("asking"))
        async with Client(target("memory", ASKING_SERVER), mode=mode, responder=responder) as c:
            result = await c.call_tool("ask_model")
    assert result.content == [TextContent(text="claude-haiku said: The answer is 42.")]
    [shown] = person.shown
    assert shown.server == "asking"
    assert isinstance(shown.params, CreateMessageRequestParams)
    assert shown.params.max_tokens == 30  # the person sees the request as it will run
    assert [line["outcome"] for line in audit_lines(log)] == ["admitted", "answered"]


@ERAS
async def test_the_persons_no_reaches_the_server_as_minus_one(mode: str) -> None:
    provider = ScriptedModel()
    log = io.StringIO()
    sampler = ModelSampler(catalogue(provider), audit=AuditLog(log))
    async with brokered(sampler, approve=False) as (broker, _):
        responder = sampler.responder("asking", broker.responder("asking"))
        async with Client(target("memory", ASKING_SERVER), mode=mode, responder=responder) as c:
            with pytest.raises(MCPError) as refused:
                await c.call_tool("ask_model")
    assert refused.value.error.code == USER_REJECTED
    assert provider.asked == []
    assert audit_lines(log)[-1]["outcome"] == "rejected"
