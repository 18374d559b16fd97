"""``--answers FILE``: a script's answers to the questions a server will ask.

The file is a JSON list; each entry answers one question and is used once, the first
unused entry that matches being taken::

    [
      {"message": "name", "action": "accept", "content": {"name": "Ada"}},
      {"server": "library", "action": "decline"},
      {"url": "example.com", "action": "accept"}
    ]

Matchers (all optional, all must hold): ``server`` (the display name), ``message`` (a
substring of the question's message), ``field`` (a field the form has), ``url`` (a site,
or a URL whose host is taken: a link matches when the host it opens is that one or a
subdomain of it, never when the name only appears somewhere in the link; a port written
with it must be the link's too; its presence also limits the entry to URL questions).
A ``url`` that cannot name one site is refused when the file loads: a public suffix
(``github.io`` would answer everyone's site there; a link to such a site itself is
answered by ``message`` or ``server``), a wildcard, a leading dot or an empty label, a
bare number (``8080`` reads as the address 0.0.31.144; an address is written as four
numbers or in a URL), a port outside 1-65535, or a single word other than
``localhost`` (the old rule matched words anywhere in the link; a host of one label on a
private network is written as a URL, ``https://intranet/``). ``action`` is
``accept`` (the default), ``decline`` or ``cancel``; ``content`` is the form's answer.
An accepting answer takes a link judged high risk only with ``"risk": "high"``, as a
person at the terminal must confirm one. A question that no entry matches is cancelled,
with a line on stderr saying so, so a script never waits for an answer nobody will
give. An accepted or declined link's line names its verdict (``judged high risk: ...``).
An answer whose ``content`` does not fit its form, or that would accept a high-risk
link without saying so, cancels the question too, and the command then fails as for any
mistake in the file (``AnswersResponder.unfit`` says which).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, cast

import ada_url

from answerback.cli._json_file import UnreadableFile, read_json
from answerback.client import ClientRequestContext, Responder
from answerback.forms import AnswerError, Form
from answerback.types import (
    ClientCapabilities,
    ElicitationCapability,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
)
from answerback.urls import RiskLevel, UrlVerdict, judge_url
from answerback.urls._domains import split_host

_KEYS = {"server", "message", "field", "url", "action", "content", "risk"}
_ACTIONS = ("accept", "decline", "cancel")
PAST = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}
_DEFAULT_PORTS = {"http:": "80", "https:": "443"}
_SUBDOMAINS_TOO = "(its subdomains match too)"
_GIVE_A_SITE = f'give the site whose links it answers, such as "example.com" {_SUBDOMAINS_TOO}'


class AnswersError(Exception):
    """The answers file cannot be used; the message says what to fix."""


@dataclass
class Answer:
    action: str = "accept"
    content: dict[str, Any] | None = None
    server: str | None = None
    message: str | None = None
    field: str | None = None
    url: str | None = None
    """The host a link must open (or a subdomain of it), in ASCII."""
    port: str | None = None
    """The port the link must open, when the answer's ``url`` names one (``"8080"``);
    None: any port."""
    high_risk: bool = False
    """Whether the answer accepts links judged high risk (``"risk": "high"``)."""
    number: int = dataclasses.field(default=0, compare=False)
    """Its place in the file, counted from 1, for messages."""
    used: bool = dataclasses.field(default=False, compare=False)

    def matches(
        self, server: str, params: ElicitRequestParams, verdict: UrlVerdict | None = None
    ) -> bool:
        """Whether this answer is for the question; a link is matched by the host its
        ``verdict`` says it opens (judged here when not given)."""
        if self.used or (self.server is not None and self.server != server):
            return False
        if self.message is not None and self.message not in params.message:
            return False
        if isinstance(params, ElicitRequestURLParams):
            if self.field is not None:
                return False
            if self.url is None:
                return True
            opened = _address_of((verdict or judge_url(params.url)).canonical_url or "")
            if opened is None or self.port not in (None, opened[1]):
                return False
            return opened[0] == self.url or opened[0].endswith("." + self.url)
        if self.url is not None:
            return False
        properties = cast(dict[str, Any], params.requested_schema.get("properties") or {})
        return self.field is None or self.field in properties

    def takes_unasked_risk(self, verdict: UrlVerdict | None) -> bool:
        """Whether accepting would take a high-risk link that the answer did not say it
        takes: at the terminal a person confirms such a link, here the file must."""
        return (
            self.action == "accept"
            and not self.high_risk
            and verdict is not None
            and verdict.level >= RiskLevel.HIGH_RISK
        )

    def misfit(self, form: Form | None) -> str | None:
        """What is wrong with this answer's ``content`` for ``form``, in the answers
        file's words; ``None`` if it fits, or is not a form's accepting answer."""
        if form is None or self.action != "accept":
            return None
        try:
            form.check(form.with_defaults(self.content or {}))
        except AnswerError as exc:
            wrong = "; ".join(
                f'"{error.field}" {error.message}' if error.field else error.message
                for error in exc.errors
            )
            fields = ", ".join(f'"{field.name}"' for field in form.fields)
            return f'in its "content", {wrong} (the form\'s fields: {fields})'
        return None


def load_answers(path: Path) -> list[Answer]:
    try:
        data = read_json(path, "the answers file")
    except UnreadableFile as exc:
        raise AnswersError(str(exc)) from exc
    if not isinstance(data, list):
        raise AnswersError(f"The answers file {path} must be a JSON list of answers.")
    answers: list[Answer] = []
    for number, item in enumerate(cast(list[object], data), start=1):
        where = f"answer {number} in {path}"
        if not isinstance(item, dict):
            raise AnswersError(f"The {where} must be a JSON object.")
        entry = cast(dict[str, object], item)
        if unknown := sorted(set(entry) - _KEYS):
            raise AnswersError(f"The {where} has unknown keys {unknown}; allowed: {sorted(_KEYS)}.")
        action = entry.get("action", "accept")
        if action not in _ACTIONS:
            raise AnswersError(f"The {where} has action {action!r}: use {', '.join(_ACTIONS)}.")
        content = entry.get("content")
        if content is not None and not isinstance(content, dict):
            raise AnswersError(f'The {where} has "content" that is not a JSON object.')
        for key in ("server", "message", "field", "url"):
            value = entry.get(key)
            if value is not None and not isinstance(value, str):
                raise AnswersError(f'The {where} has "{key}" that is not a string.')
        risk = entry.get("risk")
        if risk not in (None, "high"):
            raise AnswersError(
                f'The {where} has "risk" {risk!r}: the only value is "high", which lets it '
                "accept a link judged high risk; leave it out to have such links cancelled."
            )
        url = cast(str | None, entry.get("url"))
        host, port = None, None
        if url is not None:
            try:
                host, port = _answered_site(url)
            except _NotOneSite as exc:
                raise AnswersError(f'The {where} has "url" {url!r}, which {exc}.') from None
        answers.append(
            Answer(
                action=cast(str, action),
                content=cast(dict[str, Any] | None, content),
                server=cast(str | None, entry.get("server")),
                message=cast(str | None, entry.get("message")),
                field=cast(str | None, entry.get("field")),
                url=host,
                port=port,
                high_risk=risk == "high",
                number=number,
            )
        )
    return answers


class _NotOneSite(ValueError):
    """Why an answer's ``url`` cannot name one site, in words that follow "which"."""


