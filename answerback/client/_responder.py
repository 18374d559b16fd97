"""The ``Responder`` seam: one object answers what the server asks, and declares it.

A client answers the server's requests (elicitation, sampling, roots) and receives its
notifications. A ``Responder`` does all of it, and its ``capabilities()`` is the
declaration: the session declares exactly that (in ``initialize``, or in every
2026-07-28 request's ``_meta``), refuses for it whatever it did not declare, and checks
what it answers before anything is sent. One seam serves both protocol generations.

Responders compose. ``ResponderWrapper`` hands everything to an inner responder, so a
layer overrides only what it changes: ``CheckedForms`` asks a ``FormRenderer`` again
when a person's answer does not fit the form, ``Headless`` answers for a person who is
not there. The seed's keyword callbacks are sugar for a ``CallbackResponder``.
"""

from __future__ import annotations

import logging
from typing import Protocol, cast, runtime_checkable

from answerback._options import instance_or_none
from answerback.client._callbacks import (
    ClientRequestContext,
    ElicitationCallback,
    IncomingMessage,
    ListRootsCallback,
    LoggingCallback,
    MessageHandler,
    SamplingCallback,
    async_callable_or_none,
    check_arguments,
    checked_answer,
    is_plain_function,
    refusal,
)
from answerback.client._form_answers import fitted
from answerback.forms import AnswerError, Form, parse_form
from answerback.types import (
    INTERNAL_ERROR,
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationCapability,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    RootsCapability,
    SamplingCapability,
)

logger = logging.getLogger("answerback.client")


@runtime_checkable
class Responder(Protocol):
    """Answers the server's questions and receives its notifications.

    Implement it structurally, or subclass it to inherit the defaults below (refuse
    every request, ignore notifications) and override what you answer together with
    ``capabilities()``. Only what ``capabilities()`` declares ever reaches a method:
    an ``elicit`` that declared only ``elicitation.url`` never sees a form.
    """

    def capabilities(self) -> ClientCapabilities:
        """What this responder answers, exactly as the client declares it: elicitation
        modes (``form``, ``url``; an empty ``ElicitationCapability()`` means form only),
        sampling with or without ``tools``/``context``, roots with or without
        ``listChanged``."""
        ...

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        """Ask the person (a form, or consent to open a URL); ``ErrorData`` refuses."""
        return _not_answered(self, "Elicitation", "elicitation", "elicit")

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        """Run the model on the server's messages; ``ErrorData`` refuses."""
        return _not_answered(self, "Sampling", "sampling", "sample")

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        """The directories the server may work in; ``ErrorData`` refuses."""
        return _not_answered(self, "List roots", "roots", "list_roots")

    async def on_log(self, params: LoggingMessageNotificationParams) -> None:
        """A ``notifications/message`` log message from the server; by default kept
        only in this client's debug log. (A statement body, not just this docstring:
        mypy takes a protocol method without one for abstract, and would refuse every
        subclass that does not override it.)"""
        logger.debug("log message from the server (%s): %r", params.level, params.data)

    async def on_notification(self, message: IncomingMessage) -> None:
        """Any other notification, or an error the transport reported."""
        if isinstance(message, Exception):
            logger.warning("transport error: %s", message)


@runtime_checkable
class FormRenderer(Responder, Protocol):
    """A responder that shows forms to a person and can show one again."""

    async def elicit_again(
        self,
        context: ClientRequestContext,
        params: ElicitRequestFormParams,
        previous: ElicitResult,
        problems: AnswerError,
    ) -> ElicitResult | ErrorData:
        """Show the form again with ``problems`` (every bad field, by name) next to
        what the person answered (``previous``), and return the new answer."""
        ...


