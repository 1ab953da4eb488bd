"""Reading the text of an ``rrule`` spec (:mod:`.rrule` says what is read): its content lines,
their date-times, each rule's parts, checked (ranges, COUNT and UNTIL, a rule that can never
fire) and written out so that a rule can start again at a later period with the same wall
times. Nothing here walks a rule for slots.
"""

from __future__ import annotations

import re
from datetime import datetime, time, timedelta, timezone
from typing import Any, NamedTuple

from dateutil.relativedelta import relativedelta
from dateutil.rrule import rrulestr

from ..errors import ValidationError

__all__ = [
    "HORIZON_YEARS",
    "MAX_COUNT",
    "WEEKDAYS",
    "RuleParts",
    "join_parts",
    "lines",
    "rule_parts",
    "stamp",
    "unsupported",
    "zone_of",
]

#: A ``COUNT`` is expanded once when the spec is read; above this, ``UNTIL`` says the same.
MAX_COUNT = 100_000
#: A rule without an instant this many years after its start is refused (the Gregorian calendar
#: repeats every 400 years: a rule without one there has none ever).
HORIZON_YEARS = 400

_FREQS = ("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY", "SECONDLY")
WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_DAY_PARTS = ("BYWEEKNO", "BYYEARDAY", "BYMONTHDAY", "BYDAY", "BYEASTER")
#: The values RFC 5545 allows in each numeric BY part (zero never; negative from the end where a
#: range is given as ``(-most, most)``). dateutil checks some only when it walks the rule.
_RANGES = {
    "BYSECOND": (0, 59),
    "BYMINUTE": (0, 59),
    "BYHOUR": (0, 23),
    "BYMONTH": (1, 12),
    "BYMONTHDAY": (-31, 31),
    "BYYEARDAY": (-366, 366),
    "BYWEEKNO": (-53, 53),
    "BYSETPOS": (-366, 366),
}
_STAMP = re.compile(r"(\d{8})(?:T(\d{6})(Z?))?\Z")


class RuleParts(NamedTuple):
    """One rule as read: its parts (the defaults written out, COUNT as UNTIL), its frequency
    (0 YEARLY to 6 SECONDLY), its INTERVAL, and the instant its ``UNTIL`` in UTC sets."""

    parts: tuple[tuple[str, str], ...]
    freq: int
    interval: int
    until: datetime | None


def zone_of(text: Any, timezone: str | None) -> str:
    """The zone a recurrence set is read in: the one its ``DTSTART`` names (``TZID``, or UTC for
    a ``Z`` value) unless ``timezone`` names another than UTC (:func:`_parse` refuses the two
    when they differ), else ``timezone``, else UTC."""
    if timezone not in (None, "", "UTC"):
        return str(timezone)
    try:
        starts = [line for line in lines(text) if line[0] == "DTSTART"]
        named = stamp(text, *starts[0])[0] if len(starts) == 1 else None
    except (ValidationError, TypeError, AttributeError):
        named = None
    return named or "UTC"


def unsupported(name: str) -> str:
    """Why a content line other than DTSTART, RRULE, RDATE or EXDATE is refused."""
    if name == "EXRULE":
        return "EXRULE is deprecated by RFC 5545 and not supported: list the dates in EXDATE"
    return f"has a {name} line: only DTSTART, RRULE, RDATE and EXDATE are read"


def lines(text: str) -> list[tuple[str, str, str]]:
    """``(NAME, params, value)`` of each content line (RFC 5545 folding undone); a bare rule
    (``FREQ=...``) is an RRULE."""
    unfolded = re.sub(r"\r?\n[ \t]", "", text.strip())
    found = []
    for raw in unfolded.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.upper().startswith("FREQ="):
            line = "RRULE:" + line
        head, colon, value = line.partition(":")
        if not colon or not value.strip():
            raise ValidationError("rrule", text, f"line {line!r} is not NAME:VALUE")
        name, _, params = head.partition(";")
        found.append((name.strip().upper(), params.strip(), value.strip()))
    return found


