"""``Broker``: one queue for every connected server's questions, one person to answer them.

A host connected to several servers has one person at the keyboard. Each server may ask
at any moment (a form, a link to open, a sampling request to approve), and each
connection's responder would otherwise grab the screen for itself. The broker gives each
connection a responder that only queues: one loop shows the questions one at a time,
each naming the server that asks. Servers take turns (the one shown longest ago goes
next, with its oldest question), and each may have ``max_waiting_per_server`` questions
waiting: a server that floods the person cannot push everyone else's questions behind
thousands of its own, or grow the queue without limit. What the person can no longer
usefully answer goes away by itself: a question whose call died (the server withdrew it,
or disconnected) leaves the queue, or the screen with a word of explanation. The person
can answer "cancel" to everything a server asked, or mute it for the session.

While anything is queued or shown, the person is busy, so the broker holds its
``Attention``: every connection answered through the broker holds its request timers,
and restarts them in full when the person is free. A slow human never times out a call
to any server, including one whose question waits behind another server's.
"""

from __future__ import annotations

import itertools
import logging
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol, Self, cast

import anyio
from anyio.abc import TaskGroup

from answerback._options import (
    callable_or_none,
    having_methods,
    instance_or_none,
    non_empty_text,
    positive_int,
)
from answerback.client import (
    HEADLESS_META,
    CheckedForms,
    ClientRequestContext,
    ClientSession,
    FormRenderer,
    Responder,
)
from answerback.client._callbacks import WrongAnswerType, is_plain_function
from answerback.forms import AnswerError, parse_form
from answerback.interact._questions import Answer, Presenter, Question, QuestionKind
from answerback.interact._roots import Roots
from answerback.jsonrpc._attention import Attention
from answerback.types import (
    USER_REJECTED,
    ClientCapabilities,
    ConnectionClosedError,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationCapability,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    EmptyResult,
    ErrorData,
    ListRootsResult,
    MCPError,
    RequestTimeoutError,
    RootsCapability,
    SamplingCapability,
)

logger = logging.getLogger("answerback.interact")

_NAMED: dict[QuestionKind, str] = {"form": "form", "url": "link", "sampling": "sampling request"}

SERVER_DISCONNECTED = "the server disconnected"
SERVER_CANCELLED = "the server withdrew it, or the call that asked it was cancelled"
"""A legacy server sent ``notifications/cancelled`` for the question. It does so on its
own, and also when the host cancelled the call that led to the question; the client
cannot tell which (nothing on the wire ties a server's request to a call over stdio),
so the person is told both: one who pressed "stop" is not told the server withdrew."""
SERVER_NOT_ANSWERING = "the server stopped answering"
CALL_ENDED = "the call that asked it was cancelled"
CONNECTION_CLOSED = "the connection to the server was closed"


