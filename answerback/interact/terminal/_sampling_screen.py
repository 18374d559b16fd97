"""Sampling approval: what the server wants a model to read, and the reply before it goes.

The specification asks for a human in the loop who can deny a request, see the prompt
and review the reply before the server gets it. The screen shows the system prompt,
every message (images and audio named, tool calls spelled out), the tools the model
may use, the token cap and the model preferences. Approving asks the configured
``sampler`` for a draft, or lets the person type the reply; either way the reply is
editable until it is sent. Denying answers error -1, "User rejected sampling request".
"""

from __future__ import annotations

from typing import Literal, cast

from prompt_toolkit.application import Application
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import (
    ConditionalContainer,
    Dimension,
    HSplit,
    Layout,
    Window,
)
from prompt_toolkit.widgets import TextArea
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from answerback._options import text
from answerback.client._callbacks import async_callable_or_none
from answerback.interact._printable import clean
from answerback.interact._questions import REJECTED, TYPED_BY_PERSON, Sampler
from answerback.interact.sampling._provider import SamplingProviderError
from answerback.interact.terminal._screen import (
    BURST_NOTE,
    CARD_COLUMNS,
    GAP,
    STYLE,
    CardControl,
    Fitting,
    Reader,
    ScreenApplication,
    ServerKeys,
    card,
    checked_server_keys,
    foot,
    key_hints,
    run_screen,
    status_line,
    whole,
    with_server_keys,
)
from answerback.interact.terminal._text import describe_content, quoted, readable, sampling_facts
from answerback.types import (
    USER_REJECTED,
    CreateMessageRequestParams,
    CreateMessageResult,
    ErrorData,
    TextContent,
)

REQUEST_KEYS = (("a", "approve"), ("d/Esc", "deny"))
"""The keys while the request is shown."""
LINES_SHOWN_PER_TEXT = 12
"""Of the system prompt and of each message: the card does not scroll, and every
message and the facts must stay on screen."""
REPLY_KEYS = (("Ctrl-S", "send reply"), ("Esc", "deny"))
"""The keys while the reply is drafted, edited or typed."""
REPLY_ROWS = 6
"""The reply editor's rows, in a window tall enough (two at least)."""
OUT_OF_SIGHT = (
    "The request's model, token cap and tools do not fit: make the window taller to approve."
)
"""What the key line says instead of the approve key while the card is cut above the
end of its facts (a short window): approving a request whose cost and tools could not
be seen was no choice."""

Stage = Literal["request", "drafting", "reply"]


def rejected() -> ErrorData:
    """The answer to a denied sampling request, as the specification words it."""
    return ErrorData(code=USER_REJECTED, message=REJECTED)


