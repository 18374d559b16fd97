"""The terminal screens that show a person the broker's questions.

``TerminalPresenter`` draws each question with prompt_toolkit (a form on one screen, a
URL consent card, a sampling approval) and leaves a one-line record of the answer;
``LinePresenter`` asks the same questions line by line when stdin or stdout is not a
terminal. ``ask_form`` asks any ``answerback.forms.Form`` on its own, which is also how
a tool's arguments are asked from its ``inputSchema``.

The full-screen parts need asyncio (prompt_toolkit runs only there); ``LinePresenter``
runs on any anyio backend.
"""

from __future__ import annotations

from answerback._public import publish
from answerback.interact import REJECTED, TYPED_BY_PERSON, Sampler, ServerControls
from answerback.interact.terminal._form_screen import FORM_KEYS, FormScreen, ask_form
from answerback.interact.terminal._line_mode import LinePresenter
from answerback.interact.terminal._presenter import Opener, TerminalPresenter
from answerback.interact.terminal._sampling_screen import SamplingScreen
from answerback.interact.terminal._screen import ServerKeys
from answerback.interact.terminal._text import FormOutcome
from answerback.interact.terminal._url_card import UrlCard, UrlDecision

__all__ = [
    "FORM_KEYS",
    "REJECTED",
    "TYPED_BY_PERSON",
    "FormOutcome",
    "FormScreen",
    "LinePresenter",
    "Opener",
    "Sampler",
    "SamplingScreen",
    "ServerControls",
    "ServerKeys",
    "TerminalPresenter",
    "UrlCard",
    "UrlDecision",
    "ask_form",
]

publish(globals())