class Broker:
    """One queue of questions for every connected server, shown one at a time.

    Use it as ``async with Broker(presenter) as broker`` around the clients it answers
    for, and give each client ``broker.responder(name)``. The presenter is called for
    one question at a time; from inside ``present`` it may call ``cancel_all`` or
    ``mute`` for the question's server (its own screen is then cancelled).
    ``on_change`` is called whenever ``pending()`` changes (to show "2 more waiting").
    Servers take turns; past ``max_waiting_per_server`` questions waiting from one
    server, its further questions are answered "cancel" (sampling: refused) unseen.

    A ``presenter`` without ``present`` and ``withdrawn`` (or with either a plain
    ``def``: both are awaited), an ``on_change`` that cannot be called, or a
    ``max_waiting_per_server`` that is not a positive ``int`` is refused (``TypeError``,
    ``ValueError``) here, not when the first question comes.
    """

    def __init__(
        self,
        presenter: Presenter,
        *,
        on_change: Callable[[], None] | None = None,
        max_waiting_per_server: int = 32,
    ) -> None:
        having_methods(
            "presenter",
            presenter,
            ("present", "withdrawn"),
            "a Presenter (an object with async present(question) and withdrawn(question, "
            "reason), such as TerminalPresenter())",
        )
        for method in ("present", "withdrawn"):
            if is_plain_function(getattr(presenter, method)):
                kind = type(presenter).__name__
                raise TypeError(f"{kind}.{method} is a plain function: write it as `async def`.")
        self.presenter = presenter
        self._on_change = callable_or_none(
            "on_change", on_change, "a function called with no arguments"
        )
        self.max_waiting_per_server = positive_int(
            "max_waiting_per_server", max_waiting_per_server, "questions"
        )
        """Past this many of one server's questions waiting, its next is answered
        "cancel" at once, unseen (the server can tell: ``HEADLESS_META``)."""
        self.attention = Attention()
        """Held while anything is queued or shown: the timers of every connection
        answered through this broker stand still meanwhile."""
        self._queue: list[_Asking] = []
        self._shown: _Asking | None = None
        self._holding: _Conversation | None = None
        """The conversation just answered: its next question (a form asked again)
        comes before anyone else's, since the person is in the middle of it."""
        self._muted: set[str] = set()
        self._muted_said: set[str] = set()
        """Muted servers whose declining was logged (once a mute: a muted server may
        be asking without end)."""
        self._last_turn: dict[str, int] = {}
        """When each server's question was last shown (a count): the turns it had."""
        self._turns = itertools.count(1)
        self._overflowing: set[str] = set()
        """Servers whose questions are being cancelled for want of room (warned once)."""
        self._numbers = itertools.count(1)
        self._speakers: dict[str, _Speaker] = {}
        """The open connections that asked, by the name the person knows each by (see
        ``_shown_name``); closed ones are dropped at the next question, so a host that
        names every connection anew does not keep them all, and their sessions are held
        weakly meanwhile (see ``_Speaker``)."""
        self._responders: weakref.WeakSet[BrokerResponder] = weakref.WeakSet()
        """The responders handed out and still in use: their names are not free for
        numbering (``tea (2)`` would collide with a connection named so by the host)."""
        self._pings: dict[ClientSession, _Ping] = {}
        """The ping under way to each server that withdrew a question: one at a time,
        whatever the number of withdrawals (see ``_verdict``)."""
        self._warned_content = False
        """Whether an answer's dropped ``content`` was logged (once: see
        ``_without_content``)."""
        self._changed: anyio.Event | None = None
        self._task_group: TaskGroup | None = None

    def __repr__(self) -> str:
        return (
            f"Broker(presenter={type(self.presenter).__name__}, pending={len(self.pending())}, "
            f"muted={sorted(self._muted)!r})"
        )

    async def __aenter__(self) -> Self:
        if self._task_group is not None:
            raise RuntimeError("This Broker is already running; enter it once.")
        self._changed = anyio.Event()
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._serve, self._task_group)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        task_group, self._task_group = self._task_group, None
        assert task_group is not None, "Broker left without being entered"
        task_group.cancel_scope.cancel()
        shown = self._shown
        try:
            return await task_group.__aexit__(exc_type, exc, tb)
        finally:
            # Nobody will show what is still waiting: answer it as a person who left.
            for asking in [shown, *self._queue] if shown is not None else self._queue:
                asking.settle(_refusal(asking.question.kind, "cancel", "the host closed"))
            self._queue.clear()

    # -- for the host ----------------------------------------------------------------

    def responder(
        self,
        server: str,
        *,
        roots: Roots | None = None,
        sampling: bool | SamplingCapability = True,
        attempts: int = 3,
    ) -> BrokerResponder:
        """A responder for one connected server, named ``server`` to the person: give
        it to ``Client(target, responder=...)``.

        It declares elicitation (forms and links), sampling unless ``sampling`` is
        false (a ``SamplingCapability`` declares exactly that), and roots if ``roots``
        is given. A form answer that does not fit is shown again, up to ``attempts``
        times in all (``CheckedForms``).

        Names are how the person tells servers apart, and what ``mute`` and
        ``cancel_all`` take: while two open connections ask under one name, the later
        one's questions show as ``name (2)`` (a warning says so), and a server connected
        again after its connection closed keeps the name. The broker never numbers a
        connection with a name given to another responder: the host's own ``"tea (2)"``
        is shown as that, and a numbered connection holding the name moves on to the
        next number (unless its question is on screen, under that name: the host's
        ``"tea (2)"`` is then shown as ``tea (2) (2)`` while it is open).

        ``TypeError`` or ``ValueError`` for an empty or non-string ``server``, ``roots``
        that are not a ``Roots``, a ``sampling`` that is neither ``True``, ``False`` nor
        a ``SamplingCapability`` (a string is not taken for true), or ``attempts`` that
        are not a positive ``int``."""
        desk = _Desk(self._conversation, self._finished, self._ask)
        responder = BrokerResponder(
            self, server, roots=roots, sampling=sampling, attempts=attempts, desk=desk
        )
        self._responders.add(responder)
        return responder

    def pending(self) -> list[Question]:
        """The question on screen (first) and those waiting, in the order they will
        show if nothing else comes: servers in turn, each one's in arrival order. A
        question is gone from here as soon as it is answered or its call ends, even
        while its screen is still closing."""
        on_screen = self._shown
        shown = [on_screen.question] if on_screen is not None and not on_screen.gone else []
        by_server: dict[str, list[Question]] = {}
        for asking in self._queue:
            by_server.setdefault(asking.question.server, []).append(asking.question)
        last_turn = self._last_turn
        lines = sorted(by_server.items(), key=lambda item: last_turn.get(item[0], 0))
        rounds = itertools.zip_longest(*(questions for _, questions in lines))
        return shown + [question for turn in rounds for question in turn if question is not None]

    def cancel_all(self, server: str) -> int:
        """Answer "cancel" to everything ``server`` asked that is waiting or on screen
        (a sampling request is refused as the person's no); returns how many.

        ``server`` is a name given to ``responder`` (it reaches every connection asking
        under it, ``name (2)`` included), or a numbered name the person was shown
        (``question.server``: that connection only)."""
        return self._answer_all(server, "cancel")

    def mute(self, server: str) -> None:
        """Decline, unseen, everything ``server`` asks from now on (for the session,
        until ``unmute``), and what it asked that is still waiting or on screen. The
        server can tell: the answer carries the reason (``HEADLESS_META``).

        A name given to ``responder`` mutes every connection under it, now and later;
        a numbered name (``name (2)``, as shown) mutes that one connection while it is
        open: the next connection shown by that number may be another server."""
        speaker = self._speakers.get(server)
        if speaker is not None and speaker.numbered:
            speaker.muted = True
        else:
            self._muted.add(server)
        self._muted_said.difference_update(self._known_as(server))
        self._answer_all(server, "decline")

    def unmute(self, server: str) -> None:
        """Show ``server``'s questions again (the name as given to ``mute``)."""
        self._muted.discard(server)
        speaker = self._speakers.get(server)
        if speaker is not None:
            speaker.muted = False
        self._muted_said.difference_update(self._known_as(server))

    def is_muted(self, server: str) -> bool:
        """Whether questions asked under ``server`` (either kind of name, as for
        ``mute``) are declined unseen."""
        speaker = self._speakers.get(server)
        if speaker is None:
            return server in self._muted
        return self._muting(speaker, server)

    # -- for the responders ----------------------------------------------------------

    def _conversation(self, server: str) -> _Conversation:
        """A new conversation: the questions of one request, numbered as one."""
        return _Conversation(server, next(self._numbers))

    def _finished(self, conversation: _Conversation) -> None:
        """The request behind ``conversation`` is answered (or gone)."""
        conversation.ended = True
        self._wake()

    async def _ask(self, question: Question, conversation: _Conversation, *, again: bool) -> Answer:
        """Queue ``question`` (first in line when ``again``: the person is in the middle
        of that conversation) and wait for the answer. If the waiting is cancelled (the
        call behind the question died), the question leaves the queue, or the screen."""
        if self._task_group is None:
            raise RuntimeError(
                "The Broker is not running: use it as `async with Broker(presenter)` around "
                "the clients it answers for."
            )
        server = question.server = self._shown_name(question.server, question.context.session)
        if self._muting(self._speakers[server], server):
            if server not in self._muted_said:
                self._muted_said.add(server)
                logger.warning(
                    "declined a %s from %s unseen: the person muted this server (its next "
                    "questions are declined without a word, until it is unmuted)",
                    _NAMED[question.kind],
                    server,
                )
            return _refusal(question.kind, "decline", "the person muted this server")
        if not again and self._waiting_from(server) >= self.max_waiting_per_server:
            reason = (
                f"the person already has {self.max_waiting_per_server} of this server's "
                "questions waiting"
            )
            if server not in self._overflowing:
                self._overflowing.add(server)
                logger.warning("cancelled questions from %s unseen: %s", server, reason)
            return _refusal(question.kind, "cancel", reason)
        self._overflowing.discard(server)
        asking = _Asking(question, conversation)
        if again:
            self._queue.insert(0, asking)
        else:
            self._queue.append(asking)
        self._wake()
        try:
            await asking.done.wait()
        except BaseException:
            self._withdraw(asking, _why_gone(question.context))
            raise
        if asking.failure is not None:
            raise asking.failure
        assert asking.answer is not None
        return asking.answer

    def _shown_name(self, server: str, session: ClientSession) -> str:
        """The name the person knows ``session`` by: ``server``, or ``server (2)``,
        ``(3)``... while an earlier connection still open asks under that name too (two
        instances of one server, named after it), so the person can tell them apart and
        mute or cancel one. A connection keeps its place until it closes; then the next
        to ask under the name takes it (a server connected again keeps its name). A
        numbered connection holding a name some responder was given moves on to the
        next number when that one asks: the host's own name comes first. Except while
        the holder's question is on screen: its card (and the keys that mute or cancel
        by its name) shows the name, so the newcomer is numbered instead, for as long
        as it is open."""
        self._forget_closed()
        speakers = self._speakers
        for shown, speaker in speakers.items():
            if speaker.session is session:
                return shown
        holder = speakers.get(server)
        if holder is not None and holder.numbered:
            if self._on_screen(holder.session):
                shown = self._free_number(server)
                speakers[shown] = _Speaker(server, weakref.ref(session), numbered=True)
                logger.warning(
                    "a connection was given the name %r, which the question on screen "
                    "shows for another: its questions are shown as %r while it is open. "
                    "Give each broker.responder(...) a name unlike another's numbered name.",
                    server,
                    shown,
                )
                return shown
            self._renumber(server, holder)
        if server not in speakers:
            speakers[server] = _Speaker(server, weakref.ref(session), numbered=False)
            return server
        shown = self._free_number(server)
        speakers[shown] = _Speaker(server, weakref.ref(session), numbered=True)
        logger.warning(
            "two open connections answer through this broker as %r: the questions of the "
            "later one are shown as %r. Give each broker.responder(...) a name of its own "
            "to choose how the person knows them.",
            server,
            shown,
        )
        return shown

    def _free_number(self, server: str) -> str:
        """``server (2)``, ``(3)``...: the first that no open connection shows and no
        responder was given."""
        given = {responder.server for responder in self._responders}
        for place in itertools.count(2):
            shown = f"{server} ({place})"
            if shown not in self._speakers and shown not in given:
                return shown
        raise AssertionError("unreachable: itertools.count is endless")

    def _renumber(self, shown: str, holder: _Speaker) -> None:
        """Give ``holder``'s name to the connection that was given it: ``holder`` takes
        the next free number, its waiting questions and its turns, warnings and mute
        notes too (they are its own, not the newcomer's). Never called while ``holder``
        has a question on screen (see ``_shown_name``)."""
        del self._speakers[shown]
        moved = self._free_number(holder.base)
        self._speakers[moved] = holder
        for asking in self._queue:
            if asking.question.context.session is holder.session:
                asking.question.server = moved
        if shown in self._last_turn:
            self._last_turn[moved] = self._last_turn.pop(shown)
        for noted in (self._overflowing, self._muted_said):
            if shown in noted:
                noted.discard(shown)
                noted.add(moved)
        logger.warning(
            "a connection was given the name %r the broker showed another by: that one is "
            "now shown as %r",
            shown,
            moved,
        )

    def _on_screen(self, session: ClientSession | None) -> bool:
        """Whether a question of ``session`` is on screen (its screen may be closing)."""
        shown = self._shown
        return shown is not None and shown.question.context.session is session

    def _forget_closed(self) -> None:
        """Drop the connections that closed, and what the broker kept by their names."""
        for shown, speaker in list(self._speakers.items()):
            if speaker.closed:
                del self._speakers[shown]
                if not any(asking.question.server == shown for asking in self._queue):
                    self._last_turn.pop(shown, None)
                    self._overflowing.discard(shown)
                self._muted_said.discard(shown)

    def _known_as(self, name: str) -> set[str]:
        """The shown names ``name`` reaches: itself, and the numbered connections of
        the responders given it."""
        return {name} | {shown for shown, s in self._speakers.items() if s.base == name}

    def _muting(self, speaker: _Speaker, shown: str) -> bool:
        """Whether the connection shown as ``shown`` is muted, by either of its names."""
        return speaker.muted or shown in self._muted or speaker.base in self._muted

    # -- the loop ------------------------------------------------------------------

    def _wake(self) -> None:
        if self._changed is not None:
            self._changed.set()
        self._pending_changed()

    def _pending_changed(self) -> None:
        if self._on_change is not None:
            try:
                self._on_change()
            except Exception:  # a status line must not break the queue
                logger.exception("the broker's on_change callback failed")

    async def _serve(self, task_group: TaskGroup) -> None:
        while True:
            asking = self._next()
            if asking is None:
                assert self._changed is not None
                await self._changed.wait()
                self._changed = anyio.Event()
            else:
                await self._show(asking, task_group)

    def _waiting_from(self, server: str) -> int:
        return sum(1 for asking in self._queue if asking.question.server == server)

    def _next(self) -> _Asking | None:
        """The conversation just answered, if it asks again; else the oldest question
        of the server whose turn it is (shown longest ago, or never)."""
        holding = self._holding
        if holding is not None and holding.ended:
            holding = self._holding = None
        if holding is not None:
            chosen = next((a for a in self._queue if a.conversation is holding), None)
        else:
            last_turn = self._last_turn
            chosen = min(
                self._queue, key=lambda a: last_turn.get(a.question.server, 0), default=None
            )
        if chosen is not None:
            self._queue.remove(chosen)
            self._last_turn[chosen.question.server] = next(self._turns)
        return chosen

    async def _show(self, asking: _Asking, task_group: TaskGroup) -> None:
        question = asking.question
        self._shown = asking
        self._pending_changed()
        try:
            with asking.scope:
                try:
                    answer = self._without_content(
                        question,
                        _checked(
                            self.presenter, question.kind, await self.presenter.present(question)
                        ),
                    )
                except Exception as exc:
                    asking.fail(exc)  # the request fails with it, as a callback's would
                else:
                    asking.settle(answer)
        finally:
            self._shown = None
            self._pending_changed()
        if asking.withdrawal == SERVER_CANCELLED:
            # Whether the server is still there takes a ping, which a frozen server
            # leaves unanswered: the next question must not wait for it.
            task_group.start_soon(self._tell_withdrawn, question, asking.withdrawal)
        elif asking.withdrawal is not None:
            await self._tell_withdrawn(question, asking.withdrawal)
        elif not asking.scope.cancel_called:
            self._holding = asking.conversation

    def _without_content(self, question: Question, answer: Answer) -> Answer:
        """``answer`` without ``content`` unless it accepts a form: what the person typed
        and chose not to send stays with them. Dropped here rather than by the client,
        whose warning could only name ``BrokerResponder``, so that the warning (once a
        broker) names the presenter whose code put the content there."""
        if not isinstance(answer, ElicitResult) or answer.content is None:
            return answer
        if question.kind == "form" and answer.action == "accept":
            return answer
        if not self._warned_content:
            self._warned_content = True
            logger.warning(
                "%s.present answered a %s with %r from %s, with content; the answer was "
                "sent without it: only an accepted form carries content (what was typed "
                "into a form the person declined or cancelled stays with them). Leave "
                "content out of such answers.",
                type(self.presenter).__name__,
                _NAMED[question.kind],
                answer.action,
                question.server,
            )
        return answer.model_copy(update={"content": None})

    async def _tell_withdrawn(self, question: Question, reason: str) -> None:
        """Tell the person why ``question`` left the screen, once sure of the reason.

        If the broker closes while a ping is under way, the person is still told, with
        the reason unconfirmed: the question did go away, and the ping's answer cannot
        come any more (shielded, but only for ``PING_SECONDS``: a presenter that hangs
        must not hold the host's exit)."""
        try:
            reason = await self._verdict(question.context, reason)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True) as last_word:
                last_word.deadline = anyio.current_time() + PING_SECONDS
                await self._say_withdrawn(question, reason)
            raise
        await self._say_withdrawn(question, reason)

    async def _say_withdrawn(self, question: Question, reason: str) -> None:
        try:
            await self.presenter.withdrawn(question, reason)
        except Exception:
            logger.exception("the presenter failed to say a question was withdrawn")

    async def _verdict(self, context: ClientRequestContext, reason: str) -> str:
        """``_confirmed``, with one ping at a time to each server: a server cycling ask
        and withdraw as fast as questions show would otherwise have a ping of its own
        per withdrawal under way, each held for up to ``PING_SECONDS``. Later
        withdrawals take the running ping's verdict."""
        if reason != SERVER_CANCELLED:
            return reason
        session = context.session
        running = self._pings.get(session)
        if running is not None:
            await running.done.wait()
            return running.verdict or reason
        running = self._pings[session] = _Ping()
        try:
            running.verdict = await _confirmed(context, reason)
        finally:
            del self._pings[session]
            running.done.set()
        return running.verdict

    def _withdraw(self, asking: _Asking, reason: str) -> None:
        if asking in self._queue:
            self._queue.remove(asking)
            self._pending_changed()
        elif asking is self._shown and not asking.done.is_set():
            asking.withdrawal = reason
            asking.scope.cancel()
            self._pending_changed()

    def _answer_all(self, server: str, action: str) -> int:
        reason = "the person muted this server" if action == "decline" else None
        speaker = self._speakers.get(server)
        if speaker is not None and speaker.numbered:
            # A numbered name is that connection only, even if some responder was given
            # the same name (it is then shown numbered, see ``_shown_name``).
            session = speaker.session

            def reached(asking: _Asking) -> bool:
                return asking.question.context.session is session
        else:

            def reached(asking: _Asking) -> bool:
                return asking.asked_by(server)

        count = 0
        for asking in [a for a in self._queue if reached(a)]:
            self._queue.remove(asking)
            asking.settle(_refusal(asking.question.kind, action, reason))
            count += 1
        shown = self._shown
        if shown is not None and reached(shown) and not shown.done.is_set():
            shown.settle(_refusal(shown.question.kind, action, reason))
            shown.scope.cancel()
            count += 1
        if count:
            self._pending_changed()
        return count


