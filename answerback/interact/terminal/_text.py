"""The words every screen uses, so the full-screen and the line-mode versions of a
question say the same thing: what a field expects, a value as text, sampling content
described for a person (an image is named, never dumped as base64).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Literal

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from answerback.forms import (
    BooleanField,
    FormField,
    FormValue,
    MultiSelectField,
    NumberField,
    SingleSelectField,
    StringField,
)

# The bound as the forms' own messages write it (``1e+308``, not 309 digits): one rule,
# so a hint and the error under it never show the same number two ways.
from answerback.forms._fields import number_text
from answerback.interact._printable import clean
from answerback.types import (
    AudioContent,
    CreateMessageRequestParams,
    ImageContent,
    SamplingContent,
    SamplingMessageContentBlock,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)

FormOutcome = dict[str, FormValue] | Literal["decline", "cancel"]
"""What asking a form gives: the checked answer, or how the person refused it."""

_FORMAT_WORDS = {
    "email": "email address, like name@example.com",
    "uri": "web address, like https://example.com/page",
    "date": "date, like 2025-01-31",
    "date-time": "date and time, like 2025-01-31T14:30:00Z",
}


def field_hint(field: FormField) -> str:
    """What the field expects, in a few words ("whole number, 1 to 12")."""
    match field:
        case StringField():
            parts = [_FORMAT_WORDS[field.format] if field.format else "text"]
            if field.min_length is not None and field.max_length is not None:
                parts.append(f"{field.min_length} to {field.max_length} characters")
            elif field.min_length is not None:
                parts.append(f"at least {field.min_length} characters")
            elif field.max_length is not None:
                parts.append(f"at most {field.max_length} characters")
            return ", ".join(parts)
        case NumberField():
            kind = "whole number" if field.integer else "number"
            low, high = field.minimum, field.maximum
            if low is not None and high is not None:
                return f"{kind}, {number_text(low)} to {number_text(high)}"
            if low is not None:
                return f"{kind}, at least {number_text(low)}"
            if high is not None:
                return f"{kind}, at most {number_text(high)}"
            return kind
        case BooleanField():
            return "yes or no"
        case SingleSelectField():
            return "pick one"
        case MultiSelectField():
            low, high = field.min_items, field.max_items
            if low is not None and high is not None:
                return f"pick {low} to {high}"
            if low is not None:
                return f"pick at least {low}"
            if high is not None:
                return f"pick at most {high}"
            return "pick any"


def value_text(value: object) -> str:
    """A value as a person would type it (the text a field is prefilled with)."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return number_text(value)
    if isinstance(value, list):
        items: list[object] = value  # pyright: ignore[reportUnknownVariableType]
        return ", ".join(str(item) for item in items)
    return str(value)


def prefilled(value: object) -> str:
    """The text a field is prefilled with: ``value_text`` with anything a terminal
    would obey or hide written out (``clean``), on one line, and a tab a space, as in
    text typed or pasted into the field (``one_line``): kept, it showed as ``^I``.

    This text, not the server's raw default, is what goes back if the person leaves the
    field untouched: the person sees exactly what will be sent. A bidi override or a
    zero-width character in a default is sent as the six characters ``\\u202e`` shown,
    never as an invisible character the person agreed to without seeing it; the field's
    own rules then judge that text like anything typed.
    """
    return clean(value_text(value).replace("\t", " "), newlines=False)


def readable(text: str) -> str:
    """A server's text for a screen's own lines (labels, descriptions, options): written
    out as ``clean`` writes it, and each tab expanded to the next eighth column, as rich
    expands it on the cards above them; left in, prompt_toolkit showed it as ``^I``.
    Give it the whole line, indentation included, so that the columns come out right."""
    return clean(text).expandtabs(8)


_BREAKS = re.compile(r"\r\n|[\t\n\v\f\r\x1c-\x1e\x85\u2028\u2029]")
"""What ends a line (CRLF counted once), and tabs: in a one-line field, a space each."""


def one_line(text: str) -> str:
    """Text for a one-line field, as it is both shown and sent.

    Pasted text may hold line breaks, which a one-line field cannot show (it showed only
    the last line, yet sent them all): each becomes a space, as does a tab. Whatever a
    terminal would hide or obey is written out (``clean``), so that nothing is sent
    that the person could not see.
    """
    return clean(_BREAKS.sub(" ", text), newlines=False)


def initial_value(field: FormField, previous: Mapping[str, object] | None) -> object:
    """What a field starts with: the person's previous answer, else its default."""
    if previous is not None and field.name in previous:
        return previous[field.name]
    return field.default_value()


def _size(data: str) -> str:
    size = len(data) * 3 // 4  # base64: four characters carry three bytes
    return f"{size / 1024:.1f} KB" if size >= 1024 else f"{size} bytes"