def _answered_site(written: str) -> tuple[str, str | None]:
    """The host an answer's ``url`` names, in ASCII, and the port written with it (None:
    every port). A bare host or a URL, surrounding blanks ignored (as ``ApprovedDomains``
    does); only one site's links may match, so a public suffix, a wildcard, a word or a
    number that no link opens is refused."""
    written = written.strip()
    as_url = "://" in written
    if as_url:
        url, after_scheme = written, written.split("://", 1)[1]
    elif any(char in written for char in "@\\"):
        raise _NotOneSite(f"is not a host name or a URL: {_GIVE_A_SITE}")
    else:
        url, after_scheme = f"https://{written}", written
    authority = re.split(r"[/?#\\]", after_scheme, maxsplit=1)[0]
    _check_port(authority.rsplit("@", 1)[-1])
    try:
        parsed = ada_url.parse_url(url, ("hostname", "host_type"))
        # A scheme without a default port keeps the port as written, 443 too.
        port = ada_url.parse_url(f"port-only://{authority}/", ("port",)).get("port", "")
    except ValueError:
        raise _NotOneSite(f"is not a host name or a URL: {_GIVE_A_SITE}") from None
    host = parsed.get("hostname", "").removesuffix(".")
    if not authority or not host:
        raise _NotOneSite(f"names no host: {_GIVE_A_SITE}")
    host_type = parsed.get("host_type")
    if host_type == ada_url.HostType.DEFAULT:
        _check_one_site(host, as_url)
    elif host_type == ada_url.HostType.IPV4 and not as_url:
        _check_dotted_quad(authority.split(":", 1)[0], host)
    return host, port or None


