"""RedBeat's rrule entries as celery-dbeat specs (:mod:`.redbeat` reads them): a plain interval
(``SECONDLY`` to ``WEEKLY`` without ``BY*`` rules) becomes ``Every``, with ``COUNT`` and
``UNTIL`` as ``end_at`` and ``start_at`` placed so that ``DTSTART`` stays a slot; any other rule
becomes ``Rrule``, the same parts from the same ``DTSTART``, read at its UTC offset (RedBeat keeps
an offset, not a zone)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from ..core.formats import iso, seconds_text
from ..core.specs import Every, Rrule

__all__ = ["rrule_fields", "rrule_text"]

UTC = timezone.utc
_FREQUENCIES = ("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY", "SECONDLY")
#: Seconds per period of the frequencies that are plain intervals of elapsed time.
_PERIOD = {"WEEKLY": 7 * 86_400, "DAILY": 86_400, "HOURLY": 3_600, "MINUTELY": 60, "SECONDLY": 1}
_BY_RULES = (
    "bysetpos",
    "bymonth",
    "bymonthday",
    "byyearday",
    "byeaster",
    "byweekno",
    "byweekday",
    "byhour",
    "byminute",
    "bysecond",
)


def _frequency(rule: Mapping[str, Any]) -> str:
    freq = rule.get("freq")
    if isinstance(freq, int) and 0 <= freq < len(_FREQUENCIES):
        return _FREQUENCIES[freq]
    return str(freq).upper()


def rrule_text(rule: Mapping[str, Any]) -> str:
    """An rrule as RFC 5545 spells it (``FREQ=MONTHLY;BYMONTHDAY=-1;...``), to name it."""
    parts = [f"FREQ={_frequency(rule)}"]
    for key in ("interval", "count", *_BY_RULES):
        value = rule.get(key)
        if value is None or (key == "interval" and value == 1):
            continue
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        parts.append(f"{key.upper()}={value}")
    for key in ("dtstart", "until"):
        if isinstance(rule.get(key), datetime):
            parts.append(f"{key.upper()}={rule[key].isoformat()}")
    return ";".join(parts)


def rrule_fields(rule: Mapping[str, Any], last: datetime | None) -> dict[str, Any] | str:
    """The schedule and bounds of an rrule that is a plain interval (``last``: RedBeat's last
    run of it), or why it is not one."""
    freq = _frequency(rule)
    by = [key.upper() for key in _BY_RULES if rule.get(key) not in (None, [], ())]
    interval, dtstart = rule.get("interval") or 1, rule.get("dtstart")
    if by:
        why = f"it has {', '.join(by)}"
    elif freq not in _PERIOD:
        why = f"FREQ={freq} is no fixed length of time"
    elif not isinstance(interval, int) or interval < 1:
        why = f"INTERVAL={interval!r} is not a whole number of at least 1"
    else:
        why = None
    if not isinstance(dtstart, datetime):
        return "has no DTSTART"
    if why:
        return _rrule_spec(rule, dtstart)
    every = timedelta(seconds=_PERIOD[freq] * interval)
    ends = []
    if isinstance(rule.get("count"), int):
        ends.append(dtstart + (rule["count"] - 1) * every)
    if isinstance(rule.get("until"), datetime):
        ends.append(rule["until"])
    fields = {"schedule": Every(every.total_seconds()), "end_at": min(ends) if ends else None}
    if last is not None and last >= dtstart:
        # DTSTART has passed: anchored there, the slots DTSTART + n * every are every
        # occurrence still to come, and start_at is DTSTART, as the rule says.
        return {**fields, "start_at": dtstart}
    # Not run yet: DTSTART itself is an occurrence, and an interval's first slot is one period
    # after its start_at.
    return {**fields, "start_at": dtstart - every, "notes": [_before_dtstart(dtstart, every)]}


def _rrule_spec(rule: Mapping[str, Any], dtstart: datetime) -> dict[str, Any] | str:
    """The ``Rrule`` of a rule that is not a plain interval: RedBeat's dateutil rule, from the
    same DTSTART, read at DTSTART's UTC offset."""
    offset = dtstart.utcoffset() or timedelta(0)
    hours, rest = divmod(int(offset.total_seconds()), 3600)
    if rest:
        return (
            f"DTSTART's UTC offset ({offset}) is not whole hours, and no IANA zone of a fixed "
            "offset holds it: recreate it as an Rrule in its zone"
        )
    # POSIX signs: Etc/GMT-1 is one hour ahead of UTC.
    zone = "UTC" if not hours else f"Etc/GMT{-hours:+d}"
    parts = [f"FREQ={_frequency(rule)}", f"INTERVAL={rule.get('interval') or 1}"]
    if rule.get("wkst") is not None:
        parts.append(f"WKST={_weekday(rule['wkst'])}")
    if rule.get("count") is not None:
        parts.append(f"COUNT={rule['count']}")
    if isinstance(rule.get("until"), datetime):
        parts.append(f"UNTIL={rule['until'].astimezone(UTC):%Y%m%dT%H%M%SZ}")
    for key in _BY_RULES:
        value = rule.get(key)
        if value in (None, [], ()):
            continue
        values = value if isinstance(value, (list, tuple)) else [value]
        if key == "byweekday":
            try:
                values = [_weekday(v) for v in values]
            except (ValueError, IndexError, TypeError):
                return f"BYWEEKDAY={value!r} names no weekday"
        parts.append(f"{key.upper()}={','.join(str(v) for v in values)}")
    wall = dtstart.replace(tzinfo=None)
    text = f"DTSTART;TZID={zone}:{wall:%Y%m%dT%H%M%S}\nRRULE:{';'.join(parts)}"
    return {"schedule": Rrule(text, zone)}


def _weekday(value: Any) -> str:
    """A weekday as RFC 5545 names it: RedBeat writes 0-6 (Monday first), or dateutil's
    weekday object, which its JSON keeps without an ordinal (``weekday(1)``)."""
    if isinstance(value, str) and value.startswith("weekday(") and value.endswith(")"):
        value = value[len("weekday(") : -1]
    return ("MO", "TU", "WE", "TH", "FR", "SA", "SU")[int(value)]


def _before_dtstart(dtstart: datetime, every: timedelta) -> str:
    return (
        f"start_at is one period ({seconds_text(every.total_seconds())}) before DTSTART "
        f"({iso(dtstart)}): an interval's first slot is one period after its start_at, so "
        "DTSTART itself stays an occurrence"
    )
