"""cron(8)'s field grammar: an expression's text, read the way cron reads it, into the fields
croniter is given.

Values, names, ranges, steps and lists are expanded here into plain lists of numbers (``*/20``
in the minute field becomes ``0,20,40``), so croniter only ever walks sets of values, which every
croniter release reads alike: what a step, a range or a name means is decided by this module,
not by the croniter version installed. The readings are cron(8)'s, as cronsim (which follows
Debian's cron) computes them; tests/unit/test_cron_vs_cronsim.py checks the whole grammar:

* ``*`` is the field's whole range; a step ``/S`` takes every S-th value of what it follows;
* a step from one value, ``N/S``, runs to the end of the field: ``N-<end>/S``, so ``59/15`` is
  minute 59 only, and in the day-of-week field, whose end is 7 (Sunday again), ``6/1`` is
  Saturday and Sunday;
* a one-value range ``5-5``, with or without a step, is the value 5;
* a backwards range (``5-1``), a value outside the field and a step of 0 are refused;
* names (``jan``..``dec``, ``sun``..``sat``, any case) only in their own fields; 7 is Sunday.

Quartz's ``L``, ``W`` and ``#`` are no part of cron(8); they are passed to croniter as written,
except that the last Friday of a month may be written ``5L`` (Quartz, cronsim) as well as ``L5``.
"""

from __future__ import annotations

import re
from calendar import monthrange
from collections.abc import Callable

from ..errors import ValidationError

__all__ = ["ALIASES", "FIELD_NAMES", "MAX_EXPRESSION", "CronFields", "read"]

#: Aliases, expanded before classification (so ``@hourly`` is a wildcard expression).
ALIASES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
#: Column size of the stored expression.
MAX_EXPRESSION = 255
FIELD_NAMES = ("minute", "hour", "day of month", "month", "day of week", "second")
#: cron(8)'s range of each field (minute, hour, day of month, month, day of week, second); the
#: day of week runs to 7, Sunday again, so that a range or a step may end on Sunday.
BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7), (0, 59))
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_NAMES = {3: {m: i for i, m in enumerate(_MONTHS, 1)}, 4: {d: i for i, d in enumerate(_WEEKDAYS)}}
# Random ("R") and hashed ("H") fields would give each beat a different slot.
_NONDETERMINISTIC = re.compile(r"^[rh](\(|/|$)")
# One list element of cron(8)'s grammar: "*", a value or a range, then an optional step.
_ELEMENT = re.compile(r"^(?:(\*)|([0-9a-z]+)(?:-([0-9a-z]+))?)(?:/([0-9]*))?$")
# What an element outside cron(8)'s grammar must contain to be one of Quartz's extensions, which
# croniter reads: L (last), W (nearest weekday), # (nth weekday), ? (no value).
_EXTENSION = re.compile(r"[lw#?]")
#: The fields those extensions belong to: day of month, day of week.
_DAY_FIELDS = (2, 4)
_LAST_WEEKDAY = re.compile(r"^[0-7]l$")
# Printable ASCII: croniter releases differ on Unicode digits ("٣") and spaces, cron has neither.
_ASCII = re.compile(r"^[\x20-\x7e\t]*$")
# Days in each month at most (February in a leap year), for a day field no month can hold.
_LONGEST = {month: monthrange(2024, month)[1] for month in range(1, 13)}


class CronFields:
    """An expression as written (aliases expanded) and as croniter is given it."""

    __slots__ = ("canonical", "written")

    def __init__(self, written: list[str], canonical: list[str]) -> None:
        #: The fields as the user wrote them: whether a field starts with ``*`` decides the DST
        #: rules and how the day fields combine.
        self.written = written
        #: ``*`` or a comma-separated list of numbers (and any L/W/# element, as written).
        self.canonical = canonical