def describe_block(block: SamplingMessageContentBlock) -> str:
    """One content block for a person: text as is, everything else named."""
    match block:
        case TextContent():
            return block.text
        case ImageContent():
            return f"[image: {block.mime_type}, {_size(block.data)}]"
        case AudioContent():
            return f"[audio: {block.mime_type}, {_size(block.data)}]"
        case ToolUseContent():
            arguments = json.dumps(block.input, ensure_ascii=False)
            return f"[calls tool {block.name} with {arguments}]"
        case ToolResultContent():
            parts = [
                item.text if isinstance(item, TextContent) else f"[{item.type}]"
                for item in block.content
            ]
            failed = " (an error)" if block.is_error else ""
            return f"[result of tool call {block.tool_use_id}{failed}: {' '.join(parts)}]"


def describe_content(content: SamplingContent) -> str:
    """A message's content (one block or several), one block per line."""
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(describe_block(block) for block in blocks)


def sampling_facts(params: CreateMessageRequestParams) -> list[tuple[str, str]]:
    """The request's settings a person should see before approving, as (name, value)."""
    facts = [("Token cap", str(params.max_tokens))]
    preferences = params.model_preferences
    if preferences is not None:
        hints = [hint.name for hint in preferences.hints or [] if hint.name]
        if hints:
            facts.append(("Models wanted", ", ".join(hints)))
        priorities = [
            f"{name} {value:g}"
            for name, value in (
                ("cost", preferences.cost_priority),
                ("speed", preferences.speed_priority),
                ("intelligence", preferences.intelligence_priority),
            )
            if value is not None
        ]
        if priorities:
            facts.append(("Priorities", ", ".join(priorities)))
    if params.temperature is not None:
        facts.append(("Temperature", f"{params.temperature:g}"))
    if params.stop_sequences:
        facts.append(("Stops at", ", ".join(json.dumps(s) for s in params.stop_sequences)))
    if params.include_context not in (None, "none"):
        facts.append(("Context", str(params.include_context)))
    if params.tools:
        names = ", ".join(tool.name for tool in params.tools)
        choice = params.tool_choice.mode if params.tool_choice and params.tool_choice.mode else None
        facts.append(("Tools", names if choice is None else f"{names} (use: {choice})"))
    return facts


_LEVEL_WORDS = {"OK": "ok", "WARN": "warning", "HIGH_RISK": "high risk", "BLOCK": "blocked"}


READ_KEY = "Ctrl-R"
"""The key that shows, whole, the server's words a screen cut short."""


def cut_note(rows: int) -> str:
    """What a screen says where it cut a server's words: how much, and how to read it."""
    if rows == 1:
        return f"… 1 more line: {READ_KEY} shows it whole"
    return f"… {rows} more lines: {READ_KEY} shows them whole"


def window_note(rows: int) -> str:
    """What a card cut by the window's height says when Ctrl-R cannot show the rest."""
    if rows == 1:
        return "… 1 more line: a taller window shows it"
    return f"… {rows} more lines: a taller window shows them"


def verdict_words(level_name: str) -> str:
    """A risk level as the card says it ("HIGH_RISK" -> "high risk")."""
    return _LEVEL_WORDS.get(level_name, level_name.lower())


class Quoted:
    """A server's words as rows of a card: blank runs closed up, wrapped to the card's
    width, at most ``most`` rows (then how many more there were), each row after
    ``mark`` (with a bar, the server's words can never pass for the card's own lines,
    nor push them away). Where it cuts, it says how to read the rest (``READ_KEY``).

    Every row carries the mark, wrapped rows too: a message that wrapped once put a
    forged "Site: paypal.com" at the card's own margin, under the real one.
    """

    def __init__(self, message: str, most: int, *, mark: str = "│ ") -> None:
        kept: list[str] = []
        for line in clean(message).split("\n"):
            if line.strip() or (kept and kept[-1].strip()):
                kept.append(line)
        while kept and not kept[-1].strip():
            kept.pop()
        self.text = Text("\n".join(kept), overflow="fold")
        self.most = most
        self.mark = mark

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(1, options.max_width - cell_len(self.mark))
        rows = console.render_lines(self.text, options.update_width(width), pad=False)
        if len(rows) > self.most:
            more = Text(cut_note(len(rows) - self.most), style="dim")
            shown = rows[: self.most]
            shown += console.render_lines(more, options.update_width(width), pad=False)
            rows = shown
        mark = Segment(self.mark, Style(dim=True))
        for row in rows:
            yield mark
            yield from row
            yield Segment.line()


def quoted(message: str, most: int) -> Quoted:
    """A server's words set apart by a bar on every row, at most ``most`` rows."""
    return Quoted(message, most)
