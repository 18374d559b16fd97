"""A test server whose tools return the shapes whose output schemas other SDKs' clients
once refused, or whose structured content they found breaking the schema:

- models whose schemas pydantic writes with ``$defs``: a list of models (wrapped in
  ``result``), a dict of models (sent as it is, its schema an object whose
  ``additionalProperties`` refer to the model) and a recursive model; the references
  must resolve where they stand;
- values pydantic writes differently from what its validation schema says: a naive
  ``datetime`` and ``time`` (no UTC offset, which the ``date-time`` and ``time`` formats
  require), a negative ``timedelta`` (``-PT1H``, which ``duration`` has no sign for), a
  computed field of a model that forbids extra fields, and a field with its own
  serializer.

Run over stdio: ``python tests/servers/structured_server.py``.
"""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from pydantic import BaseModel, ConfigDict, computed_field, field_serializer

from answerback.server import MCPServer

mcp = MCPServer("Structured")


class Station(BaseModel):
    city: str
    celsius: int


class Region(BaseModel):
    name: str
    parts: list[Region]


@mcp.tool()
def stations() -> list[Station]:
    """Two stations: the output schema's items refer to ``#/$defs/Station``."""
    return [Station(city="Oslo", celsius=14), Station(city="Bergen", celsius=11)]


@mcp.tool()
def regions() -> Region:
    """A recursive model: pydantic writes its schema as a reference to its definition."""
    return Region(name="Norway", parts=[Region(name="Vestland", parts=[])])


class Departure(BaseModel):
    train: str
    leaves: datetime


class Fare(BaseModel):
    model_config = ConfigDict(extra="forbid")
    adults: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def total(self) -> int:
        return self.adults * 90


class Stamped(BaseModel):
    at: datetime

    @field_serializer("at")
    def as_epoch_seconds(self, value: datetime) -> int:
        return int(value.timestamp())


@mcp.tool()
def departures() -> list[Departure]:
    """A naive ``datetime`` in a model, as ``datetime.now()`` gives."""
    return [Departure(train="Bergensbanen", leaves=datetime(2026, 12, 6, 8, 25))]


@mcp.tool()
def timetable() -> dict[str, Departure]:
    """Departures by platform: the dict itself is the structured content."""
    return {"1": Departure(train="Dovrebanen", leaves=datetime(2026, 12, 6, 9, 2))}


@mcp.tool()
def opening_time() -> time:
    """A naive ``time``."""
    return time(9, 30)


@mcp.tool()
def delay() -> timedelta:
    """A negative ``timedelta`` (the train is early)."""
    return timedelta(minutes=-2)


@mcp.tool()
def fare() -> Fare:
    """A computed field of a model that forbids extra fields."""
    return Fare(adults=2)


@mcp.tool()
def stamped() -> Stamped:
    """A field whose serializer sends a number where its annotation says ``datetime``."""
    return Stamped(at=datetime(2026, 1, 1, tzinfo=UTC))


if __name__ == "__main__":
    mcp.run()
