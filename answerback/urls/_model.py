"""What a URL verdict says: a level, the reasons in words, and how to show the URL."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum, StrEnum


class RiskLevel(IntEnum):
    """How dangerous opening a URL is, ordered so levels compare and ``max()`` works.

    - ``OK``: an ordinary https page; show it and ask as usual.
    - ``WARN``: legitimate often enough, but the person should look twice (a port, a page
      on this computer, a name that is not on the public internet).
    - ``HIGH_RISK``: the URL hides where it goes (an IP address, a lookalike of a
      well-known domain, a brand name in front of another site); ask only with the
      reasons in plain view.
    - ``BLOCK``: never open it (not http(s), credentials in the URL, hidden reordering).
    """

    __module__ = "answerback.urls"

    OK = 0
    WARN = 1
    HIGH_RISK = 2
    BLOCK = 3


class ReasonCode(StrEnum):
    """Stable names for why a URL was judged as it was, for programs to branch on.

    The person reads ``UrlReason.message``; these names never change between releases.
    """

    __module__ = "answerback.urls"

    NOT_A_URL = "not-a-url"
    TOO_LONG = "too-long"
    SCHEME = "scheme"
    PLAIN_HTTP = "plain-http"
    USERINFO = "userinfo"
    BIDI_CONTROL = "bidi-control"
    INVISIBLE_CHARACTER = "invisible-character"
    CONTROL_CHARACTER = "control-character"
    BACKSLASH = "backslash"
    ENCODED_HOST = "encoded-host"
    NUMERIC_HOST = "numeric-host"
    IP_ADDRESS = "ip-address"
    PRIVATE_ADDRESS = "private-address"
    RESERVED_ADDRESS = "reserved-address"
    LOOPBACK = "loopback"
    PORT = "port"
    NO_REGISTRABLE_DOMAIN = "no-registrable-domain"
    INVALID_ACE = "invalid-ace"
    UNUSUAL_CHARACTER = "unusual-character"
    PUNCTUATION_LOOKALIKE = "punctuation-lookalike"
    MIXED_SCRIPT = "mixed-script"
    MIXED_DIGITS = "mixed-digits"
    WHOLE_SCRIPT_CONFUSABLE = "whole-script-confusable"
    DIGIT_LOOKALIKE = "digit-lookalike"
    LOOKALIKE_DOMAIN = "lookalike-domain"
    BRAND_IN_SUBDOMAIN = "brand-in-subdomain"
    BRAND_IN_DOMAIN = "brand-in-domain"
    APPROVED = "approved"


# Reasons that concern which site this is, which a person who approved the site before has
# already weighed. Reasons about how this particular URL is written (a hidden character, a
# backslash, an IP address in disguise) stand whatever was approved.
_ABOUT_THE_SITE = frozenset(
    {
        ReasonCode.IP_ADDRESS,
        ReasonCode.PRIVATE_ADDRESS,
        ReasonCode.RESERVED_ADDRESS,
        ReasonCode.LOOPBACK,
        ReasonCode.PORT,
        ReasonCode.NO_REGISTRABLE_DOMAIN,
        ReasonCode.UNUSUAL_CHARACTER,
        ReasonCode.MIXED_SCRIPT,
        ReasonCode.MIXED_DIGITS,
        ReasonCode.WHOLE_SCRIPT_CONFUSABLE,
        ReasonCode.DIGIT_LOOKALIKE,
        ReasonCode.LOOKALIKE_DOMAIN,
        ReasonCode.BRAND_IN_SUBDOMAIN,
        ReasonCode.BRAND_IN_DOMAIN,
    }
)


@dataclass(frozen=True, slots=True)
class UrlReason:
    """One finding about a URL: what it means for the person, in plain words."""

    __module__ = "answerback.urls"

    code: ReasonCode
    level: RiskLevel
    message: str

    @property
    def about_the_site(self) -> bool:
        """Whether this concerns which site the URL opens (so a person's earlier approval
        of that site answers it), rather than how this URL is written."""
        return self.code in _ABOUT_THE_SITE


@dataclass(frozen=True, slots=True)
class UrlDisplay:
    """How to show the URL: whole, with the site emphasised (a link of pages may be cut
    after its host, if the rest is a request away and the verdict stays in view).

    ``before + site + after == url``. Put ``site`` in bold (or otherwise apart): it is the
    registrable domain, the part that says whose page this is. Labels that could pass for
    other letters are shown in their ACE form (``xn--...``), so what the person reads is
    what the browser opens.
    """

    __module__ = "answerback.urls"

    url: str
    before: str
    site: str
    after: str
    host: str
    """The host as shown (Unicode where safe, ACE where a label is suspicious); empty for
    URLs without one."""


@dataclass(frozen=True, slots=True)
class UrlVerdict:
    """The judgement of one URL. Build it with ``judge_url``."""

    __module__ = "answerback.urls"

    url: str
    """The URL exactly as given."""
    level: RiskLevel
    reasons: tuple[UrlReason, ...]
    """Every finding, most serious first; empty for an ordinary ``OK`` URL."""
    canonical_url: str | None
    """The URL as a browser reads it (WHATWG): what opening it actually opens. None when
    the text is not a URL at all, or too long to be judged (``TOO_LONG``)."""
    display: UrlDisplay
    site: str | None
    """The site in ASCII: the registrable domain ("example.co.uk"), or the whole host for
    an IP address or a name with no public suffix; for this computer, the host and its
    port ("localhost:8080"), since there the port picks the program. What
    ``ApprovedDomains`` remembers."""
    approved: bool
    """Whether the person approved ``site`` before (see ``ApprovedDomains``)."""

    @property
    def codes(self) -> frozenset[ReasonCode]:
        """The codes of every reason, for ``ReasonCode.USERINFO in verdict.codes``."""
        return frozenset(reason.code for reason in self.reasons)

    @property
    def blocked(self) -> bool:
        """Whether the URL must not be opened at all."""
        return self.level is RiskLevel.BLOCK

    def explain(self) -> str:
        """The level and every reason, one per line, for logs and plain-text prompts."""
        lines = [f"{self.level.name.replace('_', ' ').lower()}: {self.display.url}"]
        lines.extend(f"- {reason.message}" for reason in self.reasons)
        return "\n".join(lines)
