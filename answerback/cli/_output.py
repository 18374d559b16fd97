"""The one kind of rich console the command prints through.

A server's words reach the terminal through rich, whose defaults change text: ``:x:``
and ``:100:`` become emoji (a ratio ``1:100:1`` printed as ``1💯1``), and highlighting
recolours the numbers, URLs and quoted words in a line. What a server wrote must be
printed as it wrote it (control characters alone are written out, ``clean``), so every
console the command makes has both off. Markup stays on: the command styles its own
words with it, and a server's text reaches it escaped (``shown``) or printed with
``markup=False``.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console


class PlainConsole(Console):
    """A rich ``Console`` that turns no ``:name:`` into an emoji and highlights nothing;
    ``options`` are ``Console``'s others."""

    def __init__(self, **options: Any) -> None:
        super().__init__(emoji=False, highlight=False, **options)
