"""``LinePresenter``: the same questions, one line at a time, for when there is no terminal.

When stdin or stdout is not a terminal (a pipe, a file, an editor's output pane)
there is no screen to draw, but a person (or a script acting for one) may still be
there. Each field is asked on its own line, with the same rules as the full screen: the
value is read and checked by ``answerback.forms``, a wrong one is asked again, choices
are taken by number or by value. Enter keeps the value shown, so an optional field that
shows one is left unanswered by typing ``-`` alone. End of input means cancel (for
sampling: deny).

It needs no prompt_toolkit, so it runs on asyncio and trio alike. Reading blocks a
thread of its own, and a program that ends meanwhile is not held up by the waiting
read. When a question is withdrawn, what was typed for it answers no other: at a
terminal it is discarded; from a pipe (a script's answers, in order) the next line goes
to the next question, as before.
"""

from __future__ import annotations

import contextlib
import csv
import io
import sys
import threading
import webbrowser
from collections.abc import Generator, Mapping
from typing import Literal, TextIO

import anyio.from_thread
import anyio.lowlevel
from anyio.lowlevel import EventLoopToken
from rich.console import Console
from rich.text import Text

from answerback.client import open_link
from answerback.client._callbacks import async_callable_or_none
from answerback.forms import (
    AnswerError,
    BooleanField,
    Form,
    FormField,
    FormValue,
    MultiSelectField,
    Option,
    SingleSelectField,
)
from answerback.interact._printable import clean
from answerback.interact._questions import TYPED_BY_PERSON, Answer, Question, Sampler
from answerback.interact.terminal._presenter import (
    PAST,
    Opener,
    by_hand,
    checked_opener,
    question_form,
    question_verdict,
)
from answerback.interact.terminal._sampling_screen import rejected
from answerback.interact.terminal._text import (
    FormOutcome,
    describe_content,
    field_hint,
    initial_value,
    one_line,
    prefilled,
    sampling_facts,
    value_text,
    verdict_words,
)
from answerback.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestURLParams,
    ElicitResult,
    TextContent,
)
from answerback.urls import RiskLevel, UrlVerdict

END_OF_REPLY = "."
"""A line holding only this ends a typed sampling reply."""
UNANSWERED = "-"
"""A line holding only this leaves an optional field that shows a value unanswered:
Enter keeps the value shown, so nothing else can take it away (erasing it, as on the
full screen, is not possible on a line). Only such a field takes it, and its hint says
so; anywhere else it is read as typed (a required field stays required)."""


