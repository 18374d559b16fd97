"""Serving one session from several replicas: the routing that shared state makes possible.

Each call has one owner, the replica that got its POST; everything else may land
anywhere. Here: the ids of the server's questions name their owner and are
authenticated (``_question_ids``); an answer or a cancellation POSTed to another replica
is checked there and carried to the owner's inbox; a stream resumed on another replica
follows the shared event store live until its answer; and when the owner's heartbeat
lapses, the replica following the stream ends the call with an error and declares the
owner stopped, so its questions stop taking answers. Used only when the state is shared
(``ServerState.shared``).

The key of the question ids is agreed again on every heartbeat, and once more before
an id is refused as unknown: Redis may have lost it and another replica made a new one
(see ``RedisState``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

import anyio
from anyio.abc import TaskStatus
from starlette.responses import Response

from answerback.jsonrpc import JSONObject, RequestId
from answerback.jsonrpc._endpoint import CANCELLED, as_object, as_request_id
from answerback.transports._framing import decode, encode
from answerback.transports.http._event_store import FollowableEventStore, TimedEventStore
from answerback.transports.http._legacy_session import STANDALONE
from answerback.transports.http._message_bus import CallOwner, Forwarded
from answerback.transports.http._notification_bus import (
    READER_LONGEST_RETRY_SECONDS,
    Notice,
    ReplayingNotificationBus,
)
from answerback.transports.http._question_ids import QuestionIds
from answerback.transports.http._serving import error_response
from answerback.transports.http._state import ServerState, StateUnavailable
from answerback.transports.http._state_outage import (
    CALLS_NOT_CLOSED,
    QUESTIONS_NOT_RECORDED,
    StateOutage,
)
from answerback.types._errors import (
    ALREADY_ANSWERED,
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    SERVER_CLOSED,
)

if TYPE_CHECKING:
    from answerback.transports.http._legacy_session import Event, LegacySession

logger = logging.getLogger("answerback.http")

_DECLARED_STOPPED: JSONObject = {
    "code": CONNECTION_CLOSED,
    "message": (
        "Server closed: the answer came after another server process had declared this "
        "one stopped. Send the request again."
    ),
    "data": {"reason": SERVER_CLOSED},
}
"""What a question gets, on an owner declared stopped, in place of its answer."""
QUESTION_TTL_SECONDS = 24 * 3600.0
"""How long a question waits for its answer in the shared state (its call ends sooner)."""
FAN_OUT_HEADROOM_SECONDS = 5.0
"""How long a replica may take to pass one broadcast on to its sessions: it stores it on
each session's GET stream in turn, a Redis round trip each, so a burst of broadcasts on
a replica with many sessions reaches the last of them seconds after its reader got it."""
BUS_LAG_MARGIN_SECONDS = READER_LONGEST_RETRY_SECONDS + FAN_OUT_HEADROOM_SECONDS
"""How far before a GET stream's last stored event a resume looks for broadcasts it may
have missed. The replica that held the stream stored each broadcast when its bus reader
got it and passed it on, after it was published: milliseconds later as a rule, but up to
the reader's longest retry delay while Redis was unreachable, plus the fan-out. One
published that long before the last event may not have been stored yet when the stream
broke."""
MISSED_BROADCASTS_LIMIT = 1_000
"""The most bus entries a resume reads for the broadcasts its GET stream missed, newest
first: the bus holds every session's broadcasts, mostly others' resource updates, and a
stream quiet for hours would otherwise read all the bus keeps, on every resume, and on
every client of a replica that died at once. The newest are the ones that matter: a list
change or a resource update only makes the client fetch again, and a later one of the
same kind covers an earlier."""
MISSED_BROADCASTS_SECONDS = 10.0
"""How long a resume spends reading and sending the broadcasts its GET stream missed
(its response has started already): a slow or hung Redis makes it give up, with a
warning, rather than hold a task per resume."""
_RESOURCE_UPDATED = "notifications/resources/updated"
_LIST_CHANGED = frozenset(
    f"notifications/{kind}/list_changed" for kind in ("tools", "prompts", "resources")
)


class Replication:
    """The cross-replica side of legacy sessions for one process (``CallHooks`` too)."""

    def __init__(self, state: ServerState, key: bytes, outage: StateOutage | None = None) -> None:
        """``outage`` hears how each heartbeat and inbox read went, so that an outage
        of the shared state is logged once, and its end too."""
        self.state = state
        self.outage = outage or StateOutage()
        self.replica_id = state.replica_id
        self.ids = QuestionIds(state.replica_id, key)
        self._owning: dict[str, LegacySession] = {}
        """The sessions with calls this process owns, to check after a lapsed beat."""

    # -- broadcasts a GET stream missed ----------------------------------------------

    async def deliver_missed_broadcasts(
        self,
        session: LegacySession,
        last_stored: str,
        replayed: list[Event],
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """On a GET stream just resumed (its new connection attached, its stored events
        after ``Last-Event-ID`` in ``replayed``), deliver the broadcasts raised while no
        replica held it, filtered as live ones are. Run as a task beside the response
        (started once it notes what the stream gets meanwhile), it ends within
        ``MISSED_BROADCASTS_SECONDS``, or sooner when that connection ends (the session
        closed, the client left, or resumed again: that resume replays for itself), and
        reads at most ``MISSED_BROADCASTS_LIMIT`` entries of the bus.

        Every broadcast delivered on the stream was stored there, and the event store
        and the bus stamp entries by one clock (Redis's, given one Redis for both): so
        the bus's notices from the stream's last stored event ``last_stored`` (less
        ``BUS_LAG_MARGIN_SECONDS``) on hold what the stream missed. Near that edge one
        may come again: a list change or a resource update makes the client fetch again,
        while one lost would leave it stale for good. One equal to a message the client
        gets now (replayed, live since the connection was attached, or found earlier
        here) is left out: the fetch that one causes covers both.
        """
        bus, store = self.state.notifications, self.state.events
        stored_at = store.stored_at_ms(last_stored) if isinstance(store, TimedEventStore) else None
        if stored_at is None or not isinstance(bus, ReplayingNotificationBus):
            task_status.started()
            return
        caught: list[tuple[str, Event]] = []
        session.resuming.append(caught)
        task_status.started()
        stream = session.streams.get(STANDALONE)
        connection = stream.listener if stream is not None else None
        sent = [0]
        with anyio.move_on_after(MISSED_BROADCASTS_SECONDS) as bounded:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_cancel_when_left, session, connection, tg.cancel_scope)
                since = stored_at - int(BUS_LAG_MARGIN_SECONDS * 1000)
                await _replay(session, bus, since, replayed, caught, sent)
                tg.cancel_scope.cancel()
        if bounded.cancelled_caught:
            logger.warning(
                "session %s resumed its GET stream, but reading and sending the broadcasts "
                "raised while no replica held it took over %.0f s (is Redis slow?): the "
                "list changes and resource updates not sent by then (%d were) are skipped",
                session.id,
                MISSED_BROADCASTS_SECONDS,
                sent[0],
            )

    # -- the owner's side ------------------------------------------------------------

    async def open_call(
        self, session: LegacySession, request_id: RequestId, stream_id: str | None
    ) -> bool:
        """Record that this replica owns a new call; ``False`` if the id is in use."""
        owner = CallOwner(self.replica_id, request_id, stream_id)
        opened = await self.state.messages.open_call(session.id, owner)
        if opened:
            session.owned_calls.add(request_id)
            self._owning[session.id] = session
        return opened

    async def server_request(self, session: LegacySession, message: JSONObject) -> JSONObject:
        """Give a question of the server's its authenticated wire id (and a
        cancellation of one the same id), and let the state expect one answer."""
        local_id = message.get("id")
        if isinstance(local_id, int) and not isinstance(local_id, bool):
            wire_id = self.ids.mint(session.id, local_id)
            try:
                await self.state.messages.expect_answer(session.id, wire_id, QUESTION_TTL_SECONDS)
            except StateUnavailable as exc:
                self.outage.count_unsaved(QUESTIONS_NOT_RECORDED, exc)
            else:
                self.outage.saved(QUESTIONS_NOT_RECORDED)
            return {**message, "id": wire_id}
        params = as_object(message.get("params"))
        if message.get("method") == CANCELLED and params is not None:
            target = params.get("requestId")
            if isinstance(target, int) and not isinstance(target, bool):
                wire_id = self.ids.mint(session.id, target)
                return {**message, "params": {**params, "requestId": wire_id}}
        return message

    async def call_answered(self, session: LegacySession, request_id: RequestId) -> None:
        if request_id not in session.owned_calls:
            return  # not a recorded call (initialize, a replayed request...)
        session.owned_calls.discard(request_id)
        if not session.owned_calls and self._owning.get(session.id) is session:
            del self._owning[session.id]
        try:
            await self.state.messages.end_call(session.id, request_id)
        except StateUnavailable as exc:
            self.outage.count_unsaved(CALLS_NOT_CLOSED, exc)
        else:
            self.outage.saved(CALLS_NOT_CLOSED)

    # -- any replica's side ----------------------------------------------------------

    async def route_answer(
        self, session: LegacySession, message: JSONObject
    ) -> JSONObject | Response:
        """A client's response to a question, checked and claimed: the message with its
        local id when this process asked the question, else its POST's response (202
        once in the owner's inbox, or the refusal)."""
        wire_id = message.get("id")
        read = self.ids.read(session.id, wire_id)
        if read is None and isinstance(wire_id, str):
            await self.agree_key()  # minted with a key made since this process last looked?
            read = self.ids.read(session.id, wire_id)
        if read is None:
            return error_response(
                400,
                INVALID_REQUEST,
                f"Invalid response: id {wire_id!r} is not the id of a request this server "
                "sent in this session. Answer a request with the id it came with.",
            )
        owner, local_id = read
        assert isinstance(wire_id, str)
        local: JSONObject = {**message, "id": local_id}
        messages = self.state.messages
        if owner == self.replica_id:
            if await messages.claim_answer(session.id, wire_id):
                return local
        else:
            refusal: JSONObject = {"jsonrpc": "2.0", "id": local_id, "error": _DECLARED_STOPPED}
            forwarded = await messages.forward_answer(owner, session.id, wire_id, local, refusal)
            if forwarded is Forwarded.SENT:
                return Response(status_code=202)
            if forwarded is Forwarded.OWNER_STOPPED:
                return _refused_answer(wire_id, "the server process that asked it has stopped")
        return _refused_answer(wire_id, "it was already answered", ALREADY_ANSWERED)

    async def owner_of(self, session_id: str, request_id: RequestId) -> str | None:
        """The replica owning an open call of the session, if another one does."""
        call = await self.state.messages.call_by_request(session_id, request_id)
        if call is None or call.replica_id == self.replica_id:
            return None
        return call.replica_id

    async def follow(
        self,
        session_id: str,
        stream_key: str,
        call: CallOwner,
        after_event_id: str,
        send: Callable[[str, bytes], Awaitable[None]],
    ) -> None:
        """Pass on the events another replica stores on a call's stream until its
        answer; if the owner dies first, end the call with an error on the stream."""
        store = self.state.events
        assert isinstance(store, FollowableEventStore)
        wait = self.state.replicas.heartbeat_seconds
        last = after_event_id
        while True:
            events = await store.wait_events_after(stream_key, last, wait)
            for event_id, data in events:
                last = event_id
                await send(event_id, data)
                if _answers(data, call.request_id):
                    return
            if not events and not await self.state.replicas.is_alive(call.replica_id):
                await self._orphaned(session_id, stream_key, call)

    async def _orphaned(self, session_id: str, stream_key: str, call: CallOwner) -> None:
        """The owner of ``call`` died: whoever closes the call first writes its error
        onto the stream (the follow loop then passes it on and ends)."""
        await self.state.replicas.declare_stopped(call.replica_id)
        if await self.state.messages.close_call(session_id, call.request_id) is None:
            return  # another replica did, or the answer came after all
        logger.warning(
            "replica %s stopped while owning call %r of session %s: ending it with an error",
            call.replica_id,
            call.request_id,
            session_id,
        )
        error = {
            "code": CONNECTION_CLOSED,
            "message": (
                "Server closed: the server process handling this request stopped before "
                "answering it. Send the request again."
            ),
            "data": {"reason": SERVER_CLOSED},
        }
        answer: JSONObject = {"jsonrpc": "2.0", "id": call.request_id, "error": error}
        await self.state.events.store_event(stream_key, encode(answer))

    async def inbox(self, deliver: Callable[[str, JSONObject], Awaitable[None]]) -> None:
        """Hand each message in this replica's inbox to ``deliver`` until cancelled;
        the shared state going away pauses the inbox, never ends it."""
        while True:
            try:
                async for session_id, message in self.state.messages.inbox():
                    await deliver(session_id, message)
            except StateUnavailable as exc:
                self.outage.failed(exc)
                await anyio.sleep(self.state.replicas.heartbeat_seconds)

    async def heartbeat(self) -> None:
        """Beat, and agree on the question key, every ``heartbeat_seconds`` until
        cancelled."""
        interval = self.state.replicas.heartbeat_seconds
        # Set from a lapsed beat until the check is done: the beat after a failed check
        # reads as kept, and would forget that one is due.
        check_owned_calls = False
        while True:
            try:
                check_owned_calls |= not await self.state.replicas.beat(self.replica_id)
                if check_owned_calls:
                    await self._check_owned_calls()
                    check_owned_calls = False
                else:  # a session ended with a call unanswered: let it go
                    closed = [key for key, session in self._owning.items() if session.closed]
                    for session_id in closed:
                        del self._owning[session_id]
                await self.agree_key()
            except StateUnavailable as exc:
                self.outage.failed(exc)
            else:
                self.outage.beat()
            await anyio.sleep(interval)

    async def _check_owned_calls(self) -> None:
        """This process's beat had lapsed, or the shared state lost its data: a session
        none of whose calls here is recorded any more lost its record, or another
        replica ended those calls for this one; either way no answer can reach them.
        End this process's connection for it, answering them with an error, so
        nothing waits for ever."""
        messages = self.state.messages
        for session_id, session in list(self._owning.items()):
            if session.closed or not session.owned_calls:
                del self._owning[session_id]
                continue
            for request_id in list(session.owned_calls):
                if await messages.call_by_request(session_id, request_id) is not None:
                    break
            else:
                logger.warning(
                    "session %s with calls owned here is no longer in the shared state: "
                    "ending it here",
                    session_id,
                )
                del self._owning[session_id]
                await session.close(
                    "the server's shared state no longer has this session's calls (Redis "
                    "lost its data, or another server process ended them while this one "
                    "was unresponsive); send the request again"
                )

    async def agree_key(self) -> None:
        """Mint question ids with the key the replicas agree on now, and accept those
        minted with any key used recently (Redis may have lost the key, and a replica
        started since then made another)."""
        key, recent = await self.state.agree_question_key(self.ids.key)
        if key != self.ids.key:
            logger.warning(
                "the question-id key in the shared state changed (it lost its data?): "
                "minting with the new one, still accepting answers to the old"
            )
        self.ids.use(key, recent)


