"""Slot arguments, the pure part (celery_dbeat.core.slot_arguments) and the definition-time check
against a Celery app's registered tasks (celery_dbeat.task_names.check_slot_parameters), on every
surface that knows the app: the API's check and a ``beat_schedule`` entry."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from celery import Celery

from celery_dbeat import Cron, Every, Once
from celery_dbeat.beat_schedule import definitions_from_app
from celery_dbeat.core.calendars import Calendar
from celery_dbeat.core.definitions import Definition, definition_from_form
from celery_dbeat.core.errors import ConfigurationError, ValidationError
from celery_dbeat.core.fires import PublishRequest
from celery_dbeat.core.slot_arguments import check_slot_kwargs, previous_slot, slot_kwargs
from celery_dbeat.core.timing import Timing, build_timing
from celery_dbeat.task_names import check_slot_parameters

UTC = timezone.utc
#: A Monday.
MONDAY = datetime(2024, 5, 6, 9, 0, tzinfo=UTC)
HOUR = timedelta(hours=1)


@pytest.mark.parametrize(
    ("slot_kwarg", "previous_slot_kwarg", "kwargs", "field", "problem"),
    [
        pytest.param("2slot", None, {}, "slot_kwarg", "Python identifier", id="not-identifier"),
        pytest.param("the slot", None, {}, "slot_kwarg", "Python identifier", id="space"),
        pytest.param("class", None, {}, "slot_kwarg", "Python identifier", id="keyword"),
        pytest.param(7, None, {}, "slot_kwarg", "Python identifier", id="not-text"),
        pytest.param("s" * 101, None, {}, "slot_kwarg", "longer than 100", id="too-long"),
        pytest.param(None, "x-1", {}, "previous_slot_kwarg", "identifier", id="previous-bad"),
        pytest.param("slot", "slot", {}, "previous_slot_kwarg", "same keyword", id="same"),
        pytest.param("when", None, {"when": 1}, "slot_kwarg", "key of kwargs", id="in-kwargs"),
        pytest.param(None, "was", {"was": 1}, "previous_slot_kwarg", "key of kwargs", id="prev"),
    ],
)
def test_a_bad_slot_keyword_is_refused_naming_its_field_and_value(
    slot_kwarg: Any, previous_slot_kwarg: Any, kwargs: dict[str, Any], field: str, problem: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        Definition.create(
            name="n",
            task="t",
            schedule=Every(60),
            kwargs=kwargs,
            slot_kwarg=slot_kwarg,
            previous_slot_kwarg=previous_slot_kwarg,
        )
    assert caught.value.field == field
    assert problem in str(caught.value)
    assert f"{field}=" in str(caught.value)


def test_blank_slot_keywords_are_not_set_and_good_ones_are_kept() -> None:
    assert check_slot_kwargs("", "  ", {}) == (None, None)
    assert check_slot_kwargs(None, None, {"slot": 1}) == (None, None)
    assert check_slot_kwargs("slot", "_previous", {"x": 1}) == ("slot", "_previous")
    form = {"name": "n", "task": "t", "kind": "interval", "every": "60", "slot_kwarg": ""}
    assert definition_from_form(form).slot_kwarg is None


def _timing(spec: Any, start_at: datetime | None = None) -> Timing:
    fields = spec.fields()
    return build_timing(**fields, anchor_at=MONDAY, start_at=start_at)


@pytest.mark.parametrize(
    ("timing", "slot", "manual", "expected"),
    [
        pytest.param(_timing(Cron("0 * * * *")), MONDAY, False, MONDAY - HOUR, id="cron"),
        # A cron's slot before its first after creation is the expression's previous match.
        pytest.param(
            _timing(Cron("30 2 * * *", "America/New_York")),
            datetime(2024, 3, 11, 6, 30, tzinfo=UTC),
            False,
            datetime(2024, 3, 10, 7, 0, tzinfo=UTC),  # the gap's end, as it fired
            id="cron-dst-gap",
        ),
        pytest.param(_timing(Every(60)), MONDAY + timedelta(minutes=1), False, None, id="first"),
        pytest.param(
            _timing(Every(60)),
            MONDAY + timedelta(minutes=3),
            False,
            MONDAY + timedelta(minutes=2),
            id="interval",
        ),
        pytest.param(_timing(Once(MONDAY)), MONDAY, False, None, id="once"),
        pytest.param(_timing(Cron("0 * * * *"), MONDAY), MONDAY, False, None, id="start-at"),
        pytest.param(
            _timing(Cron("0 * * * *")),
            MONDAY + timedelta(minutes=20, seconds=30),
            True,
            MONDAY,
            id="run-now-between",
        ),
        pytest.param(_timing(Cron("0 * * * *")), MONDAY, True, MONDAY, id="run-now-on-a-slot"),
    ],
)
def test_the_previous_slot_is_the_schedules_slot_before_it(
    timing: Timing, slot: datetime, manual: bool, expected: datetime | None
) -> None:
    assert previous_slot(timing, slot, manual=manual) == expected


def test_the_previous_slot_skips_the_days_the_calendar_removes() -> None:
    daily = _timing(Cron("0 9 * * *"))
    holidays = Calendar.create("holidays", timezone="UTC", dates=["2024-05-04..2024-05-05"])
    # Monday's previous slot is Friday's: the weekend is not in F(S).
    assert previous_slot(daily, MONDAY, holidays) == datetime(2024, 5, 3, 9, tzinfo=UTC)
    assert previous_slot(daily, MONDAY) == datetime(2024, 5, 5, 9, tzinfo=UTC)


def _request(**fields: Any) -> PublishRequest:
    return PublishRequest("id", 1, "report", MONDAY, "t", "[]", "{}", "{}", **fields)


def test_the_slot_arguments_are_iso_8601_utc_strings_and_nothing_unless_asked() -> None:
    assert slot_kwargs(_request()) == {}
    asked = _request(slot_kwarg="slot", previous_slot_kwarg="previous", previous_slot=None)
    assert slot_kwargs(asked) == {"slot": "2024-05-06T09:00:00Z", "previous": None}
    previous = MONDAY - timedelta(hours=1, microseconds=-5)
    both = _request(slot_kwarg="slot", previous_slot_kwarg="previous", previous_slot=previous)
    assert slot_kwargs(both) == {
        "slot": "2024-05-06T09:00:00Z",
        "previous": "2024-05-06T08:00:00.000005Z",
    }
    assert slot_kwargs(_request(previous_slot_kwarg="p", previous_slot=MONDAY)) == {
        "p": "2024-05-06T09:00:00Z"
    }


# The definition-time check against the app's tasks --------------------------------------------


@pytest.fixture
def app() -> Celery:
    app = Celery("proj", set_as_current=False)

    @app.task(name="proj.plain", shared=False)
    def plain(day: str) -> None: ...

    @app.task(name="proj.slotted", shared=False)
    def slotted(day: str, slot: str | None = None, *, previous: str | None = None) -> None: ...

    @app.task(name="proj.anything", shared=False)
    def anything(*args: Any, **kwargs: Any) -> None: ...

    @app.task(name="proj.bound", bind=True, shared=False)
    def bound(self: Any, slot: str) -> None: ...

    return app


def _definition(task: str, **fields: Any) -> Definition:
    return Definition.create(name="report", task=task, schedule=Every(60), **fields)


@pytest.mark.parametrize(
    ("task", "fields"),
    [
        pytest.param("proj.slotted", {"args": ["d"], "slot_kwarg": "slot"}, id="parameter"),
        pytest.param(
            "proj.slotted",
            {"args": ["d"], "slot_kwarg": "slot", "previous_slot_kwarg": "previous"},
            id="keyword-only",
        ),
        pytest.param("proj.anything", {"slot_kwarg": "when"}, id="var-keyword"),
        pytest.param("proj.bound", {"slot_kwarg": "slot"}, id="bound-task"),
        pytest.param("proj.elsewhere", {"slot_kwarg": "slot"}, id="not-registered"),
        # Its args do not fit the task anyway: not the slot's business (Celery says so).
        pytest.param("proj.plain", {"slot_kwarg": "slot"}, id="args-do-not-fit"),
        pytest.param("proj.plain", {"args": ["d"]}, id="not-asked"),
    ],
)
def test_slot_keywords_the_task_can_take_or_that_the_app_cannot_judge_pass(
    app: Celery, task: str, fields: dict[str, Any]
) -> None:
    check_slot_parameters(app, _definition(task, **fields))


@pytest.mark.parametrize(
    ("task", "fields", "field"),
    [
        pytest.param("proj.plain", {"args": ["d"], "slot_kwarg": "slot"}, "slot_kwarg", id="slot"),
        pytest.param(
            "proj.slotted",
            {"args": ["d"], "slot_kwarg": "slot", "previous_slot_kwarg": "before"},
            "previous_slot_kwarg",
            id="previous",
        ),
        # The args fill ``slot`` already.
        pytest.param(
            "proj.slotted", {"args": ["d", "x"], "slot_kwarg": "slot"}, "slot_kwarg", id="filled"
        ),
    ],
)
def test_a_registered_task_that_cannot_take_the_keyword_is_refused_naming_the_field(
    app: Celery, task: str, fields: dict[str, Any], field: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        check_slot_parameters(app, _definition(task, **fields))
    assert caught.value.field == field
    assert f"task {task!r} takes no keyword argument" in str(caught.value)
    assert "add the parameter, or **kwargs" in str(caught.value)


def test_a_beat_schedule_entry_whose_task_cannot_take_the_keyword_is_refused(
    app: Celery,
) -> None:
    entry = {"task": "proj.plain", "schedule": 60.0, "args": ["d"], "slot_kwarg": "slot"}
    app.conf.beat_schedule = {"report": entry}
    with pytest.raises(ConfigurationError) as caught:
        definitions_from_app(app)
    assert "beat_schedule['report']" in str(caught.value)
    assert "slot_kwarg='slot'" in str(caught.value)

    app.conf.beat_schedule = {
        "report": {**entry, "task": "proj.slotted", "previous_slot_kwarg": "previous"}
    }
    (definition,) = definitions_from_app(app)
    assert (definition.slot_kwarg, definition.previous_slot_kwarg) == ("slot", "previous")


def test_the_previous_slot_steps_over_a_long_run_of_excluded_dates_at_once() -> None:
    every_second = build_timing(
        kind="interval", every=1, anchor_at=datetime(2024, 3, 1, tzinfo=UTC)
    )
    closed = Calendar.create("closed", timezone="Europe/Paris", dates=["2024-04-01..2024-05-05"])
    # May 6th, midnight in Paris. Five weeks of seconds are excluded before it: the slot before
    # is the last second of March 31st in Paris, found without walking three million slots.
    reopening = datetime(2024, 5, 5, 22, 0, tzinfo=UTC)
    assert previous_slot(every_second, reopening, closed) == datetime(
        2024, 3, 31, 21, 59, 59, tzinfo=UTC
    )
    assert previous_slot(every_second, reopening) == reopening - timedelta(seconds=1)
