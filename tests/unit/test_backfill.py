"""Which slots a backfill asks for (celery_dbeat.core.backfill): the range's slots, and a range
holding more than the limit refused having counted little more than the limit, however many it
holds."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import pytest

from celery_dbeat.core.backfill import backfill_slots
from celery_dbeat.core.errors import ValidationError
from celery_dbeat.core.timing import CronSpec, DstNote, Timing
from tests.unit.conftest import utc

NOW = utc("2026-01-01T00:00Z")


@dataclass
class Drawn:
    """A spec that keeps how many slots were drawn from it and which stretches it counted."""

    spec: CronSpec
    drawn: int = 0
    counted: list[tuple[datetime, datetime]] = field(default_factory=list)

    def slots_after(self, after: datetime) -> Iterator[datetime]:
        for slot in self.spec.slots_after(after):
            self.drawn += 1
            yield slot

    def count(self, after: datetime, until: datetime) -> int:
        self.counted.append((after, until))
        return self.spec.count(after, until)

    def dst_notes(self, after: datetime, until: datetime) -> list[DstNote]:
        return self.spec.dst_notes(after, until)


def _every_second() -> Drawn:
    return Drawn(CronSpec.parse("* * * * * *", "Europe/London"))


def test_the_slots_of_the_range_both_ends_included() -> None:
    spec = _every_second()
    slots = backfill_slots(Timing(spec), NOW - timedelta(seconds=3), NOW, NOW, limit=4)
    assert slots == [NOW - timedelta(seconds=n) for n in (3, 2, 1, 0)]


@pytest.mark.parametrize(
    "span",
    [
        pytest.param(timedelta(seconds=11), id="one-over"),
        pytest.param(timedelta(days=3650), id="ten-years-of-seconds"),
    ],
)
def test_a_range_over_the_limit_is_refused_having_counted_little_more_than_the_limit(
    span: timedelta,
) -> None:
    spec = _every_second()
    with pytest.raises(ValidationError) as refused:
        backfill_slots(Timing(spec), NOW - span, NOW, NOW, limit=10)
    assert refused.value.field == "end"
    assert "holds more than 10 slots (the limit)" in str(refused.value)
    assert spec.drawn == 0
    assert max(until for _, until in spec.counted) <= NOW - span + timedelta(seconds=20)
