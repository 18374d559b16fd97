"""``TerminalPresenter``: the broker's questions as prompt_toolkit screens.

One screen per kind of question (a form, a link, a sampling request), each naming the
server that asks. The screen's outcome becomes the protocol answer here, and one line
is left in the terminal afterwards saying what was answered, so the scrollback reads as
a record of the session rather than a trail of half-drawn screens.
"""

from __future__ import annotations

import webbrowser
from collections.abc import Callable
from typing import Any, cast

from prompt_toolkit.application import Application, get_app, run_in_terminal
from rich.console import Console
from rich.text import Text

from answerback._options import callable_or_none, instance_or_none
from answerback.client import open_link
from answerback.client._callbacks import async_callable_or_none
from answerback.forms import Form, UnsupportedForm, parse_form
from answerback.interact._printable import clean
from answerback.interact._questions import Answer, Question, Sampler, ServerControls
from answerback.interact.terminal._form_screen import FormScreen
from answerback.interact.terminal._sampling_screen import SamplingScreen
from answerback.interact.terminal._screen import ServerKeys
from answerback.interact.terminal._text import verdict_words
from answerback.interact.terminal._url_card import UrlCard
from answerback.types import (
    INVALID_PARAMS,
    CreateMessageRequestParams,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
)
from answerback.urls import RiskLevel, UrlVerdict, judge_url

Opener = Callable[[str], bool]
"""Opens a URL in the person's browser (``webbrowser.open``); ``False`` if none could."""


PAST = {"decline": "declined", "cancel": "cancelled"}
"""How the one-line summaries say a refusal."""


def question_form(question: Question, params: ElicitRequestFormParams) -> Form | ErrorData:
    """The question's form, parsed once; a schema outside the restricted subset is an
    error for the server (it names every field that could not be shown)."""
    if question.form is not None:
        return question.form
    try:
        return parse_form(params.requested_schema)
    except UnsupportedForm as exc:
        return ErrorData(code=INVALID_PARAMS, message=str(exc))


def question_verdict(question: Question, params: ElicitRequestURLParams) -> UrlVerdict:
    """The client's verdict on the question's link (judged here if nobody did)."""
    return question.verdict or judge_url(params.url)


def checked_opener(opener: object) -> Opener:
    """``opener`` if it can be called with a URL."""
    if not callable(opener):
        raise TypeError(
            "opener must be a function of the URL returning whether it opened, such as "
            f"webbrowser.open, got {opener!r}"
        )
    return cast(Opener, opener)