REPLAY_WATCH_SECONDS = 0.1
"""How often a resume's broadcast replay looks whether its connection has ended: a
session says so only by its state (``closed``, the GET stream's ``listener``), so the
replay looks, rather than running on to ``MISSED_BROADCASTS_SECONDS``."""


async def _cancel_when_left(
    session: LegacySession, connection: object, replay: anyio.CancelScope
) -> None:
    """Cancel ``replay`` once the GET stream's ``connection`` (its listener when the
    replay began) has ended: the session closed, the client left, or another resume
    replaced it."""
    while True:
        stream = session.streams.get(STANDALONE)
        if (
            session.closed
            or stream is None
            or stream.done
            or connection is None
            or stream.listener is not connection
        ):
            replay.cancel()
            return
        await anyio.sleep(REPLAY_WATCH_SECONDS)


async def _replay(
    session: LegacySession,
    bus: ReplayingNotificationBus,
    since: int,
    replayed: list[Event],
    caught: list[tuple[str, Event]],
    sent: list[int],
) -> None:
    """Deliver the broadcasts ``bus`` keeps from ``since`` on that ``session`` wants and
    gets no equal of otherwise (``caught`` stops collecting once they are read),
    counting them in ``sent[0]``; a failure is logged (a task of the app's that failed
    would end every request)."""
    try:
        try:
            found = await bus.notices_since(since, MISSED_BROADCASTS_LIMIT)
        finally:
            session.resuming.remove(caught)
        if not found.complete:
            logger.warning(
                "session %s resumed its GET stream after more broadcasts than a resume "
                "reads (the newest %d of the bus) or than the bus keeps: the older list "
                "changes and resource updates it may have missed are skipped; it gets the "
                "newest",
                session.id,
                MISSED_BROADCASTS_LIMIT,
            )
        given = _broadcasts(data for _, data in replayed)
        given |= _broadcasts(data for _, (_, data) in caught)
        for notice in found.notices:
            message = _wanted(session, notice)
            if message is None or _broadcast_key(message) in given:
                continue
            if session.closed:
                return
            given.add(_broadcast_key(message))
            await session.deliver_broadcast(message)
            sent[0] += 1
    except ConnectionError as exc:
        logger.warning(
            "session %s resumed its GET stream, but the broadcasts raised while no replica "
            "held it could not be read, so it misses them: %s",
            session.id,
            exc,
        )
    except Exception:
        logger.exception(
            "session %s resumed its GET stream, but sending the broadcasts raised while no "
            "replica held it failed: it misses them",
            session.id,
        )