class _Ask(Protocol):
    async def __call__(
        self, question: Question, conversation: _Conversation, *, again: bool
    ) -> Answer: ...


@dataclass(frozen=True)
class _Desk:
    """The broker's side that its responders use, handed to each by ``Broker.responder``
    (a host never calls these, so ``Broker`` keeps them private)."""

    conversation: Callable[[str], _Conversation]
    finished: Callable[[_Conversation], None]
    ask: _Ask


@dataclass(eq=False)
class _Speaker:
    """An open connection that asked through the broker, under the name ``base`` given
    to its responder. Its session is held weakly: the broker keeps the name until the
    next question (``_forget_closed``), but a closed connection's session, with all it
    holds, is freed as soon as the host lets go of its client."""

    base: str
    session_ref: weakref.ref[ClientSession]
    numbered: bool
    """Shown as ``base (2)`` and so on, not by its own name."""
    muted: bool = False
    """Muted by its number: for as long as it is open."""

    @property
    def session(self) -> ClientSession | None:
        """The connection's session; ``None`` once freed (it was closed)."""
        return self.session_ref()

    @property
    def closed(self) -> bool:
        """Whether the connection ended (or is ending), from either side, or was freed."""
        session = self.session_ref()
        if session is None:
            return True
        endpoint = session.endpoint
        return endpoint.closed.is_set() or endpoint.closing


