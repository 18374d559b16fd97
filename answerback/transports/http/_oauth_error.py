"""The one error of the OAuth client: authorization could not be obtained.

Every step of the flow (discovery, registration, the person's login, the token
endpoint) can fail for reasons a program cannot fix by retrying, so they share one
exception whose message names the step, what the other side said, and what to change.
A call made through a transport that fails this way fails with that message.
"""

from __future__ import annotations


class AuthorizationError(Exception):
    """Authorization with a protected server failed; the message says why and what to do.

    ``error`` is the OAuth error code when the authorization server sent one
    (``invalid_grant``, ``access_denied``, ...), else ``None``.
    """

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message)
        self.error = error
