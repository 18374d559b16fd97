"""Text from a peer made safe to print on a person's terminal.

A server's messages, results, log lines, names and descriptions reach the person's
terminal, through the screens and through the command line alike. An escape sequence
in them could retitle the window, clear the screen, restyle or hide what is shown, a
bidi override could reorder it, and an invisible character (zero-width space, word
joiner, tag characters) could make two different texts look the same or carry words the
person never sees; so every such character is written out instead of obeyed. One
function, used wherever such text is printed.

Two invisible characters are part of how some languages are written, so they are kept
where they do that: the zero-width non-joiner (U+200C), which Persian, Kurdish and the
Indic scripts need to spell words, and the zero-width joiner (U+200D), which builds those
scripts' conjuncts and emoji sequences (woman, joiner, laptop: a technologist). Both are
kept between two visible characters of alphabets other than Latin, Greek and Cyrillic
(which need no joiner); anywhere else (between Latin letters, where ``de\\u200dlete``
would pass for ``delete``, at an end, doubled) they are written out.
"""

from __future__ import annotations

import re
import unicodedata

# Cc: C0 and C1 controls (escape sequences, CR, NEL); Cf: format characters, invisible
# by design (bidi controls, zero-width characters, tag characters, BOM, soft hyphen);
# Cs: lone surrogates, which would fail to print at all.
_WRITTEN_OUT = frozenset(("Cc", "Cf", "Cs"))
_LINE_BREAKS = frozenset("\n\u2028\u2029")
_JOINER_CHARS = "\u200c\u200d"
_JOINERS = re.compile(f"[{_JOINER_CHARS}]")
_VISIBLE = frozenset("LMNS")
"""The first letters of the categories a joiner joins: letters, marks, digits, symbols."""
_JOINLESS_ALPHABETS = ("LATIN ", "GREEK ", "CYRILLIC ")
"""Alphabets whose spelling needs no joiner: between their letters one only disguises."""


def _written(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _shown(char: str, newlines: bool) -> str:
    if char in _LINE_BREAKS:
        return "\n" if newlines else _written(char)
    if char == "\t" or unicodedata.category(char) not in _WRITTEN_OUT:
        return char
    return _written(char)


def clean(text: str, *, newlines: bool = True) -> str:
    """``text`` with control, bidi and invisible format characters written out
    (``\\x1b``, ``\\u202e``, ``\\u200b``); tabs are kept, and so are the joiners that
    spell words or emoji (see the module's docstring).

    With ``newlines`` (the default) a line or paragraph separator (U+2028, U+2029), and
    a CRLF line end (a server on Windows writes them), becomes a plain newline, so
    whatever the caller does with line breaks (indent, mark, count them) it does with
    these too; a carriage return on its own, which would draw over the line, is still
    written out. Without, every line break is written out (``\\x0a``, ``\\u2028``)
    for text that must stay on one line.

    Each distinct character is judged once and the text rewritten in one
    ``str.translate``: this runs on every text shown, megabytes of it at times.
    """
    if newlines and "\r\n" in text:
        text = text.replace("\r\n", "\n")
    if "\u200c" in text or "\u200d" in text:  # judged by their neighbours, not here
        text = _JOINERS.sub(lambda found: _joiner_shown(found, text), text)
    table = {
        ord(char): form
        for char in set(text)
        if char not in _JOINER_CHARS and (form := _shown(char, newlines)) != char
    }
    return text.translate(table) if table else text


def _joiner_shown(found: re.Match[str], text: str) -> str:
    """The joiner itself where it joins two characters that may need it, else written
    out (its written form is ASCII, which the translation then leaves alone)."""
    at = found.start()
    if 0 < at < len(text) - 1 and _joinable(text[at - 1]) and _joinable(text[at + 1]):
        return found[0]
    return _written(found[0])


def _joinable(char: str) -> bool:
    if char.isascii() or unicodedata.category(char)[0] not in _VISIBLE:
        return False
    return not unicodedata.name(char, "").startswith(_JOINLESS_ALPHABETS)
