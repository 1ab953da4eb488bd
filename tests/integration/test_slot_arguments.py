"""Slot arguments on every backend, through the beat's own ticker (SEMANTICS: "a schedule that
asks for its slot gets the slot (and the previous slot, if asked) as keyword arguments; the same
slot always gives the same arguments and the same task id, whether it is sent on time, caught
up, backfilled or taken over. A run now passes the instant it was asked for, marked as
manual")."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from celery import Celery

from celery_dbeat import Cron, Every, ValidationError
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.fires import PublishRequest
from celery_dbeat.core.formats import iso
from celery_dbeat.store import Store, migrate
from tests.integration.conftest import (
    START,
    MakeTicker,
    RecordingPublisher,
    Tables,
    at,
    run,
    task_id_of,
)

HOUR = timedelta(hours=1)


def expected(slot: datetime, previous: datetime | None) -> dict[str, Any]:
    return {"day": "mon", "slot": iso(slot), "previous": iso(previous)}


def sent(publisher: RecordingPublisher, name: str = "report") -> list[tuple[Any, ...]]:
    """``(slot, task id, kwargs, manual)`` of each publish of ``name``, in publish order."""
    return [
        (r.slot, r.task_id, kwargs, r.manual)
        for r, _, kwargs, _ in publisher
        if r.schedule_name == name
    ]


def test_on_time_and_caught_up_fires_pass_their_slot_and_the_one_before(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    api.add(
        "report",
        "t",
        Cron("0 * * * *"),
        kwargs={"day": "mon"},
        misfire_policy="all",
        slot_kwarg="slot",
        previous_slot_kwarg="previous",
    )
    api.add("plain", "t", Cron("0 * * * *"), kwargs={"day": "mon"})
    ticker = make_ticker()
    run(ticker, clock, at("10:00"))
    # Every beat down from 10:00:30 to 13:10: policy all sends 11:00, 12:00 and 13:00 too.
    clock.set(at("13:10"))
    run(ticker, clock, at("13:10:30"))

    assert sent(publisher) == [
        (slot, task_id_of("report", slot), expected(slot, slot - HOUR), False)
        for slot in (at("10:00"), at("11:00"), at("12:00"), at("13:00"))
    ]
    # A schedule that does not ask gets its kwargs as they are.
    assert {str(kwargs) for *_, kwargs, _ in sent(publisher, "plain")} == {"{'day': 'mon'}"}


def test_a_backfilled_slot_passes_what_it_would_have_passed_on_time(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    # Interval: its first slot (10:00:01) has no slot before it.
    api.add(
        "report",
        "t",
        Every(3600),
        kwargs={"day": "mon"},
        start_at=at("09:00") + timedelta(seconds=1),
        misfire_policy="skip",
        slot_kwarg="slot",
        previous_slot_kwarg="previous",
    )
    clock.set(at("12:30"))
    run(make_ticker(), clock, clock.now())  # beats were down: skip sends nothing
    assert sent(publisher) == []

    api.backfill("report", at("09:00"), at("12:30"))
    run(make_ticker(), clock, clock.now())

    # anchor + every, anchor + 2 * every, ...
    slots = [at("10:00:01"), at("11:00:01"), at("12:00:01")]
    assert sent(publisher) == [
        (slot, task_id_of("report", slot), expected(slot, slots[n - 1] if n else None), False)
        for n, slot in enumerate(slots)
    ]


class Died(BaseException):
    """The beat process ends here (SIGKILL between recording a fire and publishing it)."""


def test_a_fire_taken_over_from_a_dead_beat_passes_the_same_arguments_and_task_id(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    api.add(
        "report",
        "t",
        Cron("0 * * * *"),
        kwargs={"day": "mon"},
        slot_kwarg="slot",
        previous_slot_kwarg="previous",
    )
    asked: list[tuple[Any, ...]] = []

    def die(request: PublishRequest, args: list[Any], kwargs: dict[str, Any], options: Any) -> None:
        asked.append((request.slot, request.task_id, kwargs, request.manual))
        raise Died

    clock.set(at("10:00"))
    with pytest.raises(Died):
        make_ticker(publish=die, instance_name="beat-1").tick()
    assert publisher == []
    clock.advance(timedelta(minutes=2))  # its lease is over
    make_ticker(instance_name="beat-2").tick()

    assert sent(publisher)[0] == asked[0]
    assert asked[0] == (
        at("10:00"),
        task_id_of("report", at("10:00")),
        expected(at("10:00"), at("09:00")),
        False,
    )


def test_a_run_now_passes_the_instant_it_was_asked_for_and_the_last_slot_by_then(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    api.add(
        "report",
        "t",
        Cron("0 * * * *"),
        kwargs={"day": "mon"},
        slot_kwarg="slot",
        previous_slot_kwarg="previous",
    )
    asked_at = at("09:20:30")
    clock.set(asked_at)
    task_id = api.trigger("report")
    clock.set(at("11:00"))
    api.trigger("report")  # on a slot: that slot is the last one by then
    make_ticker().tick()

    manual = sorted(s for s in sent(publisher) if s[3])
    assert manual == [
        (asked_at, task_id, expected(asked_at, at("09:00")), True),
        (
            at("11:00"),
            task_id_of("report", at("11:00"), manual=True),
            expected(at("11:00"), at("11:00")),
            True,
        ),
    ]


def test_the_previous_slot_skips_the_days_of_the_schedules_calendar(
    api: Schedules, make_ticker: MakeTicker, clock: FixedClock, publisher: RecordingPublisher
) -> None:
    api.calendars.add("weekend", dates=["2024-05-04..2024-05-05"])
    clock.set(START - timedelta(days=1))  # Sunday
    api.add(
        "report",
        "t",
        Cron("0 9 * * *"),
        kwargs={"day": "mon"},
        calendar="weekend",
        slot_kwarg="slot",
        previous_slot_kwarg="previous",
    )
    clock.set(START)  # Monday, 09:00
    make_ticker().tick()

    # Monday's slot follows Friday's: the weekend's are not the schedule's.
    friday = START - timedelta(days=3)
    assert sent(publisher) == [(START, task_id_of("report", START), expected(START, friday), False)]


def test_a_recorded_fire_whose_previous_slot_cannot_be_found_is_failed_not_sent_wrong(
    api: Schedules,
    make_ticker: MakeTicker,
    clock: FixedClock,
    publisher: RecordingPublisher,
    tables: Tables,
) -> None:
    api.add(
        "report",
        "t",
        Cron("0 * * * *"),
        kwargs={"day": "mon"},
        slot_kwarg="slot",
        previous_slot_kwarg="previous",
    )

    def down(*_: Any) -> None:
        raise ConnectionError("broker down")

    clock.set(at("10:00"))
    make_ticker(publish=down).tick()  # recorded, to be retried
    tables.update("report", cron="not a cron")  # by hand, meanwhile
    clock.advance(timedelta(minutes=5))
    make_ticker().tick()

    assert publisher == []
    (fire,) = [f for f in tables.fires("report") if f.slot == at("10:00")]
    assert fire.status == "failed"
    assert "previous slot (previous_slot_kwarg) cannot be found" in fire.error


def test_the_slot_keywords_are_a_payload_edit_that_keeps_next_run_at(api: Schedules) -> None:
    api.add("report", "t", Cron("0 * * * *"))
    before = api.get("report")
    after = api.update("report", slot_kwarg="slot", previous_slot_kwarg="previous")

    assert (after.slot_kwarg, after.previous_slot_kwarg) == ("slot", "previous")
    assert after.next_run_at == before.next_run_at
    cleared = api.update("report", slot_kwarg=None, previous_slot_kwarg="")
    assert (cleared.slot_kwarg, cleared.previous_slot_kwarg) == (None, None)


def test_the_api_with_an_app_refuses_a_keyword_its_task_cannot_take(
    sqlite_url: str,
) -> None:
    app = Celery("proj", set_as_current=False)

    @app.task(name="proj.report", shared=False)
    def report(day: str) -> None: ...

    store = Store(sqlite_url)
    migrate(store.engine)
    with Schedules(store, app=app) as api:
        with pytest.raises(ValidationError) as caught:
            api.add("report", "proj.report", Every(60), args=["mon"], slot_kwarg="slot")
        assert caught.value.field == "slot_kwarg"
        assert api.list() == []
        # A task the app does not register may take it: only its workers can say.
        api.add("other", "proj.elsewhere", Every(60), slot_kwarg="slot")
        api.add("report", "proj.report", Every(60), args=["mon"])
        with pytest.raises(ValidationError):
            api.update("report", previous_slot_kwarg="previous")
        assert api.get("report").previous_slot_kwarg is None
    store.close()
