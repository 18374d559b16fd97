"""What every screen shares: running a prompt_toolkit application so that it can be
withdrawn, and drawing rich's static output inside it.

A question can go away while a person is looking at it (its call died, its server
quit). prompt_toolkit cleans up after itself with awaits of its own (it waits for the
terminal's replies to its cursor-position queries and keeps the keys typed ahead), and
anyio's cancellation would interrupt each of them: a late reply would then show up as
garbage in the next prompt. So ``run_screen`` never cancels an application: it asks it
to exit, waits (shielded) until it has finished, and only then lets the cancellation
through.

A screen can open while the person is typing something else (a command at the prompt,
a paste): those keys must not answer it. ``KeyGuard`` drops every key until the screen
has been drawn and then left a moment with no key pressed, and the foot shows the
screen's keys only from then on. Once it takes keys, a button press (or a card's
key that acts) counts only if it and the key before it each came alone, as typed
keys do: a paste's keys come together, and its Tab then Space pressed Accept.

A screen cuts a server's long words short; ``Reader`` shows them whole on request.
"""

from __future__ import annotations

import asyncio
import io
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
from prompt_toolkit.application import Application, get_app
from prompt_toolkit.data_structures import Size
from prompt_toolkit.document import Document
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import (
    ANSI,
    OneStyleAndTextTuple,
    StyleAndTextTuples,
    fragment_list_width,
    split_lines,
)
from prompt_toolkit.input.typeahead import clear_typeahead
from prompt_toolkit.key_binding import (
    ConditionalKeyBindings,
    KeyBindings,
    KeyBindingsBase,
    KeyPressEvent,
    merge_key_bindings,
)
from prompt_toolkit.keys import Keys
from prompt_toolkit.layout import (
    AnyContainer,
    ConditionalContainer,
    Container,
    Dimension,
    FormattedTextControl,
    HSplit,
    UIContent,
    UIControl,
    Window,
)
from prompt_toolkit.layout.controls import GetLinePrefixCallable
from prompt_toolkit.layout.layout import walk
from prompt_toolkit.layout.mouse_handlers import MouseHandlers
from prompt_toolkit.layout.processors import Processor, Transformation, TransformationInput
from prompt_toolkit.layout.screen import Screen, WritePosition
from prompt_toolkit.renderer import Renderer
from prompt_toolkit.styles import Style
from prompt_toolkit.utils import get_cwidth
from prompt_toolkit.widgets import TextArea
from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from answerback._options import instance_or_none, text
from answerback.interact._printable import clean
from answerback.interact.terminal._text import READ_KEY, cut_note, window_note

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


SETTLE_SECONDS = 0.5
"""How long a screen must have been on the terminal, with no key pressed, before it takes
keys: longer than the gaps in a run of typing or a paste, shorter than the time it takes
to notice that a screen has opened."""

IGNORED_NOTE = "Keys typed as this opened were ignored: nothing was answered."
"""What a screen says once it has dropped keys typed before it was seen."""

TYPED_GAP_SECONDS = 0.02
"""A key comes alone if no other key is waiting behind it and none came this shortly
before it: a paste's keys are read together (or split into parts read in a row),
while a person's keys are tens of milliseconds apart at the fastest."""

ESCAPE_WAIT_SECONDS = 0.1
"""How long a lone Esc waits, twice: for the rest of a key's escape sequence, then for
a second key of an Alt binding. An Alt key or an arrow comes from the terminal in one
piece, so a short wait still reads them; prompt_toolkit's 0.5 and 1.0 s made Esc take
1.5 s to close a screen, and the keys typed meanwhile were lost with it."""


def ctrl_z_ignored() -> KeyBindings:
    """Ctrl-Z doing nothing: prompt_toolkit types it into the line (``\\x1a``, sent with
    the answer), and stopping the command would leave its servers waiting on a person
    who cannot see them."""
    bindings = KeyBindings()

    @bindings.add("c-z")
    def _ignore(event: KeyPressEvent) -> None:
        pass

    return bindings


