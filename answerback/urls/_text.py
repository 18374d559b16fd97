"""The URL as written: characters that hide or reorder text, and the parts that a WHATWG
parser normalises away (numeric hosts, percent-escapes, backslashes) but that show intent.

A browser opens the canonical URL, so the verdict judges that; but a URL that was written
to look like something else (``https://2130706433/``, ``https://evil.com\\@good.com/``)
says something about whoever sent it, and these functions find that in the raw text.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# Characters that reorder the text around them: "moc.live" printed after U+202E reads
# "evil.com". Nothing legitimate in a URL needs one.
_BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BIDI = re.compile(f"[{_BIDI_CONTROLS}]")

# Characters that print as nothing or as a blank (ASCII space aside): they make two
# different URLs look the same, or hide text between visible parts. Format characters,
# fillers, variation selectors, tags, and every space separator.
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200d\u2060-\u2064"
    "\u206a-\u206f\u2800\u3164\ufe00-\ufe0f\ufeff\uffa0\U0001bca0-\U0001bca3"
    "\U000e0000-\U000e0fff"
    "\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]"
)
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

_PERCENT_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
# What WHATWG parsers strip from both ends before parsing: C0 controls and space.
_STRIPPED = "".join(chr(code) for code in range(0x21))


def bidi_controls(text: str) -> list[str]:
    """The bidirectional controls in ``text``, each once."""
    return list(dict.fromkeys(_BIDI.findall(text)))


def invisible_characters(text: str) -> list[str]:
    """The characters in ``text`` that print as nothing or as a blank, each once."""
    return list(dict.fromkeys(_INVISIBLE.findall(text)))


def has_inner_control(text: str) -> bool:
    """Whether ``text`` has a control character (tab, line break, NUL...) inside it.

    Parsers drop tabs and line breaks silently, so ``https://exa<TAB>mple.com`` opens
    example.com: a URL that needs one was made to fool a reader or a filter."""
    return _CONTROL.search(text.strip(_STRIPPED)) is not None


def percent_decoded(text: str) -> str:
    """``text`` with UTF-8 percent-escapes decoded (invalid sequences become U+FFFD)."""

    def decode(match: re.Match[str]) -> str:
        run = match.group(0)
        return bytes(int(run[i + 1 : i + 3], 16) for i in range(0, len(run), 3)).decode(
            "utf-8", errors="replace"
        )

    return _PERCENT_RUN.sub(decode, text)


def character_name(char: str) -> str:
    """``U+202E RIGHT-TO-LEFT OVERRIDE``: how to name a character a reader cannot see."""
    return f"U+{ord(char):04X} {unicodedata.name(char, 'unnamed character')}"


def escaped(text: str) -> str:
    """``text`` with every character that does not print as itself written as ``\\u{...}``,
    for showing something that is not a URL without letting it reorder or hide itself."""
    return "".join(
        f"\\u{{{ord(char):04x}}}"
        if _INVISIBLE.match(char) or unicodedata.category(char)[0] == "C"
        else char
        for char in text
    )


@dataclass(frozen=True, slots=True)
class WrittenAuthority:
    """The host part of an http(s) URL as its author typed it, before any parsing."""

    host: str
    """Between the user information and the port, percent-escapes still in."""
    backslash: bool
    """Whether a backslash stands where a slash would (``https:\\\\host`` or
    ``https://evil.com\\@good.com``): browsers read it as "/", other programs do not, so
    two readers disagree about which site the URL opens."""


def written_authority(text: str) -> WrittenAuthority | None:
    """Find the authority of a special-scheme URL the way the WHATWG parser walks it, on the
    text as written. None when there is no scheme."""
    text = text.strip(_STRIPPED).replace("\t", "").replace("\n", "").replace("\r", "")
    scheme = _SCHEME.match(text)
    if scheme is None:
        return None
    rest = text[scheme.end() :]
    slashes = len(rest) - len(rest.lstrip("/\\"))
    backslash = "\\" in rest[:slashes]
    rest = rest[slashes:]
    end = next((i for i, char in enumerate(rest) if char in "/\\?#"), len(rest))
    if end < len(rest) and rest[end] == "\\":
        backslash = True
    authority = rest[:end]
    host = authority.rpartition("@")[2]
    if host.startswith("["):
        host = host[: host.find("]") + 1] if "]" in host else host
    elif ":" in host:
        host = host.rpartition(":")[0]
    return WrittenAuthority(host=host, backslash=backslash)
