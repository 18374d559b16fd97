"""URL-mode elicitation on the client: judge the link, ask, open, follow -32042.

A server that needs the person to visit a page (to sign in elsewhere, to pay) sends a
URL. The client never fetches or resolves it. Every URL elicitation, in either
protocol generation, is judged here before anyone sees it: a link the verdict blocks is
refused with an error the server (or, in 2026-07-28, the caller) can tell from a
person's decline, and any other link reaches the elicitation callback with its
``UrlVerdict`` on ``context.url_verdict``. ``UrlConsent`` is a callback that shows the
verdict, asks, and opens the system browser only after a yes.

2025-11-25 servers can also refuse a call with error -32042 listing the URL
elicitations it needs first. With ``UrlElicitations(follow_required=True)`` the client
asks about each through the same callback, waits for the server's
``notifications/elicitation/complete``, and retries the call once; the same
elicitations required again stop with ``UrlElicitationLoopError``.

Completions are kept per connection (``UrlCompletions``, ``client.url_completions``): a
host may give one ``UrlElicitations`` to several clients, and no server may complete an
elicitation another server asked for, nor end the wait before a retry of another
server's call.
"""

from __future__ import annotations

import logging
import weakref
import webbrowser
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar, cast

import anyio
import anyio.to_thread

from answerback._options import flag, instance_or_none, positive_seconds_or_none
from answerback.client._callbacks import (
    ClientRequestContext,
    ElicitationCallback,
    async_callable_or_none,
)
from answerback.jsonrpc import JSONObject
from answerback.types import (
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
    Implementation,
    InvalidParamsError,
    MCPError,
    URLElicitationRequiredError,
)
from answerback.types._errors import INVALID_PARAMS, URL_ELICITATION_REQUIRED
from answerback.urls import MAX_URL_LENGTH, ApprovedDomains, UrlVerdict, judge_url

if TYPE_CHECKING:
    from answerback.client._session import ClientSession

logger = logging.getLogger("answerback.client")

T = TypeVar("T")

ConsentAnswer = Literal["accept", "decline", "cancel"]
CompletionCallback = Callable[[str, "ClientSession"], Awaitable[None]]

REMEMBERED_ELICITATIONS = 1024
"""How many elicitation ids each connection remembers for completion; past this its
oldest are forgotten (a completion for one of them is then ignored, as for any unknown
id). Per connection, so that one server asking often cannot push out another's; a
connection's ids go with its ``ClientSession``."""


def refuse_blocked(verdict: UrlVerdict) -> InvalidParamsError:
    """The error for a URL elicitation whose link is never safe to open (-32602): the
    server sees why, and cannot take it for a person's decline."""
    reasons = "; ".join(reason.message.rstrip(".") for reason in verdict.reasons)
    because = f" ({reasons})" if reasons else ""
    return InvalidParamsError(
        "The link was not shown or opened: this client judged it never safe to open"
        f"{because}. Only an https link (plain http only for this computer) with no user "
        "name before '@' can be offered to open.",
        {"url": _quoted(verdict.url), "reasons": [reason.code.value for reason in verdict.reasons]},
    )


def _quoted(url: str) -> str:
    """``url`` as an error sends it back: whole, unless it is past ``MAX_URL_LENGTH`` (then
    its start), so a refusal is never larger than a link may be."""
    return url if len(url) <= MAX_URL_LENGTH else url[:_QUOTED_OF_TOO_LONG] + "…"


_QUOTED_OF_TOO_LONG = 200


class UrlElicitationLoopError(URLElicitationRequiredError):
    """The server required the same URL elicitations again after the person accepted
    them and the call was retried; the client stops instead of asking in a loop."""

    def __init__(self, message: str, data: object = None) -> None:
        MCPError.__init__(self, URL_ELICITATION_REQUIRED, message, data)


class UrlCompletions:
    """Which of one connection's URL elicitations its server said have completed
    (2025-11-25 ``notifications/elicitation/complete``).

    Made by answerback, not by hand: ``client.url_completions``, or
    ``UrlElicitations.completions(session)`` for a ``ClientSession`` used without
    ``Client``. Only that connection's: when several clients share one
    ``UrlElicitations``, each client's ids are its own, so asking about an id another
    server also used answers for this client's server alone. An elicitation asked for
    again after it completed counts as not completed until the server says so again.
    """

    def __init__(self, events: dict[str, anyio.Event]) -> None:
        """``events``: the connection's own record in its ``UrlElicitations``, shared, so
        this view follows completions that come after it was made."""
        self._events = events

    def is_completed(self, elicitation_id: str) -> bool:
        """Whether the server said the elicitation ``elicitation_id`` has completed."""
        event = self._events.get(elicitation_id)
        return event is not None and event.is_set()

    async def wait_completed(self, elicitation_id: str) -> None:
        """Wait until the server says ``elicitation_id`` has completed. Servers need not
        say so: bound the wait (``anyio.move_on_after``) and let the person retry by
        hand."""
        await _tracked(self._events, elicitation_id).wait()