_PORT_WRITTEN = re.compile(r"(?:\[[^\]]*\]|[^:]*):(\d+)")
_DOTTED_QUAD = re.compile(r"(?:\d{1,3}\.){3}\d{1,3}\.?")


def _check_port(host_and_port: str) -> None:
    """Refuse a port no link can have, saying so (the parser's refusal reads as a bad
    host)."""
    written = _PORT_WRITTEN.fullmatch(host_and_port)
    digits = written.group(1) if written else None
    if digits is not None and (len(digits.lstrip("0")) > 5 or not 1 <= int(digits) <= 65535):
        raise _NotOneSite(
            f"has the port {digits}, which no link opens: a port is a number from 1 to 65535"
        )


def _check_dotted_quad(written_host: str, address: str) -> None:
    """Refuse a bare number taken for an IPv4 address (``8080`` is 0.0.31.144): written
    as a host, only four numbers mean an address."""
    if not _DOTTED_QUAD.fullmatch(written_host):
        raise _NotOneSite(
            f"is read as the IP address {address}, not a site: write an address as four "
            f'numbers ("127.0.0.1") or in a URL ("http://{address}/"), and a port after '
            'its host ("localhost:8080")'
        )


def _check_one_site(host: str, as_url: bool) -> None:
    """Refuse a host name under which the ``url`` would match no site or many."""
    if "*" in host:
        _refuse_wildcard(host.removeprefix("*."))
    labels = host.split(".")
    if "" in labels:
        site = ".".join(label for label in labels if label)
        if not site:
            raise _NotOneSite(f"names no host: {_GIVE_A_SITE}")
        _check_one_site(site, as_url)  # what it suggests must be one site itself
        if labels[0] == "" and "" not in labels[1:]:
            raise _NotOneSite(
                f'starts with a dot: none is needed, write "{site}" {_SUBDOMAINS_TOO}'
            )
        raise _NotOneSite(f'has an empty label (two dots in a row): write "{site}"')
    if _is_public_suffix(host):
        raise _NotOneSite(
            f"names a public suffix ({host}): anyone can make a site under it, so it would "
            f'answer links to all of them; give the site, such as "alice.{host}" (a link '
            f'to {host} itself is answered by an entry without "url", matching its '
            '"message" or "server")'
        )
    if "." not in host and host != "localhost" and not as_url:
        raise _NotOneSite(
            "names a single word, not a site: a link is matched by the host it opens, not "
            f'by words in it; give the site, such as "{host}.com" {_SUBDOMAINS_TOO}, or write '
            f'a host of your own network as a URL, "https://{host}/"'
        )


def _is_public_suffix(host: str) -> bool:
    """Whether ``host`` is a public suffix (``github.io``, ``co.uk``): anyone can make a
    site under it, so it names no one site. A name with no known suffix (``wiki.corp``)
    is not one."""
    parts = split_host(host)
    return parts.registrable is None and bool(parts.suffix)


