"""What the broker shows a person: a ``Question``, and the ``Presenter`` that shows it.

A host may be connected to many servers, and each may ask at any moment; a person can
only answer one thing at a time. The broker turns every question into a ``Question``
that says which server asks and what, and hands them one by one to a ``Presenter``: a
terminal screen, a GUI dialog, a test script. The presenter only shows and answers;
queueing, withdrawal and timers stay in the broker, so every presenter gets them right.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from answerback.client import ClientRequestContext
from answerback.forms import AnswerError, Form
from answerback.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
)
from answerback.urls import UrlVerdict

QuestionKind: TypeAlias = Literal["form", "url", "sampling"]
Answer: TypeAlias = ElicitResult | CreateMessageResult | ErrorData
"""What a presenter returns: ``ElicitResult`` for a form or a link, ``CreateMessageResult``
for sampling, or ``ErrorData`` to refuse (for sampling, code -1 is the person's no)."""

Sampler: TypeAlias = Callable[[CreateMessageRequestParams], Awaitable[CreateMessageResult]]
"""A model that drafts the reply to an approved sampling request, for the person to
review (``ModelSampler.reply``)."""

TYPED_BY_PERSON = "typed-by-person"
"""The ``model`` of a sampling reply the person typed: no model wrote it, and the server
(and the audit log) should know."""

REJECTED = "User rejected sampling request"
"""The specification's wording for a person's no to sampling (error code -1,
``USER_REJECTED``)."""


@dataclass(eq=False)
class Question:
    """One thing a person must answer, as the broker queues and shows it."""

    server: str
    """The name the person knows the asking server by (``"library"``, ``"everything"``)."""
    kind: QuestionKind
    params: ElicitRequestFormParams | ElicitRequestURLParams | CreateMessageRequestParams
    """The request as the server sent it."""
    context: ClientRequestContext
    """The request's context; for ``kind == "url"``, ``context.url_verdict`` is set."""
    previous: ElicitResult | None = None
    """When a form is asked again: what the person answered last time."""
    problems: AnswerError | None = None
    """When a form is asked again: every field that was wrong, by name, and why."""
    form: Form | None = None
    """For ``kind == "form"``: the form parsed into typed fields, ready to render."""
    number: int = 0
    """The broker's running number for questions, in order of arrival (from 1)."""

    @property
    def verdict(self) -> UrlVerdict | None:
        """For a link (``kind == "url"``): the client's verdict on it. Show
        ``verdict.display`` whole and its reasons; a blocked link never gets here."""
        return self.context.url_verdict

    @property
    def asked_again(self) -> bool:
        """Whether this is a form shown again because the last answer did not fit."""
        return self.problems is not None


class Presenter(Protocol):
    """Shows one question at a time to a person (terminal, GUI, test script).

    The broker never calls ``present`` twice at once. ``withdrawn`` may come while the
    next question is on screen (the broker pings a server that withdrew its question
    before saying why, and shows the next one meanwhile): say it without disturbing
    that screen, as a log line would. Both run in the broker's task, on its event loop;
    a toolkit with a thread of its own hands the answer back through an
    ``anyio.from_thread`` portal.
    """

    async def present(self, question: Question) -> Answer:
        """Show ``question`` and return the person's answer.

        Cancelled (anyio cancellation) when the call behind the question died or the
        person cancelled everything from that server: close the screen and re-raise.
        """
        ...

    async def withdrawn(self, question: Question, reason: str) -> None:
        """The question that was on screen went away (``reason`` in words a person
        understands, such as "the server disconnected"): tell the person. Possibly
        while another question is on screen (see the class docstring)."""
        ...


class ServerControls(Protocol):
    """What acts on all of one server's questions: a ``Broker`` is one. Call it on the
    broker's event loop (from a GUI thread, through an ``anyio.from_thread`` portal)."""

    def cancel_all(self, server: str) -> int:
        """Answer "cancel" to everything ``server`` asked that waits or shows."""
        ...

    def mute(self, server: str) -> None:
        """Decline, unseen, everything ``server`` asks from now on (and what it asked)."""
        ...