def _tracked(events: dict[str, anyio.Event], elicitation_id: str) -> anyio.Event:
    """The event ``elicitation_id`` completes in one connection's ``events``, made if it
    is new (then the oldest is forgotten past ``REMEMBERED_ELICITATIONS``)."""
    event = events.get(elicitation_id)
    if event is None:
        if len(events) >= REMEMBERED_ELICITATIONS:
            del events[next(iter(events))]
        event = events[elicitation_id] = anyio.Event()
    return event


class UrlElicitations:
    """What clients do with URL-mode elicitation: verdicts, completions, -32042.

    Pass one to ``Client(url_elicitations=...)``, or leave the client its default one.
    One may serve several clients (the sites a person approved are the person's,
    whichever server asks): each connection's elicitation ids are kept apart, so a
    server can complete only what it asked for itself. ``client.url_completions`` (or
    ``completions(session)``) tells one client's completions.

    - ``approved_domains``: sites the person approved before; verdicts count them.
    - ``follow_required``: follow error -32042 on a 2025-11-25 connection (ask about each
      elicitation, wait for completion, retry once) instead of raising
      ``URLElicitationRequiredError``.
    - ``completion_timeout_seconds``: how long to wait for the server's completion
      notifications before the retry (``None``: for ever). Servers need not send
      them, so the retry goes ahead when the time is up and the server decides.
    - ``on_complete(elicitation_id, session)``: called when a server says an elicitation
      it asked about has completed; ``session`` is the ``ClientSession`` of the
      connection it came on (``session is client.session`` tells which client), since
      ids are only unique per connection. ``session.server_info`` is only the name the
      server gives itself, which any server can copy: key follow-up work on the session.
    """

    def __init__(
        self,
        *,
        approved_domains: ApprovedDomains | None = None,
        follow_required: bool = False,
        completion_timeout_seconds: float | None = 300.0,
        on_complete: CompletionCallback | None = None,
    ) -> None:
        self.approved_domains = instance_or_none(
            "approved_domains",
            approved_domains,
            ApprovedDomains,
            "an answerback.urls.ApprovedDomains(...)",
        )
        self.follow_required = flag("follow_required", follow_required)
        self.completion_timeout_seconds = positive_seconds_or_none(
            "completion_timeout_seconds",
            completion_timeout_seconds,
            "wait for ever",
            zero_means="retry at once",
        )
        self._on_complete = async_callable_or_none(
            "on_complete",
            on_complete,
            "an async function (elicitation_id, session)",
            takes=("elicitation_id", "session"),
        )
        self._connections: weakref.WeakKeyDictionary[ClientSession, dict[str, anyio.Event]] = (
            weakref.WeakKeyDictionary()
        )
        """Each connection's elicitation ids and their completion; held no longer than
        its session, so a closed connection's ids do not pile up."""

    def judge(self, url: str) -> UrlVerdict:
        """The verdict on ``url``, counting the approved sites."""
        return judge_url(url, approved_domains=self.approved_domains)

    def admit(self, session: ClientSession, params: ElicitRequestURLParams) -> UrlVerdict:
        """Judge a URL elicitation from ``session``'s server before anyone is asked; a
        blocked link raises ``InvalidParamsError``. An admitted elicitation's id is
        remembered for that connection, so its completion is noticed; an id that had
        completed starts again, since the server asks anew."""
        verdict = self.judge(params.url)
        if verdict.blocked:
            raise refuse_blocked(verdict)
        if params.elicitation_id is not None:
            events = self._events_of(session)
            earlier = events.get(params.elicitation_id)
            if earlier is not None and earlier.is_set():
                del events[params.elicitation_id]
            _tracked(events, params.elicitation_id)
        return verdict

    # -- completion ------------------------------------------------------------------

    def completions(self, session: ClientSession) -> UrlCompletions:
        """Which of ``session``'s elicitations its server said have completed (what
        ``client.url_completions`` gives for the client's own session)."""
        return UrlCompletions(self._events_of(session))

    async def completed(self, session: ClientSession, params: JSONObject | None) -> None:
        """Take in ``session``'s ``notifications/elicitation/complete``; one for an id
        that connection never saw, or saw complete already, is ignored, as the
        specification requires (another server's id is unknown here)."""
        elicitation_id = (params or {}).get("elicitationId")
        events = self._connections.get(session, {})
        event = events.get(elicitation_id) if isinstance(elicitation_id, str) else None
        if event is None or event.is_set():
            logger.debug("ignored completion of unknown elicitation %r", elicitation_id)
            return
        event.set()
        if self._on_complete is not None:
            await self._on_complete(cast(str, elicitation_id), session)

    def _events_of(self, session: ClientSession) -> dict[str, anyio.Event]:
        events = self._connections.get(session)
        if events is None:
            events = self._connections[session] = {}
        return events

    # -- error -32042 ----------------------------------------------------------------

    async def follow(self, session: ClientSession, send: Callable[[], Awaitable[T]]) -> T:
        """``await send()``, following one -32042 if ``follow_required`` is on: each
        elicitation goes through the session's elicitation path (verdict, then the
        callback), then the client waits for completion and retries once. Only on a
        legacy connection: 2026-07-28 has neither the error nor the completion
        notification (its servers ask inside ``InputRequiredResult``)."""
        if not self.follow_required or session.modern_version is not None:
            return await send()
        try:
            return await send()
        except URLElicitationRequiredError as exc:
            required = self._followable(session, exc)
            await self._satisfy(session, required, exc)
        try:
            return await send()
        except URLElicitationRequiredError as exc:
            again = sorted(required.keys() & _ids(exc))
            if not again:
                raise
            raise UrlElicitationLoopError(
                f"The server still requires URL elicitation {', '.join(map(repr, again))} "
                "after the person accepted it and the call was retried once; stopping "
                "rather than asking in a loop. The person may not have finished in the "
                "browser yet: call again once they have.",
                exc.data,
            ) from exc

    def _followable(
        self, session: ClientSession, exc: URLElicitationRequiredError
    ) -> dict[str, ElicitRequestURLParams]:
        """The elicitations ``exc`` requires, by id, or ``exc`` itself re-raised when the
        client cannot follow it (no URL-mode callback, or data the specification forbids)."""
        elicitation = session.capabilities.elicitation
        if elicitation is None or elicitation.url is None:
            raise exc
        try:
            required = exc.elicitations
        except ValueError:
            exc.add_note("Its data does not list URL elicitations as the specification says.")
            raise exc from None
        by_id = {params.elicitation_id: params for params in required if params.elicitation_id}
        if not required or len(by_id) < len(required):
            exc.add_note("It lists no elicitation, or one without a unique elicitationId.")
            raise exc
        return by_id

    async def _satisfy(
        self,
        session: ClientSession,
        required: dict[str, ElicitRequestURLParams],
        exc: URLElicitationRequiredError,
    ) -> None:
        """Ask about each required elicitation; any answer but accept ends the call
        with ``exc``. Then wait (bounded) for the server to say each is complete."""
        for elicitation_id, params in required.items():
            meta = params.meta.to_wire() if params.meta is not None else None
            context = ClientRequestContext(session, elicitation_id, meta)
            try:
                answer = await session.answer_elicitation(context, params)
            except MCPError as refused:
                raise refused from exc
            if isinstance(answer, ErrorData):
                raise MCPError.from_error_data(answer) from exc
            if answer.action != "accept":
                exc.add_note(
                    f"The person answered {answer.action!r} to opening {params.url}, "
                    "so the call was not retried."
                )
                raise exc
        # Awaited only now: asking admitted each id afresh, so an id that had completed
        # before is waited for again, and a completion that came during the asking counts.
        completions = self.completions(session)
        with anyio.move_on_after(self.completion_timeout_seconds):
            for elicitation_id in required:
                await completions.wait_completed(elicitation_id)


