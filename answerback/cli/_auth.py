"""Logging in to protected HTTP servers from the command line.

A server that answers 401 wants an OAuth token. At a terminal, answerback logs the person
in through their browser (``BrowserLogin``: the login page is judged like any link a
server hands out before it opens) and keeps the tokens in a private file under the
user's config directory, so the next command, interactive or not, reuses and refreshes
them. A script never waits for a browser: it uses those stored tokens, or a token it
was given (``--token``, ``$ANSWERBACK_TOKEN``), or client credentials (``--client-id`` and
``--client-secret``), and fails with exit code 5 and the reason when none of them works.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from answerback.cli._interface import TOKEN_ENV, ExitCode, LoginMode
from answerback.cli._oneshot import CommandFailed
from answerback.cli._targets import Target
from answerback.client import (
    AuthorizationError,
    FileTokenStore,
    InMemoryTokenStore,
    TokenStoreError,
)
from answerback.interact import BrowserLogin

if TYPE_CHECKING:
    from answerback.client import OAuth

Authorize = Callable[[str], Awaitable[Mapping[str, str]]]


def config_dir() -> Path:
    """Where answerback keeps what must survive: ``$ANSWERBACK_CONFIG_DIR``, else
    ``$XDG_CONFIG_HOME/answerback``, else ``~/.config/answerback``."""
    if explicit := os.environ.get("ANSWERBACK_CONFIG_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "answerback"


def token_file() -> Path:
    """The file the command keeps OAuth tokens and client registrations in."""
    return config_dir() / "tokens.json"


@dataclass(frozen=True)
class AuthOptions:
    token: str | None
    client_id: str | None
    client_secret: str | None
    scopes: tuple[str, ...]
    login: LoginMode

    @classmethod
    def of(cls, args: argparse.Namespace) -> AuthOptions:
        if args.client_secret and not args.client_id:
            raise AuthSetupError("--client-secret needs --client-id: whose secret is it?")
        if args.token and args.client_secret:
            raise AuthSetupError(
                "Give --token or --client-id/--client-secret, not both: both say how to authorize."
            )
        return cls(
            token=args.token,
            client_id=args.client_id,
            client_secret=args.client_secret,
            scopes=tuple(word for scope in args.scope for word in scope.split()),
            login=args.login,
        )


class AuthSetupError(Exception):
    """Authorization options that contradict each other; the message says which."""


def interactive_login_allowed(mode: LoginMode) -> bool:
    """Whether a browser login may be waited for: asked for, or a person is at a terminal."""
    if mode == "auto":
        return sys.stdin.isatty() and sys.stderr.isatty()
    return mode == "browser"


@contextlib.contextmanager
def authorized(
    targets: list[Target], options: AuthOptions, tell: Callable[[str], None]
) -> Generator[None]:
    """Give every HTTP target its authorization for the command's duration: a bearer
    header for ``--token``, else an ``OAuth`` that logs in as the options say."""
    urls = [target for target in targets if target.url is not None]
    if not urls:
        yield
        return
    if options.token is not None:
        if len(urls) > 1:
            # A bearer token works for whoever holds it: never hand one server's to another.
            raise AuthSetupError(
                "--token is sent to one server, and this command has several HTTP targets; "
                'give each its own token in a config file ("headers": {"Authorization": '
                '"Bearer ..."}).'
            )
        for target in urls:
            target.headers["Authorization"] = f"Bearer {options.token}"
            target.token_from = f"--token or ${TOKEN_ENV}"
        yield
        return
    oauth = _oauth()
    if options.client_secret is not None:
        # The program's own tokens, cheap to get again with the secret: kept in memory, so
        # a person's later login never picks up the robot's token (and vice versa).
        store = InMemoryTokenStore()
        for target in urls:
            target.auth = oauth(
                client_id=options.client_id,
                client_secret=options.client_secret,
                grant="client_credentials",
                scopes=list(options.scopes) or None,
                store=store,
            )
        yield
        return
    # The listener is made even when no browser may be waited for: OAuth needs a redirect
    # URI to register (a later run's listener, on another port, matches it: RFC 8252).
    with BrowserLogin(tell=tell) as login:
        store = FileTokenStore(token_file())
        interactive = interactive_login_allowed(options.login)
        for target in urls:
            target.auth = oauth(
                redirect_uri=login.redirect_uri,
                authorize=login if interactive else _no_login(target, options),
                scopes=list(options.scopes) or None,
                client_id=options.client_id,
                client_name="answerback command line",
                store=store,
            )
        yield


async def logout(target: Target, err: Console) -> int:
    """``answerback logout TARGET``: forget the tokens kept for the server (its client
    registration stays, so the next login does not register again)."""
    if target.url is None:
        raise AuthSetupError(
            f"{target.name} is not an HTTP server; only HTTP servers log in (and out)."
        )
    store = _Forgetting(FileTokenStore(token_file()))
    with BrowserLogin() as login:  # never used: OAuth needs its address to be made
        auth = _oauth()(redirect_uri=login.redirect_uri, authorize=login, store=store)
        try:
            await auth.forget(target.url)
        except TokenStoreError as exc:
            raise CommandFailed(str(exc), ExitCode.AUTHORIZATION) from exc
    if store.found:
        said = (
            f"Logged out of {target.name}: its tokens were removed from {store.kept.path}. "
            "They may stay valid at the authorization server until they expire."
        )
    else:
        said = f"No tokens are kept for {target.name} ({target.url}): nothing to log out of."
    err.print(said, markup=False, highlight=False, soft_wrap=True)
    return ExitCode.OK


class _Forgetting:
    """The token store as ``logout`` uses it: deleting what is not there changes nothing
    (the file and its directory are not made), and ``found`` says whether it was."""

    def __init__(self, kept: FileTokenStore) -> None:
        self.kept = kept
        self.found = False

    async def get(self, key: str) -> dict[str, Any] | None:
        return await self.kept.get(key)

    async def set(self, key: str, value: dict[str, Any]) -> None:
        await self.kept.set(key, value)

    async def delete(self, key: str) -> None:
        if await self.kept.get(key) is not None:
            self.found = True
            await self.kept.delete(key)


def _oauth() -> type[OAuth]:
    # Loaded for HTTP targets only: OAuth brings authlib, joserfc and cryptography, a
    # sixth of the command's start-up, which a stdio server's command never uses.
    from answerback.client import OAuth

    return OAuth


def _no_login(target: Target, options: AuthOptions) -> Authorize:
    async def refuse(authorization_url: str) -> dict[str, str]:
        why = (
            "--login never was given"
            if options.login == "never"
            else "there is no terminal to log in from (use --login browser to wait for a "
            "browser anyway)"
        )
        raise AuthorizationError(
            f"{target.name} requires a login, and this run does not wait for one: {why}. "
            "Log in once at a terminal (answerback list URL), or pass a token (--token, "
            f"${TOKEN_ENV}) or client credentials (--client-id and --client-secret).",
            error="login_required",
        )

    return refuse
