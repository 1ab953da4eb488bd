"""Slot arguments: a schedule that asks for them gets its fire's slot, and the slot before it, as
keyword arguments of the task.

SEMANTICS: "a schedule that asks for its slot gets the slot (and the previous slot, if asked) as
keyword arguments; the same slot always gives the same arguments and the same task id, whether it
is sent on time, caught up, backfilled or taken over. A run now passes the instant it was asked
for, marked as manual."

* ``slot_kwarg`` names the keyword the slot is passed under, ``previous_slot_kwarg`` the keyword
  of the schedule's slot before it in ``F(S)`` (:func:`previous_slot`): the spec's, within its
  bounds and without the days its calendar removes, whether or not that slot was sent; ``None``
  when there is none (an interval's first slot, a ``once``, the first slot after ``start_at``).
* Each value is ISO 8601 in UTC, ``2027-01-31T09:00:00Z`` (:func:`~.formats.iso`), a string
  whatever the serializer: every serializer carries it alike, so the same slot gives the same
  message body. (Kombu's json does bring an aware ``datetime`` back as one, since 5.3; msgpack,
  yaml and a custom serializer each do something else.)
* A run now (a manual fire) passes the instant it was asked for as its slot, and as the previous
  slot the schedule's last slot at or before that instant; its message also carries the header
  ``dbeat_manual`` (:func:`slot_kwargs` is the same either way).

:func:`slot_kwargs` builds them from a :class:`~.fires.PublishRequest`, for every path a fire is
published by (on time, catch-up, backfill, taken over, buffered, run now): one place.
"""

from __future__ import annotations

import keyword
from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from .calendars import Calendar
from .errors import ValidationError
from .fires import PublishRequest
from .formats import iso
from .timing import EARLIEST_YEAR, Timing

__all__ = ["MAX_KWARG", "check_slot_kwargs", "previous_slot", "slot_kwargs"]

#: Longest keyword name (the columns hold 100 characters).
MAX_KWARG = 100
#: How far back :func:`previous_slot` looks: no instant celery-dbeat stores is earlier.
_FLOOR = datetime(EARLIEST_YEAR, 1, 1, tzinfo=timezone.utc)
_ONE_MICROSECOND = timedelta(microseconds=1)


def _name(field: str, value: Any) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None  # blank in a form: not passed
    if not isinstance(value, str) or not value.isidentifier() or keyword.iskeyword(value):
        raise ValidationError(
            field, value, "must be a Python identifier, the name of a keyword argument of the task"
        )
    if len(value) > MAX_KWARG:
        raise ValidationError(field, value, f"is longer than {MAX_KWARG} characters")
    return value


def check_slot_kwargs(
    slot_kwarg: Any, previous_slot_kwarg: Any, kwargs: Mapping[str, Any]
) -> tuple[str | None, str | None]:
    """The keyword names as stored (blank: ``None``), or a :class:`ValidationError` naming the
    field: each must be an identifier, the two must differ, and neither may be a key of the
    schedule's own ``kwargs`` (the slot would overwrite it)."""
    names = (
        _name("slot_kwarg", slot_kwarg),
        _name("previous_slot_kwarg", previous_slot_kwarg),
    )
    for field, name in zip(("slot_kwarg", "previous_slot_kwarg"), names, strict=True):
        if name is not None and name in kwargs:
            raise ValidationError(
                field, name, "is a key of kwargs already: the slot would overwrite it"
            )
    if names[0] is not None and names[0] == names[1]:
        raise ValidationError("previous_slot_kwarg", names[1], "is the same keyword as slot_kwarg")
    return names


def previous_slot(
    timing: Timing, slot: datetime, calendar: Calendar | None = None, *, manual: bool = False
) -> datetime | None:
    """The schedule's slot before ``slot`` in ``F(S)``: ``timing``'s (its bounds included),
    skipping the days ``calendar`` removes; ``None`` if there is none. For a ``manual`` fire,
    ``slot`` is the instant a run now was asked for, and the answer is the last slot at or
    before it."""
    before = slot + _ONE_MICROSECOND if manual else slot
    while True:
        found = timing.last_before(before, _FLOOR)
        since = None if found is None or calendar is None else calendar.excluded_since(found)
        if found is None or since is None:
            return found
        # Over the whole run of excluded dates at once (at least past ``found``): as many steps
        # as the calendar has ranges, however many slots they hold.
        before = min(since, found)


def slot_kwargs(request: PublishRequest) -> dict[str, str | None]:
    """The keyword arguments :class:`~.fires.PublishRequest` ``request`` adds to its
    schedule's ``kwargs``: nothing unless its schedule asks for them."""
    added: dict[str, str | None] = {}
    if request.slot_kwarg is not None:
        added[request.slot_kwarg] = iso(request.slot)
    if request.previous_slot_kwarg is not None:
        added[request.previous_slot_kwarg] = iso(request.previous_slot)
    return added
