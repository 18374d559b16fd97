"""What every screen shares: running a prompt_toolkit application so that it can be
withdrawn, and drawing rich's static output inside it.

A question can go away while a person is looking at it (its call died, its server
quit). prompt_toolkit cleans up after itself with awaits of its own (it waits for the
terminal's replies to its cursor-position queries and keeps the keys typed ahead), and
anyio's cancellation would interrupt each of them: a late reply would then show up as
garbage in the next prompt. So ``run_screen`` never cancels an application: it asks it
to exit, waits (shielded) until it has finished, and only then lets the cancellation
through.
"""

from __future__ import annotations

import asyncio
import io
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from prompt_toolkit.application import Application, get_app
from prompt_toolkit.data_structures import Size
from prompt_toolkit.formatted_text import ANSI, StyleAndTextTuples, fragment_list_width
from prompt_toolkit.key_binding import (
    KeyBindings,
    KeyBindingsBase,
    KeyPressEvent,
    merge_key_bindings,
)
from prompt_toolkit.layout import Container, FormattedTextControl, HSplit, Window
from prompt_toolkit.styles import Style
from rich.console import Console, RenderableType

from answerback._options import instance_or_none, text
from answerback.interact._printable import clean

T = TypeVar("T")

STYLE = Style.from_dict(
    {
        "label": "bold",
        "required": "bold fg:ansired",
        "hint": "fg:ansibrightblack",
        "error": "fg:ansired",
        "ok": "fg:ansigreen",
        "status": "bold fg:ansired",
        "keys": "reverse",
        "key": "bold",
        "cursor": "reverse",
        "field": "underline",
        "button": "bold",
        "button.focused": "reverse",
    }
)
"""One style sheet for every screen, in the terminal's own 16 colours."""


class ScreenApplication(Application[T]):
    """A screen's prompt_toolkit application, redrawn whole when the terminal is resized.

    prompt_toolkit redraws by moving the cursor up as many rows as it drew above it and
    clearing to the end of the screen. That holds unless the resize made the terminal
    narrower: a terminal that re-wraps its lines when narrowed (tmux, VTE, iTerm2) makes
    two rows of each full-width row above the cursor, so the count fell short and rows
    of the old box stayed above the new one. On such a resize every row on screen is
    scrolled up into the scrollback instead (nothing is lost) and the screen drawn from
    the top. On any other (wider, taller, shorter) prompt_toolkit clears what it drew:
    scrolled away too, each resize left a copy of the screen in the scrollback, two in
    fact, as prompt_toolkit hears of a resize twice (the signal, then its polling).

    Narrowing cannot be cleared the same way: how many rows the old screen takes after
    it depends on the terminal (xterm and the Linux console cut rows short instead of
    re-wrapping them), no terminal can be asked where the old screen now starts, and
    moving up too far would erase what was printed above it. Only the alternate screen
    would avoid the copy, and it would take the session's output out of sight.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._drawn_size: Size | None = None
        """The terminal's size when the screen was last drawn: taken before drawing, so
        that a resize while it draws is never taken as drawn already."""
        self.before_render += self._drawing

    def _drawing(self, _: object) -> None:
        self._drawn_size = self.output.get_size()

    def _on_resize(self) -> None:
        output = self.output
        size = output.get_size()
        drawn = self._drawn_size
        if size == drawn:
            return  # told twice (the signal, then prompt_toolkit's polling): drawn already
        if drawn is None or size.columns >= drawn.columns:
            super()._on_resize()  # no row was re-wrapped: clear what was drawn, redraw
            return
        output.reset_attributes()
        output.enable_autowrap()
        output.cursor_goto(size.rows, 1)
        output.write_raw("\n" * size.rows)
        output.cursor_goto(1, 1)
        output.flush()
        self.renderer.reset(leave_alternate_screen=False)
        self._request_absolute_cursor_position()
        self._redraw()


class _Withdrawn(Exception):
    """Ends an application whose question went away (never seen outside this module)."""


async def run_screen(app: Application[T]) -> T:
    """Run ``app`` until it exits; if cancelled, close it cleanly first, then re-raise.

    The application runs in its own asyncio task: prompt_toolkit needs asyncio, and a
    task of its own means cancellation reaches it only as a request to exit.
    """
    task = asyncio.ensure_future(app.run_async(handle_sigint=False, set_exception_handler=False))
    try:
        return await asyncio.shield(task)
    except BaseException:
        if not task.done():
            future = app.future
            if future is not None and not future.done():
                app.exit(exception=_Withdrawn())
            else:
                task.cancel()
            with anyio.CancelScope(shield=True):
                await asyncio.wait([task])
        if task.done() and not task.cancelled():
            task.exception()  # retrieved, so asyncio does not report it as lost
        raise


def rich_lines(build: Callable[[int], RenderableType]) -> Callable[[], StyleAndTextTuples]:
    """Formatted text for a prompt_toolkit control, drawn by rich at the terminal's width.

    rich draws the static part of a screen (panels, emphasis); prompt_toolkit shows it
    and handles the keys. ``build(width)`` makes the renderable; it is drawn again
    whenever the screen is, so a resized terminal gets a card that fits.
    """

    def render() -> StyleAndTextTuples:
        width = max(20, get_app().output.get_size().columns)
        buffer = io.StringIO()
        console = Console(
            file=buffer,
            width=width,
            force_terminal=True,
            color_system="standard",
            highlight=False,
            emoji=False,
        )
        console.print(build(width))
        return ANSI(buffer.getvalue().rstrip("\n")).__pt_formatted_text__()

    return render


GAP = "class:gap"
"""The style of the spaces between two keys on a foot line: where it may break."""


def key_hints(keys: Sequence[tuple[str, str]]) -> StyleAndTextTuples:
    """The keys line at the foot of a screen: ``[("Ctrl-S", "accept"), ...]``."""
    fragments: StyleAndTextTuples = []
    for index, (key, action) in enumerate(keys):
        if index:
            fragments.append((GAP, "  "))
        fragments.append(("class:key", key))
        fragments.append(("class:hint", f" {action}"))
    return fragments


@dataclass(frozen=True)
class ServerKeys:
    """Keys that act on everything the asking server asks, not just the question shown:
    Ctrl-X answers "cancel" to all of it, Ctrl-Q also mutes the server for the session.

    Control keys, so they work the same in a text field as on a card. A ``server``
    that is not a string, or an action that cannot be called, is refused.
    """

    server: str
    cancel_all: Callable[[], object]
    mute: Callable[[], object]

    def __post_init__(self) -> None:
        text("server", self.server, "the asking server's name")
        for name in ("cancel_all", "mute"):
            action: object = getattr(self, name)
            if not callable(action):
                raise TypeError(
                    f"{name} must be a function called with no arguments, got {action!r}"
                )

    def bindings(self) -> KeyBindings:
        """The two keys, for merging into a screen's own."""
        bindings = KeyBindings()

        @bindings.add("c-x")
        def _cancel_all(event: KeyPressEvent) -> None:
            self.cancel_all()

        @bindings.add("c-q")
        def _mute(event: KeyPressEvent) -> None:
            self.mute()

        return bindings

    def hints(self) -> StyleAndTextTuples:
        """Their line at the foot of a screen."""
        server = clean(self.server)
        return key_hints((("Ctrl-X", f"cancel all from {server}"), ("Ctrl-Q", f"mute {server}")))


