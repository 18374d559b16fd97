"""The answering layer in one program: a responder that shows forms (and is asked again
when a typo does not fit), and a URL elicitation judged before anyone is asked.

The server is in this process; the "person" types from a script. Run:
``python examples/answering_layer.py``.
"""

from __future__ import annotations

import anyio
from pydantic import BaseModel, EmailStr

from answerback import Client
from answerback.client import CheckedForms, ClientRequestContext, Responder
from answerback.forms import AnswerError
from answerback.server import AcceptedElicitation, Context, MCPServer
from answerback.types import (
    ClientCapabilities,
    ElicitationCapability,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ErrorData,
)

mcp = MCPServer("Newsletter")


class Signup(BaseModel):
    email: EmailStr


@mcp.tool()
async def subscribe(ctx: Context) -> str:
    """Ask for an email address, then for consent to open the confirmation page."""
    answer = await ctx.elicit("Where should the newsletter go?", schema=Signup)
    if not isinstance(answer, AcceptedElicitation):
        return "not subscribed"
    page = await ctx.elicit_url("Confirm your address", "https://example.com/confirm", "c-1")
    return f"{answer.data.email}: {type(page).__name__}"


class ScriptedPerson(Responder):
    """Types a wrong address first, then the right one; declines every link."""

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(elicitation=ElicitationCapability(form={}, url={}))

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        if isinstance(params, ElicitRequestURLParams):
            verdict = context.url_verdict
            assert verdict is not None  # the client judges every link before asking
            print(f"link {verdict.display.url} judged {verdict.level.name}")
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={"email": "ada@"})

    async def elicit_again(
        self,
        context: ClientRequestContext,
        params: ElicitRequestFormParams,
        previous: ElicitResult,
        problems: AnswerError,
    ) -> ElicitResult | ErrorData:
        print(f"asked again: {problems}")
        return ElicitResult(action="accept", content={"email": "ada@example.com"})


async def main() -> None:
    async with Client(mcp, responder=CheckedForms(ScriptedPerson())) as client:
        result = await client.call_tool("subscribe")
        print(result.structured_content or result.content[0])


if __name__ == "__main__":
    anyio.run(main)