class CallbackResponder(Responder):
    """The seed's keyword callbacks as one responder: each callback given declares its
    capability (elicitation in both modes, sampling as ``sampling_capabilities`` says,
    roots with ``listChanged``); one not given is refused for you."""

    def __init__(
        self,
        *,
        elicitation_callback: ElicitationCallback | None = None,
        sampling_callback: SamplingCallback | None = None,
        sampling_capabilities: SamplingCapability | None = None,
        list_roots_callback: ListRootsCallback | None = None,
        logging_callback: LoggingCallback | None = None,
        message_handler: MessageHandler | None = None,
    ) -> None:
        for name, callback, takes in (
            ("elicitation_callback", elicitation_callback, ("context", "params")),
            ("sampling_callback", sampling_callback, ("context", "params")),
            ("list_roots_callback", list_roots_callback, ("context",)),
            ("logging_callback", logging_callback, ("params",)),
            ("message_handler", message_handler, ("message",)),
        ):
            what = f"an async function taking ({', '.join(takes)})"
            async_callable_or_none(name, callback, what, takes=takes)
        instance_or_none(
            "sampling_capabilities",
            sampling_capabilities,
            SamplingCapability,
            "an answerback.types.SamplingCapability(...)",
        )
        if sampling_capabilities is not None and sampling_callback is None:
            raise ValueError("sampling_capabilities needs a sampling_callback to answer with.")
        self._elicitation_callback = elicitation_callback
        self._sampling_callback = sampling_callback
        self._sampling_capabilities = sampling_capabilities
        self._list_roots_callback = list_roots_callback
        self._logging_callback = logging_callback
        self._message_handler = message_handler

    def __repr__(self) -> str:
        given = {
            "elicitation_callback": self._elicitation_callback,
            "sampling_callback": self._sampling_callback,
            "sampling_capabilities": self._sampling_capabilities,
            "list_roots_callback": self._list_roots_callback,
            "logging_callback": self._logging_callback,
            "message_handler": self._message_handler,
        }
        shown = ", ".join(
            f"{name}={getattr(value, '__qualname__', None) or repr(value)}"
            for name, value in given.items()
            if value is not None
        )
        return f"CallbackResponder({shown})"

    def capabilities(self) -> ClientCapabilities:
        sampling = None
        if self._sampling_callback is not None:
            sampling = self._sampling_capabilities or SamplingCapability()
        return ClientCapabilities(
            elicitation=(
                ElicitationCapability(form={}, url={})
                if self._elicitation_callback is not None
                else None
            ),
            sampling=sampling,
            roots=RootsCapability(list_changed=True) if self._list_roots_callback else None,
        )

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        if self._elicitation_callback is None:
            return refusal("Elicitation", "elicitation")
        answer = await self._elicitation_callback(context, params)
        return checked_answer(answer, ElicitResult, "elicitation_callback")

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        if self._sampling_callback is None:
            return refusal("Sampling", "sampling")
        answer = await self._sampling_callback(context, params)
        return checked_answer(answer, CreateMessageResult, "sampling_callback")

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        if self._list_roots_callback is None:
            return refusal("List roots", "roots")
        answer = await self._list_roots_callback(context)
        return checked_answer(answer, ListRootsResult, "list_roots_callback")

    async def on_log(self, params: LoggingMessageNotificationParams) -> None:
        """To ``logging_callback``; without one, to ``message_handler`` as the whole
        notification, as the seed's client does."""
        if self._logging_callback is not None:
            await self._logging_callback(params)
        elif self._message_handler is not None:
            await self._message_handler(LoggingMessageNotification(params=params))

    async def on_notification(self, message: IncomingMessage) -> None:
        if self._message_handler is not None:
            await self._message_handler(message)
        else:
            await super().on_notification(message)


class ResponderWrapper(Responder):
    """Hands everything to ``inner``: subclass it and override what your layer changes.

    The outermost responder is the one the client is given; a wrapper that changes
    what is declared overrides ``capabilities()`` too.
    """

    def __init__(self, inner: Responder) -> None:
        self.inner = checked_responder("inner", inner)

    def capabilities(self) -> ClientCapabilities:
        return self.inner.capabilities()

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        return await self.inner.elicit(context, params)

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult | ErrorData:
        return await self.inner.sample(context, params)

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        return await self.inner.list_roots(context)

    async def on_log(self, params: LoggingMessageNotificationParams) -> None:
        await self.inner.on_log(params)

    async def on_notification(self, message: IncomingMessage) -> None:
        await self.inner.on_notification(message)


class CheckedForms(ResponderWrapper):
    """Asks a ``FormRenderer`` again while its accepted answer does not fit the form.

    The client checks every form answer before sending it whatever the responder; this
    layer turns a failed check into another chance for the person (``attempts`` in
    all) instead of a failed tool call. Past the last attempt the answer goes on as it
    is and the client fails the request, listing every bad field.
    """

    def __init__(self, renderer: FormRenderer, *, attempts: int = 3) -> None:
        if not isinstance(cast(object, renderer), FormRenderer):
            raise TypeError(
                "renderer must be a FormRenderer (a Responder with elicit_again(context, "
                f"params, answer, problems)), got {renderer!r}"
            )
        if isinstance(attempts, bool) or not isinstance(cast(object, attempts), int):
            raise TypeError(
                f"attempts must be an int (askings in all, 1 or more), got {attempts!r}"
            )
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1 (the first asking), not {attempts}.")
        super().__init__(renderer)
        self.renderer = renderer
        self.attempts = attempts

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        source = answerer(self.renderer, "elicit")
        answer = checked_answer(await self.renderer.elicit(context, params), ElicitResult, source)
        if not isinstance(params, ElicitRequestFormParams):
            return answer
        form: Form | None = None
        for _ in range(self.attempts - 1):
            if isinstance(answer, ErrorData) or answer.action != "accept":
                return answer
            form = form or context.form or parse_form(params.requested_schema)
            try:
                fitted(form, answer)
            except AnswerError as problems:
                again = await self.renderer.elicit_again(context, params, answer, problems)
                source = answerer(self.renderer, "elicit_again")
                answer = checked_answer(again, ElicitResult, source)
            else:
                return answer
        return answer


