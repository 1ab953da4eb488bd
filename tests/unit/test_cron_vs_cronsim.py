"""An independent check of the slot maths: random five-field expressions, any start within two
years, compared with cronsim (which follows Debian cron).

In UTC there is no DST, so the two must agree exactly on every expression. Expressions use the
syntax both libraries read the same way: values, lists, ranges and ``*/step`` (cronsim rejects
``N/S`` without a range, which celery-dbeat reads as cronie does).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from itertools import islice

import cronsim
from hypothesis import given, settings
from hypothesis import strategies as st

from celery_dbeat.timing import CronSpec

UTC = timezone.utc
START = datetime(2025, 1, 1, tzinfo=UTC)
HORIZON = timedelta(days=2 * 365)


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    value = st.integers(low, high)
    single = value.map(str)
    # One-value ranges ("5-5") are left out: cronsim reads "0-0/1" as every minute, celery-dbeat
    # as minute 0 (tests/unit/test_cron.py pins ours).
    span = (
        st.tuples(value, value).filter(lambda p: p[0] != p[1]).map(lambda p: f"{min(p)}-{max(p)}")
    )
    stepped = st.tuples(span, st.integers(1, max(1, high - low))).map(lambda p: f"{p[0]}/{p[1]}")
    every = st.integers(1, max(1, high - low)).map(lambda n: f"*/{n}")
    listed = st.lists(st.one_of(single, span), min_size=2, max_size=3).map(",".join)
    return st.one_of(st.just("*"), single, span, stepped, every, listed)


@st.composite
def _case(draw: st.DrawFn) -> tuple[str, datetime]:
    fields = [
        draw(_field(0, 59)),
        draw(_field(0, 23)),
        draw(st.one_of(st.just("*"), _field(1, 28))),
        draw(st.one_of(st.just("*"), _field(1, 12))),
        draw(st.one_of(st.just("*"), _field(0, 6))),
    ]
    offset = draw(st.integers(0, int(HORIZON.total_seconds())))
    return " ".join(fields), START + timedelta(seconds=offset)


@settings(max_examples=300, deadline=None)
@given(_case())
def test_random_expressions_agree_with_cronsim_in_utc_over_two_years(
    case: tuple[str, datetime],
) -> None:
    expr, start = case
    ours = list(islice(CronSpec.parse(expr, "UTC").slots_after(start), 20))
    reference = [t.astimezone(UTC) for t in islice(cronsim.CronSim(expr, start), 20)]
    assert ours == reference, expr
