"""ECMA-262 regular expressions (Unicode mode), written in the ``regex`` engine's syntax.

JSON Schema's patterns are ECMA-262 regular expressions in its Unicode mode (the ``u``
flag, as the JSON Schema test suite reads them), and a peer's own checks run them in a
JavaScript engine. Python's syntax differs: ``[^]`` and ``\\u{1F600}`` do not compile,
and ``$``, ``.``, ``\\d``, ``\\w``, ``\\s`` and ``\\b`` compile but match other text, so
a value could pass in answerback and be refused by the peer. ``translate`` parses a
pattern by ECMA-262's grammar and writes it out in ``regex`` syntax that spells every
construct's ECMA-262 meaning explicitly; ``answerback.forms._patterns`` compiles the
result once per pattern and runs it with a deadline.
"""

from __future__ import annotations

MOST_REPEATS = 10_000
"""How many copies of its parts, beyond the pattern's own text, a pattern's repeats may
ask for in all (``a{501}`` asks for 500, ``(?:a{101}){100}`` for 10,099). The ``regex``
engine lays each copy out when it compiles: ``a{100000}`` takes 140 MB, and
``a{4294967294}`` exhausts memory."""

_MOST_NESTED = 100
"""How deep groups may nest: the parser recurses once per level."""

_UNBOUNDED_FROM = 2**32 - 1
"""The repeat count from which ``{n,m}`` is read as ``{n,}``: the ``regex`` engine takes
no larger count, and no text is that long."""

_SYNTAX = frozenset("^$\\.*+?()[]{}|/")
"""What ECMA-262's Unicode mode lets a backslash make literal (``SyntaxCharacter`` and
``/``); a backslash before anything else that is not an escape is an error there."""

_CONTROL = {"f": 0x0C, "n": 0x0A, "r": 0x0D, "t": 0x09, "v": 0x0B}

_WORD = "0-9A-Z_a-z"
_DIGIT = "0-9"
_SPACE = r"\u0009-\u000d\u0020\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
"""ECMA-262's ``\\s``: WhiteSpace and LineTerminator. Python's also holds U+001C to U+001F
and U+0085, and lacks U+FEFF."""

_CLASSES = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
"""ECMA-262's ``\\d`` and ``\\w`` are ASCII even in Unicode mode (without ``i``, which
JSON Schema never sets), where Python's match any Unicode digit or letter."""

_BOUNDARY = f"(?:(?<=[{_WORD}])(?![{_WORD}])|(?<![{_WORD}])(?=[{_WORD}]))"
_NOT_BOUNDARY = f"(?:(?<=[{_WORD}])(?=[{_WORD}])|(?<![{_WORD}])(?![{_WORD}]))"
_DOT = r"[^\n\r\u2028\u2029]"
"""ECMA-262's ``.`` (no ``s`` flag): any character but its four line terminators, where
Python's ``.`` excludes only ``\\n``."""

_GENERAL_CATEGORIES = {
    alias: names[0]
    for names in (
        ("C", "Other"),
        ("Cc", "Control", "cntrl"),
        ("Cf", "Format"),
        ("Cn", "Unassigned"),
        ("Co", "Private_Use"),
        ("Cs", "Surrogate"),
        ("L", "Letter"),
        ("LC", "Cased_Letter"),
        ("Ll", "Lowercase_Letter"),
        ("Lm", "Modifier_Letter"),
        ("Lo", "Other_Letter"),
        ("Lt", "Titlecase_Letter"),
        ("Lu", "Uppercase_Letter"),
        ("M", "Mark", "Combining_Mark"),
        ("Mc", "Spacing_Mark"),
        ("Me", "Enclosing_Mark"),
        ("Mn", "Nonspacing_Mark"),
        ("N", "Number"),
        ("Nd", "Decimal_Number", "digit"),
        ("Nl", "Letter_Number"),
        ("No", "Other_Number"),
        ("P", "Punctuation", "punct"),
        ("Pc", "Connector_Punctuation"),
        ("Pd", "Dash_Punctuation"),
        ("Pe", "Close_Punctuation"),
        ("Pf", "Final_Punctuation"),
        ("Pi", "Initial_Punctuation"),
        ("Po", "Other_Punctuation"),
        ("Ps", "Open_Punctuation"),
        ("S", "Symbol"),
        ("Sc", "Currency_Symbol"),
        ("Sk", "Modifier_Symbol"),
        ("Sm", "Math_Symbol"),
        ("So", "Other_Symbol"),
        ("Z", "Separator"),
        ("Zl", "Line_Separator"),
        ("Zp", "Paragraph_Separator"),
        ("Zs", "Space_Separator"),
    )
    for alias in names
}
"""ECMA-262's General_Category values and their aliases, each to its short name: the
``regex`` engine reads some aliases (``digit``, ``punct``) as POSIX classes instead."""

