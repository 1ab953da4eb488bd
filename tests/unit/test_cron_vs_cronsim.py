"""cron(8) across the whole grammar: random expressions, any start within two years, compared
with cronsim (which follows Debian's cron).

Every field draws from all of cron(8)'s syntax: ``*``, values, names in any case, ranges (one-value
ranges too), steps after ``*``, after a value (running to the end of the field, whose end in the
day-of-week field is 7) and after a range, steps past the field's size, lists of all of these,
Sunday as 0 and as 7, five fields or six (seconds). In UTC there is no DST, so the two must
agree on every slot, and refuse the same expressions (a day no chosen month has).

One reading of cronsim's is not cron(8)'s, and cronsim is given cron(8)'s reading instead:
a one-value range with a step, ``5-5/15``, is the value 5 in cron(8) (cronie's ``get_range``
walks the range 5..5); cronsim takes it for ``5/15`` (5 to the end of the field).
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from itertools import islice

import cronsim
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from celery_dbeat.core.errors import ValidationError
from celery_dbeat.core.timing import CronSpec

UTC = timezone.utc
START = datetime(2025, 1, 1, tzinfo=UTC)
HORIZON = timedelta(days=2 * 365)
#: Slots compared from each start, and how far ahead (a 29 February on a Monday is years away).
SLOTS = 12
REACH = timedelta(days=30 * 366)
#: cron(8)'s range of each field, in celery-dbeat's order: minute, hour, day of month, month,
#: day of week (7 is Sunday again), second.
BOUNDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7), (0, 59))
NAMES = {
    3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
    4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
}
#: What croniter is given: "*" or a list of values (cron(8)'s grammar is read by celery-dbeat).
VALUES_ONLY = re.compile(r"^(\*|\d+(,\d+)*)$")


def _token(index: int, number: int) -> st.SearchStrategy[str]:
    """``number`` as a number or, in the month and day-of-week fields, a name in any case."""
    low = BOUNDS[index][0]
    names = NAMES.get(index, [])
    if not 0 <= number - low < len(names):
        return st.just(str(number))
    name = names[number - low]
    return st.sampled_from([str(number), name, name.upper(), name.capitalize()])


@st.composite
def _element(draw: st.DrawFn, index: int) -> tuple[str, str]:
    """One list element: (as celery-dbeat is given it, as cronsim is)."""
    low, high = BOUNDS[index]
    shape = draw(st.sampled_from(["*", "*/S", "N", "N/S", "A-B", "A-B/S"]))
    step = draw(st.integers(1, high - low + 2))
    first, last = sorted(draw(st.lists(st.integers(low, high), min_size=2, max_size=2)))
    a, b = draw(_token(index, first)), draw(_token(index, last))
    if shape == "*":
        return "*", "*"
    if shape == "*/S":
        return f"*/{step}", f"*/{step}"
    if shape == "N":
        return a, a
    if shape == "N/S":
        return f"{a}/{step}", f"{a}/{step}"
    if shape == "A-B":
        return f"{a}-{b}", f"{a}-{b}"
    # cron(8) walks the range; cronsim reads a one-value range with a step as "A/S".
    return f"{a}-{b}/{step}", (a if first == last else f"{a}-{b}/{step}")


@st.composite
def _field(draw: st.DrawFn, index: int) -> tuple[str, str]:
    elements = draw(st.lists(_element(index), min_size=1, max_size=3))
    return ",".join(e[0] for e in elements), ",".join(e[1] for e in elements)


@st.composite
def _case(draw: st.DrawFn) -> tuple[str, str, datetime]:
    """(expression, cronsim's expression, start)."""
    count = draw(st.sampled_from([5, 5, 5, 6]))
    fields = [draw(_field(index)) for index in range(count)]
    ours = " ".join(f[0] for f in fields)
    theirs = [f[1] for f in fields]
    if count == 6:  # cronsim reads the seconds first, celery-dbeat (as croniter) last
        theirs.insert(0, theirs.pop())
    offset = draw(st.integers(0, int(HORIZON.total_seconds())))
    return ours, " ".join(theirs), START + timedelta(seconds=offset)


def _slots(slots: object, start: datetime) -> list[datetime]:
    within = (t.astimezone(UTC) for t in slots)  # type: ignore[attr-defined]
    return [t for t in islice(within, SLOTS) if t <= start + REACH]


@settings(max_examples=300, deadline=None)
@given(_case())
@example(("59/15 * * * *", "59/15 * * * *", START)).via("minute 59 only")
@example(("0 0 * * 6/1", "0 0 * * 6/1", START)).via("Saturday to the end of the week: Sunday")
@example(("0 0 * * MON/2", "0 0 * * MON/2", START)).via("Monday, Wednesday, Friday, Sunday")
@example(("0 0 * * 7/1", "0 0 * * 7/1", START)).via("Sunday written 7, with a step")
@example(("5-5 * * * *", "5-5 * * * *", START)).via("a one-value range")
@example(("5-5/15 * * * *", "5 * * * *", START)).via("a one-value range with a step")
@example(("0 0 30 feb mon", "0 0 30 feb mon", START)).via("no 30 February: Mondays alone")
@example(("0 0 * * 7 0", "0 0 0 * * 7", START)).via("Sunday as 7 with a seconds field")
@example(("0 0 31 2,4 *", "0 0 31 2,4 *", START)).via("no month has the day: refused")
def test_the_whole_cron_grammar_agrees_with_cronsim_in_utc(case: tuple[str, str, datetime]) -> None:
    expr, reference, start = case
    try:
        theirs = _slots(cronsim.CronSim(reference, start), start)
    except cronsim.CronSimError:
        with pytest.raises(ValidationError):
            CronSpec.parse(expr, "UTC")
        return
    spec = CronSpec.parse(expr, "UTC")
    assert all(VALUES_ONLY.match(field) for field in spec.fields), spec.fields
    assert _slots(spec.slots_after(start), start) == theirs, (expr, reference)