def read(expr: str) -> CronFields:
    """The fields of ``expr``; :class:`ValidationError` (field ``cron``) names what is wrong."""
    if not isinstance(expr, str) or not expr.strip():
        raise ValidationError("cron", expr, "must be a cron expression such as '*/5 * * * *'")
    text = expr.strip()
    if len(text) > MAX_EXPRESSION:
        raise ValidationError("cron", expr, f"is longer than {MAX_EXPRESSION} characters")
    if not _ASCII.match(text):
        bad = next(c for c in text if not _ASCII.match(c))
        raise ValidationError(
            "cron",
            expr,
            f"contains {bad!r}; write cron fields in ASCII digits, names, '*', ',', '-' and '/', "
            "separated by spaces",
        )
    if text.startswith("@"):
        if text.lower() not in ALIASES:
            raise ValidationError(
                "cron", expr, f"unknown alias; use one of {', '.join(sorted(ALIASES))}"
            )
        text = ALIASES[text.lower()]
    written = text.split()
    if len(written) not in (5, 6):
        raise ValidationError(
            "cron",
            expr,
            f"has {len(written)} fields; expected 5 (m h dom mon dow) or 6 (+ seconds)",
        )
    return CronFields(written, [_field(expr, index, value) for index, value in enumerate(written)])


def never_matches(day: str, month: str) -> bool:
    """Whether the canonical day-of-month field names no day that any of the months has
    (``30`` in February): cron(8) then fires on the day-of-week field's days alone, when the
    two fields are ORed."""
    if not day.replace(",", "").isdigit():
        return False  # "*" or an L/W element
    months = range(1, 13) if month == "*" else [int(m) for m in month.split(",") if m.isdigit()]
    if not months:
        return False
    return min(int(d) for d in day.split(",")) > max(_LONGEST[m] for m in months)


def _field(expr: str, index: int, value: str) -> str:
    if value == "*":
        return value
    values: set[int] = set()
    extensions: list[str] = []
    for element in value.lower().split(","):
        if _NONDETERMINISTIC.match(element):
            raise ValidationError(
                "cron",
                expr,
                f"{FIELD_NAMES[index]} field {value!r}: random (R) and hashed (H) values are not "
                "supported, since every beat must compute the same slots",
            )
        if index == 4 and _LAST_WEEKDAY.match(element):
            # Quartz and cronsim write the last Friday "5L", croniter "L5".
            extensions.append(f"l{int(element[:-1]) % 7}")
            continue
        try:
            values.update(_element(expr, index, value, element))
        except ValidationError:
            if not _EXTENSION.search(element):
                raise
            if index not in _DAY_FIELDS:
                raise ValidationError(
                    "cron",
                    expr,
                    f"{FIELD_NAMES[index]} field {value!r}: L, W, # and ? belong to the day"
                    " fields (day of month, day of week) only",
                ) from None
            extensions.append(element)  # not cron(8)'s: croniter reads it, or refuses it
    if index == 4 and 7 in values:  # Sunday, as croniter reads in every field count
        values.discard(7)
        values.add(0)
    return ",".join([*map(str, sorted(values)), *extensions])


def _element(expr: str, index: int, value: str, element: str) -> range:
    """The values of one list element (``*``, ``N``, ``A-B``, each with an optional ``/S``)."""
    low, high = BOUNDS[index]

    def refuse(problem: str) -> ValidationError:
        return ValidationError("cron", expr, f"{FIELD_NAMES[index]} field {value!r}: {problem}")

    match = _ELEMENT.match(element)
    if match is None:
        raise refuse(
            f"{element!r} is not a value, a range (A-B), '*' or one of them with a step (/S)"
        )
    star, first, last, step_text = match.groups()
    step = 1
    if step_text is not None:
        if not step_text or int(step_text) == 0:
            raise refuse(f"{element!r} needs a step of 1 or more after '/'")
        step = int(step_text)
    if star:
        return range(low, high + 1, step)
    start = _number(index, first, refuse)
    if last is None:
        # "N/S": cron(8) as cronsim and Debian read it, from N to the end of the field.
        return range(start, (high if step_text is not None else start) + 1, step)
    end = _number(index, last, refuse)
    if start > end:
        hint = " (Sunday at the end of a range is 7: 5-7)" if index == 4 and end == 0 else ""
        raise refuse(f"range {element!r} runs backwards{hint}")
    return range(start, end + 1, step)


def _number(index: int, token: str, refuse: Callable[[str], ValidationError]) -> int:
    low, high = BOUNDS[index]
    names = _NAMES.get(index, {})
    if token.isdigit():
        number = int(token)
    elif token in names:
        return names[token]
    else:
        hint = f" or a name ({', '.join(names)})" if names else ""
        raise refuse(f"{token!r} is not a number{hint}")
    if not low <= number <= high:
        raise refuse(f"{token} is outside {low}-{high}")
    return number
