"""The HTTP floor: one Starlette route answering a JSON-RPC echo, served by uvicorn.

Usage: ``python floor_http.py --http PORT`` (POST http://127.0.0.1:PORT/mcp).
"""

from __future__ import annotations

import argparse
import json

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


async def echo(request: Request) -> Response:
    message = json.loads(await request.body())
    text = message["params"]["arguments"]["text"]
    response = {
        "jsonrpc": "2.0",
        "id": message["id"],
        "result": {"content": [{"type": "text", "text": text}], "isError": False},
    }
    return Response(json.dumps(response, separators=(",", ":")), media_type="application/json")


app = Starlette(routes=[Route("/mcp", echo, methods=["POST"])])


def main() -> None:
    parser = argparse.ArgumentParser(description="HTTP JSON-RPC echo floor")
    parser.add_argument("--http", type=int, metavar="PORT", required=True)
    args = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.http, log_level="warning")


if __name__ == "__main__":
    main()