@dataclass(eq=False)
class _Ping:
    """A ping under way to a server that withdrew a question, and what it showed."""

    done: anyio.Event = field(default_factory=anyio.Event)
    verdict: str | None = None


@dataclass(eq=False)
class _Conversation:
    """The questions of one server request: asked, maybe asked again, then done."""

    server: str
    number: int
    ended: bool = False


@dataclass(eq=False)
class _Asking:
    """A question in the queue or on screen, and the answer its request waits for."""

    question: Question
    conversation: _Conversation
    done: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    """Cancels the presenter's screen when the question goes away."""
    answer: Answer | None = None
    failure: Exception | None = None
    withdrawal: str | None = None
    """Why the question went away while on screen, for the person."""

    def asked_by(self, name: str) -> bool:
        """Whether ``name`` reaches this question: the name shown, or the name its
        responder was given (``mute`` and ``cancel_all`` take either)."""
        return name in (self.question.server, self.conversation.server)

    @property
    def gone(self) -> bool:
        """Answered, or its call ended: nothing the person could still answer."""
        return self.done.is_set() or self.withdrawal is not None

    def settle(self, answer: Answer) -> None:
        if not self.done.is_set():
            self.answer = answer
            self.done.set()

    def fail(self, exc: Exception) -> None:
        if not self.done.is_set():
            self.failure = exc
            self.done.set()