class SamplingScreen:
    """The prompt_toolkit application that asks whether (and what) to answer a
    ``sampling/createMessage`` request (options of the wrong type raise ``TypeError``)."""

    def __init__(
        self,
        params: CreateMessageRequestParams,
        *,
        server: str,
        sampler: Sampler | None = None,
        server_keys: ServerKeys | None = None,
    ) -> None:
        if not isinstance(cast(object, params), CreateMessageRequestParams):
            raise TypeError(
                f"params must be the request's CreateMessageRequestParams, got {params!r}"
            )
        self.params = params
        self._server = text("server", server, "the asking server's name")
        self._sampler = async_callable_or_none(
            "sampler", sampler, "an async function of the request returning the draft reply"
        )
        server_keys = checked_server_keys(server_keys)
        self.stage: Stage = "request"
        self.draft: CreateMessageResult | None = None
        """What the sampler drafted, if it did."""
        self.status = ""
        # Shorter in a short window, so that the request above keeps rows too.
        self.reply = TextArea(
            multiline=True,
            prompt=[("class:hint", "> ")],
            height=Dimension(min=2, preferred=REPLY_ROWS, max=REPLY_ROWS),
        )
        reply_shown = Condition(lambda: self.stage == "reply")
        # The facts too: in a short window the card, cut, may show none of it.
        facts = "\n".join(f"{name}: {value}" for name, value in sampling_facts(params))
        texts = [("The request:", facts)]
        texts += [("System prompt:", params.system_prompt)] if params.system_prompt else []
        texts += [(f"{m.role}:", describe_content(m.content)) for m in params.messages]
        self.reader = Reader(texts)
        # Whatever a short window cuts, Ctrl-R shows whole; "a" acts only on facts in sight.
        self.shown = CardControl(
            self._card, lambda width: self._card(width, facts_only=True), facts_readable=True
        )
        self.application: Application[CreateMessageResult | ErrorData] = ScreenApplication(
            layout=Layout(
                self.reader.around(
                    Fitting(
                        [
                            Window(self.shown, height=self.shown.height),
                            ConditionalContainer(
                                HSplit(
                                    [
                                        whole(self._reply_label),
                                        self.reply,
                                    ]
                                ),
                                filter=reply_shown,
                            ),
                            ConditionalContainer(
                                status_line("class:status", lambda: self.status),
                                filter=Condition(lambda: bool(self.status)),
                            ),
                            foot(self._foot, server_keys),
                            Window(),  # takes the rest of the terminal, below everything
                        ],
                        what="this sampling request",
                        # Not "d": it is typed into the reply.
                        keys=(("Esc", "deny"),),
                        takes=frozenset({"escape", "c-c"}),
                        server_keys=server_keys,
                        least_columns=CARD_COLUMNS,
                    )
                )
            ),
            key_bindings=self.reader.bindings(with_server_keys(self._bindings(), server_keys)),
            style=STYLE,
            erase_when_done=True,
        )

    async def run(self) -> CreateMessageResult | ErrorData:
        """Show the request until the person sends a reply or denies it."""
        return await run_screen(self.application)

    # -- what the person does ----------------------------------------------------------

    def approve(self) -> None:
        """Start the reply: a draft from the sampler, or an empty one to type."""
        if self._sampler is None:
            self._edit("")
            return
        self.stage = "drafting"
        self.status = "Asking the model for a draft…"
        self.application.create_background_task(self._ask_sampler(self._sampler))

    async def _ask_sampler(self, sampler: Sampler) -> None:
        try:
            draft = await sampler(self.params)
        except Exception as exc:  # the person can still type a reply, or deny
            why = clean(str(exc).strip()) or type(exc).__name__
            end = "" if why.endswith((".", "!", "?")) else "."
            # The error's words are what a server may read; where the request went (no
            # credentials in it) is for the person, who set the model up.
            endpoint = exc.endpoint if isinstance(exc, SamplingProviderError) else None
            model = f"The model at {clean(endpoint)}" if endpoint else "The model"
            self.status = f"{model} failed: {why}{end} Type a reply, or deny."
            self._edit("")
            return
        self.draft = draft
        self.status = ""
        self._edit(describe_content(draft.content))
        if not self._editable(draft):
            self.reply.read_only = True

    def send(self) -> None:
        """Send the reply as shown: the sampler's own result if untouched, else the text."""
        text = self.reply.text
        draft = self.draft
        if draft is not None and (
            not self._editable(draft) or text == describe_content(draft.content)
        ):
            self.application.exit(result=draft)
            return
        if not text.strip():
            self.status = "The reply is empty: type one, or deny the request."
            return
        model = draft.model if draft is not None else TYPED_BY_PERSON
        self.application.exit(
            result=CreateMessageResult(
                role="assistant",
                content=TextContent(text=text),
                model=model,
                stop_reason="endTurn",
            )
        )

    def _edit(self, text: str) -> None:
        self.reply.document = Document(text, cursor_position=len(text))  # edit on from the end
        self.stage = "reply"
        self.application.layout.focus(self.reply)
        self.application.invalidate()

    @staticmethod
    def _editable(draft: CreateMessageResult) -> bool:
        blocks = draft.content if isinstance(draft.content, list) else [draft.content]
        return all(isinstance(block, TextContent) for block in blocks)

    def _bindings(self) -> KeyBindings:
        bindings = KeyBindings()
        asking = Condition(lambda: self.stage == "request")
        replying = Condition(lambda: self.stage == "reply")
        # Never while the model, the token cap or the tools are out of sight.
        facts_in_sight = Condition(lambda: self.shown.facts_in_sight)

        @bindings.add("a", filter=asking & facts_in_sight)
        def _approve(event: KeyPressEvent) -> None:
            # Not by the "a" of a pasted word: typed, or nothing.
            app = self.application
            if isinstance(app, ScreenApplication) and not app.deliberate():
                self.status = BURST_NOTE
                return
            self.status = ""
            self.approve()

        @bindings.add("d", filter=asking)
        @bindings.add("escape")
        @bindings.add("c-c")
        def _deny(event: KeyPressEvent) -> None:
            event.app.exit(result=rejected())

        @bindings.add("c-s", filter=replying)
        def _send(event: KeyPressEvent) -> None:
            self.send()

        return bindings

    # -- what the person sees ----------------------------------------------------------

    def _card(self, width: int, *, facts_only: bool = False) -> RenderableType:
        params = self.params
        title = Text("Sampling request", style="bold")
        title.append(" — from ")
        title.append(clean(self._server), style="bold cyan")
        # The facts first, then each text set apart and cut short: a message padded
        # with lines once pushed the later messages and the token cap off the card.
        facts = Table.grid(padding=(0, 2))
        for name, value in sampling_facts(params):
            facts.add_row(Text(name, style="bold"), Text(clean(value), overflow="fold"))
        parts: list[RenderableType] = [facts]
        if facts_only:
            return card(title, parts, width)
        if params.system_prompt:
            parts += [Text(), Text("System prompt:", style="bold")]
            parts.append(quoted(params.system_prompt, LINES_SHOWN_PER_TEXT))
        for message in params.messages:
            parts += [Text(), Text(f"{message.role}:", style="bold")]
            parts.append(quoted(describe_content(message.content), LINES_SHOWN_PER_TEXT))
        return card(title, parts, width)

    def _reply_label(self) -> StyleAndTextTuples:
        if self.draft is None:
            return [("class:label", "Your reply (sent as the model's answer):")]
        where = readable(f"Reply drafted by {self.draft.model}")
        if not self._editable(self.draft):
            return [("class:label", f"{where} (tool calls: sent as drafted):")]
        return [("class:label", f"{where} (edit it before sending):")]

    def _foot(self) -> StyleAndTextTuples:
        if self.stage == "request" and not self.shown.facts_shown:
            return [("class:status", OUT_OF_SIGHT), (GAP, "  "), *key_hints(REQUEST_KEYS[1:])]
        if self.stage == "request":
            return key_hints(REQUEST_KEYS)
        if self.stage == "drafting":
            return key_hints((("Esc", "deny"),))
        return key_hints(REPLY_KEYS)