def stamp(text: str, name: str, params: str, value: str) -> tuple[str | None, datetime]:
    """The zone (``TZID``, ``"UTC"`` for a ``Z`` value, ``None`` when floating) and the wall
    time of a DTSTART, RDATE or EXDATE value."""
    options = dict(p.partition("=")[::2] for p in params.split(";") if p)
    options = {k.strip().upper(): v.strip().strip('"') for k, v in options.items()}
    if options.get("VALUE", "DATE-TIME").upper() == "PERIOD" or "/" in value:
        raise ValidationError("rrule", text, f"{name} periods are not supported: give instants")
    match = _STAMP.match(value.strip())
    if match is None:
        raise ValidationError(
            "rrule", text, f"{name} value {value!r} is not a date-time such as 20260130T180000"
        )
    day, clock, utc = match.groups()
    try:
        wall = datetime.strptime(day + (clock or "000000"), "%Y%m%d%H%M%S")
    except ValueError:
        raise ValidationError("rrule", text, f"{name} value {value!r} is not a date") from None
    zone = "UTC" if utc else options.get("TZID")
    return zone, wall


def rule_parts(text: str, value: str, start: datetime, dtstart_given: bool) -> RuleParts:
    """One ``RRULE`` value read and checked, with the parts dateutil takes from ``start`` (the
    naive DTSTART) written out and a ``COUNT`` turned into the ``UNTIL`` it ends at."""
    parts: dict[str, str] = {}
    for piece in value.split(";"):
        key, equals, part = piece.partition("=")
        key = key.strip().upper()
        if not equals or not key:
            raise ValidationError("rrule", text, f"rule part {piece!r} is not NAME=VALUE")
        if key in parts:
            raise ValidationError("rrule", text, f"rule part {key} is given twice")
        parts[key] = part.strip().upper()
    for key, (least, most) in _RANGES.items():
        for item in parts.get(key, "").split(",") if key in parts else ():
            if (
                not re.fullmatch(r"[+-]?\d{1,3}", item)
                or not least <= int(item) <= most
                or (least < 0 and int(item) == 0)
            ):
                problem = (
                    f"{key}={parts[key]}: each value must be a whole number from {least} to {most}"
                )
                raise ValidationError("rrule", text, problem + (", not 0" if least < 0 else ""))
    freq_name = parts.get("FREQ")
    if freq_name not in _FREQS:
        raise ValidationError("rrule", text, f"FREQ must be one of {', '.join(_FREQS)}")
    freq = _FREQS.index(freq_name)
    if "COUNT" in parts and not dtstart_given:
        problem = "COUNT counts from DTSTART: give one (DTSTART;TZID=Europe/London:20270101T090000)"
        raise ValidationError("rrule", text, problem)
    if "COUNT" in parts and "UNTIL" in parts:
        raise ValidationError("rrule", text, "gives both COUNT and UNTIL (RFC 5545: one or none)")
    until: datetime | None = None
    if parts.get("UNTIL", "").endswith("Z"):
        found = _STAMP.match(parts.pop("UNTIL"))
        if found is None:
            raise ValidationError(
                "rrule", text, "UNTIL is not a date-time such as 20261231T000000Z"
            )
        until = datetime.strptime(found[1] + (found[2] or "000000"), "%Y%m%d%H%M%S")
        until = until.replace(tzinfo=timezone.utc)
    try:
        interval = int(parts.get("INTERVAL", "1"))
        if interval < 1:
            raise ValueError("INTERVAL must be 1 or more")
        count = int(parts["COUNT"]) if "COUNT" in parts else None
        if count is not None and not 1 <= count <= MAX_COUNT:
            raise ValueError(f"COUNT must lie between 1 and {MAX_COUNT} (use UNTIL)")
        rrulestr("RRULE:" + join_parts(parts), dtstart=start)
        parts.update(_defaults(parts, freq, start))
        _check_reachable(text, parts, freq, start)
        if count is not None:
            # COUNT counts from DTSTART: it ends at its last wall time, which UNTIL says too.
            last = list(rrulestr("RRULE:" + join_parts(parts), dtstart=start))[-1]
            del parts["COUNT"]
            parts["UNTIL"] = last.strftime("%Y%m%dT%H%M%S")
    except (ValueError, TypeError, OverflowError, KeyError, IndexError) as exc:
        raise ValidationError("rrule", text, f"rule {value!r}: {exc}") from None
    return RuleParts(tuple(parts.items()), freq, interval, until)