class BrokerResponder(Responder):
    """Answers one server's questions through the broker's queue (see
    ``Broker.responder``). Logs and other notifications are ignored: wrap it in a
    ``ResponderWrapper`` to show them; the broker's attention still reaches the client."""

    def __init__(
        self,
        broker: Broker,
        server: str,
        *,
        roots: Roots | None,
        sampling: bool | SamplingCapability,
        attempts: int,
        desk: _Desk,
    ) -> None:
        self.server = non_empty_text("server", server, "the name the person knows it by")
        self.roots = instance_or_none("roots", roots, Roots, "Roots([...])")
        if not isinstance(cast(object, sampling), bool | SamplingCapability):
            raise TypeError(
                "sampling must be True, False or a SamplingCapability(...) (what to declare), "
                f"got {sampling!r}"
            )
        self.attempts = positive_int("attempts", attempts, "askings of a form, the first included")
        self.broker = broker
        self._desk = desk
        self.attention = broker.attention
        """The broker's person: the client holds its timers while they are busy."""
        if isinstance(sampling, SamplingCapability):
            self._sampling: SamplingCapability | None = sampling
        else:
            self._sampling = SamplingCapability() if sampling else None

    def __repr__(self) -> str:
        sampling = self._sampling is not None
        return f"BrokerResponder({self.server!r}, sampling={sampling}, roots={self.roots!r})"

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(
            elicitation=ElicitationCapability(form={}, url={}),
            sampling=self._sampling,
            roots=RootsCapability(list_changed=True) if self.roots is not None else None,
        )

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        conversation = self._desk.conversation(self.server)
        try:
            with self.attention.holding():
                renderer = _Renderer(self, conversation, self._desk)
                forms = CheckedForms(renderer, attempts=self.attempts)
                return await forms.elicit(context, params)
        finally:
            self._desk.finished(conversation)

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        conversation = self._desk.conversation(self.server)
        question = Question(self.server, "sampling", params, context, number=conversation.number)
        try:
            with self.attention.holding():
                answer = await self._desk.ask(question, conversation, again=False)
        finally:
            self._desk.finished(conversation)
        assert not isinstance(answer, ElicitResult), "checked by the broker"
        return answer

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        if self.roots is None:
            return await super().list_roots(context)
        return await self.roots.list_roots(context)


