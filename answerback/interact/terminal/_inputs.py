"""One input per form field: a text line, a radio list, a checkbox list, a checkbox.

Each input reads its own value with the field's own rules (``field.coerce`` for typed
text, ``field.check`` for picks): the form engine in ``answerback.forms`` decides what is
right, the screen only shows what it says.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping

from prompt_toolkit.application import get_app
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.document import Document
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import AnyContainer, Dimension, FormattedTextControl, Window
from prompt_toolkit.widgets import TextArea

from answerback.forms import (
    AnswerError,
    BooleanField,
    FormField,
    FormValue,
    MultiSelectField,
    SingleSelectField,
)
from answerback.interact.terminal._text import initial_value, one_line, prefilled, readable

Reading = tuple[FormValue | None, list[str]]
"""An input's value (``None``: no answer, the field is left out) and what is wrong with it."""


class FieldInput(ABC):
    """The input for one field; ``on_change`` is called whenever the person changes it."""

    def __init__(self, field: FormField, on_change: Callable[[FieldInput], None]) -> None:
        self.field = field
        self._on_change = on_change

    @property
    @abstractmethod
    def container(self) -> AnyContainer:
        """What goes on the screen (and takes the focus)."""

    @abstractmethod
    def read(self) -> Reading:
        """The value now shown, read and checked with the field's rules."""

    def _changed(self) -> None:
        self._on_change(self)


def _checked(field: FormField, value: FormValue | None) -> Reading:
    if value is None:
        return None, []
    try:
        return field.check(value), []
    except AnswerError as exc:
        return None, [error.message for error in exc.errors]


PROMPT = "  > "
"""What starts a text field's first row; its further rows are indented as far."""


class TextInput(FieldInput):
    """One line of typed text: strings, numbers, emails, dates and the like. It starts
    with ``prefilled`` text and keeps to ``one_line`` text (a paste of several lines
    is joined), so what it shows is what it sends; text wider than the terminal wraps
    onto further rows rather than scroll its start (and the ``>``) out of sight."""

    def __init__(
        self,
        field: FormField,
        on_change: Callable[[FieldInput], None],
        previous: Mapping[str, object] | None,
    ) -> None:
        super().__init__(field, on_change)
        start = initial_value(field, previous)
        text = "" if start is None else prefilled(start)
        self.area = TextArea(
            multiline=False,
            prompt=[("class:hint", PROMPT)],
            style="class:field",
            get_line_prefix=lambda _line, wrapped: " " * len(PROMPT) if wrapped else "",
        )
        self.area.window.height = Dimension(min=1)  # one line, on as many rows as it needs
        self.area.document = Document(text, cursor_position=len(text))  # type on from the end
        self.area.buffer.on_text_changed += self._buffer_changed

    @property
    def container(self) -> AnyContainer:
        return self.area

    def _buffer_changed(self, buffer: Buffer) -> None:
        text = buffer.text
        keep_to_one_line(buffer)
        if buffer.text == text:  # else this was called again, for the text kept
            self._changed()

    def read(self) -> Reading:
        try:
            return self.field.coerce(self.area.text), []
        except AnswerError as exc:
            return None, [error.message for error in exc.errors]


def keep_to_one_line(buffer: Buffer) -> None:
    """Make ``buffer``'s text ``one_line`` text (a paste of several lines joined with
    spaces, a tab a space, hidden characters written out), so that what a one-line input
    shows is what it gives: an ``on_text_changed`` handler. Changing the text calls the
    handlers again; the cursor stays as far from the end."""
    text = buffer.text
    shown = one_line(text)
    if shown != text:
        after = len(text) - buffer.cursor_position
        buffer.document = Document(shown, cursor_position=max(0, len(shown) - after))


