"""What a server has declared, and who listens for changes to it.

``MCPServer`` fills a ``Registry`` through its decorators; each ``Connection`` it serves is
handed the same one to answer lists, calls, reads and ``subscriptions/listen``. Keeping it
apart from ``MCPServer`` gives the connections what they need without the server's
private attributes, and keeps the user-facing class about declaring and running.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from answerback.jsonrpc import IncomingRequest
from answerback.server._prompts import RegisteredPrompt
from answerback.server._request_state import RequestStateSealer
from answerback.server._resources import RegisteredResource, is_template, template_shape
from answerback.server._tools import RegisteredTool
from answerback.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    PromptReference,
    Resource,
    ResourceTemplate,
    ResourceTemplateReference,
    SubscriptionFilter,
)

CompletionHandler = Callable[
    [PromptReference | ResourceTemplateReference, CompletionArgument, CompletionContext | None],
    Awaitable[list[str] | Completion | None],
]


@dataclass(eq=False, slots=True)
class Listener:
    """A live 2026-07-28 ``subscriptions/listen`` request and what it asked for."""

    request: IncomingRequest
    wanted: SubscriptionFilter


class Registry:
    """A server's tools, prompts, resources and completion handler, its live listen
    streams, and the sealer for its 2026-07-28 ``requestState``."""

    def __init__(self, sealer: RequestStateSealer) -> None:
        self.tools: dict[str, RegisteredTool] = {}
        self.prompts: dict[str, RegisteredPrompt] = {}
        self.resources: dict[str, RegisteredResource] = {}
        """Keyed by the URI or URI template they were registered with."""
        self.completion_handler: CompletionHandler | None = None
        self.listeners: set[Listener] = set()
        self.sealer = sealer

    def fixed_resources(self) -> list[Resource]:
        """The resources with a fixed URI, in registration order (``resources/list``)."""
        return [r.definition for r in self.resources.values() if isinstance(r.definition, Resource)]

    def resource_templates(self) -> list[ResourceTemplate]:
        """The URI templates, in registration order (``resources/templates/list``)."""
        return [
            r.definition
            for r in self.resources.values()
            if isinstance(r.definition, ResourceTemplate)
        ]

    def same_uris(self, uri: str) -> tuple[str, RegisteredResource] | None:
        """The resource already registered that serves exactly the URIs ``uri`` would,
        and the URI or template it was registered with: the same fixed URI, or a template
        of the same shape (``users://{id}`` for ``users://{user_id}``), which would answer
        every read first; ``None`` if there is none."""
        registered = self.resources.get(uri)
        if registered is not None:
            return uri, registered
        if not is_template(uri):
            return None
        shape = template_shape(uri)
        for key, resource in self.resources.items():
            if resource.pattern is not None and template_shape(key) == shape:
                return key, resource
        return None

    def find_resource(self, uri: str) -> tuple[RegisteredResource, dict[str, str]] | None:
        """The resource serving ``uri`` and the template arguments it matched: a fixed
        one first, then the first matching template; ``None`` when nothing serves it."""
        fixed = self.resources.get(uri)
        if fixed is not None and isinstance(fixed.definition, Resource):
            return fixed, {}
        for resource in self.resources.values():
            arguments = resource.match(uri)
            if arguments is not None and resource.pattern is not None:
                return resource, arguments
        return None

    def listen(self, request: IncomingRequest, wanted: SubscriptionFilter) -> Listener:
        """Start sending the changes ``wanted`` names to ``request``'s stream; pass the
        returned listener to ``unlisten`` when that request ends."""
        listener = Listener(request, wanted)
        self.listeners.add(listener)
        return listener

    def unlisten(self, listener: Listener) -> None:
        """Stop sending changes to ``listener`` (safe to call twice)."""
        self.listeners.discard(listener)
