"""How a tool's questions reach the client, in each protocol generation.

A tool author writes ``await ctx.elicit(...)`` once. On a legacy connection the
``LiveAsker`` sends a real ``elicitation/create`` request and waits. On a 2026-07-28
request the ``ReplayAsker`` answers from what the client already supplied; the first
question without an answer stops the tool (``InputNeeded``), the server returns an
``InputRequiredResult`` for it, and the client's retry runs the tool again from the
start, this time with that answer recorded.

Questions are keyed by a digest of their content and how many times the same question
was asked before in this run, never by their place among other questions: concurrent
tasks of one tool may ask in a different order on the next run (trio even shuffles its
run queue on purpose), and each must still find its own answer. A tool that asks
something different on a retry is asked anew rather than handed a stale answer.

Re-running also repeats the notifications (log messages, progress) sent before the
question; ``AlreadySent`` keys them the same way so each reaches the client once. And it
would repeat work whose result later questions are built from (the tools a sampled model
called): ``Memo`` keeps such results in the sealed state, so a re-run asks the very same
questions again and does that work once.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias, cast

import anyio
from pydantic import BaseModel

from answerback.jsonrpc import IncomingRequest, JSONObject
from answerback.server._canonical import canonical_json
from answerback.types import MCPError

_SHORT_NAMES = {
    "elicitation/create": "elicit",
    "sampling/createMessage": "sample",
    "roots/list": "roots",
}

MAX_REMEMBERED_NOTIFICATIONS = 4096
"""How many distinct notifications a request's state remembers as sent; past this a
tool's further notifications are sent again on each round (the state stays small)."""


@dataclass(frozen=True, slots=True)
class Question:
    """One question a tool asked on a 2026-07-28 request and had no answer for."""

    key: str
    method: str
    params: JSONObject | None

    @property
    def input_request(self) -> JSONObject:
        request: JSONObject = {"method": self.method}
        if self.params is not None:
            request["params"] = self.params
        return request


class InputNeeded(BaseException):
    """Raised inside a tool on a 2026-07-28 request when it asks a new question.

    It derives from ``BaseException`` so that a tool's own ``except Exception`` cannot
    swallow it; the server turns it into an ``InputRequiredResult``. It holds several
    questions when concurrent tasks of one tool each asked one (see ``settle``).
    """

    def __init__(self, questions: Sequence[Question]) -> None:
        super().__init__(", ".join(question.key for question in questions))
        self.questions = tuple(questions)


def settle(raised: BaseException) -> BaseException:
    """What a tool, prompt or resource really raised, with exception groups taken apart.

    A tool that runs a task group wraps whatever its tasks raise in a group. Inside it,
    cancellations are only the group's siblings being stopped and are dropped. What is
    left decides: questions only give one ``InputNeeded`` holding all of them (so
    concurrent questions are answered in a single round); a failure wins over questions
    (re-running would meet it again); a single failure is returned as itself; several
    give the first ``MCPError`` among them, or else an ``ExceptionGroup`` of them.
    Anything else (a bare cancellation, ``KeyboardInterrupt``) comes back unchanged.
    """
    if not isinstance(raised, BaseExceptionGroup):
        return raised
    group = cast(BaseExceptionGroup[BaseException], raised)
    cancelled = anyio.get_cancelled_exc_class()
    questions: list[Question] = []
    failures: list[BaseException] = []
    for leaf in _leaves(group):
        if isinstance(leaf, InputNeeded):
            questions.extend(leaf.questions)
        elif not isinstance(leaf, cancelled):
            failures.append(leaf)
    if not failures:
        return InputNeeded(questions) if questions else group
    if len(failures) == 1:
        return failures[0]
    errors = [failure for failure in failures if isinstance(failure, Exception)]
    if len(errors) < len(failures):
        return group
    protocol_errors = [error for error in errors if isinstance(error, MCPError)]
    if protocol_errors:
        return protocol_errors[0]
    return ExceptionGroup("; ".join(str(error) or type(error).__name__ for error in errors), errors)