class ChoiceInput(FieldInput):
    """A radio list (one of) or a checkbox list (any of): Up/Down move, Space picks."""

    def __init__(
        self,
        field: SingleSelectField | MultiSelectField,
        on_change: Callable[[FieldInput], None],
        previous: Mapping[str, object] | None,
    ) -> None:
        super().__init__(field, on_change)
        self.options = field.options
        self.multiple = isinstance(field, MultiSelectField)
        start = initial_value(field, previous)
        values = {option.value for option in self.options}
        if isinstance(start, list):
            self.picked = [str(value) for value in start if value in values]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        else:
            self.picked = [start] if isinstance(start, str) and start in values else []
        self.cursor = next(
            (i for i, option in enumerate(self.options) if option.value in self.picked), 0
        )
        self.control = FormattedTextControl(
            self._fragments, focusable=True, key_bindings=self._bindings(), show_cursor=False
        )
        self.window = Window(self.control, dont_extend_height=True)

    @property
    def container(self) -> AnyContainer:
        return self.window

    def read(self) -> Reading:
        if self.multiple:
            in_order = [o.value for o in self.options if o.value in self.picked]
            if not in_order and not self.field.required:
                return None, []
            return _checked(self.field, in_order)
        return _checked(self.field, self.picked[0] if self.picked else None)

    def pick(self) -> None:
        """Pick (or, for a checkbox or an optional radio, un-pick) the option at the cursor."""
        value = self.options[self.cursor].value
        if value in self.picked:
            if self.multiple or not self.field.required:
                self.picked.remove(value)
        elif self.multiple:
            self.picked.append(value)
        else:
            self.picked = [value]
        self._changed()

    def _bindings(self) -> KeyBindings:
        bindings = KeyBindings()

        @bindings.add("up")
        def _up(event: KeyPressEvent) -> None:
            if self.cursor == 0:
                event.app.layout.focus_previous()
            else:
                self.cursor -= 1

        @bindings.add("down")
        def _down(event: KeyPressEvent) -> None:
            if self.cursor == len(self.options) - 1:
                event.app.layout.focus_next()
            else:
                self.cursor += 1

        @bindings.add(" ")
        def _pick(event: KeyPressEvent) -> None:
            self.pick()

        return bindings

    def _fragments(self) -> StyleAndTextTuples:
        focused = get_app().layout.has_focus(self.window)
        fragments: StyleAndTextTuples = []
        for index, option in enumerate(self.options):
            on = option.value in self.picked
            mark = ("[x]" if on else "[ ]") if self.multiple else ("(•)" if on else "( )")
            here = focused and index == self.cursor
            fragments.append(("class:cursor" if here else "", readable(f"  {mark} {option.label}")))
            fragments.append(("", "\n"))
        fragments.pop()
        return fragments


class CheckboxInput(FieldInput):
    """A yes/no field as one checkbox: Space toggles it.

    A yes/no without a default has no answer until the person gives one, which a plain
    checkbox cannot say (it always answers yes or no, and sent "no" the person never
    chose): such a field (``three_states``) starts unanswered, unless the last answer
    gave it, and Space goes round unanswered, yes, no. Left unanswered, an optional one
    is not in the answer and a required one is marked "is required" at Accept. Each
    state is written out in words, so none is told apart by colour alone.
    """

    def __init__(
        self,
        field: BooleanField,
        on_change: Callable[[FieldInput], None],
        previous: Mapping[str, object] | None,
    ) -> None:
        super().__init__(field, on_change)
        self.three_states = field.default is None
        start = initial_value(field, previous)
        self.value: bool | None = start if isinstance(start, bool) else None
        if not self.three_states:
            self.value = self.value is True
        bindings = KeyBindings()

        @bindings.add(" ")
        def _toggle(event: KeyPressEvent) -> None:
            self.toggle()

        self.window = Window(
            FormattedTextControl(
                self._fragments, focusable=True, key_bindings=bindings, show_cursor=False
            ),
            dont_extend_height=True,
        )

    @property
    def container(self) -> AnyContainer:
        return self.window

    def toggle(self) -> None:
        """Yes to no and back; for a ``three_states`` field, unanswered to yes to no and round."""
        if self.three_states:
            self.value = True if self.value is None else (False if self.value else None)
        else:
            self.value = not self.value
        self._changed()

    def read(self) -> Reading:
        return _checked(self.field, self.value)

    def _fragments(self) -> StyleAndTextTuples:
        focused = get_app().layout.has_focus(self.window)
        if not self.three_states:
            mark = "[x] yes" if self.value else "[ ] yes"
        else:
            yes, no = ("•" if self.value is True else " "), ("•" if self.value is False else " ")
            mark = f"({yes}) yes  ({no}) no"
            if self.value is None:
                mark += "  — unanswered"
        return [("class:cursor" if focused else "", f"  {mark}")]


def make_input(
    field: FormField,
    on_change: Callable[[FieldInput], None],
    previous: Mapping[str, object] | None,
) -> FieldInput:
    """The input that suits ``field``'s kind."""
    match field:
        case SingleSelectField() | MultiSelectField():
            return ChoiceInput(field, on_change, previous)
        case BooleanField():
            return CheckboxInput(field, on_change, previous)
        case _:
            return TextInput(field, on_change, previous)