def _refuse_wildcard(parent: str) -> NoReturn:
    """Refuse a wildcard, suggesting what to write instead: its parent name, unless that
    is a public suffix (which names no one site either)."""
    if "*" in parent or "." not in parent or "" in parent.split("."):
        parent = "example.com"
    if _is_public_suffix(parent):
        raise _NotOneSite(
            f"has a wildcard over a public suffix ({parent}): anyone can make a site under "
            f"it, so it would answer links to all of them; give the site, such as "
            f'"alice.{parent}" {_SUBDOMAINS_TOO}, or leave "url" out to answer every link'
        )
    raise _NotOneSite(
        f'has a wildcard: none is needed, write "{parent}" {_SUBDOMAINS_TOO}, or leave '
        '"url" out to answer every link'
    )


def _address_of(url: str) -> tuple[str, str] | None:
    """The host a URL opens, in ASCII, without a trailing dot, and its port (the scheme's
    own when none is written); None if it has no host."""
    try:
        parsed = ada_url.parse_url(url, ("hostname", "port", "protocol"))
    except ValueError:
        return None
    host = parsed.get("hostname", "").removesuffix(".")
    port = parsed.get("port", "") or _DEFAULT_PORTS.get(parsed.get("protocol", ""), "")
    return (host, port) if host else None


def verdict_note(verdict: UrlVerdict | None) -> str:
    """How a report line names a link's verdict: `` (judged high risk: why)``."""
    if verdict is None:
        return ""
    level = verdict.level.name.replace("_", " ").lower()
    why = f": {verdict.reasons[0].message}" if verdict.reasons else ""
    return f" (judged {level}{why})"


def question_label(params: ElicitRequestParams) -> str:
    """How a report names a question: ``the form 'message'`` or ``the link 'url'``."""
    if isinstance(params, ElicitRequestURLParams):
        return f"the link {params.url!r}"
    return f"the form {params.message!r}"


class AnswersResponder(Responder):
    """Answers elicitations from an answers file, reporting each answer."""

    def __init__(
        self, answers: list[Answer], server: str, source: Path, report: Callable[[str], None]
    ) -> None:
        self.answers = answers
        self.server = server
        self.source = source
        self.report = report
        self.unfit: str | None = None
        """Why an answer could not be given (it did not fit its form, or would have
        accepted a high-risk link unasked), once one could not: the command then fails."""

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(elicitation=ElicitationCapability(form={}, url={}))

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        label = question_label(params)
        verdict = None
        if isinstance(params, ElicitRequestURLParams):
            verdict = context.url_verdict or judge_url(params.url)
        for answer in self.answers:
            if answer.matches(self.server, params, verdict):
                answer.used = True
                where = f"answer {answer.number} in {self.source}"
                asked = f"{label} from server {self.server}"
                if (misfit := answer.misfit(context.form)) is not None:
                    self.report(f"cancelled {asked}: {where} does not fit it")
                    self.unfit = f"The {where} does not fit {asked}: {misfit}."
                    return ElicitResult(action="cancel")
                if answer.takes_unasked_risk(verdict):
                    note = verdict_note(verdict)
                    self.report(
                        f'cancelled {asked}: {where} has no "risk": "high" to accept it{note}'
                    )
                    self.unfit = (
                        f'The {where} would accept {asked}{note}: add "risk": "high" to the '
                        'answer if it may accept such a link, or decline it ("action": '
                        '"decline").'
                    )
                    return ElicitResult(action="cancel")
                done = PAST[answer.action]
                self.report(f"{done} {asked}: from {self.source}{verdict_note(verdict)}")
                if answer.action != "accept" or isinstance(params, ElicitRequestURLParams):
                    return ElicitResult(action=cast(Any, answer.action))
                return ElicitResult(action="accept", content=answer.content or {})
        self.report(
            f"cancelled {label} from server {self.server}: no unused answer in "
            f"{self.source} matches it"
        )
        return ElicitResult(action="cancel")
