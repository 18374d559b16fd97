"""What one OpenAI-compatible endpoint accepts, as flags rather than guesses.

OpenAI, Ollama, vLLM, llama.cpp and LM Studio all serve ``/v1/chat/completions`` but
differ at the edges: OpenAI's newer models want ``max_completion_tokens`` where the
others read ``max_tokens``; some servers ignore or reject ``tool_choice`` or ``stop``;
few take images and fewer audio. The mapper reads these flags and emulates or refuses
what an endpoint lacks, instead of sending a body the endpoint will reject.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from answerback._options import flag, one_of, positive_int_or_none


@dataclass(frozen=True, slots=True)
class OpenAIQuirks:
    """Capabilities of one OpenAI-compatible endpoint; the defaults describe OpenAI's own.

    ``max_tokens_field``: where ``maxTokens`` goes. ``tool_choice``: whether the endpoint
    honours ``tool_choice`` (without it, ``none`` omits the tools and ``required`` is asked
    for in the system prompt). ``stop``: whether it honours ``stop`` (without it, the reply
    is cut at the first stop sequence here). ``max_stop_sequences``: how many ``stop``
    takes (OpenAI: 4). ``image_input`` / ``audio_input``: whether user messages may carry
    images (``image_url``) and audio (``input_audio``, wav and mp3 only).

    A flag that is not ``True`` or ``False``, an unknown ``max_tokens_field`` or a
    ``max_stop_sequences`` that is not a positive ``int`` (or ``None``) is refused.
    """

    max_tokens_field: Literal["max_tokens", "max_completion_tokens"] = "max_completion_tokens"
    tool_choice: bool = True
    stop: bool = True
    max_stop_sequences: int | None = 4
    image_input: bool = True
    audio_input: bool = True

    def __post_init__(self) -> None:
        one_of("max_tokens_field", self.max_tokens_field, ("max_tokens", "max_completion_tokens"))
        for name in ("tool_choice", "stop", "image_input", "audio_input"):
            flag(name, getattr(self, name))
        positive_int_or_none(
            "max_stop_sequences", self.max_stop_sequences, "stop sequences", "no limit"
        )

    @classmethod
    def local(cls) -> OpenAIQuirks:
        """A cautious profile for local servers (Ollama, vLLM, llama.cpp, LM Studio):
        ``max_tokens``, no audio, no limit on stop sequences."""
        return cls(max_tokens_field="max_tokens", max_stop_sequences=None, audio_input=False)