def checked_server_keys(value: ServerKeys | None) -> ServerKeys | None:
    """``value`` if it is ``None`` or a ``ServerKeys``: a screen's ``server_keys``."""
    return instance_or_none(
        "server_keys", value, ServerKeys, "ServerKeys(server, cancel_all, mute)"
    )


def with_server_keys(bindings: KeyBindings, keys: ServerKeys | None) -> KeyBindingsBase:
    """A screen's bindings, plus the server keys when the presenter offers them."""
    return bindings if keys is None else merge_key_bindings([bindings, keys.bindings()])


def foot(hints: Callable[[], StyleAndTextTuples], keys: ServerKeys | None) -> Container:
    """The foot of a screen: its keys, and the server keys on a line of their own.

    Each line wraps in a narrow terminal rather than lose its last keys (a 50-column
    form once showed "Ctrl-D decl" and no Esc at all)."""
    line = wrapped(hints)
    if keys is None:
        return line
    return HSplit([line, wrapped(keys.hints)])


def wrapped(text: Callable[[], StyleAndTextTuples]) -> Window:
    """A foot line, broken between two keys (at a ``GAP``) where the next would pass
    the terminal's edge, so that no key is cut in two."""

    def rows() -> StyleAndTextTuples:
        width = get_app().output.get_size().columns
        shown: StyleAndTextTuples = []
        used = 0
        group: StyleAndTextTuples = []
        for fragment in [*text(), (GAP, "")]:
            if fragment[0] != GAP:
                group.append(fragment)
                continue
            size = fragment_list_width(group)
            if used and used + size > width:
                shown[-1] = ("", "\n")  # the gap before this group becomes the break
                used = 0
            shown.extend(group)
            shown.append(fragment)
            used += size + len(fragment[1])
            group = []
        return shown

    return Window(FormattedTextControl(rows), dont_extend_height=True, wrap_lines=True)


def status_line(style: str, text: Callable[[], str]) -> Window:
    """A screen's line of its own words (what is wrong, what failed), wrapped at word
    ends to as many rows as it needs: cut to one row, it once hid why a model failed."""

    def rows() -> StyleAndTextTuples:
        width = get_app().output.get_size().columns
        lines = textwrap.wrap(text(), max(width, 1), break_on_hyphens=False)
        return [(style, "\n".join(lines))]

    return Window(FormattedTextControl(rows), dont_extend_height=True, wrap_lines=True)
