"""The model that drafts replies to sampling requests, when the person configures one.

Without ``--model-url``, a sampling request is approved by the person typing the reply.
With it, the same approval screen opens with a draft from an OpenAI-compatible endpoint
(OpenAI, Ollama, vLLM, llama.cpp, LM Studio), which the person can edit or deny; the
policy and the audit log of ``answerback.interact.sampling`` apply as for any host.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from answerback.interact.sampling import (
    AuditLog,
    ModelCatalogue,
    ModelInfo,
    ModelSampler,
    OpenAIChatProvider,
    OpenAIQuirks,
)

OFFICIAL_API = "https://api.openai.com"


class ModelOptionError(ValueError):
    """``--model-url`` without a model name to ask it for, or a model URL or audit file
    that cannot be used (not an http(s) URL, a directory that does not exist)."""


def model_sampler(args: argparse.Namespace) -> ModelSampler | None:
    """The configured sampler, or ``None`` when no model URL is set (the person types)."""
    url: str | None = args.model_url
    if not url:
        return None
    name: str | None = args.model
    if not name:
        raise ModelOptionError(
            f"--model-url {url} needs a model name: pass --model NAME or set OPENAI_MODEL."
        )
    try:
        provider = OpenAIChatProvider(
            base_url=url,
            # Set but empty (OPENAI_API_KEY=) is no key, as for a local server.
            api_key=os.environ.get("OPENAI_API_KEY") or None,
            quirks=OpenAIQuirks() if url.startswith(OFFICIAL_API) else OpenAIQuirks.local(),
        )
    except ValueError as exc:
        raise ModelOptionError(f"--model-url {url}: {exc}") from None
    try:
        audit = AuditLog(Path(args.sampling_audit)) if args.sampling_audit else None
    except ValueError as exc:
        raise ModelOptionError(f"--sampling-audit {args.sampling_audit}: {exc}") from None
    return ModelSampler(ModelCatalogue([ModelInfo(name, provider)]), audit=audit)