BURST_NOTE = "Not pressed: the keys before it came all at once, as a paste. Press it again."
"""What a screen says when a paste's key would have pressed a button."""


class KeyGuard:
    """Keeps keys typed before a screen was seen from acting on it.

    A question may open while the person types a command at the prompt: "call
    echo⏎call sample⏎" then typed into the form, and the Space of the second line pressed
    Accept on a form nobody had read. Every key is dropped until the screen has been
    drawn and ``quiet`` seconds have passed without a key; a key dropped starts the wait
    again, so the rest of a run of typing (or a paste) is dropped with it. ``clock``
    is injectable for tests.
    """

    def __init__(
        self, quiet: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.quiet = SETTLE_SECONDS if quiet is None else quiet
        self.clock = clock
        self.drawn_at: float | None = None
        self.last_dropped: float | None = None
        self.dropped = 0
        """How many keys were dropped."""
        self.noted = False
        """Whether the screen says that keys were dropped (until a key is taken)."""
        self._settled = False

    def drawn(self) -> None:
        """The screen is on the terminal (the first time it is drawn counts)."""
        if self.drawn_at is None:
            self.drawn_at = self.clock()

    def wait_left(self) -> float:
        """Seconds until keys are taken, if no key comes before (0: taken now)."""
        if self._settled:
            return 0.0
        if self.drawn_at is None:
            return self.quiet
        since = max(self.drawn_at, self.last_dropped or self.drawn_at)
        left = since + self.quiet - self.clock()
        if left <= 0:
            self._settled = True  # once taking keys, always
            return 0.0
        return left

    @property
    def settled(self) -> bool:
        """Whether keys are taken now."""
        return self.wait_left() == 0.0

    def drop(self) -> None:
        self.dropped += 1
        self.noted = True
        self.last_dropped = self.clock()


class ScrollbackSparingRenderer(Renderer):
    """prompt_toolkit's renderer, erasing a finished screen without copying it into the
    scrollback.

    A screen is erased from its top-left corner to the end of the terminal. When that
    corner is the terminal's own (a screen as tall as the window), tmux (its
    ``scroll-on-clear``) takes it for a cleared terminal and keeps a copy of the screen,
    typed values and all, in the scrollback. Erasing from the second column, then the
    first row's start, clears the same cells and is never taken so.
    """

    def erase(self, leave_alternate_screen: bool = True) -> None:
        output = self.output
        output.cursor_backward(self._cursor_pos.x)
        output.cursor_up(self._cursor_pos.y)
        output.cursor_forward(1)
        output.erase_down()
        output.cursor_backward(1)
        output.erase_end_of_line()
        output.reset_attributes()
        output.enable_autowrap()
        output.flush()
        self.reset(leave_alternate_screen=leave_alternate_screen)


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

    Its ``guard`` (a ``KeyGuard``) drops the keys typed before the screen was seen.
    Ctrl-Z does nothing (``ctrl_z_ignored``), and a lone Esc acts after
    ``ESCAPE_WAIT_SECONDS``.
    """

    def __init__(self, *args: Any, key_bindings: KeyBindingsBase, **kwargs: Any) -> None:
        super().__init__(
            *args,
            key_bindings=merge_key_bindings(
                [ctrl_z_ignored(), self._guard_bindings(), key_bindings]
            ),
            **kwargs,
        )
        self.ttimeoutlen = self.timeoutlen = ESCAPE_WAIT_SECONDS
        self.guard = KeyGuard()
        renderer = self.renderer
        self.renderer = ScrollbackSparingRenderer(
            renderer.style,
            self.output,
            full_screen=self.full_screen,
            mouse_support=renderer.mouse_support,
            cpr_not_supported_callback=self.cpr_not_supported_callback,
        )
        self._drawn_size: Size | None = None
        """The terminal's size when the screen was last drawn: taken before drawing, so
        that a resize while it draws is never taken as drawn already."""
        self.before_render += self._drawing
        self.after_render += self._drawn
        self.key_processor.before_key_press += self._key_taken
        self._last_key_at: float | None = None
        self._waiting = False
        """Whether keys were read with the last one, behind it."""
        self._alone = (True, True)
        """Whether the key before the one handled now, and that one, each came alone."""

    def deliberate(self) -> bool:
        """Whether the key handled now, and the one before it, each came alone: typed
        by a person, not part of a paste (whose Tab then Space pressed Accept)."""
        return all(self._alone)

    def _guard_bindings(self) -> KeyBindings:
        bindings = KeyBindings()

        def dropping() -> bool:
            buffer = self.key_processor.key_buffer
            # The terminal's answer to a cursor-position query: prompt_toolkit waits on it.
            replying = bool(buffer) and buffer[-1].key == Keys.CPRResponse
            return not replying and not self.guard.settled

        @bindings.add(Keys.Any, eager=True, filter=Condition(dropping))
        def _drop(event: KeyPressEvent) -> None:
            self.guard.drop()
            # A dropped key did nothing: the first key taken after a dropped paste is
            # judged by itself, not refused for following the paste's last key.
            self._alone = (True, True)

        def cramped() -> bool:
            buffer = self.key_processor.key_buffer
            if not buffer or buffer[-1].key == Keys.CPRResponse:
                return False
            key = buffer[-1].key
            return any(f.cramped and key not in f.takes for f in self._fittings())

        @bindings.add(Keys.Any, eager=True, filter=Condition(cramped))
        def _refuse(event: KeyPressEvent) -> None:
            pass  # the screen says the window is too small, and which keys still act

        return bindings

    def _fittings(self) -> list[Fitting]:
        return [c for c in walk(self.layout.container) if isinstance(c, Fitting)]

    def _key_taken(self, _: object) -> None:
        # Alone: read by itself (no key read with it, before or behind), and not this
        # soon after the key before (the next part of a paste read in parts).
        now = self.guard.clock()
        waiting = any(k.key != Keys.CPRResponse for k in self.key_processor.input_queue)
        after = self._last_key_at
        soon = after is not None and now - after < TYPED_GAP_SECONDS
        alone = not waiting and not self._waiting and not soon
        self._alone = (self._alone[1], alone)
        self._last_key_at = now
        self._waiting = waiting
        if self.guard.noted and self.guard.settled:
            self.guard.noted = False  # the person acts on the screen now: the note has done

    def _drawing(self, _: object) -> None:
        self._drawn_size = self.output.get_size()

    def _drawn(self, _: object) -> None:
        if self.guard.drawn_at is None:
            self.guard.drawn()
            self._settling()

    def _settling(self) -> None:
        """Draw the screen again once it takes keys: its foot shows them from then on."""
        left = self.guard.wait_left()
        if left > 0:
            asyncio.get_running_loop().call_later(left, self._settling)
        else:
            self.invalidate()  # does nothing once the screen has closed

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

    The keys read after the one that closed the screen are dropped, not kept for the
    prompt: the rest of a paste that answered a form was run there as commands.
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
    finally:
        if task.done():
            clear_typeahead(app.input)


def rich_lines(build: Callable[[int], RenderableType]) -> Callable[[], StyleAndTextTuples]:
    """Formatted text for a prompt_toolkit control, drawn by rich at the terminal's width.

    rich draws the static part of a screen (panels, emphasis); prompt_toolkit shows it
    and handles the keys. ``build(width)`` makes the renderable; it is drawn again
    whenever the screen is, so a resized terminal gets a card that fits.
    """

    def render() -> StyleAndTextTuples:
        width = max(CARD_COLUMNS, get_app().output.get_size().columns)
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


CARD_COLUMNS = 20
"""The narrowest a card is drawn: narrower, rich cannot draw its edges and words."""


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


def _guard() -> KeyGuard | None:
    app = get_app()
    return app.guard if isinstance(app, ScreenApplication) else None


def _settled() -> bool:
    guard = _guard()
    return guard is None or guard.settled


def _noted() -> bool:
    guard = _guard()
    return guard is not None and guard.noted


def foot(hints: Callable[[], StyleAndTextTuples], keys: ServerKeys | None) -> Container:
    """The foot of a screen: its keys, and the server keys on a line of their own.

    Each line wraps in a narrow terminal rather than lose its last keys (a 50-column
    form once showed "Ctrl-D decl" and no Esc at all). The keys show once the screen
    takes them (``KeyGuard``); above them, a line says when keys typed before were
    dropped."""
    lines: list[Container] = [wrapped(hints)]
    if keys is not None:
        lines.append(wrapped(keys.hints))
    return HSplit(
        [
            ConditionalContainer(
                status_line("class:status", lambda: IGNORED_NOTE), filter=Condition(_noted)
            ),
            ConditionalContainer(HSplit(lines), filter=Condition(_settled)),
        ]
    )


def wrapped(text: Callable[[], StyleAndTextTuples]) -> Window:
    """A foot line, broken between two keys (at a ``GAP``) where the next would pass
    the terminal's edge, so that no key is cut in two. It takes all its rows: given
    fewer in a short terminal, it lost its last keys ("c/Esc cancel")."""

    def rows() -> StyleAndTextTuples:
        return key_rows(text(), get_app().output.get_size().columns)

    return Window(FormattedTextControl(rows), height=lambda: _exact(rows()), wrap_lines=True)


def key_rows(keys: StyleAndTextTuples, width: int) -> StyleAndTextTuples:
    """``keys`` (from ``key_hints``) in rows of ``width`` columns, broken at a ``GAP``."""
    shown: StyleAndTextTuples = []
    used = 0
    group: StyleAndTextTuples = []
    for fragment in [*keys, (GAP, "")]:
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
    # A key wider than the terminal alone ("Ctrl-X cancel all from a_long_name")
    # breaks at a word end.
    return word_wrapped(shown, max(width, 1), 0)


def _exact(rows: StyleAndTextTuples) -> Dimension:
    """The height of ``rows``, already broken to the terminal's width, to the row."""
    return Dimension.exact(sum(text.count("\n") for _, text, *_ in rows) + 1 if rows else 0)


def whole(rows: Callable[[], StyleAndTextTuples]) -> Window:
    """A window of ``rows`` (broken to the terminal's width, as ``rich_lines`` makes
    them) that takes all of them or, in a window too short, makes its ``Fitting`` say so:
    given fewer, a form's header lost who asks."""
    return Window(FormattedTextControl(rows), height=lambda: _exact(rows()))


def card(title: Text, parts: Sequence[RenderableType], width: int) -> RenderableType:
    """A card: ``parts`` in a box ``width`` columns wide, ``title`` on its top edge, or
    as its first row when the edge is too short for it (cut there, it lost the name of
    the server that asks)."""
    if title.cell_len + 6 <= width:
        return Panel(Group(*parts), title=title, title_align="left", width=width)
    return Panel(Group(title, *parts), width=width)


TAKEN_WHEN_CRAMPED = frozenset({"c-x", "c-q", READ_KEY.replace("Ctrl-", "c-").lower()})
"""Keys a screen takes while it says the window is too small (``Fitting``), besides its
own: the server keys, and Ctrl-R, whose reader fits any window."""


class Fitting(HSplit):
    """A screen's parts, one above the other; or, when the window cannot hold what each
    must show (the least height each asks for, and ``least_columns``), a few words in
    their place saying so, how big it must be, and the keys that still act. Cut by the
    terminal instead, a form lost its first field's title and its buttons, and a card
    its verdict, without a word.

    While it says so, ``ScreenApplication`` drops every key but ``takes`` (in
    prompt_toolkit's names, "c-d") and ``TAKEN_WHEN_CRAMPED``: the others would type
    into, or answer, what cannot be seen. ``keys`` are the screen's, as ``key_hints``
    shows them, or a function giving those that act in the screen's state (a link card
    waiting for its ``y`` takes no ``d``); ``what`` names the screen ("this form")."""

    def __init__(
        self,
        children: Sequence[AnyContainer],
        *,
        what: str,
        keys: Sequence[tuple[str, str]] | Callable[[], Sequence[tuple[str, str]]],
        takes: frozenset[str],
        server_keys: ServerKeys | None,
        least_columns: int,
    ) -> None:
        self.what = what
        self.takes = takes | TAKEN_WHEN_CRAMPED
        self.least_columns = least_columns
        self.fits = True
        """Whether the parts were drawn (not the words) the last time it was drawn."""
        self._drawn_in: int | None = None
        self._size = (0, 0)  # columns and rows drawn in; rows the parts need
        self._needed = 0
        server = server_keys

        def words() -> StyleAndTextTuples:
            columns, rows = self._size
            if columns < least_columns:
                grow = f"at least {least_columns} columns wide (it has {columns})"
            else:
                grow = f"at least {self._needed} rows tall (it has {rows})"
            said = f"This window is too small for {what}: make it {grow}."
            width = max(columns, 1)
            shown = word_wrapped([("class:status", said)], width, 0)
            if _settled():  # the keys, once they are taken, as on the foot
                acting = keys() if callable(keys) else keys
                shown += [("", "\n"), *key_rows(key_hints(acting), width)]
                if server is not None:
                    shown += [("", "\n"), *key_rows(server.hints(), width)]
            return shown

        # Not a foot of exact rows: in a window this small its last rows may be cut.
        too_small = Window(FormattedTextControl(words), wrap_lines=True)
        super().__init__(children, window_too_small=too_small)

    def preferred_height(self, width: int, max_available_height: int) -> Dimension:
        # Any height will do: the words take the place of parts that do not fit.
        parts = super().preferred_height(width, max_available_height)
        return Dimension(min=0, preferred=parts.preferred, max=parts.max)

    @property
    def cramped(self) -> bool:
        """Whether the screen shows now that the window is too small."""
        return self._drawn_in == get_app().render_counter and not self.fits

    def write_to_screen(
        self,
        screen: Screen,
        mouse_handlers: MouseHandlers,
        write_position: WritePosition,
        parent_style: str,
        erase_bg: bool,
        z_index: int | None,
    ) -> None:
        columns, rows = write_position.width, write_position.height
        self._drawn_in = get_app().render_counter
        self._size = (columns, rows)
        self._needed = sum(c.preferred_height(columns, rows).min for c in self.children)
        self.fits = columns >= self.least_columns and self._needed <= rows
        shown = super() if self.fits else self.window_too_small
        shown.write_to_screen(
            screen, mouse_handlers, write_position, parent_style, erase_bg, z_index
        )


class CardControl(UIControl):
    """A card drawn by rich (``rich_lines``) in the rows its window is given. Given fewer
    than it needs, its last rows say how many more there are and how to see them, above
    its bottom edge: cut by the terminal, a link card lost its verdict and its edge
    without a word, while ``o`` still opened the link.

    ``facts`` builds the card with only what the person decides on (the card's first
    rows), which Ctrl-R does not show; ``facts_shown`` says whether the last drawing
    showed them whole. Without ``facts``, Ctrl-R shows all the card may lose; so it does
    with ``facts_readable`` (the sampling card's reader holds its facts too), and the
    note then says so wherever the card is cut. ``height`` is the card window's: at
    least its top edge, the note and its bottom edge."""

    def __init__(
        self,
        build: Callable[[int], RenderableType],
        facts: Callable[[int], RenderableType] | None = None,
        *,
        facts_readable: bool = False,
    ) -> None:
        self._build = rich_lines(build)
        self._facts = rich_lines(facts) if facts is not None else None
        self._facts_readable = facts_readable
        self.facts_shown = True
        self._drawn_in: int | None = None
        self._drawn: tuple[tuple[int, Size], list[StyleAndTextTuples]] | None = None

    def _rows(self) -> list[StyleAndTextTuples]:
        """The whole card's rows, drawn once for each time the screen is."""
        app = get_app()
        key = (app.render_counter, app.output.get_size())
        if self._drawn is None or self._drawn[0] != key:
            self._drawn = (key, list(split_lines(self._build())))
        return self._drawn[1]

    def height(self) -> Dimension:
        rows = len(self._rows())
        return Dimension(min=min(rows, 3), preferred=rows, max=rows)

    @property
    def facts_in_sight(self) -> bool:
        """Whether what the person decides on is on the screen now, whole."""
        return self._drawn_in == get_app().render_counter and self.facts_shown

    def preferred_height(
        self,
        width: int,
        max_available_height: int,
        wrap_lines: bool,
        get_line_prefix: GetLinePrefixCallable | None,
    ) -> int:
        return len(self._rows())

    def create_content(self, width: int, height: int) -> UIContent:
        rows = self._rows()
        facts_shown = True
        if len(rows) > height:
            facts = 1  # the top edge
            if self._facts is not None:
                facts = len(list(split_lines(self._facts()))) - 1  # not its bottom edge
            note: list[StyleAndTextTuples] = []
            for _ in range(3):  # the note's rows change how much is hidden, which it says
                kept = max(1, height - 1 - len(note))
                hidden = len(rows) - 1 - kept
                readable = kept >= facts or self._facts_readable
                note = _boxed(cut_note(hidden) if readable else window_note(hidden))
            kept = max(1, height - 1 - len(note))
            facts_shown = kept >= facts
            rows = [*rows[:kept], *note, rows[-1]][:height]
        if facts_shown != self.facts_shown:
            get_app().invalidate()  # the foot, drawn from the last drawing, says otherwise
        self.facts_shown = facts_shown
        self._drawn_in = get_app().render_counter
        shown = rows
        return UIContent(get_line=lambda i: shown[i], line_count=len(shown), show_cursor=False)


def _boxed(words: str) -> list[StyleAndTextTuples]:
    """``words`` as rows of a card, between its side edges (``CardControl``'s note)."""
    rows = list(split_lines(rich_lines(lambda w: Panel(Text(words, style="dim"), width=w))()))
    return rows[1:-1]


def word_wrapped(fragments: StyleAndTextTuples, width: int, indent: int) -> StyleAndTextTuples:
    """``fragments`` in rows of at most ``width`` columns, broken at spaces, each row
    after a line's first indented by ``indent`` spaces (so that it sits under the text
    its line's mark starts, as ``✗``'s message); a word wider than a row is cut where
    the row ends. Cut by the terminal instead, a hint lost its end and an error line
    broke mid-word at the left margin."""
    chars = [(style, char) for style, text, *_ in fragments for char in text]
    rows: list[list[tuple[str, str]]] = []
    for line in _split(chars, "\n"):
        row: list[tuple[str, str]] = []
        used = 0
        for word in _words(line):
            size = sum(get_cwidth(char) for _, char in word)
            if used + size > width and used > indent and row:
                if word[0][1] == " ":
                    continue  # the spaces where a row breaks are not shown
                rows.append(row)
                row, used = [("", " " * indent)], indent
            for style, char in word:
                if used + get_cwidth(char) > width and used > indent:
                    rows.append(row)
                    row, used = [("", " " * indent)], indent
                row.append((style, char))
                used += get_cwidth(char)
        rows.append(row)
    shown: StyleAndTextTuples = []
    for index, row in enumerate(rows):
        if index:
            shown.append(("", "\n"))
        while row and row[-1][1] == " ":
            row.pop()  # the spaces before a break
        shown.extend(row)
    return shown


def _split(chars: list[tuple[str, str]], at: str) -> list[list[tuple[str, str]]]:
    parts: list[list[tuple[str, str]]] = [[]]
    for styled in chars:
        if styled[1] == at:
            parts.append([])
        else:
            parts[-1].append(styled)
    return parts


def _words(line: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Runs of spaces and runs of anything else, in order."""
    words: list[list[tuple[str, str]]] = []
    for styled in line:
        if words and (words[-1][-1][1] == " ") == (styled[1] == " "):
            words[-1].append(styled)
        else:
            words.append([styled])
    return words


def wrapped_text(
    fragments: Callable[[], StyleAndTextTuples],
    indent: int,
    most: int | None = None,
    kept: Sequence[OneStyleAndTextTuple] = (),
) -> Window:
    """A screen's own line (a label, a hint, an error), wrapped at word ends to the
    terminal's width, its further rows indented ``indent`` spaces; at most ``most``
    rows, then how many more there are and how to read them (``Reader``).

    ``kept`` follows the fragments and is never cut: where they are, it leads the note's
    row (a field's ``*`` and what it expects, after a long title)."""

    def rows() -> StyleAndTextTuples:
        width = max(get_app().output.get_size().columns, indent + 1)
        shown = word_wrapped([*fragments(), *kept], width, indent)
        if most is None or _breaks(shown) < most:
            return shown
        alone = word_wrapped(fragments(), width, indent)
        breaks = [i for i, (_, text, *_) in enumerate(alone) if text == "\n"]
        if len(breaks) < most:
            return shown  # the fragments fit: only what is kept takes a row more
        lead: StyleAndTextTuples = list(kept)
        if lead:  # its own row's start, after the indent
            lead[0] = (lead[0][0], lead[0][1].lstrip())
        more = "  " if lead else ""
        note: StyleAndTextTuples = [
            ("", " " * indent),
            *lead,
            ("class:hint", more + cut_note(len(breaks) + 1 - most)),
        ]
        return [*alone[: breaks[most - 1] + 1], *word_wrapped(note, width, indent)]

    return Window(FormattedTextControl(rows), dont_extend_height=True, wrap_lines=True)


def _breaks(shown: StyleAndTextTuples) -> int:
    """How many rows ``word_wrapped``'s rows are, less one."""
    return sum(1 for _, text, *_ in shown if text == "\n")


def status_line(style: str, text: Callable[[], str]) -> Window:
    """A screen's line of its own words (what is wrong, what failed), wrapped at word
    ends to as many rows as it needs: cut to one row, it once hid why a model failed."""

    def rows() -> StyleAndTextTuples:
        width = get_app().output.get_size().columns
        lines = textwrap.wrap(text(), max(width, 1), break_on_hyphens=False)
        return [(style, "\n".join(lines))] if lines else []

    return Window(FormattedTextControl(rows), height=lambda: _exact(rows()), wrap_lines=True)


class _WordEnds(Processor):
    """Breaks a line's rows at word ends as a wrapping window shows it: where a word
    would cross a row's end, spaces fill the row so that the word starts the next one
    (prompt_toolkit wraps at the last column, mid-word), and the spaces where a row
    breaks are not shown. A word wider than a row starts a row and is cut where it
    ends, as ``word_wrapped`` does. ``prefix`` gives each row's mark, whose columns the
    words do not have."""

    def __init__(self, prefix: Callable[[int, int], StyleAndTextTuples]) -> None:
        self._prefix = prefix

    def apply_transformation(self, transformation_input: TransformationInput) -> Transformation:
        lineno = transformation_input.lineno
        width = transformation_input.width - fragment_list_width(self._prefix(lineno, 0))
        if width < 1:
            return Transformation(transformation_input.fragments)
        chars = [
            (style, char) for style, text, *_ in transformation_input.fragments for char in text
        ]
        shown: StyleAndTextTuples = []
        to_display: list[int] = []  # each source character's place in ``shown``
        to_source: list[int] = []  # each shown character's source character
        used = 0  # columns of the row taken
        for word in _words(chars):
            start = len(to_display)
            if word[0][1] == " ":
                # Not shown at the start of a row the line wrapped onto.
                fit = 0 if to_source and not used else min(len(word), width - used)
                to_display.extend(len(to_source) + min(n, fit) for n in range(len(word)))
                shown.extend(word[:fit])
                to_source.extend(range(start, start + fit))
                used += fit
                continue
            size = sum(get_cwidth(char) for _, char in word)
            if used and used + size > width:
                shown.append(("", " " * (width - used)))  # none if the row is full
                to_source.extend([start] * (width - used))
                used = 0
            for offset, (style, char) in enumerate(word):
                if used + get_cwidth(char) > width:
                    used = 0
                to_display.append(len(to_source))
                to_source.append(start + offset)
                shown.append((style, char))
                used += get_cwidth(char)
        ends = len(to_display), len(to_source)

        def source_to_display(at: int) -> int:
            return to_display[at] if at < ends[0] else at - ends[0] + ends[1]

        def display_to_source(at: int) -> int:
            return to_source[at] if at < ends[1] else at - ends[1] + ends[0]

        return Transformation(shown, source_to_display, display_to_source)


READER_KEYS = (("Up/Down PgUp/PgDn", "scroll"), ("Esc/q", "back"))
"""The keys while the whole of a screen's texts is shown."""


class Reader:
    """The whole of the server's words that a screen cuts short (a message, a field's
    description), to scroll through: ``READ_KEY`` opens it, Esc or ``q`` goes back.

    ``texts`` are (heading, server's words) pairs; every row of the words, wrapped
    ones too, carries the bar, as on the cards, and rows break at word ends
    (``_WordEnds``): broken mid-word, one word read as two. Cut with no way to read on,
    the rest of a long message was never seen. With no ``texts`` (a link card without a
    message) ``READ_KEY`` does nothing: an empty view would only hide the screen.
    """

    def __init__(self, texts: Sequence[tuple[str, str]]) -> None:
        lines: list[str] = []
        self._quoted: set[int] = set()
        for heading, words in texts:
            if lines:
                lines.append("")
            lines.append(clean(heading, newlines=False))  # a label's line break: no bar
            for line in clean(words).expandtabs(8).split("\n"):
                self._quoted.add(len(lines))
                lines.append(line)
        self.text = "\n".join(lines)
        self.reading = False
        self._back_to: Window | None = None
        self.area = TextArea(
            read_only=True,
            scrollbar=True,
            wrap_lines=True,
            get_line_prefix=self._prefix,
            input_processors=[_WordEnds(self._prefix)],
        )
        self.area.document = Document(self.text, cursor_position=0)

    def _prefix(self, line: int, _wrapped: int) -> StyleAndTextTuples:
        return [("class:hint", "│ ")] if line in self._quoted else []

    def around(self, body: AnyContainer) -> Container:
        """The screen's layout ``body``, or the reader in its place while it is open."""
        reading = Condition(lambda: self.reading)
        return HSplit(
            [
                ConditionalContainer(body, filter=~reading),
                ConditionalContainer(
                    HSplit([self.area, wrapped(lambda: key_hints(READER_KEYS))]), filter=reading
                ),
            ]
        )

    def bindings(self, screen: KeyBindingsBase) -> KeyBindingsBase:
        """The screen's keys while it shows, the reader's while it is open."""
        reading = Condition(lambda: self.reading)
        readable = Condition(lambda: bool(self.text))
        own = KeyBindings()

        @own.add(READ_KEY.replace("Ctrl-", "c-").lower(), filter=readable & ~reading)
        def _open(event: KeyPressEvent) -> None:
            self._back_to = event.app.layout.current_window
            self.reading = True
            event.app.layout.focus(self.area)

        # prompt_toolkit pages only in a full-screen application: these screens are not.
        @own.add("pagedown", filter=reading)
        @own.add("pageup", filter=reading)
        def _page(event: KeyPressEvent) -> None:
            info = self.area.window.render_info
            rows = max(1, (info.window_height if info is not None else 10) - 1)
            if event.key_sequence[0].key == Keys.PageDown:
                self.area.buffer.cursor_down(count=rows)
            else:
                self.area.buffer.cursor_up(count=rows)

        @own.add("escape", filter=reading)
        @own.add("q", filter=reading)
        @own.add("c-c", filter=reading)
        def _back(event: KeyPressEvent) -> None:
            self.reading = False
            if self._back_to is not None:
                event.app.layout.focus(self._back_to)

        return merge_key_bindings([ConditionalKeyBindings(screen, ~reading), own])