def forget_where_raised(handled: BaseException) -> None:
    """Drop the tracebacks of an exception handled for good (and of all it groups).

    A traceback holds the frames it passed through, and those frames hold the exception
    (``settle``'s callers keep it in a local): a reference cycle that only the garbage
    collector frees. A 2026-07-28 tool raises ``InputNeeded`` on every round that asks,
    so without this each round leaves its whole call stack for the collector.
    """
    handled.__traceback__ = None
    if isinstance(handled, BaseExceptionGroup):
        for member in cast(BaseExceptionGroup[BaseException], handled).exceptions:
            forget_where_raised(member)


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for member in group.exceptions:
        if isinstance(member, BaseExceptionGroup):
            yield from _leaves(cast(BaseExceptionGroup[BaseException], member))
        else:
            yield member


QuestionParams: TypeAlias = JSONObject | Callable[[], JSONObject] | None
"""A question's params, or what makes them when needed: a 2026-07-28 retry asks its
questions again, and those it answers already never need their params (a parse of the
question's JSON each, ``FormQuestion.params``)."""


def made(params: QuestionParams) -> JSONObject | None:
    """The params themselves."""
    return params() if callable(params) else params


class Asker(Protocol):
    """Sends one question to the client and returns its raw answer, or the answer as
    the result model the method names if it was validated already.

    ``permitted`` raises if the client cannot be asked this (an undeclared capability);
    it is called only when the question would really go out. ``digest`` is the
    question's ``content_digest`` when the caller already has it (see ``Context.elicit``),
    and then ``params`` may be what makes them (``QuestionParams``).
    """

    async def ask(
        self,
        method: str,
        params: QuestionParams,
        permitted: Callable[[], None],
        digest: str | None = None,
    ) -> JSONObject | BaseModel: ...

    def caught_inside(self, outcome: BaseException | None) -> InputNeeded | None:
        """The questions to ask after all, if the run caught some of its own (see
        ``ReplayAsker.caught_inside``); ``outcome`` is what the run raised, or ``None``
        if it returned."""
        ...


class LiveAsker:
    """Legacy era: a real server→client request, sent as part of the current request."""

    def __init__(self, request: IncomingRequest) -> None:
        self._request = request

    async def ask(
        self,
        method: str,
        params: QuestionParams,
        permitted: Callable[[], None],
        digest: str | None = None,
    ) -> JSONObject:
        permitted()
        return await self._request.request(method, made(params))

    def caught_inside(self, outcome: BaseException | None) -> InputNeeded | None:
        """Never: a live question is answered or fails where it is asked."""
        return None


class ReplayAsker:
    """2026-07-28: answers from the retry's recorded responses, or stops the tool.

    ``checked`` holds this retry's answers as the models they were validated into when
    they arrived, handed out as they are rather than validated a second time; answers of
    earlier rounds come from the sealed state as JSON."""

    def __init__(
        self, answers: dict[str, JSONObject], checked: Mapping[str, BaseModel] | None = None
    ) -> None:
        self._answers = answers
        self._checked = checked or {}
        self._occurrences = _Occurrences()
        self._raised: dict[str, Question] = {}
        """Every question this run stopped for, in the order asked."""

    async def ask(
        self,
        method: str,
        params: QuestionParams,
        permitted: Callable[[], None],
        digest: str | None = None,
    ) -> JSONObject | BaseModel:
        if digest is None:
            digest = content_digest(method, made(params))
        key = f"{_SHORT_NAMES.get(method, 'ask')}-{self._occurrences.next(digest)}-{digest}"
        answer = self._checked.get(key)
        if answer is None:
            answer = self._answers.get(key)
        if answer is None:
            permitted()
            question = self._raised[key] = Question(key, method, made(params))
            raise InputNeeded([question])
        return answer

    def caught_inside(self, outcome: BaseException | None) -> InputNeeded | None:
        """Every question this run stopped for, if the run ended while some of them
        never came out of it (``outcome`` is what it raised, ``None`` if it returned).

        ``InputNeeded`` is a ``BaseException`` so ``except Exception`` lets it through,
        but asyncio keeps whatever a task raised: ``gather(..., return_exceptions=True)``
        hands it back as a value and ``task.exception()`` returns it, as does an
        ``except BaseException``. A run that went on from there built its result (or
        its failure) without the answers, and the legacy era would have asked: so the
        round asks them all, and the re-run gets the answers. A failure that came out
        beside its questions wins as before (``settle``)."""
        if not self._raised:
            return None
        settled = settle(outcome) if outcome is not None else None
        if settled is not None and not isinstance(settled, (Exception, InputNeeded)):
            return None  # cancelled or interrupted: nobody waits for this run's answers
        came_out: set[str] = set()
        if outcome is not None:
            leaves = (
                _leaves(cast(BaseExceptionGroup[BaseException], outcome))
                if isinstance(outcome, BaseExceptionGroup)
                else iter([outcome])
            )
            for leaf in leaves:
                if isinstance(leaf, InputNeeded):
                    came_out.update(question.key for question in leaf.questions)
        if came_out.issuperset(self._raised):
            return None
        return InputNeeded(list(self._raised.values()))


