"""CPU the planner spends on one due row, in process, no database
(``python -m bench.plancost [N] [ZONE ...]``).

N schedules (default 20,000) shaped as the ``steady`` scenario's: ``Cron('* * * * * s')``,
``s = i % 60``, each with its own args text, each due at its slot and planned 50 ms after it by
:func:`celery_dbeat.core.planning.plan`, as a beat's batch plans them. Prints the best of five
passes, in microseconds a row, for each zone (default ``UTC`` and ``Europe/London``).
"""

from __future__ import annotations

import sys
import time
from datetime import datetime, timedelta, timezone

from celery_dbeat import Cron
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.fires import ScheduleRow
from celery_dbeat.core.misfire import MisfireRules
from celery_dbeat.core.planning import plan

UTC = timezone.utc
NOW = datetime(2026, 12, 7, 12, 0, tzinfo=UTC)


def rows(n: int, zone: str) -> list[ScheduleRow]:
    """The rows as the store holds them: each definition's stored columns
    (:meth:`Definition.columns`), due at its slot, its last slot a minute before."""
    made = []
    for i in range(n):
        slot = NOW + timedelta(seconds=i % 60)
        name = f"s{i:06d}"
        schedule = Cron(f"* * * * * {i % 60}", timezone=zone)
        definition = Definition.create(name=name, task="bench.noop", schedule=schedule, args=[name])
        made.append(
            ScheduleRow(
                **definition.columns(),
                id=i,
                uid=f"uid-{i}",
                name=name,
                anchor_at=None,
                run_count=0,
                next_run_at=slot,
                last_slot=slot - timedelta(minutes=1),
                version=1,
                created_at=NOW - timedelta(days=1),
            )
        )
    return made


def main(n: int, zones: list[str]) -> None:
    rules, watched = MisfireRules(), NOW - timedelta(hours=1)
    for zone in zones:
        due = rows(n, zone)
        best = float("inf")
        for _ in range(5):
            started = time.process_time()
            for row in due:
                assert row.next_run_at is not None
                plan(row, row.next_run_at + timedelta(milliseconds=50), rules, watched=watched)
            best = min(best, time.process_time() - started)
        print(f"{zone}: {best / n * 1e6:.1f} us a row (best of 5, {n} rows)", flush=True)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 20_000, sys.argv[2:] or ["UTC", "Europe/London"]
    )
