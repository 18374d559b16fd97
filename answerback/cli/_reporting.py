"""The responder layers every ``answerback`` command adds around whatever answers forms.

Whoever answers the questions (a person through the broker, an answers file, the
headless policy), the command also grants the roots, shows the server's log messages
with its name, and, when nobody is there, says on stderr what it answered for them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from answerback.cli._answers import PAST, question_label
from answerback.client import (
    ClientRequestContext,
    Headless,
    IncomingMessage,
    Responder,
    ResponderWrapper,
)
from answerback.interact import Roots
from answerback.types import (
    ClientCapabilities,
    ConnectionClosedError,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
    LoggingMessageNotificationParams,
    RootsCapability,
)

logger = logging.getLogger("answerback.cli")

LogSink = Callable[[str, LoggingMessageNotificationParams], None]


class CommandResponder(ResponderWrapper):
    """``inner`` plus the command's roots (announced on change) and log display."""

    def __init__(
        self,
        inner: Responder,
        server: str,
        roots: Roots,
        on_log: LogSink,
        on_lost: Callable[[str, Exception], None] | None = None,
    ) -> None:
        super().__init__(inner)
        self.server = server
        self.roots = roots
        self.on_log_line = on_log
        self.on_lost = on_lost

    def capabilities(self) -> ClientCapabilities:
        return self.inner.capabilities().model_copy(
            update={"roots": RootsCapability(list_changed=True)}
        )

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        return await self.roots.list_roots(context)

    async def on_log(self, params: LoggingMessageNotificationParams) -> None:
        self.on_log_line(self.server, params)

    async def on_notification(self, message: IncomingMessage) -> None:
        """A lost connection goes to ``on_lost`` (the command reports the failure that
        follows it in its own words when there is none); any other transport error (a
        stray line on a server's stdout) is a warning the session survives; the rest
        goes to ``inner``."""
        if isinstance(message, ConnectionClosedError):
            if self.on_lost is not None:
                self.on_lost(self.server, message)
        elif isinstance(message, Exception):
            logger.warning("%s: %s", self.server, message)
        else:
            await self.inner.on_notification(message)


class ReportedHeadless(Headless):
    """The headless policy, saying on stderr what it answered and why."""

    def __init__(self, server: str, report: Callable[[str], None], why: str) -> None:
        super().__init__("decline", reason=why)
        self.server = server
        self.report = report

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        answer = await super().elicit(context, params)
        if isinstance(answer, ElicitResult):
            done = PAST[answer.action]
            self.report(f"{done} {question_label(params)} from server {self.server}: {self.reason}")
        return answer
