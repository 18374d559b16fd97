"""What answers for a person: one broker for every connected server's questions.

``Broker`` queues the questions of every server a host is connected to and shows them
one at a time through a ``Presenter``, naming the server that asks:
``answerback.interact.terminal`` has the terminal ones, and what any other presenter
needs (a GUI's, a web page's) is here. ``Roots`` is the live list of directories the
person grants to every server (announced to each when it changes). ``BrowserLogin``
logs a person in to a protected server through their browser (the ``authorize`` step of
``answerback.client.OAuth``). ``clean`` makes a peer's text safe to print on a terminal.
"""

from __future__ import annotations

from answerback._public import publish
from answerback.interact._broker import (
    CALL_ENDED,
    CONNECTION_CLOSED,
    SERVER_CANCELLED,
    SERVER_DISCONNECTED,
    SERVER_NOT_ANSWERING,
    Broker,
    BrokerResponder,
)
from answerback.interact._login import BrowserLogin
from answerback.interact._printable import clean
from answerback.interact._questions import (
    REJECTED,
    TYPED_BY_PERSON,
    Answer,
    Presenter,
    Question,
    QuestionKind,
    Sampler,
    ServerControls,
)
from answerback.interact._roots import RootRefusedError, Roots

__all__ = [
    "CALL_ENDED",
    "CONNECTION_CLOSED",
    "REJECTED",
    "SERVER_CANCELLED",
    "SERVER_DISCONNECTED",
    "SERVER_NOT_ANSWERING",
    "TYPED_BY_PERSON",
    "Answer",
    "Broker",
    "BrokerResponder",
    "BrowserLogin",
    "Presenter",
    "Question",
    "QuestionKind",
    "RootRefusedError",
    "Roots",
    "Sampler",
    "ServerControls",
    "clean",
]

publish(globals())
