"""One rule for a schedule from the app's ``beat_schedule``, enforced by the API on every backend.

The next beat start (or ``dbeat sync``) puts back the definition of each ``beat_schedule`` entry
and creates again one whose schedule was removed. So a write that changes the definition of
such a schedule, or removes it, raises :class:`ConfigOwned` unless ``force=True``, and a forced
one lasts until the next sync. Pause, resume, run now and backfill change no definition and are
always allowed: a sync keeps a pause or a resume made elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from celery_dbeat import ConfigOwned, Every, ValidationError
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.definitions import Definition
from celery_dbeat.store.sync import SyncReport
from tests.integration.conftest import START, Tables, at

NIGHTLY = Definition.create(name="nightly", task="tasks.nightly", schedule=Every(3600))


@pytest.fixture
def nightly(api: Schedules, tables: Tables) -> Schedules:
    """``nightly`` synced from beat_schedule, beside ``own``, made through the API."""
    assert tables.sync([NIGHTLY], START) == SyncReport(created=["nightly"])
    api.add("own", "tasks.own", Every(60))
    return api


def replaced(api: Schedules, **changes: Any) -> Definition:
    """``nightly``'s definition with ``changes``."""
    return Definition.create(
        **{"name": "nightly", "task": "tasks.nightly", "schedule": Every(3600), **changes}
    )


REFUSED_EDITS: list[Any] = [
    pytest.param(lambda api: api.update("nightly", schedule=Every(7200)), id="update-timing"),
    pytest.param(lambda api: api.update("nightly", args=[1]), id="update-payload"),
    pytest.param(lambda api: api.update("nightly", name="daily"), id="update-rename"),
    pytest.param(
        lambda api: api.update_many({"own": {"args": [1]}, "nightly": {"args": [1]}}),
        id="update-many-all-or-nothing",
    ),
    pytest.param(lambda api: api.replace("nightly", replaced(api, args=[1])), id="replace"),
    pytest.param(
        lambda api: api.replace("nightly", replaced(api, name="daily")), id="replace-rename"
    ),
]


@pytest.mark.parametrize("edit", REFUSED_EDITS)
def test_an_edit_of_a_beat_schedule_entry_is_refused_without_force_and_stores_nothing(
    nightly: Schedules, edit: Callable[[Schedules], object]
) -> None:
    before = {info.name: info for info in nightly.list()}

    with pytest.raises(ConfigOwned) as refused:
        edit(nightly)

    assert (refused.value.name, refused.value.removal) == ("nightly", False)
    assert str(refused.value) == (
        "'nightly' comes from beat_schedule, and the next beat start (or `dbeat sync`) puts its "
        "definition back: change beat_schedule instead (`dbeat sync --dry-run` shows what a "
        "sync does), or pass force=True to have it changed until then"
    )
    assert {info.name: info for info in nightly.list()} == before
    assert [entry.action for entry in nightly.audit("nightly")] == ["create"]


def test_a_forced_edit_lasts_until_the_next_sync_puts_the_definition_back(
    nightly: Schedules, tables: Tables
) -> None:
    edited = nightly.update("nightly", schedule=Every(7200), args=[1], force=True)
    batch = nightly.update_many({"nightly": {"kwargs": {"k": 1}}}, force=True)
    synced = tables.sync([NIGHTLY], at("09:30"))

    back = nightly.get("nightly")
    assert (edited.schedule, edited.args, batch) == (Every(7200), [1], 1)
    assert synced == SyncReport(updated=["nightly"])
    assert (back.schedule, back.args, back.kwargs) == (Every(3600), [], {})
    assert back.from_beat_schedule


def test_a_forced_removal_lasts_until_the_next_sync_creates_the_schedule_again(
    nightly: Schedules, tables: Tables
) -> None:
    uid = nightly.get("nightly").uid

    with pytest.raises(ConfigOwned) as refused:
        nightly.remove("nightly")
    nightly.remove("nightly", force=True)
    gone = [info.name for info in nightly.list()]
    synced = tables.sync([NIGHTLY], at("09:30"))

    assert refused.value.removal
    assert str(refused.value) == (
        "'nightly' comes from beat_schedule, and the next beat start (or `dbeat sync`) creates "
        "it again: remove its entry from beat_schedule instead (a sync then disables the "
        "schedule and keeps its history), pause it, or pass force=True to have it removed until "
        "then"
    )
    assert gone == ["own"]
    assert synced == SyncReport(created=["nightly"])
    assert nightly.get("nightly").uid != uid  # a new schedule, without the old history


