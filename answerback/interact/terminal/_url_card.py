"""The URL consent card: where a link really goes, and a deliberate key to go there.

The card shows the link as a browser will read it, the registrable domain emphasised
(whose page it is), the verdict and every reason for it. A link longer than
``LINK_CHARACTERS_SHOWN`` is cut there, saying how much more there is, and Ctrl-R shows
it whole: a link of pages once pushed the site and the verdict off the screen while
``o`` still opened it.
Nothing opens until the person presses the open key; a high-risk link needs a second,
different key; a blocked link has no open key at all. Where no browser opens (SSH, a
machine without a desktop) the card comes back, asking whether the person opened the
link themselves: only they can tell the server that.
"""

from __future__ import annotations

from typing import Literal, cast

from prompt_toolkit.application import Application
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import Layout, Window
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from answerback._options import text
from answerback.interact._printable import clean
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
    with_server_keys,
)
from answerback.interact.terminal._text import READ_KEY, quoted, verdict_words
from answerback.urls import RiskLevel, UrlVerdict

UrlDecision = Literal["open", "decline", "cancel"]
"""What the person chose on the card."""

MESSAGE_LINES_SHOWN = 8
"""The server's message is shown after the facts, up to this many lines: the card
does not scroll, and what the person decides on must stay on screen."""

LINK_CHARACTERS_SHOWN = 300
"""The most of a link the card shows (a few rows): past the host of any name DNS can
look up, and short enough that the site, the verdict and its reasons below it stay on
screen. The rest is a key away (Ctrl-R)."""


URL_KEYS = (("o", "open in browser"), ("d", "decline"), ("c/Esc", "cancel"))
"""The card's keys for a link that may be opened."""
CONFIRM_KEYS = (("y", "open it anyway"), ("n", "go back"), ("c/Esc", "cancel"))
"""The keys once "o" was pressed on a high-risk link."""
BLOCKED_KEYS = (("d", "decline"), ("c/Esc", "cancel"))
"""A blocked link's keys: there is no way to open it from here."""
BY_HAND_KEYS = (("a", "I opened it myself"), ("d", "decline"), ("c/Esc", "cancel"))
"""The keys once no browser opened the link."""
OUT_OF_SIGHT = "The link and its verdict do not fit: make the window taller to open it."
"""What the key line says instead of the open key while the card is cut above the end
of its facts (a short window): a key that opened an unseen link was no choice."""

_LEVEL_STYLE = {
    RiskLevel.OK: "bold green",
    RiskLevel.WARN: "bold yellow",
    RiskLevel.HIGH_RISK: "bold red",
    RiskLevel.BLOCK: "bold reverse red",
}