def _answers(data: bytes, request_id: RequestId) -> bool:
    """Whether an event's data is the response to ``request_id``."""
    if not data:
        return False
    decoded = decode(data)
    message = as_object(getattr(decoded, "message", None))
    return (
        message is not None
        and "method" not in message
        and as_request_id(message.get("id")) == request_id
    )


def _refused_answer(wire_id: str, why: str, reason: str | None = None) -> Response:
    return error_response(
        409,
        INVALID_REQUEST,
        f"Conflict: the response to request {wire_id!r} was refused: {why}. A request "
        "takes one answer, while its call is open.",
        data=None if reason is None else {"reason": reason},
    )


def _wanted(session: LegacySession, notice: Notice) -> JSONObject | None:
    """A notice as the message ``session`` gets, if it gets it: a list change always, a
    resource update only if the session is subscribed to the resource."""
    if notice.method == _RESOURCE_UPDATED:
        uri = (notice.params or {}).get("uri")
        if not isinstance(uri, str) or not session.subscribed(uri):
            return None
    elif notice.method not in _LIST_CHANGED:
        return None
    message: JSONObject = {"jsonrpc": "2.0", "method": notice.method}
    if notice.params is not None:
        message["params"] = notice.params
    return message


def _broadcast_key(message: JSONObject) -> str:
    """What two equal notifications share (their method and params)."""
    return json.dumps([message.get("method"), message.get("params") or None], sort_keys=True)


def _broadcasts(events: Iterable[bytes]) -> set[str]:
    """The keys of the notifications among SSE events' data."""
    keys: set[str] = set()
    for data in events:
        try:
            message = as_object(json.loads(data)) if data else None
        except ValueError:
            continue
        if message is not None and "method" in message and "id" not in message:
            keys.add(_broadcast_key(message))
    return keys
