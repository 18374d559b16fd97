"""``--answers FILE``: a script's answers to the questions a server will ask.

The file is a JSON list; each entry answers one question and is used once, the first
unused entry that matches being taken::

    [
      {"message": "name", "action": "accept", "content": {"name": "Ada"}},
      {"server": "library", "action": "decline"},
      {"url": "example.com", "action": "accept"}
    ]

Matchers (all optional, all must hold): ``server`` (the display name), ``message`` (a
substring of the question's message), ``field`` (a field the form has), ``url`` (a host
name, or a URL whose host is taken: a link matches when the host it opens is that one
or a subdomain of it, never when the name only appears somewhere in the link; its
presence also limits the entry to URL questions). ``action`` is ``accept`` (the
default), ``decline`` or ``cancel``; ``content`` is the form's answer. A question that
no entry matches is cancelled, with a line on stderr saying so, so a script never waits
for an answer nobody will give. An accepted or declined link's line names its verdict
(``judged high risk: ...``). An answer whose ``content`` does not fit its form cancels
the question too, and the command then fails as for any mistake in the file
(``AnswersResponder.unfit`` says which).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

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
from answerback.urls import UrlVerdict, judge_url

_KEYS = {"server", "message", "field", "url", "action", "content"}
_ACTIONS = ("accept", "decline", "cancel")
PAST = {"accept": "accepted", "decline": "declined", "cancel": "cancelled"}


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
            opened = _host_of((verdict or judge_url(params.url)).canonical_url or "")
            return opened is not None and (opened == self.url or opened.endswith("." + self.url))
        if self.url is not None:
            return False
        properties = cast(dict[str, Any], params.requested_schema.get("properties") or {})
        return self.field is None or self.field in properties

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
        url = cast(str | None, entry.get("url"))
        host = None if url is None else _answered_host(url)
        if url is not None and not host:
            raise AnswersError(
                f'The {where} has "url" {url!r}, which names no host: give the site whose '
                'links it answers, such as "example.com" (its subdomains match too).'
            )
        answers.append(
            Answer(
                action=cast(str, action),
                content=cast(dict[str, Any] | None, content),
                server=cast(str | None, entry.get("server")),
                message=cast(str | None, entry.get("message")),
                field=cast(str | None, entry.get("field")),
                url=host,
                number=number,
            )
        )
    return answers


def _answered_host(written: str) -> str | None:
    """The host an answer's ``url`` names: a URL's host, or a bare host name."""
    if "://" in written:
        return _host_of(written)
    if any(char in written for char in "/?#@\\"):
        return None
    return _host_of(f"https://{written}/")


def _host_of(url: str) -> str | None:
    """The host a URL opens, in ASCII, without a trailing dot; None if it has none."""
    try:
        host = ada_url.parse_url(url, ("hostname",)).get("hostname", "")
    except ValueError:
        return None
    return host.removesuffix(".") or None


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
        """Why an answer did not fit its form, once one has not: the command then fails."""

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
                if (misfit := answer.misfit(context.form)) is not None:
                    where = f"answer {answer.number} in {self.source}"
                    self.report(
                        f"cancelled {label} from server {self.server}: {where} does not fit it"
                    )
                    self.unfit = (
                        f"The {where} does not fit {label} from server {self.server}: {misfit}."
                    )
                    return ElicitResult(action="cancel")
                done = PAST[answer.action]
                self.report(
                    f"{done} {label} from server {self.server}: from {self.source}"
                    + verdict_note(verdict)
                )
                if answer.action != "accept" or isinstance(params, ElicitRequestURLParams):
                    return ElicitResult(action=cast(Any, answer.action))
                return ElicitResult(action="accept", content=answer.content or {})
        self.report(
            f"cancelled {label} from server {self.server}: no unused answer in "
            f"{self.source} matches it"
        )
        return ElicitResult(action="cancel")