class UrlCard:
    """The prompt_toolkit application that asks whether to open one link (options of
    the wrong type, such as a URL string for ``verdict``, raise ``TypeError``)."""

    def __init__(
        self,
        verdict: UrlVerdict,
        *,
        message: str,
        server: str,
        server_keys: ServerKeys | None = None,
        unopened: str | None = None,
    ) -> None:
        if not isinstance(cast(object, verdict), UrlVerdict):
            raise TypeError(
                f"verdict must be a UrlVerdict, such as judge_url(url), got {verdict!r}"
            )
        self.verdict = verdict
        self._message = text("message", message, "why the server sends the person there")
        self._server = text("server", server, "the asking server's name")
        server_keys = checked_server_keys(server_keys)
        self.unopened = unopened
        """Why no browser opened the link, once the person chose to open it: the card
        then asks whether they opened it themselves."""
        self.confirming = False
        """Whether the card asks for the second key of a high-risk link."""
        self.note = ""
        """Why the last key did nothing (a paste's ``o`` opens nothing)."""
        says = f"What {self._server} says:"
        readable: list[tuple[str, str]] = []
        if len(clean(verdict.display.url)) > LINK_CHARACTERS_SHOWN:
            readable.append(("The whole link:", verdict.display.url))
        if self._message.strip():
            readable.append((says, self._message))
        self.reader = Reader(readable)
        # Below the facts, only the message may be cut: Ctrl-R shows it whole.
        self.shown = CardControl(self._card, lambda width: self._card(width, facts_only=True))
        self.application: Application[UrlDecision] = ScreenApplication(
            layout=Layout(
                self.reader.around(
                    Fitting(
                        [
                            Window(self.shown, height=self.shown.height),
                            foot(self._foot, server_keys),
                            Window(),  # takes the rest of the terminal, below everything
                        ],
                        what="this link card",
                        # Waiting for "y", "d" does nothing and "n" goes back.
                        keys=lambda: CONFIRM_KEYS[1:] if self.confirming else BLOCKED_KEYS,
                        takes=frozenset({"d", "n", "c", "escape", "c-c"}),
                        server_keys=server_keys,
                        least_columns=CARD_COLUMNS,
                    )
                )
            ),
            key_bindings=self.reader.bindings(with_server_keys(self._bindings(), server_keys)),
            style=STYLE,
            erase_when_done=True,
        )

    async def run(self) -> UrlDecision:
        """Show the card until the person decides."""
        return await run_screen(self.application)

    @property
    def can_open(self) -> bool:
        """Whether the link may be opened at all (not blocked, and a URL at all)."""
        return not self.verdict.blocked and self.verdict.canonical_url is not None

    def _bindings(self) -> KeyBindings:
        bindings = KeyBindings()
        confirming = Condition(lambda: self.confirming)
        # Never while the link or its verdict is out of sight (a short window).
        openable = Condition(lambda: self.can_open and self.shown.facts_in_sight)
        by_hand = Condition(lambda: self.unopened is not None)

        @bindings.add("o", filter=openable & ~confirming & ~by_hand)
        def _open(event: KeyPressEvent) -> None:
            if not self._typed():
                return
            if self.verdict.level >= RiskLevel.HIGH_RISK:
                self.confirming = True
            else:
                event.app.exit(result="open")

        @bindings.add("y", filter=openable & confirming)
        def _confirm(event: KeyPressEvent) -> None:
            if self._typed():
                event.app.exit(result="open")

        @bindings.add("a", filter=openable & by_hand)
        def _opened_by_hand(event: KeyPressEvent) -> None:
            if self._typed():
                event.app.exit(result="open")

        @bindings.add("n", filter=confirming)
        def _back(event: KeyPressEvent) -> None:
            self.confirming = False

        @bindings.add("d", filter=~confirming)
        def _decline(event: KeyPressEvent) -> None:
            event.app.exit(result="decline")

        @bindings.add("c")
        @bindings.add("escape")
        @bindings.add("c-c")
        def _cancel(event: KeyPressEvent) -> None:
            event.app.exit(result="cancel")

        return bindings

    def _typed(self) -> bool:
        """Whether the key that would open the link was typed, not pasted: the ``o``
        of a pasted word opened the link."""
        app = self.application
        typed = not isinstance(app, ScreenApplication) or app.deliberate()
        self.note = "" if typed else BURST_NOTE
        return typed

    def _card(self, width: int, *, facts_only: bool = False) -> RenderableType:
        verdict, display = self.verdict, self.verdict.display
        title = Text("Open a link?", style="bold")
        title.append(" — from ")
        title.append(clean(self._server), style="bold cyan")
        # The facts the person decides on come first, whatever the message holds: a
        # message padded with lines once pushed the real link off the screen.
        parts: list[RenderableType] = _cut_link(display.before, display.site, display.after)
        if verdict.site:
            site = Text("Site: ")
            site.append(clean(display.site or verdict.site), style="bold underline")
            parts.append(site)
        parts.append(Text())
        level = Text(verdict_words(verdict.level.name).upper(), style=_LEVEL_STYLE[verdict.level])
        if verdict.approved:
            level.append("  (you approved this site before)", style="green")
        parts.append(level)
        if verdict.reasons:
            reasons = Table.grid()
            for reason in verdict.reasons:
                reasons.add_row("- ", Text(clean(reason.message)))
            parts.append(reasons)
        if not self.can_open:
            parts.append(Text("This link cannot be opened from here.", style="bold red"))
        if self.unopened is not None:
            why = clean(self.unopened)
            parts += [Text(), Text(f"{why[:1].upper()}{why[1:]}.", style="bold red")]
            parts.append(Text("Open the link printed above yourself, then press a.", style="bold"))
        if self._message.strip() and not facts_only:
            parts += [Text(), Text(f"{clean(self._server)} says:", style="dim")]
            parts.append(quoted(self._message, MESSAGE_LINES_SHOWN))
        return card(title, parts, width)

    def _foot(self) -> StyleAndTextTuples:
        note: StyleAndTextTuples = [("class:status", f"{self.note} ")] if self.note else []
        return [*note, *self._keys()]

    def _keys(self) -> StyleAndTextTuples:
        if not self.can_open:
            return key_hints(BLOCKED_KEYS)
        if not self.shown.facts_shown:
            keys = CONFIRM_KEYS[1:] if self.confirming else BLOCKED_KEYS
            return [("class:status", OUT_OF_SIGHT), (GAP, "  "), *key_hints(keys)]
        if self.unopened is not None:
            return key_hints(BY_HAND_KEYS)
        if self.confirming:
            return [("class:status", "This link is high risk. "), *key_hints(CONFIRM_KEYS)]
        return key_hints(URL_KEYS)


def _cut_link(before: str, site: str, after: str) -> list[RenderableType]:
    """The link's first ``LINK_CHARACTERS_SHOWN`` characters, its site emphasised, and,
    when it is cut, a line saying how much more there is and how to read it."""
    link = Text(overflow="fold")
    room = LINK_CHARACTERS_SHOWN
    for piece, style in ((clean(before), ""), (clean(site), "bold underline"), (clean(after), "")):
        link.append(piece[:room], style=style)
        room -= min(room, len(piece))
    hidden = len(clean(before)) + len(clean(site)) + len(clean(after)) - LINK_CHARACTERS_SHOWN
    if hidden <= 0:
        return [link]
    link.append("…")
    more = (
        f"… {hidden:,} more character{'s' if hidden > 1 else ''}: {READ_KEY} shows the link whole"
    )
    return [link, Text(more, style="dim")]