_BINARY_PROPERTIES = {
    alias: names[0]
    for names in (
        ("ASCII",),
        ("ASCII_Hex_Digit", "AHex"),
        ("Alphabetic", "Alpha"),
        ("Any",),
        ("Assigned",),
        ("Bidi_Control", "Bidi_C"),
        ("Bidi_Mirrored", "Bidi_M"),
        ("Case_Ignorable", "CI"),
        ("Cased",),
        ("Changes_When_Casefolded", "CWCF"),
        ("Changes_When_Casemapped", "CWCM"),
        ("Changes_When_Lowercased", "CWL"),
        ("Changes_When_NFKC_Casefolded", "CWKCF"),
        ("Changes_When_Titlecased", "CWT"),
        ("Changes_When_Uppercased", "CWU"),
        ("Dash",),
        ("Default_Ignorable_Code_Point", "DI"),
        ("Deprecated", "Dep"),
        ("Diacritic", "Dia"),
        ("Emoji",),
        ("Emoji_Component", "EComp"),
        ("Emoji_Modifier", "EMod"),
        ("Emoji_Modifier_Base", "EBase"),
        ("Emoji_Presentation", "EPres"),
        ("Extended_Pictographic", "ExtPict"),
        ("Extender", "Ext"),
        ("Grapheme_Base", "Gr_Base"),
        ("Grapheme_Extend", "Gr_Ext"),
        ("Hex_Digit", "Hex"),
        ("IDS_Binary_Operator", "IDSB"),
        ("IDS_Trinary_Operator", "IDST"),
        ("ID_Continue", "IDC"),
        ("ID_Start", "IDS"),
        ("Ideographic", "Ideo"),
        ("Join_Control", "Join_C"),
        ("Logical_Order_Exception", "LOE"),
        ("Lowercase", "Lower"),
        ("Math",),
        ("Noncharacter_Code_Point", "NChar"),
        ("Pattern_Syntax", "Pat_Syn"),
        ("Pattern_White_Space", "Pat_WS"),
        ("Quotation_Mark", "QMark"),
        ("Radical",),
        ("Regional_Indicator", "RI"),
        ("Sentence_Terminal", "STerm"),
        ("Soft_Dotted", "SD"),
        ("Terminal_Punctuation", "Term"),
        ("Unified_Ideograph", "UIdeo"),
        ("Uppercase", "Upper"),
        ("Variation_Selector", "VS"),
        ("White_Space", "space"),
        ("XID_Continue", "XIDC"),
        ("XID_Start", "XIDS"),
    )
    for alias in names
}
"""ECMA-262's binary Unicode properties and their aliases, each to its long name."""

_SYMBOLS: dict[tuple[int, int | None], str] = {(0, None): "*", (1, None): "+", (0, 1): "?"}

_PROPERTY_NAMES = {
    "General_Category": "gc",
    "gc": "gc",
    "Script": "sc",
    "sc": "sc",
    "Script_Extensions": "scx",
    "scx": "scx",
}


class PatternError(ValueError):
    """A pattern answerback cannot run as ECMA-262 means it: one that is not ECMA-262
    (Unicode mode) at all, or one using a construct the ``regex`` engine cannot match
    the same way. The message is a clause that follows the pattern's name: ``"pattern"
    is not a regular expression ...``."""


