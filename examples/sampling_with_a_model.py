"""Sampling answered by a real model: an OpenAI-compatible endpoint behind a policy.

A server's tool asks the client's model a question (``ctx.sample``); the client answers
with ``OpenAIChatProvider``, which speaks the Chat Completions API that OpenAI, Ollama,
vLLM, llama.cpp and LM Studio all serve, chosen from a one-model catalogue by a
``ModelSampler`` that caps the request at 200 tokens.

Point it at an endpoint with environment variables, for example a local Ollama::

    OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.2 \\
        python examples/sampling_with_a_model.py

or OpenAI itself (``OPENAI_BASE_URL=https://api.openai.com/v1``, ``OPENAI_API_KEY``;
``OPENAI_MODEL`` defaults to ``gpt-4o-mini``). Without ``OPENAI_BASE_URL`` it says it
is skipping and exits successfully, so it never calls a paid API by surprise.
"""

from __future__ import annotations

import os
import sys

import anyio

from answerback import Client
from answerback.interact.sampling import (
    Limits,
    ModelCatalogue,
    ModelInfo,
    ModelSampler,
    OpenAIChatProvider,
    OpenAIQuirks,
    SamplingPolicy,
    approve_all,
)
from answerback.server import Context, MCPServer
from answerback.types import TextContent

mcp = MCPServer("Trivia")


@mcp.tool()
async def ask_the_model(ctx: Context, question: str) -> str:
    """Ask the client's model, and say which model answered."""
    reply = await ctx.sample(question, system_prompt="Answer in one short sentence.")
    return f"{reply.model} said: {reply.text.strip()}"


async def main(base_url: str) -> None:
    # OpenAI's own API takes the newest request fields; local servers the older ones.
    official = base_url.startswith("https://api.openai.com")
    provider = OpenAIChatProvider(
        base_url=base_url,
        api_key=os.environ.get("OPENAI_API_KEY") or None,
        quirks=OpenAIQuirks() if official else OpenAIQuirks.local(),
    )
    model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    sampler = ModelSampler(
        ModelCatalogue([ModelInfo(model, provider)]),
        policy=SamplingPolicy(limits=Limits(max_tokens=200)),
        # A real host asks the person (see docs/sampling.md); this example runs unasked.
        approval=approve_all,
    )
    async with Client(mcp, responder=sampler.responder("trivia")) as client:
        result = await client.call_tool(
            "ask_the_model", {"question": "What is the capital of Peru?"}
        )
    [answer] = result.content
    print(answer.text if isinstance(answer, TextContent) else answer)


if __name__ == "__main__":
    base_url = os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        print(
            "Skipping: set OPENAI_BASE_URL (and OPENAI_API_KEY, OPENAI_MODEL if needed) "
            "to answer sampling with a real model."
        )
        sys.exit(0)
    anyio.run(main, base_url)