class _Renderer(FormRenderer):
    """One elicitation's way to the queue, for ``CheckedForms`` to ask (and ask again)."""

    def __init__(
        self, responder: BrokerResponder, conversation: _Conversation, desk: _Desk
    ) -> None:
        self._responder = responder
        self._conversation = conversation
        self._desk = desk

    def capabilities(self) -> ClientCapabilities:
        """Forms and links only: the rest of the server's questions go another way."""
        return ClientCapabilities(elicitation=self._responder.capabilities().elicitation)

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        return await self._ask(context, params, None, None)

    async def elicit_again(
        self,
        context: ClientRequestContext,
        params: ElicitRequestFormParams,
        previous: ElicitResult,
        problems: AnswerError,
    ) -> ElicitResult | ErrorData:
        return await self._ask(context, params, previous, problems)

    async def _ask(
        self,
        context: ClientRequestContext,
        params: ElicitRequestParams,
        previous: ElicitResult | None,
        problems: AnswerError | None,
    ) -> ElicitResult | ErrorData:
        server, number = self._responder.server, self._conversation.number
        if isinstance(params, ElicitRequestFormParams):
            form = context.form or parse_form(params.requested_schema)
            question = Question(
                server, "form", params, context, previous, problems, form, number=number
            )
        else:
            question = Question(server, "url", params, context, number=number)
        again = problems is not None
        answer = await self._desk.ask(question, self._conversation, again=again)
        assert not isinstance(answer, CreateMessageResult), "checked by the broker"
        return answer


