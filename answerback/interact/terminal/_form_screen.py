"""A form on one screen: every field, its errors next to it, and explicit actions.

What a person types is read and checked by ``answerback.forms`` as they type, so a
mistake shows under its field at once. Accept is refused while any field is wrong, and
the screen says which: a wrong value is asked again, never sent. When the server (or
the client's own check) refused an earlier answer, the form comes back with that answer
filled in and every problem shown where it belongs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Literal, cast

from prompt_toolkit.application import Application, get_app
from prompt_toolkit.data_structures import Point
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import (
    AnyContainer,
    ConditionalContainer,
    Container,
    Dimension,
    HSplit,
    Layout,
    ScrollablePane,
    VSplit,
    Window,
)
from prompt_toolkit.layout.containers import to_container
from prompt_toolkit.layout.mouse_handlers import MouseHandlers
from prompt_toolkit.layout.screen import Screen, WritePosition
from prompt_toolkit.utils import get_cwidth
from prompt_toolkit.widgets import Button
from rich.console import RenderableType
from rich.text import Text

from answerback._options import instance_or_none, text, text_or_none
from answerback.forms import AnswerError, FieldError, Form, FormValue
from answerback.interact._printable import clean
from answerback.interact.terminal._inputs import FieldInput, make_input
from answerback.interact.terminal._screen import (
    BURST_NOTE,
    GAP,
    STYLE,
    Fitting,
    Reader,
    ScreenApplication,
    ServerKeys,
    card,
    checked_server_keys,
    foot,
    key_hints,
    rich_lines,
    run_screen,
    status_line,
    whole,
    with_server_keys,
    wrapped_text,
)
from answerback.interact.terminal._text import FormOutcome, Quoted, field_hint, readable

FORM_KEYS = (
    ("Tab", "next"),
    ("Space", "choose"),
    ("Ctrl-S", "accept"),
    ("Ctrl-D", "decline"),
    ("Esc", "cancel"),
)
"""The keys the form screen answers to, as its foot line shows them."""

MESSAGE_LINES_SHOWN = 8
"""The form's message is shown in up to this many lines (and a quarter of the window at
most), as on the link card: a long one pushed the form's title (who asks) and its
first fields out of the window for good. ``READ_KEY`` shows it whole."""

DESCRIPTION_LINES_SHOWN = 3
"""A field's description is shown in up to this many lines: one long description
pushed every other field off the screen. ``READ_KEY`` shows it whole."""

TITLE_LINES_SHOWN = 3
"""A field's title is shown in up to this many lines, as its description: one long
title pushed every other field off the screen. ``READ_KEY`` shows it whole."""

TITLE_ALWAYS_WHOLE = 40
"""A title of one line this many columns wide or narrower, as shown (``readable``), fits
in ``TITLE_LINES_SHOWN`` rows of any terminal wide enough for the form, so the reader need
not repeat it. Counted in characters, a short title of wide characters or of control
characters written out was cut, while Ctrl-R, said to show it whole, had nothing."""

LAST_FIELD = "This is the last field: Ctrl-S accepts the form, Tab goes on to the buttons."
"""What Enter on the last field says (it does not go on to the buttons)."""


def _by_field(errors: tuple[FieldError, ...]) -> dict[str | None, list[str]]:
    found: dict[str | None, list[str]] = {}
    for error in errors:
        found.setdefault(error.field, []).append(error.message)
    return found


class FormScreen:
    """The prompt_toolkit application that asks one form; ``await screen.run()``.

    ``previous`` (the answer given last time) fills the fields; ``problems`` (why it was
    refused) shows each field's errors and, at the top, any about the answer as a whole.
    ``server_keys`` adds the keys that cancel or mute everything from the asking server.
    Options of the wrong type (a schema dict for ``form``: parse it with ``parse_form``)
    raise ``TypeError``.
    """

    def __init__(
        self,
        form: Form,
        *,
        title: str,
        message: str,
        server: str | None = None,
        previous: Mapping[str, object] | None = None,
        problems: AnswerError | None = None,
        server_keys: ServerKeys | None = None,
    ) -> None:
        if not isinstance(cast(object, form), Form):
            raise TypeError(f"form must be a Form, such as parse_form(schema), got {form!r}")
        self.form = form
        self._server_keys = checked_server_keys(server_keys)
        self._title = text("title", title, "the screen's title")
        self._message = text("message", message, "what the form is for")
        self._server = text_or_none("server", server, "the asking server's name")
        if previous is not None and not isinstance(cast(object, previous), Mapping):
            raise TypeError(
                f"previous must be the last answer, a dict of field names to values, or None, "
                f"got {previous!r}"
            )
        instance_or_none("problems", problems, AnswerError, "an AnswerError")
        self._tried = problems is not None
        self.inputs = [make_input(field, self._changed, previous) for field in form.fields]
        given = _by_field(problems.errors) if problems is not None else {}
        names = {field.name for field in form.fields}
        self.errors: dict[str, list[str]] = {n: given.get(n, []) for n in names}
        self.notes = [
            f"{name}: {message}" if name else message
            for name, messages in given.items()
            if name not in names
            for message in messages
        ]
        self.status = "The last answer was not accepted; fix what is marked." if problems else ""
        self.reader = Reader(self._texts())
        self.application: Application[FormOutcome] = ScreenApplication(
            layout=Layout(self.reader.around(self._layout())),
            key_bindings=self.reader.bindings(with_server_keys(self._bindings(), server_keys)),
            style=STYLE,
            erase_when_done=True,
            mouse_support=False,
        )

    async def run(self) -> FormOutcome:
        """Show the form until the person accepts a valid answer, declines or cancels."""
        return await run_screen(self.application)

    # -- what the person does ----------------------------------------------------------

    def accept(self) -> None:
        """Send the answer if every field is right; otherwise say which are not."""
        checked, wrong = self._judge()
        if checked is not None:
            self.application.exit(result=checked)
            return
        self._tried = True
        self.notes = []
        self._say(wrong)
        if wrong:
            self.application.layout.focus(wrong[0].container)

    def _pressed(self, action: Callable[[], None]) -> Callable[[], None]:
        """A button's action, done only when the key that pressed it was typed, not
        pasted (``ScreenApplication.deliberate``): a paste's Tab reached Accept and
        its next space pressed it."""

        def press() -> None:
            app = self.application
            if isinstance(app, ScreenApplication) and not app.deliberate():
                self.status = BURST_NOTE
                return
            if self.status == BURST_NOTE:
                self.status = ""
            action()

        return press

    def _changed(self, field_input: FieldInput) -> None:
        """Check the changed field now; once Accept was refused, recheck them all."""
        if self.status == LAST_FIELD:
            self.status = ""
        if self._tried:
            self._say(self._judge()[1])
        else:
            self.errors[field_input.field.name] = field_input.read()[1]

    def _judge(self) -> tuple[dict[str, FormValue] | None, list[FieldInput]]:
        """Read every field and check the whole answer: the answer if it is right,
        and the inputs that are wrong (each one's errors in ``self.errors``)."""
        answer: dict[str, FormValue] = {}
        for field_input in self.inputs:
            value, problems = field_input.read()
            self.errors[field_input.field.name] = problems
            if value is not None:
                answer[field_input.field.name] = value
        checked: dict[str, FormValue] | None = None
        try:
            checked = self.form.check(answer)
        except AnswerError as exc:
            # A field that could not even be read keeps that complaint, not "is required".
            for name, messages in _by_field(exc.errors).items():
                if name in self.errors and not self.errors[name]:
                    self.errors[name] = messages
        wrong = [i for i in self.inputs if self.errors[i.field.name]]
        return (checked if not wrong else None), wrong

    def _say(self, wrong: list[FieldInput]) -> None:
        labels = ", ".join(clean(i.field.label) for i in wrong)
        self.status = f"Not sent: fix {labels}" if wrong else ""

    def _bindings(self) -> KeyBindings:
        bindings = KeyBindings()

        def answer(outcome: Literal["decline", "cancel"]) -> None:
            self.application.exit(result=outcome)

        @bindings.add("c-s")
        def _accept(event: KeyPressEvent) -> None:
            self.accept()

        @bindings.add("c-d")
        def _decline(event: KeyPressEvent) -> None:
            answer("decline")

        @bindings.add("escape")
        @bindings.add("c-c")
        def _cancel(event: KeyPressEvent) -> None:
            answer("cancel")

        @bindings.add("tab")
        @bindings.add("down")
        def _next(event: KeyPressEvent) -> None:
            event.app.layout.focus_next()

        @bindings.add("enter")
        def _enter(event: KeyPressEvent) -> None:
            # Never from the last field onto the buttons: Enter ends a line typed for the
            # prompt too, and a Space after it pressed Accept on a form nobody had read.
            if self.inputs and event.app.layout.has_focus(self.inputs[-1].container):
                self.status = LAST_FIELD
            else:
                event.app.layout.focus_next()

        @bindings.add("s-tab")
        @bindings.add("up")
        def _previous(event: KeyPressEvent) -> None:
            event.app.layout.focus_previous()

        return bindings

    # -- what the person sees ----------------------------------------------------------

    def _end(self, outcome: Literal["decline", "cancel"]) -> None:
        self.application.exit(result=outcome)

    def _texts(self) -> list[tuple[str, str]]:
        """The server's words that the screen may cut short, for its ``Reader``."""
        asker = f" from {self._server}" if self._server else ""
        texts = [(f"The message{asker}:", self._message)] if self._message.strip() else []
        for field in self.form.fields:
            if field.description:  # the heading holds the title whole
                texts.append((f"{field.label} (what the field is for):", field.description))
            elif "\n" in (shown := readable(field.label)) or get_cwidth(shown) > TITLE_ALWAYS_WHOLE:
                texts.append(("A field's title:", field.label))
        return texts

    def _header(self, width: int) -> RenderableType:
        title = Text(clean(self._title), style="bold")
        if self._server:
            title.append(" — from ")
            title.append(clean(self._server), style="bold cyan")
        # A quarter of the window at most, so that the fields below have room.
        most = max(1, min(MESSAGE_LINES_SHOWN, get_app().output.get_size().rows // 4))
        parts: list[RenderableType] = [Quoted(self._message, most)]
        if self.notes:
            parts.append(Text("\n".join(self.notes), style="red"))
        return card(title, parts, width)

    def _layout(self) -> Container:
        # The header stays above the fields, which scroll under it: scrolled with them,
        # who asks and why went out of sight as soon as a lower field had the focus.
        header = whole(rich_lines(self._header))
        blocks = [(i, *self._field_block(i)) for i in self.inputs]
        fields = HSplit([block for _, block, _ in blocks] or [Window(height=0)])

        def fields_height() -> Dimension:
            # As tall as the fields, no taller: the buttons follow them, and a form
            # taller than the terminal scrolls to the focused field. At least the
            # focused field's title, description and first row of input, or the
            # window is too small (``Fitting``).
            width = get_app().output.get_size().columns
            needed = fields.preferred_height(width, 10_000).preferred
            least = 1
            for field_input, _, head in blocks:
                if get_app().layout.has_focus(field_input.container):
                    least += sum(w.preferred_height(width, 10_000).preferred for w in head)
            return Dimension(min=min(least, needed), max=needed, preferred=needed)

        body = _FieldsPane(fields, [(i, block) for i, block, _ in blocks], height=fields_height)
        buttons = _Buttons(
            [
                Button("Accept", handler=self._pressed(self.accept)),
                Button("Decline", handler=self._pressed(lambda: self._end("decline"))),
                Button("Cancel", handler=self._pressed(lambda: self._end("cancel"))),
            ]
        )
        status = ConditionalContainer(
            status_line("class:status", lambda: self.status),
            filter=Condition(lambda: bool(self.status)),
        )
        required = any(i.field.required for i in self.inputs)
        hints: StyleAndTextTuples = [*key_hints(FORM_KEYS)]
        if required:
            hints += [(GAP, "  "), ("class:hint", " * required")]
        return Fitting(
            [
                header,
                body,
                status,
                Window(height=Dimension(min=0, preferred=1, max=1)),
                buttons,
                foot(lambda: hints, self._server_keys),
                Window(),  # takes the rest of the terminal, below everything
            ],
            what="this form",
            keys=(("Ctrl-D", "decline"), ("Esc", "cancel")),
            takes=frozenset({"c-d", "escape", "c-c"}),
            server_keys=self._server_keys,
            least_columns=buttons.preferred_width(10_000).min,
        )

    def _field_block(self, field_input: FieldInput) -> tuple[Container, list[Window]]:
        """The field's rows, and those above its input (its title, its description)."""
        field = field_input.field
        label: StyleAndTextTuples = [("class:label", readable(field.label))]
        marks: StyleAndTextTuples = [("class:required", " *")] if field.required else []
        marks.append(("class:hint", f"  ({field_hint(field)})"))
        # Cut, the "*" and what the field expects kept: a long title cut by the terminal
        # once hid them, and one wrapped whole pushed the other fields off the screen.
        head = [wrapped_text(lambda: label, 2, TITLE_LINES_SHOWN, kept=marks)]
        if field.description:
            text: StyleAndTextTuples = [("class:hint", readable(f"  {field.description}"))]
            head.append(wrapped_text(lambda: text, 2, DESCRIPTION_LINES_SHOWN))
        rows: list[AnyContainer] = [*head, field_input.container]

        def errors() -> StyleAndTextTuples:
            lines = [readable(f"  ✗ {message}") for message in self.errors[field.name]]
            return [("class:error", "\n".join(lines))]

        rows.append(
            ConditionalContainer(
                wrapped_text(errors, 4),  # under the message, not under the ✗
                filter=Condition(lambda: bool(self.errors[field.name])),
            )
        )
        rows.append(Window(height=1))
        return HSplit(rows), head


class _Buttons(Container):
    """The buttons in a row, or one under another in a window too narrow for the row
    (prompt_toolkit drew "Window too small..." in its place, and no button)."""

    def __init__(self, buttons: list[Button]) -> None:
        self._buttons = [to_container(button) for button in buttons]
        spaced: list[AnyContainer] = []
        for button in self._buttons:
            spaced += [Window(width=2), button] if spaced else [button]
        self._row = VSplit(spaced, padding=0)
        self._column = HSplit([VSplit([button, Window()]) for button in self._buttons])

    def _shown(self, width: int) -> Container:
        fits = self._row.preferred_width(width).min <= width
        return self._row if fits else self._column

    def reset(self) -> None:
        self._row.reset()
        self._column.reset()

    def preferred_width(self, max_available_width: int) -> Dimension:
        row = self._row.preferred_width(max_available_width)
        least = self._column.preferred_width(max_available_width).min
        return Dimension(min=least, preferred=row.preferred, max=row.max)

    def preferred_height(self, width: int, max_available_height: int) -> Dimension:
        return self._shown(width).preferred_height(width, max_available_height)

    def write_to_screen(
        self,
        screen: Screen,
        mouse_handlers: MouseHandlers,
        write_position: WritePosition,
        parent_style: str,
        erase_bg: bool,
        z_index: int | None,
    ) -> None:
        self._shown(write_position.width).write_to_screen(
            screen, mouse_handlers, write_position, parent_style, erase_bg, z_index
        )

    def get_children(self) -> list[Container]:
        return list(self._buttons)


class _FieldsPane(ScrollablePane):
    """The fields, scrolled so that the focused field's title, its ``*`` and what it
    expects stay in sight above its input: scrolled only as far as the cursor, they
    went out of sight in a short window (the first field's as soon as the form opened).
    """

    def __init__(
        self,
        fields: Container,
        blocks: list[tuple[FieldInput, Container]],
        height: Callable[[], Dimension],
    ) -> None:
        super().__init__(fields, height=height, show_scrollbar=False)
        self._blocks = blocks
        self._width = 0

    def write_to_screen(
        self,
        screen: Screen,
        mouse_handlers: MouseHandlers,
        write_position: WritePosition,
        parent_style: str,
        erase_bg: bool,
        z_index: int | None,
    ) -> None:
        self._width = write_position.width
        super().write_to_screen(
            screen, mouse_handlers, write_position, parent_style, erase_bg, z_index
        )

    def _make_window_visible(
        self,
        visible_height: int,
        virtual_height: int,
        visible_win_write_pos: WritePosition,
        cursor_position: Point | None,
    ) -> None:
        super()._make_window_visible(
            visible_height, virtual_height, visible_win_write_pos, cursor_position
        )
        top = 0  # the focused field's first row, in all the fields' rows
        for field_input, block in self._blocks:
            if get_app().layout.has_focus(field_input.container):
                at = cursor_position.y if cursor_position else visible_win_write_pos.ypos
                if self.vertical_scroll > top and at < top + visible_height:
                    self.vertical_scroll = top
                return
            top += block.preferred_height(self._width, 10_000).preferred


async def ask_form(
    form: Form,
    *,
    title: str,
    message: str,
    server: str | None = None,
    previous: Mapping[str, object] | None = None,
    problems: AnswerError | None = None,
) -> dict[str, FormValue] | Literal["decline", "cancel"]:
    """Ask a person to fill in ``form`` at the terminal (asyncio only: prompt_toolkit).

    Returns the checked answer, or ``"decline"`` / ``"cancel"``. ``previous`` and
    ``problems`` ask again after a refused answer. Also the way to ask a tool's
    arguments: ``ask_form(parse_form(tool.input_schema), title=tool.name, message=...)``.
    """
    screen = FormScreen(
        form, title=title, message=message, server=server, previous=previous, problems=problems
    )
    return await screen.run()