class _LineReader:
    """Reads one line at a time in a daemon thread, on request.

    A worker thread of the event loop would keep the program alive at exit while it
    waits for a line nobody will type (asyncio joins its workers); a daemon thread does
    not. A read still waiting when its question goes away is not lost: the next
    ``readline`` takes its line.
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self._read: anyio.Event | None = None
        self._line = ""

    async def readline(self) -> str:
        """The next line, with its line break ("" at the end of input)."""
        if self._read is None:
            read = self._read = anyio.Event()
            token = anyio.lowlevel.current_token()
            threading.Thread(
                target=self._read_one,
                args=(read, token),
                name="answerback line reader",
                daemon=True,
            ).start()
        await self._read.wait()
        self._read = None
        return self._line

    def take_finished(self) -> str | None:
        """The line a read finished for a reader that gave up before taking it
        (``None``: no read has finished); the next ``readline`` then reads afresh."""
        read = self._read
        if read is None or not read.is_set():
            return None
        self._read = None
        return self._line

    def _read_one(self, read: anyio.Event, token: EventLoopToken) -> None:
        try:
            self._line = self._stream.readline()
        except (OSError, ValueError):  # closed or unreadable: the same as its end
            self._line = ""
        with contextlib.suppress(RuntimeError):  # the loop has ended: nobody waits for it
            anyio.from_thread.run_sync(read.set, token=token)


class _EndOfInput(Exception):
    """Input ran out: the question is answered "cancel" (sampling: denied)."""


class LinePresenter:
    """Asks the broker's questions line by line on plain text streams.

    ``input`` and ``output`` default to stdin and stderr (stdout stays for what the
    program prints, such as a tool's result); ``sampler`` and ``opener`` are
    as for ``TerminalPresenter``. What is read from an input that is not a terminal is
    written to the output after its prompt, so a transcript shows the answers. Any anyio
    backend.

    ``TypeError`` when made for an ``input`` or ``output`` that is not a text stream (a
    file name, a binary stream), or a ``sampler`` or ``opener`` that cannot be called.
    """

    def __init__(
        self,
        *,
        input: TextIO | None = None,
        output: TextIO | None = None,
        sampler: Sampler | None = None,
        opener: Opener = webbrowser.open,
    ) -> None:
        _text_stream("input", input, ("readline", "isatty"), "sys.stdin")
        _text_stream("output", output, ("write", "flush"), "sys.stderr")
        self._input = input or sys.stdin
        self._out = Console(
            file=output or sys.stderr, highlight=False, markup=False, emoji=False, soft_wrap=True
        )
        self.sampler = async_callable_or_none(
            "sampler", sampler, "an async function of the request returning the draft reply"
        )
        self._opener = checked_opener(opener)
        self._tty = self._input.isatty()
        # Piped answers are not echoed by a terminal: write them out, so the output
        # reads as the whole exchange.
        self._echo = not self._tty
        self._lines = _LineReader(self._input)
        self._mid_line = False
        """A prompt was written and no line break after it yet (its read is waiting,
        or was given up when its question went away)."""
        self._waiting_prompt: str | None = None
        """The prompt of the read waiting now, written again after a line said meanwhile."""
        self._given_up: Literal["prompt", "question"] | None = None
        """Whose read was given up (its task cancelled: the prompt's for a question, a
        question's when withdrawn) and not yet taken over by the next read."""
        self._for_prompt: str | None = None
        """A command line read whole just as a question took over from ``read_line``:
        the prompt's, given back to it once the question is answered."""

    async def present(self, question: Question) -> Answer:
        """Ask ``question`` line by line and return the answer for the server."""
        params = question.params
        self._take_over(by_prompt=False)
        try:
            if isinstance(params, CreateMessageRequestParams):
                return await self._sampling(question, params)
            if isinstance(params, ElicitRequestURLParams):
                return await self._link(question, params)
            form = question_form(question, params)
            if isinstance(form, Form):
                self._say(f"{clean(question.server)} asks you to fill in a form:", bold=True)
                outcome = await self.ask_form(
                    form,
                    message=params.message,
                    previous=question.previous.content if question.previous else None,
                    problems=question.problems,
                )
                if isinstance(outcome, str):
                    return ElicitResult(action=outcome)
                return ElicitResult(action="accept", content=dict(outcome))
            self._say(f"{clean(question.server)} sent a form that cannot be shown: {form.message}")
            return form
        except _EndOfInput:
            self._say("(end of input)")
            if isinstance(params, CreateMessageRequestParams):
                return rejected()
            return ElicitResult(action="cancel")

    async def withdrawn(self, question: Question, reason: str) -> None:
        """Say, on one line, that the question went away and why.

        The broker may say it while the next question waits at its prompt: the line then
        starts on a line of its own (after the prompt it was glued to it), and the
        prompt is written again below it, where the answer is typed."""
        self.note(f"{clean(question.server)}: question withdrawn: {reason}")

    def note(self, line: str) -> None:
        """Say a line of the program's own (a call's result, a log line) at any time: it
        goes on a line of its own, and a prompt waiting for an answer is written again
        below it, where the answer is typed."""
        with self.aside():
            self._say(line)

    @contextlib.contextmanager
    def aside(self) -> Generator[None]:
        """Around what the program writes to the output itself (a table, a listing):
        it starts on a line of its own, and a prompt waiting for an answer is written
        again below it. Written after that prompt, it left the person typing the answer
        on a line under it, far from its question."""
        waiting = self._waiting_prompt
        self._end_line()
        try:
            yield
        finally:
            if waiting:
                self._prompt(waiting)

    async def read_line(self, prompt: str) -> str:
        """A line for the program itself (a command at its prompt), read between
        questions from the same input; ``EOFError`` at the end of input.

        A read given up (its task cancelled, as when a question comes) never answers the
        question asked next, nor a question's the prompt: see ``_take_over``."""
        self._take_over(by_prompt=True)
        held, self._for_prompt = self._for_prompt, None
        try:
            return await self._read(prompt, held)
        except anyio.get_cancelled_exc_class():
            self._given_up = "prompt"
            raise
        except _EndOfInput:
            self._end_line()  # what comes next starts on a line of its own
            raise EOFError from None

    def _take_over(self, *, by_prompt: bool) -> None:
        """A read begins (``read_line``'s, ``by_prompt``, or a question's): what was
        typed for a read given up before it never answers it.

        What was typed at the prompt is never a question's answer: the person typed it
        before seeing the question. A line already read whole goes back to the prompt,
        the next ``read_line``; at a terminal, a line still being typed is discarded.
        What was typed for a question that went away (withdrawn, cancelled) answers
        neither the next question nor the prompt: at a terminal it is discarded, whole
        or not. Nothing says so: whether anything was typed cannot be known without
        taking it (a terminal gives a half-typed line to no one), and a line each time
        would mostly say nothing happened. Input that is not a terminal (a script's
        answers, one per line) is read on in order, as it was written."""
        given_up, self._given_up = self._given_up, None
        if given_up is None or (given_up == "prompt" and by_prompt):
            return  # nothing given up, or the prompt reads on where it left off
        finished = self._lines.take_finished() if given_up == "prompt" or self._tty else None
        if finished is not None and given_up == "prompt":
            self._for_prompt = finished
        elif finished is None and self._tty:
            _discard_typed_ahead(self._input)

    # -- forms -------------------------------------------------------------------------

    async def ask_form(
        self,
        form: Form,
        *,
        message: str,
        previous: Mapping[str, object] | None = None,
        problems: AnswerError | None = None,
    ) -> FormOutcome:
        """Ask each field on its own line, then accept, decline or cancel (also the
        answer when input runs out)."""
        self._take_over(by_prompt=False)
        try:
            return await self._ask_form(form, message, previous, problems)
        except _EndOfInput:
            self._say("(end of input)")
            return "cancel"

    async def _ask_form(
        self,
        form: Form,
        message: str,
        previous: Mapping[str, object] | None,
        problems: AnswerError | None,
    ) -> FormOutcome:
        self._say(clean(message))
        if problems is not None:
            self._say("The last answer was not accepted:")
            for error in problems.errors:
                self._say(f"  ✗ {clean(str(error))}")
        answer: dict[str, FormValue] = {}
        todo = list(form.fields)
        for _round in range(len(form.fields) + 1):
            for field in todo:
                value = await self._ask_field(field, previous, answer)
                if value is None:
                    answer.pop(field.name, None)
                else:
                    answer[field.name] = value
            try:
                checked = form.check(answer)
            except AnswerError as exc:
                # What no single field shows (a required one left blank is caught by
                # _ask_field already); ask those fields again.
                wrong = {error.field for error in exc.errors}
                for error in exc.errors:
                    self._say(f"  ✗ {clean(str(error))}")
                todo = [field for field in form.fields if field.name in wrong]
                if todo:
                    continue
                return "cancel"
            self._say("Answer:" if checked else "Answer: (no field answered)")
            for field in form.fields:
                if field.name in checked:
                    self._say(f"  {clean(field.label)}: {prefilled(checked[field.name])}")
            choice = await self._choose(
                "Send this answer? [a]ccept, [d]ecline, [c]ancel (Enter: accept)",
                {"": "accept", "a": "accept", "d": "decline", "c": "cancel"},
            )
            if choice == "accept":
                return checked
            return "decline" if choice == "decline" else "cancel"
        return "cancel"

    async def _ask_field(
        self,
        field: FormField,
        previous: Mapping[str, object] | None,
        answer: Mapping[str, FormValue],
    ) -> FormValue | None:
        """One field, asked until what is typed fits it (blank keeps the value shown;
        ``UNANSWERED`` takes it away from an optional field)."""
        start = answer.get(field.name, initial_value(field, previous))
        has_value = start is not None and start != []
        clearable = has_value and not field.required
        hint = field_hint(field)
        if clearable:
            hint += f"; {UNANSWERED}: unanswered"
        elif isinstance(field, BooleanField) and not field.required and start is None:
            hint += "; Enter: unanswered"  # blank is no answer, not "no"
        line = clean(field.label) + (" *" if field.required else "") + f" ({hint})"
        if field.description:
            line += f": {clean(field.description)}"
        if has_value:
            line += f" [{prefilled(start)}]"
        self._say(line, bold=True)
        options = field.options if isinstance(field, SingleSelectField | MultiSelectField) else ()
        for number, option in enumerate(options, start=1):
            self._say(f"  {number}) {clean(option.label)}")
        if isinstance(field, MultiSelectField):
            self._say("  (numbers or values, separated by commas)")
        while True:
            typed = await self._read("> ")
            text = one_line(typed)
            if text != typed:  # what is sent, said before the answer is
                self._say(f"  (read as: {text})")
            if clearable and text.strip() == UNANSWERED:
                return None
            try:
                if text.strip():
                    return field.coerce(_by_number(field, options, text))
                if has_value:
                    # What was shown in brackets is what is sent (see ``prefilled``).
                    shown = prefilled(start)
                    return field.coerce(shown) if shown != value_text(start) else field.check(start)
                if field.required:
                    self._say("  ✗ is required")
                    continue
                return None
            except AnswerError as exc:
                for error in exc.errors:
                    self._say(f"  ✗ {clean(error.message)}")

    # -- links -------------------------------------------------------------------------

    async def _link(self, question: Question, params: ElicitRequestURLParams) -> ElicitResult:
        verdict = question_verdict(question, params)
        self._say(f"{clean(question.server)} asks you to open a link:", bold=True)
        self._say(f"  {clean(params.message)}")
        self._say(f"  URL:  {clean(verdict.display.url)}")
        if verdict.site:
            self._say(f"  Site: {clean(verdict.display.site or verdict.site)}")
        self._say(f"  {verdict_words(verdict.level.name).upper()}")
        for reason in verdict.reasons:
            self._say(f"  - {clean(reason.message)}")
        if verdict.blocked or verdict.canonical_url is None:
            self._say("This link cannot be opened from here.")
            choice = await self._choose(
                "[d]ecline or [c]ancel", {"d": "decline", "c": "cancel", "": "cancel"}
            )
            return ElicitResult(action="decline" if choice == "decline" else "cancel")
        choice = await self._choose(
            "Open it in your browser? [o]pen, [d]ecline, [c]ancel",
            {"o": "open", "d": "decline", "c": "cancel"},
        )
        if choice == "open" and verdict.level >= RiskLevel.HIGH_RISK:
            choice = await self._confirm_risk(verdict)
        if choice != "open":
            self._say(f"link {PAST[choice]}")
            return ElicitResult(action="decline" if choice == "decline" else "cancel")
        url = verdict.canonical_url
        failed = await open_link(verdict, opener=self._opener)
        if failed is not None:
            # As the full screen's card: the link printed whole, to open by hand, and
            # the person says whether they did (over SSH there is never a browser).
            self._say(f"{failed[0].upper()}{failed[1:]}; {by_hand(verdict)}.")
            by_hand_choice = await self._choose(
                "Open the link above yourself, then: [a] I opened it myself, [d]ecline, [c]ancel",
                {"a": "accept", "d": "decline", "c": "cancel"},
            )
            if by_hand_choice == "accept":
                self._say("link opened by hand")
                return ElicitResult(action="accept")
            self._say(f"link {PAST[by_hand_choice]}")
            return ElicitResult(action="decline" if by_hand_choice == "decline" else "cancel")
        self._say(f"Opened {url} in the browser.")
        return ElicitResult(action="accept")

    async def _confirm_risk(self, verdict: UrlVerdict) -> Literal["open", "decline"]:
        self._say(f"This link is {verdict_words(verdict.level.name)}. Type yes to open it anyway:")
        text = await self._read("> ")
        return "open" if text.strip().casefold() == "yes" else "decline"

    # -- sampling ----------------------------------------------------------------------

    async def _sampling(self, question: Question, params: CreateMessageRequestParams) -> Answer:
        self._say(f"{clean(question.server)} asks for a sampling reply:", bold=True)
        if params.system_prompt:
            self._say(f"  System prompt: {clean(params.system_prompt)}")
        for message in params.messages:
            self._say(f"  {message.role}: {clean(describe_content(message.content))}")
        for name, value in sampling_facts(params):
            self._say(f"  {name}: {clean(value)}")
        choice = await self._choose("[a]pprove or [d]eny", {"a": "approve", "d": "deny"})
        if choice == "deny":
            return rejected()
        model = TYPED_BY_PERSON
        if self.sampler is not None:
            draft = await self.sampler(params)
            model = draft.model
            self._say(f"Draft from {clean(draft.model)}:")
            self._say(clean(describe_content(draft.content)))
            choice = await self._choose(
                "[s]end, [e]dit or [d]eny", {"s": "send", "e": "edit", "d": "deny"}
            )
            if choice == "send":
                return draft
            if choice == "deny":
                return rejected()
        text = await self._read_reply()
        return CreateMessageResult(
            role="assistant", content=TextContent(text=text), model=model, stop_reason="endTurn"
        )

    async def _read_reply(self) -> str:
        self._say(f'Type the reply; end it with a line holding only "{END_OF_REPLY}":')
        lines: list[str] = []
        while True:
            line = await self._read("")
            if line == END_OF_REPLY:
                if any(part.strip() for part in lines):
                    return "\n".join(lines)
                self._say("The reply is empty: type one.")
                continue
            lines.append(line)

    # -- reading and writing -----------------------------------------------------------

    async def _choose(self, prompt: str, keys: Mapping[str, str]) -> str:
        self._say(prompt)
        while True:
            text = (await self._read("> ")).strip().casefold()
            for key, choice in keys.items():
                if text == key or (key and choice.startswith(text) and text):
                    return choice
            self._say(f"  ✗ type one of: {', '.join(repr(k) for k in keys if k)}")

    async def _read(self, prompt: str, ready: str | None = None) -> str:
        """The next line typed after ``prompt``; ``ready``: a line read before, given
        back (shown after the prompt, as the terminal showed it above the question)."""
        if prompt:
            self._prompt(prompt)
        self._waiting_prompt = prompt
        try:
            line = await self._lines.readline() if ready is None else ready
        except anyio.get_cancelled_exc_class():
            self._given_up = "question"  # read_line says "prompt" for its own
            raise
        finally:
            self._waiting_prompt = None
        if not line:
            raise _EndOfInput
        self._mid_line = False  # the person's Enter, or the echo below, ends the line
        line = line.rstrip("\r\n")
        if self._echo or ready is not None:
            self._out.print(Text(clean(line, newlines=False)))
        return line

    def _prompt(self, prompt: str) -> None:
        self._out.print(prompt, end="")
        self._mid_line = True

    def _say(self, line: str, *, bold: bool = False) -> None:
        self._end_line()  # a prompt left waiting on this line: start a fresh one
        self._out.print(Text(line, style="bold" if bold else ""))

    def _end_line(self) -> None:
        if self._mid_line:
            self._out.print()
            self._mid_line = False


def _discard_typed_ahead(stream: TextIO) -> None:
    """Drop what the terminal holds typed and not yet read (a line half typed), where
    that can be done (not without termios: Windows)."""
    try:
        import termios
    except ImportError:
        return
    with contextlib.suppress(OSError, ValueError, termios.error):
        termios.tcflush(stream.fileno(), termios.TCIFLUSH)


def _by_number(field: FormField, options: tuple[Option, ...], text: str) -> str:
    """Typed choices with numbers ("2", "1, 3") turned into their values; a number that
    is itself one of the values or titles stays as typed."""
    if not options:
        return text
    names = {option.value for option in options} | {option.label for option in options}

    def one(part: str) -> str:
        stripped = part.strip()
        if stripped.isdigit() and stripped not in names and 1 <= int(stripped) <= len(options):
            return options[int(stripped) - 1].value
        return part

    if isinstance(field, MultiSelectField):
        parts = [
            one(part)
            for row in csv.reader(text.splitlines(), skipinitialspace=True)
            for part in row
        ]
        buffer = io.StringIO()
        csv.writer(buffer, lineterminator="").writerow(parts)
        return buffer.getvalue()
    return one(text)


def _text_stream(name: str, value: object, methods: tuple[str, ...], example: str) -> None:
    """Refuse ``value`` unless it is ``None`` or a text stream with ``methods``."""
    if value is None:
        return
    binary = isinstance(value, io.RawIOBase | io.BufferedIOBase)
    if binary or not all(callable(getattr(value, method, None)) for method in methods):
        kind = "a binary stream" if binary else repr(value)
        raise TypeError(
            f"{name} must be a text stream such as {example} (open a file with "
            f"open(path, encoding='utf-8')), or None, got {kind}"
        )
