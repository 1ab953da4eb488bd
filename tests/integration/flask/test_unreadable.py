"""Rows holding an instant the driver cannot read: every view shows them with their error.

PostgreSQL keeps ``'-infinity'`` and ``'infinity'`` in a timestamp column (psycopg refuses to
load them); SQLite keeps any text (SQLAlchemy refuses to parse it). Before the views read instants
apart (``contrib/flask/base.py``), one such row made the list, the edit page, the fire history and
the actions answer 500; beat, the CLI and the API already set such a row aside with its error.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from tests.integration.conftest import START, Tables
from tests.integration.flask.helpers import Browser, flashes, rows
from tests.integration.flask.test_schedules import edit, schedule_id, shown_values

#: (database, column, value written by hand, where the list shows it)
CORRUPT = [
    pytest.param("postgresql", "next_run_at", "'-infinity'", "next_run_at", id="pg-next-run"),
    pytest.param("postgresql", "last_slot", "'infinity'", "last_slot", id="pg-last-slot"),
    pytest.param("postgresql", "start_at", "'infinity'", "spec", id="pg-start-at"),
    pytest.param("postgresql", "end_at", "'-infinity'", "spec", id="pg-end-at"),
    pytest.param("sqlite", "next_run_at", "'2024-01-99 25:61:00'", "next_run_at", id="sqlite-next"),
    pytest.param("sqlite", "last_slot", "'garbage'", "last_slot", id="sqlite-last-slot"),
    pytest.param("sqlite", "start_at", "'yesterday'", "spec", id="sqlite-start-at"),
]
MINUTE = 60


@pytest.fixture
def good_and_bad(api: Schedules) -> None:
    """Two minutely schedules, each with a run-now fire; ``bad`` is then corrupted by the test."""
    for name in ("good", "bad"):
        api.add(name, f"proj.tasks.{name}", Every(MINUTE))
        api.trigger(name)


def corrupt(tables: Tables, column: str, value: str) -> None:
    tables.execute(f"UPDATE dbeat_schedules SET {column} = {value} WHERE name = 'bad'")


@pytest.mark.usefixtures("good_and_bad")
@pytest.mark.parametrize(
    ("database_url", "column", "value", "shown_in"), CORRUPT, indirect=["database_url"]
)
def test_the_list_shows_a_row_that_cannot_be_read_with_its_error_and_every_other_row(
    api: Schedules, admin: Browser, tables: Tables, column: str, value: str, shown_in: str
) -> None:
    corrupt(tables, column, value)
    listed = {row["name"]: row for row in rows(admin.get("/admin/schedules/"))}
    assert sorted(listed) == ["bad", "good"]
    good, bad = listed["good"], listed["bad"]
    assert (good["state"], good["next_run_at"]) == ("active", "2024-05-06 09:01:00 UTC")
    assert bad["state"] == "error"
    assert bad["last_error"].startswith(f"stored value of {column} cannot be read (")
    assert "cannot be read" in bad[shown_in]
    if shown_in != "next_run_at":
        assert bad["next_run_at"] == "none (error)"  # set aside: nothing is sent
    if shown_in == "spec":
        assert bad["spec"] == f"every 1m ({column} cannot be read)"
    # Sorted by the column that cannot be read: the database sorts, nothing is loaded.
    sorted_by = names_sorted_by(admin, column) if column in ("next_run_at", "last_slot") else None
    assert sorted_by is None or sorted(sorted_by) == ["bad", "good"]


def names_sorted_by(admin: Browser, column: str) -> list[str]:
    index = ("next_run_at", "last_slot").index(column) + 4  # column_sortable_list
    return [row["name"] for row in rows(admin.get(f"/admin/schedules/?sort={index}"))]


@pytest.mark.usefixtures("good_and_bad")
@pytest.mark.parametrize(
    ("database_url", "column", "value", "shown_in"), CORRUPT, indirect=["database_url"]
)
def test_the_edit_page_says_what_cannot_be_read_and_saving_it_as_shown_repairs_the_row(
    api: Schedules,
    admin: Browser,
    tables: Tables,
    clock: FixedClock,
    column: str,
    value: str,
    shown_in: str,
) -> None:
    corrupt(tables, column, value)
    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'bad')}")
    note = re.search(r'id="dbeat-unreadable">(.*?)</div>', page, re.S)
    assert note is not None
    text = " ".join(note.group(1).split())
    assert text.startswith(f"The stored value of {column} cannot be read (")
    assert "Saving the form stores the schedule again as the form shows it" in text
    assert "Next slots if saved as shown" in page
    if column in ("start_at", "end_at"):
        assert f"the form shows {column} empty" in text
        assert shown_values(page)[column] == ""

    clock.set(START + timedelta(seconds=90))
    saved = edit(admin, api, "bad")
    assert "Schedule not saved" not in saved
    repaired = api.get("bad")
    assert (repaired.last_error, repaired.state) == (None, "active")
    assert repaired.next_run_at == START + timedelta(minutes=2)  # on its grid, from the save on
    assert getattr(tables.row("bad"), column) == getattr(repaired, column)  # readable again
    assert "dbeat-unreadable" not in admin.get(f"/admin/schedules/edit/?id={repaired.id}")


@pytest.mark.usefixtures("good_and_bad")
@pytest.mark.parametrize(
    ("database_url", "column", "value", "shown_in"), CORRUPT, indirect=["database_url"]
)
def test_the_fire_history_and_a_fire_page_of_a_row_that_cannot_be_read_open(
    api: Schedules, admin: Browser, tables: Tables, column: str, value: str, shown_in: str
) -> None:
    corrupt(tables, column, value)
    everything = rows(admin.get("/admin/fires/"))
    assert sorted(row["schedule"] for row in everything) == ["bad", "good"]
    (fire,) = rows(admin.get("/admin/fires/?flt0_schedule_is=bad"))
    assert (fire["schedule"], fire["status"]) == ("bad", "pending (run now)")
    (stored,) = tables.fires("bad")
    detail = admin.get(f"/admin/fires/details/?id={stored.id}")
    assert ">bad</a>" in detail


@pytest.mark.usefixtures("good_and_bad")
@pytest.mark.parametrize(
    ("database_url", "column", "value", "shown_in"), CORRUPT, indirect=["database_url"]
)
def test_pause_resume_and_run_now_act_on_a_row_that_cannot_be_read(
    api: Schedules,
    admin: Browser,
    tables: Tables,
    clock: FixedClock,
    column: str,
    value: str,
    shown_in: str,
) -> None:
    corrupt(tables, column, value)
    clock.advance(1)  # a run-now fire of its own
    bad = schedule_id(api, "bad")
    assert flashes(admin.action("pause", [bad])) == ["success: Paused 1 schedule(s): bad"]
    assert api.get("bad").enabled is False
    assert flashes(admin.action("resume", [bad])) == ["success: Resumed 1 schedule(s): bad"]
    assert api.get("bad").enabled is True
    ran = flashes(admin.action("trigger", [bad]))
    assert ran[0].startswith("warning: Run now recorded for 1 schedule(s): bad")
    assert [fire.manual for fire in api.history("bad")] == [True, True]


@pytest.mark.parametrize(
    ("database_url", "value"),
    [
        pytest.param("postgresql", "'infinity'", id="postgresql"),
        pytest.param("sqlite", "'garbage'", id="sqlite"),
    ],
    indirect=["database_url"],
)
def test_a_fire_holding_an_instant_that_cannot_be_read_shows_it_as_such(
    api: Schedules, admin: Browser, tables: Tables, value: str
) -> None:
    api.add("report", "proj.tasks.report", Every(MINUTE))
    api.trigger("report")
    (fire,) = tables.fires("report")
    tables.execute(f"UPDATE dbeat_fires SET sent_at = {value}, started_at = {value}")

    (listed,) = rows(admin.get("/admin/fires/"))
    assert (listed["schedule"], listed["slot"]) == ("report", "2024-05-06 09:00:00 UTC")
    assert (listed["sent_at"], listed["started_at"], listed["lag"]) == (
        "cannot be read",
        "cannot be read",
        "",
    )
    detail = admin.get(f"/admin/fires/details/?id={fire.id}")
    assert detail.count(">cannot be read</span>") == 2
    assert "stored value of sent_at, started_at cannot be read (" in detail
    assert "give the schedule&#39;s timing again" not in detail  # beat writes fires, not people