class TerminalPresenter:
    """Shows the broker's questions at a terminal, one full screen at a time.

    - ``sampler``: drafts the reply to an approved sampling request (the person reviews
      and may edit it); without one, the person types the reply.
    - ``opener``: opens an approved link (``webbrowser.open``; run in a worker thread,
      as a console browser holds it until it exits). Tests pass a recorder.
    - ``console``: where the one-line summaries go (a rich ``Console`` on stdout).
    - ``on_screen(application)``: called as each screen opens, with its prompt_toolkit
      application (to drive it in tests, or to print around it with ``run_in_terminal``).
    - ``controls``: the broker that uses this presenter (set it once the broker exists:
      ``presenter.controls = broker``). With it every screen also offers Ctrl-X, cancel
      everything from the asking server, and Ctrl-Q, mute that server for the session.

    prompt_toolkit needs asyncio, so run the broker on the asyncio backend.

    ``TypeError`` when made for a ``sampler``, ``opener`` or ``on_screen`` that cannot
    be called, or a ``console`` that is not a rich ``Console``.
    """

    def __init__(
        self,
        *,
        sampler: Sampler | None = None,
        opener: Opener = webbrowser.open,
        console: Console | None = None,
        on_screen: Callable[[Application[Any]], None] | None = None,
    ) -> None:
        self.sampler = async_callable_or_none(
            "sampler", sampler, "an async function of the request returning the draft reply"
        )
        self._opener = checked_opener(opener)
        self.console = instance_or_none(
            "console", console, Console, "a rich Console, such as Console(stderr=True)"
        ) or Console(highlight=False, emoji=False)
        self._on_screen = callable_or_none(
            "on_screen", on_screen, "a function of each screen's prompt_toolkit Application"
        )
        self.controls: ServerControls | None = None

    def _opening(self, application: Application[Any]) -> None:
        if self._on_screen is not None:
            self._on_screen(application)

    async def present(self, question: Question) -> Answer:
        """Show ``question`` on its screen and return the answer for the server."""
        return await self._present(question, self._server_keys(question.server))

    def _server_keys(self, server: str) -> ServerKeys | None:
        controls = self.controls
        if controls is None:
            return None

        def acting(what: str, act: Callable[[str], object]) -> Callable[[], None]:
            # Said before it is done: done first, the server's answers to it (a call's
            # result) were printed before the line saying what the person did.
            async def said_then_done() -> None:
                await run_in_terminal(lambda: self._say(server, what))
                act(server)

            def key() -> None:
                get_app().create_background_task(said_then_done())

            return key

        return ServerKeys(
            server,
            acting("cancelled everything it asked", controls.cancel_all),
            acting("muted for this session", controls.mute),
        )

    async def _present(self, question: Question, keys: ServerKeys | None) -> Answer:
        params = question.params
        if isinstance(params, CreateMessageRequestParams):
            screen = SamplingScreen(
                params, server=question.server, sampler=self.sampler, server_keys=keys
            )
            self._opening(screen.application)
            answer = await screen.run()
            outcome = "denied" if isinstance(answer, ErrorData) else "reply sent"
            self._said(question, f"sampling request {outcome}")
            return answer
        if isinstance(params, ElicitRequestURLParams):
            return await self._link(question, params, keys)
        form = question_form(question, params)
        if isinstance(form, ErrorData):
            self._said(question, "sent a form that cannot be shown; refused")
            return form
        form_screen = FormScreen(
            form,
            title="Form",
            message=params.message,
            server=question.server,
            previous=question.previous.content if question.previous else None,
            problems=question.problems,
            server_keys=keys,
        )
        self._opening(form_screen.application)
        outcome = await form_screen.run()
        if isinstance(outcome, str):
            self._said(question, f"form {PAST[outcome]}")
            return ElicitResult(action=outcome)
        self._said(question, "form accepted")
        return ElicitResult(action="accept", content=dict(outcome))

    async def withdrawn(self, question: Question, reason: str) -> None:
        """Say, on one line, that the question on screen went away and why.

        The broker may show the next question before it knows why this one left, so
        the line goes above the screen now up (``run_in_terminal``): printed straight
        to the terminal, it landed on that screen's input line and stayed there."""
        what = f"question withdrawn: {reason}"
        await run_in_terminal(lambda: self._said(question, what, style="yellow"))

    async def _link(
        self, question: Question, params: ElicitRequestURLParams, keys: ServerKeys | None
    ) -> ElicitResult:
        verdict = question_verdict(question, params)
        card = UrlCard(verdict, message=params.message, server=question.server, server_keys=keys)
        self._opening(card.application)
        decision = await card.run()
        if decision != "open" or verdict.canonical_url is None:
            self._said(question, f"link {PAST[decision]}" if decision != "open" else "link refused")
            return ElicitResult(action="decline" if decision == "decline" else "cancel")
        url = verdict.canonical_url
        failed = await open_link(verdict, opener=self._opener)
        if failed is None:
            self._said(question, f"opened {url} in the browser")
            return ElicitResult(action="accept")
        # Whole on a line of its own, to copy: the card cuts and boxes a long link.
        self._said(question, f"{failed}; {by_hand(verdict)}", style="red")
        card = UrlCard(
            verdict, message=params.message, server=question.server, server_keys=keys,
            unopened=failed,
        )  # fmt: skip
        self._opening(card.application)
        decision = await card.run()
        if decision != "open":
            self._said(question, f"link {PAST[decision]}")
            return ElicitResult(action=decision)
        self._said(question, "link opened by hand, as the person says")
        return ElicitResult(action="accept")

    def _said(self, question: Question, what: str, *, style: str = "") -> None:
        self._say(question.server, what, style=style)

    def _say(self, server: str, what: str, *, style: str = "") -> None:
        line = Text()
        line.append(clean(server), style="bold cyan")
        line.append(f": {what}", style=style)
        self.console.print(line, soft_wrap=True)


def by_hand(verdict: UrlVerdict) -> str:
    """What to do with a link no browser opened: open it by hand, warned again when the
    card warned (the person said yes to a warning they will not see a second time)."""
    url = clean(verdict.canonical_url or verdict.display.url)
    if verdict.level < RiskLevel.WARN:
        return f"open {url} yourself"
    reasons = " ".join(clean(reason.message) for reason in verdict.reasons)
    judged = f"it was judged {verdict_words(verdict.level.name).upper()}"
    judged += f": {reasons}" if reasons else ""
    end = "" if judged.endswith(".") else "."
    return f"{judged}{end} If you still want it, open {url} yourself"
