"""Sampling on the client, for real: model providers, model choice, policy and audit.

A server's ``sampling/createMessage`` (deprecated in 2026-07-28, still widely used)
asks the client to run a model. ``ModelProvider`` runs one (an OpenAI-compatible
endpoint, Anthropic). ``ModelCatalogue`` chooses which of the host's models answers,
from the server's hints and priorities, and says why. ``SamplingPolicy`` decides whether
a request runs at all (allow-lists, per-server rate, token cap and budget), an approval
hook or the broker's screen lets the person say no, and ``AuditLog`` records it all.
``ModelSampler`` puts them together as a responder for each connection.
"""

from __future__ import annotations

from answerback._public import publish
from answerback.interact.sampling._anthropic import (
    AnthropicProvider,
    from_anthropic_response,
    to_anthropic_request,
)
from answerback.interact.sampling._audit import AuditLog
from answerback.interact.sampling._models import ModelCatalogue, ModelChoice, ModelInfo
from answerback.interact.sampling._names import ReversibleNames
from answerback.interact.sampling._openai import (
    OpenAIChatProvider,
    from_openai_response,
    to_openai_request,
)
from answerback.interact.sampling._policy import (
    BUDGET_EXHAUSTED,
    MODEL_NOT_ALLOWED,
    RATE_LIMITED,
    SERVER_NOT_ALLOWED,
    Grant,
    Limits,
    SamplingPolicy,
    SamplingRefused,
)
from answerback.interact.sampling._provider import (
    REFUSAL,
    MappedRequest,
    ModelProvider,
    SamplingProviderError,
)
from answerback.interact.sampling._quirks import OpenAIQuirks
from answerback.interact.sampling._sampler import (
    Approval,
    ContextSource,
    ModelSampler,
    SamplingRequest,
    SamplingResponder,
    approve_all,
)

__all__ = [
    "BUDGET_EXHAUSTED",
    "MODEL_NOT_ALLOWED",
    "RATE_LIMITED",
    "REFUSAL",
    "SERVER_NOT_ALLOWED",
    "AnthropicProvider",
    "Approval",
    "AuditLog",
    "ContextSource",
    "Grant",
    "Limits",
    "MappedRequest",
    "ModelCatalogue",
    "ModelChoice",
    "ModelInfo",
    "ModelProvider",
    "ModelSampler",
    "OpenAIChatProvider",
    "OpenAIQuirks",
    "ReversibleNames",
    "SamplingPolicy",
    "SamplingProviderError",
    "SamplingRefused",
    "SamplingRequest",
    "SamplingResponder",
    "approve_all",
    "from_anthropic_response",
    "from_openai_response",
    "to_anthropic_request",
    "to_openai_request",
]

publish(globals())
