"""Text from a peer made safe to print on a person's terminal.

A server's messages, results, log lines, names and descriptions reach the person's
terminal, through the screens and through the command line alike. An escape sequence
in them could retitle the window, clear the screen, restyle or hide what is shown, and a
bidi override could reorder it; so every such character is written out instead of
obeyed. One function, used wherever such text is printed.
"""

from __future__ import annotations

_HIDING = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def clean(text: str) -> str:
    """``text`` with control and bidi characters written out (``\\x1b``, ``\\u202e``);
    newlines and tabs are kept."""
    return "".join(
        f"\\x{ord(char):02x}"
        if (ord(char) < 0x20 and char not in "\n\t") or 0x7F <= ord(char) < 0xA0
        else f"\\u{ord(char):04x}"
        if char in _HIDING
        else char
        for char in text
    )
