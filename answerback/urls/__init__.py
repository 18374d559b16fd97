"""URL verdicts: is it safe to ask a person to open this link, and how to show it.

A server that asks for URL-mode elicitation (or an OAuth login page) hands the client a
link to open in the person's browser. The link may be written to look like somewhere else.
``judge_url`` reads it the way a browser will, judges it, and says how to display it so
that what the person reads is what opens. Pure code: nothing is fetched or resolved.
``path_to_file_uri`` and ``file_uri_to_path`` convert roots' ``file://`` URIs (POSIX and
Windows paths alike).

    >>> from answerback.urls import judge_url
    >>> judge_url("https://example.com/auth").level
    <RiskLevel.OK: 0>
"""

from __future__ import annotations

from answerback._public import publish
from answerback.urls._approved import ApprovedDomains
from answerback.urls._file_uris import file_uri_to_path, path_to_file_uri
from answerback.urls._judge import MAX_URL_LENGTH, judge_url
from answerback.urls._model import ReasonCode, RiskLevel, UrlDisplay, UrlReason, UrlVerdict

__all__ = [
    "MAX_URL_LENGTH",
    "ApprovedDomains",
    "ReasonCode",
    "RiskLevel",
    "UrlDisplay",
    "UrlReason",
    "UrlVerdict",
    "file_uri_to_path",
    "judge_url",
    "path_to_file_uri",
]

publish(globals())