def _ids(exc: URLElicitationRequiredError) -> set[str]:
    try:
        return {p.elicitation_id for p in exc.elicitations if p.elicitation_id is not None}
    except ValueError:
        return set()


# -- asking the person ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UrlConsentRequest:
    """What the person is asked before a link opens: show all of it.

    Show ``verdict.display`` whole (with ``display.site`` emphasised), the reasons
    (``verdict.reasons``) when there are any, ``message``, and which server asks.
    """

    message: str
    """Why the server wants the person to go there, in the server's words."""
    verdict: UrlVerdict
    elicitation_id: str | None
    server: Implementation | None
    """The server that asks (``None`` if it did not say who it is)."""


AskConsent = Callable[[UrlConsentRequest], Awaitable[ConsentAnswer]]
Opener = Callable[[str], bool]
NotOpened = Callable[[UrlConsentRequest, str], Awaitable[None]]


class UrlConsent:
    """An elicitation callback for URL mode: ask the person, open the browser on a yes.

    ``ask(request)`` shows the link and returns ``"accept"``, ``"decline"`` or
    ``"cancel"``. Only after ``"accept"`` is the link opened, with ``opener`` (the
    system browser by default; it runs in a worker thread, since a console browser
    holds it until it exits) and in its canonical form, exactly what the person was
    shown. A link that cannot be opened (the opener returns false, or raises) answers
    ``"cancel"``; ``not_opened(request, reason)`` is then awaited so the host can tell
    the person, and give them ``request.verdict.canonical_url`` to open by hand (without
    it, a warning is logged instead). Form-mode requests go to ``forms``; without it
    they are refused.
    """

    def __init__(
        self,
        ask: AskConsent,
        *,
        forms: ElicitationCallback | None = None,
        opener: Opener = webbrowser.open,
        not_opened: NotOpened | None = None,
    ) -> None:
        # A plain def passes here and fails every link at its await: refused now.
        checked_ask = async_callable_or_none(
            "ask", ask, "an async function of the request", takes=("request",)
        )
        if checked_ask is None:
            raise TypeError("ask must be an async function of the UrlConsentRequest, got None")
        self._ask = checked_ask
        self._forms = async_callable_or_none(
            "forms",
            forms,
            "an async function (context, params), like elicitation_callback",
            takes=("context", "params"),
        )
        if not callable(opener):
            raise TypeError(f"opener must be a function of the URL, got {opener!r}")
        self._opener = opener
        self._not_opened = async_callable_or_none(
            "not_opened",
            not_opened,
            "an async function (request, reason)",
            takes=("request", "reason"),
        )

    async def __call__(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        if not isinstance(params, ElicitRequestURLParams):
            if self._forms is None:
                return ErrorData(
                    code=INVALID_PARAMS,
                    message="This client answers URL-mode elicitation only; it has no form "
                    "to show.",
                )
            return await self._forms(context, params)
        verdict = context.url_verdict or judge_url(params.url)
        if verdict.blocked or verdict.canonical_url is None:
            return refuse_blocked(verdict).error
        request = UrlConsentRequest(
            params.message, verdict, params.elicitation_id, context.session.server_info
        )
        answer: object = await self._ask(request)
        if answer not in ("accept", "decline", "cancel"):
            raise TypeError(
                f"The consent function returned {answer!r}; it must return 'accept', "
                "'decline' or 'cancel'."
            )
        if answer != "accept":
            return ElicitResult(action=cast(ConsentAnswer, answer))
        reason = await open_link(verdict, opener=self._opener)
        if reason is None:
            return ElicitResult(action="accept")
        if self._not_opened is not None:
            await self._not_opened(request, reason)
        else:
            logger.warning("did not open %s: %s; answering cancel", verdict.canonical_url, reason)
        return ElicitResult(action="cancel")


async def open_link(verdict: UrlVerdict, *, opener: Opener = webbrowser.open) -> str | None:
    """Open the link the person accepted: ``None`` once it is open, else why not (then
    answer ``"cancel"``, tell the person, and show ``verdict.canonical_url`` to open by
    hand). What ``UrlConsent`` and the terminal presenters do after a yes, for any
    other presenter to do the same.

    It opens ``verdict.canonical_url``, exactly what was judged and shown, never the
    server's text as sent. A blocked verdict (``verdict.blocked``) is never opened, and
    must never be offered to open by hand either: check it before asking, and let the
    person only decline or cancel. ``opener`` (the system
    browser by default) runs in a worker thread, since a console browser holds it until
    it exits. An opener that raises is a link not opened, not a failed request: the
    person said yes, and the server gets an answer it can act on ("cancel"). The caller
    tells the person why, so only the traceback is logged (at debug level): one warning
    more would say the same thing twice."""
    url = verdict.canonical_url
    if verdict.blocked or url is None:
        return "the link was judged never safe to open"
    try:
        if await anyio.to_thread.run_sync(opener, url):
            return None
    except Exception as exc:  # webbrowser.Error, or a custom opener's failure
        logger.debug("opening %s failed", url, exc_info=exc)
        return f"opening the browser failed ({type(exc).__name__}: {exc})"
    return "no browser could be opened"