def test_pause_resume_run_now_and_backfill_are_always_allowed_and_a_sync_keeps_the_pause(
    nightly: Schedules, tables: Tables, clock: FixedClock
) -> None:
    nightly.pause("nightly", note="maintenance")
    kept = tables.sync([NIGHTLY], at("09:30"))
    paused = nightly.get("nightly")
    resumed = nightly.resume("nightly")
    task_id = nightly.trigger("nightly")
    clock.set(at("13:00"))
    report = nightly.backfill("nightly", at("09:30"), at("12:30"), dry_run=True)
    toggled = nightly.replace("nightly", replaced(nightly, enabled=False))  # a pause, by form

    assert kept == SyncReport(unchanged=["nightly"])
    assert (paused.state, paused.pause_note) == ("paused", "maintenance")
    assert resumed.state == "active"
    assert task_id
    assert report.slots == 3
    assert toggled.state == "paused"


def test_a_sync_keeps_a_pause_made_elsewhere_through_a_change_of_the_entry(
    nightly: Schedules, tables: Tables
) -> None:
    nightly.pause("nightly", note="maintenance")
    every_two_hours = Definition.create(
        name="nightly", task="tasks.nightly", schedule=Every(7200), args=[1]
    )

    synced = tables.sync([every_two_hours], at("09:30"))

    after = nightly.get("nightly")
    assert synced == SyncReport(updated=["nightly"])
    assert (after.schedule, after.args, after.state) == (Every(7200), [1], "paused")
    assert after.pause_note == "maintenance"


def test_a_resume_of_an_entry_disabled_in_beat_schedule_lasts_until_that_entry_changes(
    api: Schedules, tables: Tables
) -> None:
    off = Definition.create(name="off", task="tasks.off", schedule=Every(3600), enabled=False)
    tables.sync([off], START)
    api.resume("off")

    kept = tables.sync([off], at("09:30"))
    resumed = api.get("off").state
    retimed = Definition.create(name="off", task="tasks.off", schedule=Every(600), enabled=False)
    tables.sync([retimed], at("09:40"))

    assert (kept, resumed) == (SyncReport(unchanged=["off"]), "active")
    assert api.get("off").state == "paused"  # its timing changed: enabled: False again


def test_saving_a_beat_schedule_entry_as_stored_is_not_an_edit(nightly: Schedules) -> None:
    version = nightly.get("nightly").version

    same = nightly.update("nightly", schedule=Every(3600), task="tasks.nightly")
    also = nightly.replace("nightly", replaced(nightly))

    assert same.version == also.version == version


def test_a_schedule_whose_entry_left_beat_schedule_is_the_users_again(
    nightly: Schedules, tables: Tables
) -> None:
    tables.sync([], at("09:30"))  # disabled, kept with its history (origin config:removed)

    edited = nightly.update("nightly", args=[1])
    nightly.remove("nightly")

    assert (edited.origin, edited.from_beat_schedule) == ("config:removed", False)
    assert [info.name for info in nightly.list()] == ["own"]


def test_check_replace_says_beforehand_what_replace_would_refuse(nightly: Schedules) -> None:
    edit = replaced(nightly, args=[1])

    with pytest.raises(ConfigOwned):
        nightly.check_replace("nightly", edit)
    forced = nightly.check_replace("nightly", edit, force=True)
    pause = nightly.check_replace("nightly", replaced(nightly, enabled=False))
    own = nightly.check_replace(
        "own", Definition.create(name="own", task="tasks.other", schedule=Every(60))
    )

    assert (forced, pause, own) == (True, False, False)
    assert nightly.get("nightly").args == []  # it writes nothing


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda api: api.update("own", args=[1], force=1), id="update"),
        pytest.param(lambda api: api.remove("own", force="yes"), id="remove"),
    ],
)
def test_force_is_true_or_false(nightly: Schedules, write: Callable[[Schedules], object]) -> None:
    with pytest.raises(ValidationError, match=r"force=.*: must be True or False"):
        write(nightly)


def test_the_words_for_no_running_beat_are_the_apis(api: Schedules) -> None:
    api.live_within = timedelta(seconds=15)

    assert api.no_beat_running("'report' is") == (
        "no beat is running (none seen within 15s): 'report' is sent when a beat starts"
    )