def _refusal(kind: QuestionKind, action: str, reason: str | None) -> Answer:
    """The answer for a question nobody looks at: ``action`` ("cancel" or "decline")
    for elicitation, the person's no (-1) for sampling; ``reason`` marks a policy."""
    marker = {HEADLESS_META: {"policy": action, "reason": reason}} if reason else None
    if kind == "sampling":
        return ErrorData(
            code=USER_REJECTED,
            message=f"User rejected sampling request ({reason or 'the person cancelled it'}).",
            data=marker,
        )
    return ElicitResult(action="cancel" if action == "cancel" else "decline", meta=marker)


def _checked(presenter: Presenter, kind: QuestionKind, answer: object) -> Answer:
    """``answer`` if its type fits the question; else a ``WrongAnswerType`` naming the
    presenter, so its author learns what it returned for what: worded by answerback,
    it reaches the call as it is in both eras, as a callback's wrong type does."""
    expected = CreateMessageResult if kind == "sampling" else ElicitResult
    if isinstance(answer, expected | ErrorData):
        return answer
    raise WrongAnswerType(
        f"{type(presenter).__name__}.present returned {type(answer).__name__} for a {kind} "
        f"question; it must return {expected.__name__} or ErrorData."
    )


def _why_gone(context: ClientRequestContext) -> str:
    """Why a question's request went away, in words for the person."""
    session = context.session
    endpoint = session.endpoint
    if endpoint.closed.is_set():
        return SERVER_DISCONNECTED
    if endpoint.closing:
        return CONNECTION_CLOSED  # by this side: the host disconnected from the server
    if session.modern_version is not None:
        return CALL_ENDED  # 2026-07-28 servers cannot withdraw a question; the call ended
    return SERVER_CANCELLED


PING_SECONDS = 5.0
"""How long ``_confirmed`` waits for the server's answer to a ping."""


async def _confirmed(context: ClientRequestContext, reason: str) -> str:
    """``reason``, unless it is ``SERVER_CANCELLED`` and a ping says otherwise: the
    server disconnected, or it stopped answering (no answer within ``PING_SECONDS``:
    frozen, or its event loop blocked). Over Streamable HTTP a dead server breaks the
    call's stream and the client ends that call's questions as if cancelled, while the
    connection itself stays open (it has no single stream whose end says so); a call
    the host cancels ends them the same way, whether or not the server is alive. A
    server that answers, even with an error, is taken at its word."""
    if reason != SERVER_CANCELLED:
        return reason
    session = context.session
    with anyio.move_on_after(PING_SECONDS):
        try:
            await session.send_request("ping", None, EmptyResult)
        except ConnectionClosedError:
            return CONNECTION_CLOSED if session.endpoint.closing else SERVER_DISCONNECTED
        except RequestTimeoutError:  # the client's own timeout, shorter than ours
            return SERVER_NOT_ANSWERING
        except MCPError:
            pass  # an answer, even an error: the server is there
        return reason
    return SERVER_NOT_ANSWERING