def join_parts(parts: dict[str, str]) -> str:
    """Rule parts as RFC 5545 writes them (``FREQ=DAILY;BYHOUR=9``)."""
    return ";".join(f"{k}={v}" for k, v in parts.items())


def _defaults(parts: dict[str, str], freq: int, start: datetime) -> dict[str, str]:
    """The parts dateutil takes from DTSTART when the rule leaves them out, written out: a rule
    that starts again at a later period keeps the same wall times."""
    found: dict[str, str] = {}
    if not any(p in parts for p in _DAY_PARTS):
        if freq == 0:  # YEARLY
            found.setdefault("BYMONTH", parts.get("BYMONTH", str(start.month)))
            found["BYMONTHDAY"] = str(start.day)
        elif freq == 1:  # MONTHLY
            found["BYMONTHDAY"] = str(start.day)
        elif freq == 2:  # WEEKLY
            found["BYDAY"] = WEEKDAYS[start.weekday()]
    for part, below, value in (
        ("BYHOUR", 4, start.hour),
        ("BYMINUTE", 5, start.minute),
        ("BYSECOND", 6, start.second),
    ):
        if part not in parts and freq < below:
            found[part] = str(value)
    return found


def _check_reachable(text: str, parts: dict[str, str], freq: int, start: datetime) -> None:
    """Refuse a rule with no wall time within :data:`HORIZON_YEARS` of its start. dateutil
    would search a rule whose days never match up to the year 9999, a day (or a minute) at a
    time: the days a weekly or finer rule may fire on are looked for first, by a YEARLY rule of
    its day parts, which expands a year at a time."""
    horizon = start + relativedelta(years=HORIZON_YEARS)
    until = min(_until_wall(parts), horizon).strftime("%Y%m%dT%H%M%S")
    bounded = {k: v for k, v in parts.items() if k != "COUNT"} | {"UNTIL": until}
    days = {k: v for k, v in parts.items() if k in (*_DAY_PARTS, "BYMONTH", "WKST")}
    found: datetime | None = start
    try:
        if freq >= 2 and set(days) - {"WKST"}:
            midnight = datetime.combine(start.date(), time.min)
            probe = rrulestr(
                f"RRULE:FREQ=YEARLY;{join_parts(days)};UNTIL={until}", dtstart=midnight
            )
            found = probe.after(midnight, inc=True)
        if found is not None:
            found = rrulestr("RRULE:" + join_parts(bounded), dtstart=start).after(start, inc=True)
    except (ValueError, TypeError) as exc:  # "byxxx generates an empty set", when walked
        raise ValidationError("rrule", text, f"rule {join_parts(parts)!r}: {exc}") from None
    if found is None:
        problem = (
            f"rule {join_parts(parts)!r} yields no instant within {HORIZON_YEARS} years of {start}"
        )
        raise ValidationError("rrule", text, problem)


def _until_wall(parts: dict[str, str]) -> datetime:
    until = parts.get("UNTIL")
    if until is None:
        return datetime.max.replace(microsecond=0) - timedelta(days=1)
    match = _STAMP.match(until)
    assert match is not None  # read by dateutil already
    return datetime.strptime(match[1] + (match[2] or "000000"), "%Y%m%d%H%M%S")
