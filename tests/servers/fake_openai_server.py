"""A stand-in for an OpenAI-compatible Chat Completions API, on loopback.

The terminal tests cannot call a real model, so this answers every
``POST /v1/chat/completions`` with one assistant message quoting the last user message
("Model draft for: <text>"). It binds a free port, prints ``listening at URL`` on stdout
once it accepts connections, and serves until killed.
Run: ``python tests/servers/fake_openai_server.py``.
"""

from __future__ import annotations

import socket
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


async def completions(request: Request) -> JSONResponse:
    body: dict[str, Any] = await request.json()
    last = body["messages"][-1]["content"]
    text = last if isinstance(last, str) else " ".join(part.get("text", "") for part in last)
    return JSONResponse(
        {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": f"Model draft for: {text}"},
                    "finish_reason": "stop",
                }
            ],
        }
    )


class AnnouncingServer(uvicorn.Server):
    """Says where it listens once it does, so a test waits on the line, not a timer."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        assert sockets is not None
        port = sockets[0].getsockname()[1]
        print(f"listening at http://127.0.0.1:{port}/v1", flush=True)


def main() -> None:
    app = Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"])])
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    AnnouncingServer(config).run(sockets=[listener])


if __name__ == "__main__":
    main()