NOT_ECMA = "is not a regular expression (JSON Schema's patterns are ECMA-262): "
"""How a ``PatternError`` for a pattern ECMA-262 refuses begins (the ``regex`` engine's
own refusals, in ``compiled_pattern``, too)."""
_NOT_RUN = "cannot be run as ECMA-262 means it: "


def translate(pattern: str) -> str:
    """``pattern``, an ECMA-262 regular expression in Unicode mode, in the ``regex``
    engine's syntax (its ``VERSION1``, for nested classes), matching exactly the text
    ECMA-262 would. Raises ``PatternError`` naming the construct it cannot translate."""
    # The first pass learns what backreferences may name: groups that come after them.
    # Without any, it wrote the whole translation, and a second pass would only repeat it.
    first = _Translation(pattern, None)
    translated = first.run()
    if not first.backreferences:
        return translated
    return _Translation(pattern, first).run()


class _Translation:
    """One recursive-descent pass over a pattern, by ECMA-262's grammar (Unicode mode),
    writing the ``regex`` equivalent of each construct as it is read."""

    def __init__(self, pattern: str, first: _Translation | None) -> None:
        self.pattern = pattern
        self.at = 0
        self.first = first
        self.groups = 0
        self.names: dict[str, int] = {}
        self.repeated: set[int] = set()
        """Groups in a repeat of more than once: ECMA-262 forgets them each time round."""
        self.atoms = 0
        self.largest = (0, "", 0)
        """The repeat that asks for the most copies: how many, its count, where it is."""
        self.depth = 0
        self.backreferences = False
        """Whether the pattern has any (the first pass writes them as nothing)."""

    def run(self) -> str:
        translated, copies = self.disjunction()
        if self.at < len(self.pattern):  # only an unmatched ")" ends a disjunction early
            raise self.error("a ')' that closes no group")
        if copies - self.atoms > MOST_REPEATS:
            _, count, at = self.largest
            raise PatternError(
                f"{_NOT_RUN}its repeats ask for {copies - self.atoms:,} copies of their "
                f"parts (the most, '{count}' at character {at + 1}), more than the "
                f"{MOST_REPEATS:,} the regex engine is given (it lays each one out in "
                "memory); bound a length with minLength and maxLength instead"
            )
        return translated

    # Reading

    def error(self, what: str, prefix: str = NOT_ECMA) -> PatternError:
        """What is wrong, and where the reading stands (or was put back to)."""
        where = "at the end" if self.at >= len(self.pattern) else f"at character {self.at + 1}"
        return PatternError(f"{prefix}{what} ({where})")

    def peek(self, ahead: int = 0) -> str:
        at = self.at + ahead
        return self.pattern[at] if at < len(self.pattern) else ""

    def take(self, text: str) -> bool:
        if self.pattern.startswith(text, self.at):
            self.at += len(text)
            return True
        return False

    def digits(self) -> str:
        start = self.at
        while self.peek().isascii() and self.peek().isdigit():
            self.at += 1
        return self.pattern[start : self.at]

    # Structure: each part comes with its copies, the atoms the compiled form lays out

    def disjunction(self) -> tuple[str, int]:
        """Alternatives up to a ``)`` or the end."""
        self.depth += 1
        if self.depth > _MOST_NESTED:
            raise self.error(f"groups nested more than {_MOST_NESTED} deep", _NOT_RUN)
        alternatives: list[str] = []
        copies = 0
        while True:
            parts: list[str] = []
            while self.peek() not in ("", "|", ")"):
                part, part_copies = self.term()
                parts.append(part)
                copies += part_copies
            alternatives.append("".join(parts))
            if not self.take("|"):
                break
        self.depth -= 1
        return "|".join(alternatives), copies

    def term(self) -> tuple[str, int]:
        """An assertion, or an atom with its quantifier."""
        assertion = self.assertion()
        if assertion is not None:
            if self.quantifier_ahead():  # Annex B allows it, but not in Unicode mode
                raise self.error("a quantifier after an assertion, which cannot repeat")
            return assertion
        groups_before = self.groups
        atom, copies = self.atom()
        if not self.quantifier_ahead():
            return atom, copies
        at = self.at
        low, high, lazy = self.quantifier()
        if high is None or high > 1:
            self.repeated.update(range(groups_before + 1, self.groups + 1))
        # Each atom is written as one unit (a character, class, group or escape), so the
        # quantifier applies to it whole.
        count = _SYMBOLS.get((low, high)) or (
            f"{{{low}}}" if low == high else f"{{{low},{'' if high is None else high}}}"
        )
        copies = max(copies, 1) * max(low, 1)
        if copies > self.largest[0]:
            self.largest = (copies, self.pattern[at : self.at], at)
        return f"{atom}{count}{'?' if lazy else ''}", copies

    def assertion(self) -> tuple[str, int] | None:
        if self.take("^"):
            return r"\A", 0
        if self.take("$"):
            return r"\Z", 0  # Python's "$" also matches before a final newline
        if self.take(r"\b"):
            return _BOUNDARY, 0
        if self.take(r"\B"):
            return _NOT_BOUNDARY, 0
        for opening in ("(?=", "(?!", "(?<=", "(?<!"):
            if self.take(opening):
                # regex matches a lookbehind right to left, as ECMA-262 does, so the
                # groups and backreferences in it capture and match the same text.
                inner, copies = self.disjunction()
                self.close(opening)
                return f"{opening}{inner})", copies
        return None

    def close(self, opening: str) -> None:
        if not self.take(")"):
            raise self.error(f"a '{opening}' never closed")

    def quantifier_ahead(self) -> bool:
        return self.peek() in ("*", "+", "?") or (self.peek() == "{" and self.counted() is not None)

    def counted(self) -> tuple[int, int | None, int] | None:
        """The bounds of a ``{n}``, ``{n,}`` or ``{n,m}`` here, and where it ends."""
        saved = self.at
        self.at += 1
        low = self.digits()
        high: str | None = low
        if low and self.take(","):
            high = self.digits() or None
        ok = bool(low) and self.take("}")
        end, self.at = self.at, saved
        if not ok:
            return None
        return int(low), None if high is None else int(high), end

    def quantifier(self) -> tuple[int, int | None, bool]:
        symbol = self.peek()
        if symbol == "{":
            bounds = self.counted()
            assert bounds is not None
            low, high, end = bounds
            if high is not None and low > high:
                raise self.error(f"the repeat {{{low},{high}}}, which counts down")
            self.at = end
            if high is not None and high >= _UNBOUNDED_FROM:
                high = None
        else:
            self.at += 1
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[symbol]
        return low, high, self.take("?")

    def atom(self) -> tuple[str, int]:
        char = self.peek()
        if char in ("*", "+", "?"):
            raise self.error(f"a '{char}' with nothing before it to repeat")
        if char in ("{", "}", "]"):
            raise self.error(f"a lone '{char}' (write \\{char} for the character)")
        if char == "(":
            return self.group()
        self.atoms += 1
        if char == ".":
            self.at += 1
            return _DOT, 1
        if char == "[":
            return self.character_class(), 1
        if char == "\\":
            return self.atom_escape(), 1
        self.at += 1
        return _literal(ord(char)), 1

    def group(self) -> tuple[str, int]:
        start = self.at
        if self.take("(?:"):
            inner, copies = self.disjunction()
            self.close("(?:")
            return f"(?:{inner})", copies
        name = None
        if self.take("(?<"):
            name = self.group_name()
            if name in self.names:
                self.at = start
                raise self.error(f"a second group named {name!r}")
        elif self.peek(1) == "?":
            raise self.error(
                "a '(?' that starts no group ECMA-262 has (it has no inline flags): "
                "write '(?:', '(?=', '(?!', '(?<=', '(?<!' or '(?<name>'"
            )
        else:
            self.at += 1
        self.groups += 1
        if name is not None:
            self.names[name] = self.groups
        inner, copies = self.disjunction()
        self.close("(")
        return f"({inner})", copies  # named or not, numbered as in ECMA-262

    def group_name(self) -> str:
        """A group's ``name>``, escapes read."""
        import regex

        start = self.at
        chars: list[str] = []
        while not self.take(">"):
            if self.peek() == "":
                self.at = start
                raise self.error("a group name never closed with '>'")
            if self.take("\\u"):
                chars.append(chr(self.unicode_escape()))
            else:
                chars.append(self.peek())
                self.at += 1
        name = "".join(chars)
        if not regex.fullmatch(r"[\p{ID_Start}$_][\p{ID_Continue}$\u200c\u200d]*", name):
            self.at = start
            raise self.error(f"the group name {name!r}, which is not an identifier")
        return name

    # Escapes

    def atom_escape(self) -> str:
        """A backslash outside a class: a backreference, a class escape or a character."""
        start = self.at
        self.at += 1
        char = self.peek()
        if char in "123456789" and char:
            return self.backreference(int(self.digits()), start)
        if self.take("k<"):
            name = self.group_name()
            known = self.first.names if self.first is not None else {name: 0}
            if name not in known:
                self.at = start
                raise self.error(f"a backreference to {name!r}, which no group is named")
            return self.backreference(known[name], start)
        if char == "k":
            raise self.error("a '\\k' without a group's <name>")
        if char == "-":
            raise self.error("a '\\-' outside a class (write '-' itself)")
        class_escape = self.class_escape()
        if class_escape is not None:
            return class_escape[0]
        return _literal(self.character_escape())

    def backreference(self, number: int, start: int) -> str:
        if self.first is None:
            self.backreferences = True
            return ""
        if number > self.first.groups:
            self.at = start
            raise self.error(f"a backreference to group {number}, which the pattern does not have")
        if number in self.first.repeated:
            self.at = start
            raise self.error(
                f"a backreference to group {number}, which sits in a repeat: ECMA-262 "
                "forgets the group each time round, and the regex engine does not",
                _NOT_RUN,
            )
        # A group that has not matched (yet) matches nothing in ECMA-262: no text at all.
        return f"(?:(?({number})\\g<{number}>))"

    def class_escape(self) -> tuple[str, str] | None:
        """After a backslash: ``\\d``, ``\\w``, ``\\s``, ``\\p{...}`` or their negations,
        as a class on its own and as what goes in another class, or None."""
        char = self.peek()
        if char.lower() in _CLASSES:
            self.at += 1
            members = _CLASSES[char.lower()]
            if char.islower():
                return f"[{members}]", members
            return f"[^{members}]", f"[^{members}]"
        if char in ("p", "P"):
            self.at += 1
            prop = self.property()
            written = f"\\{char}{{{prop}}}"
            return written, written
        return None

    def property(self) -> str:
        """After ``\\p`` or ``\\P``: the ``{property}``, in the name ``regex`` reads as
        ECMA-262 does."""
        import regex

        start = self.at - 2
        end = self.pattern.find("}", self.at)
        if not self.take("{") or end < 0:
            self.at = start
            raise self.error("a '\\p' or '\\P' without a {property}")
        text = self.pattern[self.at : end]
        name, equals, value = text.partition("=")
        kind = _PROPERTY_NAMES.get(name) if equals else None
        self.at = start
        if kind == "gc" and value in _GENERAL_CATEGORIES:
            translated = f"gc={_GENERAL_CATEGORIES[value]}"
        elif kind in ("sc", "scx") and value.isascii() and value.replace("_", "").isalnum():
            translated = f"{kind}={value}"  # a script, which regex knows by each of its names
        elif not equals and text in _GENERAL_CATEGORIES:
            translated = f"gc={_GENERAL_CATEGORIES[text]}"
        elif not equals and text in _BINARY_PROPERTIES:
            translated = _BINARY_PROPERTIES[text]
        else:
            raise self.error(
                f"the Unicode property {text!r}, which ECMA-262 does not have (a script "
                "is written \\p{Script=Latin})"
            )
        try:
            regex.compile(f"\\p{{{translated}}}")
        except regex.error:
            if kind in ("sc", "scx"):
                raise self.error(f"the script {value!r}, which Unicode does not have") from None
            raise self.error(
                f"the Unicode property {text!r}, which the regex engine lacks", _NOT_RUN
            ) from None
        self.at = end + 1
        return translated

    def character_escape(self) -> int:
        """After a backslash: the one character an escape stands for."""
        char = self.peek()
        self.at += 1
        if char in _CONTROL:
            return _CONTROL[char]
        if char == "c":
            letter = self.peek()
            if not (letter.isascii() and letter.isalpha()):
                raise self.error("a '\\c' not followed by a letter")
            self.at += 1
            return ord(letter) % 32
        if char == "0":
            if self.peek().isascii() and self.peek().isdigit():
                raise self.error("an octal escape, which Unicode mode does not have")
            return 0
        if char == "x":
            hex_digits = self.pattern[self.at : self.at + 2]
            if not _is_hex(hex_digits, 2):
                raise self.error("a '\\x' not followed by two hex digits")
            self.at += 2
            return int(hex_digits, 16)
        if char == "u":
            return self.unicode_escape()
        if char in _SYNTAX:
            return ord(char)
        self.at -= 1
        raise self.error(
            f"the escape '\\{char}', which Unicode mode does not have"
            + (f" (write {char!r} itself)" if char else "")
        )

    def unicode_escape(self) -> int:
        """After ``\\u``: ``{hex}`` or four hex digits, a surrogate pair read as one."""
        if self.take("{"):
            end = self.pattern.find("}", self.at)
            hex_digits = self.pattern[self.at : end] if end >= 0 else ""
            if not _is_hex(hex_digits, len(hex_digits)) or int(hex_digits, 16) > 0x10FFFF:
                raise self.error("a '\\u{' not followed by a code point in hex and '}'")
            self.at = end + 1
            return int(hex_digits, 16)
        hex_digits = self.pattern[self.at : self.at + 4]
        if not _is_hex(hex_digits, 4):
            raise self.error("a '\\u' not followed by four hex digits or {code point}")
        self.at += 4
        code = int(hex_digits, 16)
        trail = self.pattern[self.at + 2 : self.at + 6]
        if (
            0xD800 <= code <= 0xDBFF
            and self.pattern.startswith("\\u", self.at)
            and _is_hex(trail, 4)
            and 0xDC00 <= int(trail, 16) <= 0xDFFF
        ):
            self.at += 6
            return 0x10000 + ((code - 0xD800) << 10) + (int(trail, 16) - 0xDC00)
        return code

    # Classes

    def character_class(self) -> str:
        start = self.at
        self.at += 1
        negated = self.take("^")
        members: list[str] = []
        while not self.take("]"):
            if self.peek() == "":
                self.at = start
                raise self.error("a '[' never closed with ']'")
            low = self.class_atom()
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.at += 1
                high = self.class_atom()
                if isinstance(low, str) or isinstance(high, str):
                    raise self.error(
                        "a range in a class with a class escape (\\d, \\w, ...) at an end"
                    )
                if low > high:
                    raise self.error(f"the range {chr(low)!r}-{chr(high)!r} in a class counts down")
                members.append(f"{_literal(low)}-{_literal(high)}")
            else:
                members.append(low if isinstance(low, str) else _literal(low))
        if not members:  # ECMA-262's [] matches nothing, and [^] any character at all
            return f"[{'' if negated else '^'}\\u0000-\\U0010ffff]"
        return f"[{'^' if negated else ''}{''.join(members)}]"

    def class_atom(self) -> int | str:
        """A character in a class (its code), or the members of a class escape in it."""
        char = self.peek()
        if char != "\\":
            self.at += 1
            return ord(char)
        self.at += 1
        escaped = self.peek()
        if escaped == "b":
            self.at += 1
            return 0x08
        if escaped == "-":
            self.at += 1
            return ord("-")
        if escaped == "B" or (escaped.isascii() and escaped.isdigit() and escaped != "0"):
            raise self.error(f"a '\\{escaped}' in a class, where it means nothing")
        class_escape = self.class_escape()
        if class_escape is not None:
            return class_escape[1]
        return self.character_escape()


def _literal(code: int) -> str:
    """The character ``code`` as ``regex`` reads it anywhere, in a class or out."""
    char = chr(code)
    if char.isascii() and char.isalnum():
        return char
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _is_hex(text: str, length: int) -> bool:
    return len(text) == length > 0 and all(char in "0123456789abcdefABCDEF" for char in text)
