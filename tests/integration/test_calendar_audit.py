"""Calendars in the audit trail: every create, update and removal through ``Schedules.calendars``
leaves one entry (actor, surface, time, old -> new per field) in the edit's transaction, told
apart from a schedule's by its action; a schedule's trail and a calendar's stay apart even when
they share a name."""

from __future__ import annotations

from datetime import timedelta

import pytest

from celery_dbeat import CalendarExists, CalendarInUse, Every
from celery_dbeat.api import Actor, Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.audit import MAX_VALUE
from celery_dbeat.store import audit
from tests.integration.conftest import START
from tests.integration.test_audit import fail_after_recording


def _trail(entries: list[audit.Entry]) -> list[tuple[str, str, str, str | None, str]]:
    """(action, actor, surface, name, kind), oldest first."""
    return [(e.action, e.actor, e.surface, e.name, e.kind) for e in reversed(entries)]


def test_each_calendar_edit_leaves_one_entry_with_its_actor_surface_and_changes(
    api: Schedules, clock: FixedClock
) -> None:
    alice = Actor("alice", "cli")
    api.calendars.add("office", timezone="Europe/London", dates="2030-12-25", actor=alice)
    clock.advance(timedelta(minutes=1))
    api.calendars.update("office", add_dates="2030-12-26", description="closures", actor="bob")
    api.calendars.update("office", timezone="UTC", dates="2031-01-01", actor=alice)
    api.calendars.remove("office", actor=alice)

    entries = api.calendars.audit("office")
    assert _trail(entries) == [
        ("calendar-create", "alice", "cli", "office", "calendar"),
        ("calendar-update", "bob", "api", "office", "calendar"),
        ("calendar-update", "alice", "cli", "office", "calendar"),
        ("calendar-remove", "alice", "cli", "office", "calendar"),
    ]
    remove, replaced, added, create = entries
    assert create.changes == {
        "name": [None, "office"],
        "timezone": [None, "Europe/London"],
        "dates": [None, ["2030-12-25"]],
    }
    # An update names only the dates that differ: the day added merged into a range.
    assert added.changes == {
        "description": [None, "closures"],
        "dates": [["2030-12-25"], ["2030-12-25..2030-12-26"]],
    }
    assert replaced.changes == {
        "timezone": ["Europe/London", "UTC"],
        "dates": [["2030-12-25..2030-12-26"], ["2031-01-01"]],
    }
    assert remove.changes == {
        "name": ["office", None],
        "timezone": ["UTC", None],
        "description": ["closures", None],
        "dates": [["2031-01-01"], None],
    }
    assert create.at == START
    assert added.at == START + timedelta(minutes=1)
    assert {e.uid for e in entries} == {None}
    assert create.as_json()["kind"] == "calendar"


def test_a_refused_or_empty_calendar_edit_leaves_no_entry(api: Schedules) -> None:
    api.calendars.add("office", dates="2030-12-25")
    api.add("report", "t.report", Every(60), calendar="office")

    with pytest.raises(CalendarExists):
        api.calendars.add("office")
    with pytest.raises(CalendarInUse):
        api.calendars.remove("office")
    api.calendars.update("office", dates="2030-12-25")  # the same dates: no change
    api.calendars.update("office", add_dates="2030-12-25")

    assert [e.action for e in api.calendars.audit()] == ["calendar-create"]


def test_a_calendar_edit_rolled_back_takes_its_entry_with_it(
    api: Schedules, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.calendars.add("office")
    fail_after_recording(monkeypatch)
    with pytest.raises(RuntimeError):
        api.calendars.update("office", dates="2030-12-25")

    assert api.calendars.get("office").dates == []
    assert [e.action for e in api.calendars.audit()] == ["calendar-create"]


def test_a_schedule_and_a_calendar_of_one_name_each_keep_their_own_trail(
    api: Schedules,
) -> None:
    api.add("uk", "t.report", Every(60))
    api.calendars.add("uk", dates="2030-12-25")
    api.remove("uk")  # the schedule: its trail is found through its last entries' identity
    api.calendars.update("uk", add_dates="2031-01-01")

    assert [e.action for e in api.audit("uk")] == ["remove", "create"]
    assert [e.action for e in api.calendars.audit("uk")] == ["calendar-update", "calendar-create"]
    assert [e.kind for e in api.audit()] == ["calendar", "schedule", "calendar", "schedule"]


def test_the_dates_of_a_huge_calendar_are_cut_in_its_entry_and_stored_whole(
    api: Schedules,
) -> None:
    days = [f"{year}-12-25" for year in range(2031, 2131)]
    api.calendars.add("long", dates=days)

    (entry,) = api.calendars.audit("long")
    assert len(api.calendars.get("long").dates) == len(days)
    assert isinstance(entry.changes["dates"][1], str)
    assert entry.changes["dates"][1].endswith("characters)")
    assert len(entry.changes["dates"][1]) < MAX_VALUE + 40