_CALLBACK_NAMES = {
    "elicit": "elicitation_callback",
    "sample": "sampling_callback",
    "list_roots": "list_roots_callback",
}


def answerer(responder: Responder, method: str) -> str:
    """How an error names the function behind ``responder.<method>``: through the
    wrappers that only pass it on (and ``CheckedForms``, whose answers are its
    renderer's), the seed's callback argument for a ``CallbackResponder``, else
    ``Type.method``."""
    while isinstance(responder, ResponderWrapper):
        if isinstance(responder, CheckedForms) and method == "elicit":
            responder = responder.renderer
        elif getattr(type(responder), method, None) is getattr(ResponderWrapper, method, None):
            responder = responder.inner
        else:
            break
    if isinstance(responder, CallbackResponder) and method in _CALLBACK_NAMES:
        return _CALLBACK_NAMES[method]
    return f"{type(responder).__name__}.{method}"


def _not_answered(responder: Responder, what: str, capability: str, method: str) -> ErrorData:
    """``Responder``'s default answer: the refusal of an undeclared capability; for a
    declared one (a subclass that forgot to override ``method``; ``checked_responder``
    refuses it when it is adopted), an error that says so, also in the log."""
    if getattr(cast(object, responder.capabilities()), capability, None) is None:
        return refusal(what, capability)
    kind = type(responder).__name__
    fault = (
        f"{kind}.capabilities() declares {capability!r} but {kind} does not override "
        f"{method}(): answer it in `async def {method}(...)`, or do not declare {capability!r}"
    )
    logger.error("refused a %s request: %s", capability, fault)
    return ErrorData(
        code=INTERNAL_ERROR,
        message=f"{what} failed: the client declares it but does not answer it ({fault}).",
        data={"reason": "not_answered"},
    )


_ANSWERED_BY = (("elicitation", "elicit"), ("sampling", "sample"), ("roots", "list_roots"))
_ASYNC_METHODS = {
    "elicit": ("context", "params"),
    "sample": ("context", "params"),
    "list_roots": ("context",),
    "on_log": ("params",),
    "on_notification": ("message",),
}
"""Each method a client awaits, with the arguments it passes."""


def checked_responder(name: str, responder: object) -> Responder:
    """``responder`` if a client can answer with it; else a ``TypeError`` that says what
    to fix, now rather than at the server's first request: a ``Responder`` class given
    for an instance, an object that is no ``Responder``, a method written as a plain
    ``def`` or taking other arguments than the client passes, or a capability declared
    in ``capabilities()`` whose method was not overridden (``Responder``'s default
    refuses it, contradicting the declaration)."""
    if isinstance(responder, type):
        kind = responder.__name__
        raise TypeError(
            f"{name} must be a Responder instance, got the class {kind}: pass {kind}(...)."
        )
    if not isinstance(responder, Responder):
        raise TypeError(
            f"{name} must be a Responder (an object with capabilities(), elicit(), sample(), "
            "list_roots(), on_log() and on_notification(); subclass "
            f"answerback.client.Responder), got {responder!r}"
        )
    kind = type(responder).__name__
    for method, takes in _ASYNC_METHODS.items():
        bound = getattr(responder, method)
        if is_plain_function(bound):
            raise TypeError(f"{kind}.{method} is a plain function: write it as `async def`.")
        check_arguments(f"{kind}.{method}", bound, takes)
    declared = cast(object, responder.capabilities())
    if isinstance(declared, ClientCapabilities):  # else the session says what is wrong
        for capability, method in _ANSWERED_BY:
            default = getattr(Responder, method)
            if (
                getattr(declared, capability) is not None
                and getattr(type(responder), method) is default
            ):
                raise TypeError(
                    f"{kind}.capabilities() declares {capability!r} but {kind} does not "
                    f"override {method}(), so every such request would be refused: answer "
                    f"it in `async def {method}(...)`, or do not declare {capability!r}."
                )
    return responder
