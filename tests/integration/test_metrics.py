"""The load metrics of a beat, read as ``/metrics`` serves them
(docs/explanation/load-and-backlog.md, :mod:`celery_dbeat.beat.metrics`):
``dbeat_behind_seconds``, ``dbeat_queued_fires`` and ``dbeat_errors_total{component="schedule"}``.

The metrics live in ``prometheus_client``'s default registry, one set per process, which the
metrics server serves as text; the tests read that text (:func:`scrape`) rather than the
objects behind it. A counter keeps counting across the tests of a process, so the tests assert
how much it grew; a gauge is whatever the last beat set, so each test reads it right after its
own beat's tick.
"""

from __future__ import annotations

import logging
import re
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from prometheus_client import REGISTRY, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat.metrics import PrometheusMetrics
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.store import Store
from tests.integration.conftest import (
    START,
    MakeTicker,
    RecordingPublisher,
    Tables,
    run,
    settings,
)
from tests.integration.test_backlog import SlowBroker
from tests.integration.test_unreadable_rows import CORRUPT
from tests.integration.test_write_isolation import occupy_task_id

SECOND = timedelta(seconds=1)
MINUTE = timedelta(minutes=1)
#: Intervals anchored this long before :data:`START`, so that their grid reaches back.
ANCHOR = START - timedelta(hours=3)


def scrape(name: str, **labels: str) -> float:
    """The value of metric ``name`` (with ``labels``) in the text ``/metrics`` serves; 0 for a
    labelled counter not yet incremented (it has no sample until then)."""
    text = generate_latest(REGISTRY).decode()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and labels.items() <= sample.labels.items():
                return float(sample.value)
    assert labels, f"{name} is not served"
    return 0.0


def _schedule_errors() -> float:
    return scrape("dbeat_errors_total", component="schedule")


def _ticker(
    store: Store, publish: Any, clock: FixedClock, name: str = "beat-1", **overrides: Any
) -> Ticker:
    """A beat that reports to the process's Prometheus metrics."""
    return Ticker(
        store,
        DatabaseLock(),
        publish,
        settings(name, **overrides),
        clock,
        metrics=PrometheusMetrics(name),
    )


# dbeat_behind_seconds ----------------------------------------------------------------------------


_BEHIND_BY = re.compile(r"behind by ([0-9.]+) s")


def test_behind_seconds_says_how_late_a_beat_is_while_behind_and_zero_once_caught_up(
    api: Schedules, tables: Tables, clock: FixedClock, caplog: pytest.LogCaptureFixture
) -> None:
    names = [f"s{i:02}" for i in range(30)]
    api.add_many([Definition.create(name=n, task="t", schedule=Every(1)) for n in names])
    broker = SlowBroker(clock, 0.05)  # 20 a second, 30 due a second: behind by 0.5 s a second
    ticker = _ticker(tables.store, broker, clock)
    caplog.set_level(logging.INFO, logger="celery_dbeat")

    def tick() -> tuple[float, list[str]]:
        """One tick, then the sleep it asks for: the gauge after the tick, and its log."""
        caplog.clear()
        sleep = ticker.tick()
        gauge = scrape("dbeat_behind_seconds")
        clock.advance(timedelta(seconds=sleep))
        return gauge, [r.getMessage() for r in caplog.records]

    gauges: list[float] = []
    said: list[float] = []
    while not said:
        assert clock.now() < START + 2 * MINUTE, "never behind"
        gauge, messages = tick()
        gauges.append(gauge)
        said = [float(m.group(1)) for m in map(_BEHIND_BY.search, messages) if m]
    assert said[0] > 5  # dbeat_misfire_tolerance and dbeat_max_interval
    assert gauges[-1] == pytest.approx(said[0], abs=0.05)  # the gauge says what the log said
    assert max(gauges) == gauges[-1]  # it grew to that

    for name in names[10:]:
        api.pause(name)  # 10 a second now: it catches up
    episode: list[float] = []
    while True:
        assert clock.now() < START + 5 * MINUTE, "never caught up"
        gauge, messages = tick()
        episode.append(gauge)
        if any("caught up after" in m for m in messages):
            break
    assert all(g > 0 for g in episode[:-1])  # behind until the tick that says caught up
    assert episode[-1] == 0.0
    after = [tick()[0] for _ in range(5)]
    assert after == [0.0] * 5  # and it stays 0 while the beat keeps up