class AlreadySent:
    """2026-07-28: the notifications earlier rounds of this request already sent.

    Keyed like questions (content digest and occurrence), so the record is exact when a
    tool's tasks interleave differently, and it travels in the sealed state, so any
    server instance sharing the sealing key continues it.
    """

    def __init__(self, earlier: dict[str, int]) -> None:
        self._earlier = earlier
        self._occurrences = _Occurrences()
        self._sent: dict[str, int] = {}

    async def send_once(
        self, method: str, params: JSONObject, send: Callable[[], Awaitable[None]]
    ) -> None:
        """``send()`` unless an earlier round sent this; it counts once it went out (a
        task cancelled while sending has not told the client anything)."""
        digest = content_digest(method, params)
        occurrence = self._occurrences.next(digest)
        if occurrence < self._earlier.get(digest, 0):
            return
        await send()
        self._sent[digest] = max(self._sent.get(digest, 0), occurrence + 1)

    def record(self) -> dict[str, int]:
        """What the next round's state carries: the most of each ever sent."""
        merged = dict(self._earlier)
        for digest, count in self._sent.items():
            if digest in merged:
                merged[digest] = max(merged[digest], count)
            elif len(merged) < MAX_REMEMBERED_NOTIFICATIONS:
                merged[digest] = count
        return merged


class Memo:
    """2026-07-28: results a tool computed in earlier rounds of this request.

    ``ctx.sample`` runs the tools its model calls and sends their results in the next
    question. A re-run that computed them again would ask a different question whenever
    a tool is not perfectly repeatable (a clock, a database), so the recorded answer would
    never match, and a tool with side effects would act once per round. Keyed like
    questions; the values travel in the sealed state.
    """

    def __init__(self, earlier: dict[str, JSONObject]) -> None:
        self._earlier = earlier
        self._occurrences = _Occurrences()
        self._new: dict[str, JSONObject] = {}

    async def once(
        self, what: str, params: JSONObject, compute: Callable[[], Awaitable[JSONObject]]
    ) -> JSONObject:
        """What ``compute()`` gave for this ``what`` and ``params`` in an earlier round,
        or its result now (kept only if it returns: a failure is computed again)."""
        digest = content_digest(what, params)
        key = f"{what}-{self._occurrences.next(digest)}-{digest}"
        kept = self._earlier.get(key)
        if kept is None:
            kept = self._new[key] = await compute()
        return kept

    def record(self) -> dict[str, JSONObject]:
        """What the next round's state carries: everything kept so far."""
        return {**self._earlier, **self._new}


class _Occurrences:
    """How many times each digest has come up so far in this run."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def next(self, digest: str) -> int:
        seen = self._counts.get(digest, 0)
        self._counts[digest] = seen + 1
        return seen


def content_digest(method: str, params: Any) -> str:
    """A short stable digest of a message's method and params."""
    canonical = canonical_json(params)
    return hashlib.sha256(f"{method}\n{canonical}".encode()).hexdigest()[:12]
