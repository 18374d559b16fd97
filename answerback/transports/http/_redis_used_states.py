"""Single-use ``requestState`` claimed in Redis, so a replay is refused on every replica.

``SET NX`` is atomic: of two retries racing with the same state on two replicas, exactly
one claims it. The key expires with the state, so Redis forgets it by itself.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from answerback._options import text
from answerback.transports.http._notification_bus import require_asyncio
from answerback.transports.http._redis_client import check_client, milliseconds
from answerback.types import MCPError
from answerback.types._errors import INTERNAL_ERROR

try:
    from redis.exceptions import RedisError
except ImportError as missing:  # pragma: no cover - the extra is installed for the tests
    raise ImportError(
        "Single-use request state in Redis needs redis-py: pip install 'answerback[redis]'."
    ) from missing

if TYPE_CHECKING:
    from redis.asyncio import Redis


logger = logging.getLogger("answerback.http")


class RedisUsedStates:
    """Claims in keys ``{key_prefix}used-state:{id}``; ``redis`` is the caller's client
    (a URL string or a synchronous ``redis.Redis`` is refused, with ``TypeError``, when
    this is made; nothing connects then)."""

    def __init__(self, redis: Redis, *, key_prefix: str = "answerback:") -> None:
        check_client("redis", redis, ("set",))
        text("key_prefix", key_prefix, "put before every key, such as 'answerback:'")
        self._redis = redis
        self._prefix = f"{key_prefix}used-state:"

    async def claim(self, state_id: str, expires_at: float) -> bool:
        """``True`` the first time (``SET NX`` expiring with the state); ``MCPError`` if
        Redis cannot be reached, so the request is refused rather than run twice."""
        require_asyncio("RedisUsedStates")
        lifetime_ms = milliseconds(expires_at - time.time())
        try:
            claimed = await self._redis.set(self._prefix + state_id, b"1", nx=True, px=lifetime_ms)
        except RedisError as exc:
            logger.warning("Could not claim single-use request state in Redis: %s", exc)
            # An MCPError reaches the client as written (never redacted): it says why.
            raise MCPError(
                INTERNAL_ERROR,
                "The server could not check its single-use requestState (its shared state is "
                "unreachable), and refuses the request rather than risk running it twice. "
                "Retry later.",
            ) from exc
        return bool(claimed)