# dbeat_queued_fires ------------------------------------------------------------------------------


def test_queued_fires_counts_the_queued_catch_up_slots_as_they_drain(
    api: Schedules,
    tables: Tables,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
) -> None:
    """Two schedules 30 and 20 slots behind with policy ``all``: two queued rows holding 50
    slots. The gauge counts the slots, as ``dbeat status`` does, and goes down as they are
    published (here at most 10 a tick, ``dbeat_catchup_rate``)."""
    for name, behind in (("a", 30), ("b", 20)):
        api.add(name, "t", Every(60), misfire_policy="all", catchup_limit=behind, start_at=ANCHOR)
        tables.update(name, next_run_at=START - behind * MINUTE)
    make_ticker().fire_due()  # another beat recorded the catch-up; none of it is sent
    assert len(publisher) == 2  # the on-time slots
    ticker = _ticker(tables.store, publisher, clock, "beat-2", catchup_rate=10)
    max_interval = ticker.settings.max_interval

    def queued_sent() -> int:
        return len([slot for _, slot in publisher.fires if slot < START])

    gauges: list[float] = []
    bounds: list[tuple[int, int]] = []
    for _ in range(8):
        before = queued_sent()
        ticker.tick()  # its metrics that need a query are read once per max_interval
        gauges.append(scrape("dbeat_queued_fires"))
        bounds.append((50 - queued_sent(), 50 - before))
        clock.advance(max_interval)

    assert gauges[0] == 50  # slots, not the two rows that hold them
    for gauge, (least, most) in zip(gauges, bounds, strict=True):
        assert least <= gauge <= most  # what was left when the tick read it
    drained = gauges[: gauges.index(0) + 1]
    assert drained == sorted(set(drained), reverse=True)  # down at every tick, to none
    assert gauges[-1] == 0
    assert queued_sent() == 50


# dbeat_errors_total{component="schedule"} --------------------------------------------------------


def test_a_schedule_set_aside_for_a_refused_write_counts_one_schedule_error(
    api: Schedules, tables: Tables, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    for name in ("a", "victim", "b"):
        api.add(name, f"t.{name}", Every(60))
    occupy_task_id(tables, "victim", 2, holder="b")
    before = _schedule_errors()

    run(_ticker(tables.store, publisher, clock), clock, START + 4 * MINUTE)

    assert api.get("victim").state == "error"
    assert ("a", START + 4 * MINUTE) in publisher.fires  # the others go on
    assert _schedule_errors() - before == 1  # once, not once a tick


@pytest.mark.parametrize(("database_url", "column", "value"), CORRUPT, indirect=["database_url"])
def test_a_schedule_set_aside_for_a_row_that_cannot_be_read_counts_one_schedule_error(
    tables: Tables,
    clock: FixedClock,
    publisher: RecordingPublisher,
    column: str,
    value: str,
) -> None:
    tables.sync(
        [Definition.create(name=n, task=f"t.{n}", schedule=Every(60)) for n in ("good", "bad")],
        START,
    )
    tables.execute(f"UPDATE dbeat_schedules SET {column} = {value} WHERE name = 'bad'")
    before = _schedule_errors()

    run(_ticker(tables.store, publisher, clock), clock, START + 3 * MINUTE)

    with tables.store.engine.connect() as conn:  # the row's other values still cannot be read
        error = conn.execute(sa.text("SELECT last_error FROM dbeat_schedules WHERE name = 'bad'"))
        assert "cannot be read" in (error.scalar_one() or "")  # it was set aside
    assert ("good", START + 3 * MINUTE) in publisher.fires
    assert _schedule_errors() - before == 1
