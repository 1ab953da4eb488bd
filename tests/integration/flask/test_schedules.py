"""The schedule views: list, search, filters, create and edit forms, delete and bulk actions.

Every write must go through the management API, so the assertions read the result back through
it (``api.get``) rather than through the admin.
"""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from wtforms.fields.core import UnboundField

from celery_dbeat import Cron, Every, Once
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.contrib.flask.forms import ScheduleForm
from celery_dbeat.core.definitions import FORM_FIELDS
from celery_dbeat.core.errors import ScheduleNotFound
from celery_dbeat.store import Fire, Schedule
from tests.bad_inputs import VALID, BadInput, bad_input_params
from tests.integration.conftest import START, lose_every_race
from tests.integration.flask.helpers import (
    ON_SQLITE_AND_POSTGRESQL,
    Browser,
    field_errors,
    flashes,
    heartbeat,
    names,
    rows,
)


def some_schedules(api: Schedules) -> None:
    api.add("report", "proj.tasks.report", Cron("30 7 * * mon-fri", timezone="Europe/Paris"))
    api.add("poll", "proj.tasks.poll", Every(30), options={"queue": "io"})
    api.add("launch", "proj.tasks.launch", Once(START + timedelta(days=1)), enabled=False)
    api.add("cleanup", "ops.cleanup", Cron("0 3 * * *"))


def form(**overrides: Any) -> dict[str, Any]:
    """A valid create form (the shared VALID fields, enabled), with overrides."""
    return {**VALID, "enabled": "y", **overrides}


def schedule_id(api: Schedules, name: str) -> int:
    return api.get(name).id


def set_columns(api: Schedules, name: str, **values: Any) -> None:
    """Write columns by hand, as beat (or raw SQL) would."""
    with api.store.engine.begin() as conn:
        conn.execute(sa.update(Schedule).where(Schedule.name == name).values(**values))


# The list ----------------------------------------------------------------------------------------


@ON_SQLITE_AND_POSTGRESQL
def test_the_list_shows_each_schedule_with_its_spec_state_and_next_run(
    api: Schedules, admin: Browser
) -> None:
    some_schedules(api)
    listed = {row["name"]: row for row in rows(admin.get("/admin/schedules/"))}
    assert sorted(listed) == ["cleanup", "launch", "poll", "report"]
    assert listed["report"]["spec"] == "cron '30 7 * * mon-fri' Europe/Paris"
    assert listed["report"]["next_run_at"] == "2024-05-07 05:30:00 UTC"
    assert listed["poll"]["spec"] == "every 30s"
    assert listed["poll"]["next_run_at"] == "2024-05-06 09:00:30 UTC"
    assert listed["launch"]["state"] == "paused"
    assert listed["launch"]["next_run_at"] == "none (paused)"  # its stored slot is not sent
    assert listed["report"]["state"] == "active"
    assert listed["report"]["run_count"] == "0"
    assert listed["report"]["history"] == "history"


def test_search_finds_schedules_by_name_or_task(api: Schedules, admin: Browser) -> None:
    some_schedules(api)
    assert names(admin.get("/admin/schedules/?search=poll")) == ["poll"]
    assert names(admin.get("/admin/schedules/?search=ops.")) == ["cleanup"]
    assert names(admin.get("/admin/schedules/?search=proj.tasks")) == ["launch", "poll", "report"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        pytest.param("flt0_enabled_equals=0", ["finished", "launch"], id="enabled-no"),
        pytest.param(
            "flt0_enabled_equals=1",
            ["beat-schedule-entry", "broken", "cleanup", "poll", "report"],
            id="enabled-yes",
        ),
        pytest.param("flt0_kind_equals=cron", ["cleanup", "report"], id="kind-cron"),
        pytest.param("flt0_kind_equals=once", ["launch"], id="kind-once"),
        pytest.param("flt0_origin_equals=config", ["beat-schedule-entry"], id="origin-config"),
        pytest.param("flt0_state_is=paused", ["launch"], id="state-paused"),
        pytest.param("flt0_state_is=error", ["broken"], id="state-error"),
        pytest.param("flt0_state_is=finished", ["finished"], id="state-finished"),
        pytest.param(
            "flt0_state_is=active",
            ["beat-schedule-entry", "cleanup", "poll", "report"],
            id="active",
        ),
        pytest.param(
            "flt0_kind_equals=cron&flt1_state_is=active", ["cleanup", "report"], id="two-filters"
        ),
    ],
)
def test_filters_narrow_the_list_by_enabled_kind_origin_and_state(
    api: Schedules, admin: Browser, query: str, expected: list[str]
) -> None:
    some_schedules(api)
    api.add("broken", "proj.tasks.x", Every(60))
    api.add("finished", "proj.tasks.x", Every(60))
    api.add("beat-schedule-entry", "proj.tasks.x", Every(60))
    set_columns(api, "broken", last_error="bad")
    set_columns(api, "finished", enabled=False, finished_at=START, next_run_at=None)
    set_columns(api, "beat-schedule-entry", origin="config")
    assert names(admin.get(f"/admin/schedules/?{query}")) == sorted(expected)


# Creating ----------------------------------------------------------------------------------------


def test_the_form_has_exactly_the_shared_form_fields_in_their_order() -> None:
    fields = [name for name, value in vars(ScheduleForm).items() if isinstance(value, UnboundField)]
    assert fields == list(FORM_FIELDS)


@ON_SQLITE_AND_POSTGRESQL
def test_a_valid_form_creates_the_schedule_through_the_api(api: Schedules, admin: Browser) -> None:
    page = admin.post("/admin/schedules/new/", form(options='{"queue": "io"}'))
    assert "success: Record was successfully created." in flashes(page)
    created = api.get("bad-input")
    assert created.schedule == Cron("*/5 * * * *")
    assert created.args == [1, 2]
    assert created.options == {"queue": "io"}
    assert created.origin == "api"
    assert created.enabled
    # The API's rule: a new cron schedule first fires at its first slot after creation.
    assert created.next_run_at == START + timedelta(minutes=5)
    assert names(page) == ["bad-input"]


def test_each_kind_of_spec_can_be_created_from_the_form(api: Schedules, admin: Browser) -> None:
    admin.post("/admin/schedules/new/", form(name="every", kind="interval", every="1m30s"))
    admin.post(
        "/admin/schedules/new/", form(name="once", kind="once", run_at="2024-05-07T10:00:00+02:00")
    )
    admin.post(
        "/admin/schedules/new/",
        form(
            name="ny",
            cron="30 2 * * *",
            timezone="America/New_York",
            dst_gap="skip",
            misfire_policy="all",
            misfire_grace="90m",
            catchup_limit="3",
            max_runs="10",
        ),
    )
    admin.post("/admin/schedules/new/", form(name="paused", enabled=""))
    assert api.get("every").schedule == Every(90.0)
    assert api.get("every").next_run_at == START + timedelta(seconds=90)
    assert api.get("once").next_run_at == START.replace(day=7, hour=8)
    ny = api.get("ny")
    assert ny.schedule == Cron("30 2 * * *", timezone="America/New_York", dst_gap="skip")
    assert (ny.misfire_policy, ny.misfire_grace, ny.catchup_limit, ny.max_runs) == (
        "all",
        5400.0,
        3,
        10,
    )
    assert not api.get("paused").enabled


@pytest.mark.parametrize("case", bad_input_params())
def test_every_bad_input_is_refused_next_to_its_field_and_nothing_is_stored(
    api: Schedules, admin: Browser, case: BadInput
) -> None:
    page = admin.post("/admin/schedules/new/", form(**case.fields))
    field = case.error_field.split(".")[0]
    [error] = field_errors(page, field)
    assert case.message in error
    assert error.startswith(f"{case.error_field}=")  # the message names the field and the value
    assert f"danger: Schedule not saved: {error}" in flashes(page)
    assert api.list() == []


def test_an_existing_name_is_refused_on_the_name_field(api: Schedules, admin: Browser) -> None:
    api.add("bad-input", "proj.tasks.other", Every(60))
    page = admin.post("/admin/schedules/new/", form())
    assert field_errors(page, "name") == ["a schedule named 'bad-input' exists already"]
    assert api.get("bad-input").task == "proj.tasks.other"


def test_a_post_without_the_csrf_token_stores_nothing(api: Schedules, admin: Browser) -> None:
    response = admin.client.post("/admin/schedules/new/", data=form())
    assert "danger: Failed to create record." in flashes(response.get_data(as_text=True))
    assert api.list() == []


# Editing -----------------------------------------------------------------------------------------


def test_a_save_that_races_another_writer_says_try_again_and_marks_no_field(
    admin: Browser, api: Schedules, monkeypatch: pytest.MonkeyPatch
) -> None:
    api.add("report", "proj.tasks.report", Every(60))
    lose_every_race(monkeypatch)

    page = edit(admin, api, "report", args="[7]")

    assert (
        "danger: Schedule not saved: schedule 'report' was changed by someone else at the "
        "same time; nothing was stored: try again" in flashes(page)
    )
    assert "is-invalid" not in page
    monkeypatch.undo()
    assert api.get("report").args == []


def edit(admin: Browser, api: Schedules, schedule: str, **changes: Any) -> str:
    """Open the edit form of ``schedule``, change some fields, submit it as a browser would."""
    url = f"/admin/schedules/edit/?id={schedule_id(api, schedule)}"
    values = shown_values(admin.get(url))
    values.update(changes)
    return admin.post(url, values)


def shown_values(page: str) -> dict[str, str]:
    """What a browser would post back from the edit form, unchanged."""
    values: dict[str, str] = {}
    for field in FORM_FIELDS:
        if m := re.search(rf'<input[^>]*\bid="{field}"[^>]*>', page):
            tag = m.group(0)
            if 'type="checkbox"' in tag:
                if "checked" in tag:
                    values[field] = "y"
                continue
            value = re.search(r'value="([^"]*)"', tag)
            values[field] = html.unescape(value.group(1)) if value else ""
        elif m := re.search(rf'<textarea[^>]*\bid="{field}"[^>]*>(.*?)</textarea>', page, re.S):
            values[field] = html.unescape(m.group(1)).strip("\r\n")
        elif m := re.search(rf'<select[^>]*\bid="{field}"[^>]*>(.*?)</select>', page, re.S):
            chosen = re.search(r'<option selected value="([^"]*)"', m.group(1)) or re.search(
                r'<option[^>]*value="([^"]*)"[^>]*selected', m.group(1)
            )
            values[field] = chosen.group(1) if chosen else ""
    return values


@ON_SQLITE_AND_POSTGRESQL
@pytest.mark.parametrize(
    "spec",
    [
        pytest.param(Cron("0 * * * *", timezone="Europe/Paris", dst_fold="both"), id="cron"),
        pytest.param(Every(90.5), id="interval"),
        pytest.param(Once(START + timedelta(days=3, microseconds=250)), id="once"),
    ],
)
def test_a_payload_only_edit_keeps_next_run_at(
    api: Schedules, admin: Browser, clock: FixedClock, spec: Cron | Every | Once
) -> None:
    api.add("report", "proj.tasks.report", spec, misfire_grace="1h", start_at=START, max_runs=5)
    before = api.get("report")
    clock.advance(timedelta(minutes=20))
    page = edit(admin, api, "report", args='["changed"]', options='{"priority": 3}')
    assert "success: Record was successfully saved." in flashes(page)
    after = api.get("report")
    assert after.args == ["changed"]
    assert after.options == {"priority": 3}
    assert after.schedule == before.schedule
    assert after.next_run_at == before.next_run_at
    assert after.version == before.version + 1


@ON_SQLITE_AND_POSTGRESQL
def test_a_timing_edit_recomputes_next_run_at_from_the_edit_time(
    api: Schedules, admin: Browser, clock: FixedClock
) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    assert api.get("report").next_run_at == START + timedelta(hours=1)
    clock.advance(timedelta(minutes=20))  # 09:20
    edit(admin, api, "report", cron="*/15 * * * *")
    assert api.get("report").next_run_at == START + timedelta(minutes=30)
    edit(admin, api, "report", kind="interval", every="10m")
    assert api.get("report").next_run_at == START + timedelta(minutes=30)  # 09:20 + 10 min


def test_an_unchanged_form_changes_nothing(
    api: Schedules, admin: Browser, clock: FixedClock
) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *", timezone="America/New_York"))
    before = api.get("report")
    clock.advance(timedelta(minutes=20))
    edit(admin, api, "report")
    assert api.get("report") == before


def test_a_rename_keeps_the_schedule_and_its_timing(api: Schedules, admin: Browser) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    before = api.get("report")
    edit(admin, api, "report", name="hourly-report")
    after = api.get("hourly-report")
    assert (after.id, after.next_run_at) == (before.id, before.next_run_at)
    with pytest.raises(ScheduleNotFound):
        api.get("report")


def test_a_bad_edit_is_refused_on_its_field_and_the_row_is_unchanged(
    api: Schedules, admin: Browser
) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    before = api.get("report")
    page = edit(admin, api, "report", timezone="Mars/Olympus", args="[1]")
    assert field_errors(page, "timezone") == [
        "timezone='Mars/Olympus': is not a known IANA time zone (for example 'America/New_York')"
    ]
    assert api.get("report") == before


def test_unticking_enabled_pauses_and_ticking_it_resumes(api: Schedules, admin: Browser) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    edit(admin, api, "report", enabled="")
    assert not api.get("report").enabled
    edit(admin, api, "report", enabled="y")
    assert api.get("report").enabled


def test_a_paused_schedule_shows_no_next_run_and_previews_the_slots_after_a_resume(
    api: Schedules, admin: Browser
) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    api.pause("report")
    assert api.get("report").next_run_at is not None  # stored, but not sent while paused
    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'report')}")
    assert re.search(r'id="dbeat-next-run">none \(paused\)<', page)
    assert "Next slots if resumed now (nothing is sent while paused)" in page
    api.resume("report")
    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'report')}")
    assert re.search(r'id="dbeat-next-run">2024-05-06 10:00:00 UTC<', page)


def test_the_edit_page_previews_the_next_slots_in_utc_and_in_the_schedule_zone(
    api: Schedules, admin: Browser, clock: FixedClock
) -> None:
    clock.set(START.replace(month=3, day=9))  # the day before New York springs forward
    api.add("ny", "proj.tasks.x", Cron("30 2 * * *", timezone="America/New_York"))
    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'ny')}")
    preview = page.split('id="dbeat-preview"', 1)[1].split("</table>", 1)[0]
    assert "<th>America/New_York</th>" in preview
    assert (
        "<td>2024-03-10 07:00:00 UTC</td><td>2024-03-10 03:00:00 EDT (-0400)</td>" in preview
    )  # the gap's end
    assert "<td>2024-03-11 06:30:00 UTC</td><td>2024-03-11 02:30:00 EDT (-0400)</td>" in preview
    assert preview.count("<tr>") == 6  # the header and five slots


def test_a_utc_schedule_previews_its_slots_in_one_column(api: Schedules, admin: Browser) -> None:
    api.add("poll", "proj.tasks.poll", Every(30))
    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'poll')}")
    preview = page.split('id="dbeat-preview"', 1)[1].split("</table>", 1)[0]
    assert "<thead><tr><th>UTC</th></tr></thead>" in preview
    assert "<tr><td>2024-05-06 09:00:30 UTC</td></tr>" in preview


def test_a_row_beat_marked_broken_still_opens_and_says_why_it_has_no_preview(
    api: Schedules, admin: Browser
) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    set_columns(api, "report", cron="99 * * * *", last_error="minute field '99' is invalid")
    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'report')}")
    assert 'id="dbeat-preview-error"' in page
    assert "minute field &#39;99&#39; is invalid" in page
    edit(admin, api, "report", cron="15 * * * *")  # fixing it clears the error
    fixed = api.get("report")
    assert (fixed.last_error, fixed.next_run_at) == (None, START + timedelta(minutes=15))


# Deleting and bulk actions -----------------------------------------------------------------------


def test_delete_removes_the_schedule_and_its_history(api: Schedules, admin: Browser) -> None:
    some_schedules(api)
    api.trigger("poll")
    page = admin.post("/admin/schedules/delete/", {"id": schedule_id(api, "poll")})
    assert "success: Record was successfully deleted." in flashes(page)
    with pytest.raises(ScheduleNotFound):
        api.get("poll")
    with api.store.engine.connect() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(Fire)).scalar() == 0
    page = admin.action("delete", [schedule_id(api, "report"), schedule_id(api, "launch")])
    assert "success: Deleted 2 schedule(s): launch, report" in flashes(page)
    assert [s.name for s in api.list()] == ["cleanup"]


@ON_SQLITE_AND_POSTGRESQL
def test_bulk_pause_resume_and_run_now_go_through_the_api(
    api: Schedules, admin: Browser, clock: FixedClock
) -> None:
    some_schedules(api)
    ids = [schedule_id(api, "poll"), schedule_id(api, "report")]
    page = admin.action("pause", ids)
    assert "success: Paused 2 schedule(s): poll, report" in flashes(page)
    assert not api.get("poll").enabled
    assert not api.get("report").enabled
    assert api.get("cleanup").enabled

    clock.advance(timedelta(hours=2))
    admin.action("resume", ids)
    resumed = api.get("poll")
    # Resuming moves to the first slot after now, on the interval's grid: the paused slots are
    # not sent.
    assert resumed.enabled
    assert resumed.next_run_at == clock.now() + timedelta(seconds=30)

    before = api.get("report")
    admin.action("trigger", [schedule_id(api, "report")])
    [fire] = api.history("report")
    assert (fire.manual, fire.status, fire.slot) == (True, "pending", clock.now())
    assert api.get("report").next_run_at == before.next_run_at


@ON_SQLITE_AND_POSTGRESQL
def test_run_now_with_no_beat_running_says_it_is_sent_when_a_beat_starts(
    api: Schedules, admin: Browser
) -> None:
    some_schedules(api)
    heartbeat(api, "host:1", timedelta(seconds=16))  # silent: over LIVE_WITHIN (15 s)
    page = admin.action("trigger", [schedule_id(api, "poll")])
    assert flashes(page) == [
        "warning: Run now recorded for 1 schedule(s): poll, but no beat is running (none seen "
        "within 15s): each is sent when a beat starts."
    ]
    assert [f.status for f in api.history("poll")] == ["pending"]


@ON_SQLITE_AND_POSTGRESQL
def test_run_now_with_a_beat_running_says_it_is_being_sent(api: Schedules, admin: Browser) -> None:
    some_schedules(api)
    heartbeat(api, "host:1", timedelta(seconds=4))
    heartbeat(api, "host:2", timedelta(hours=1))
    ids = [schedule_id(api, "poll"), schedule_id(api, "report")]
    page = admin.action("trigger", ids)
    assert flashes(page) == [
        "success: Run now: 2 schedule(s): poll, report (a running beat sends them now: host:1)."
    ]


def test_a_bulk_action_reports_the_schedules_it_could_not_change(
    api: Schedules, admin: Browser
) -> None:
    api.add("done", "proj.tasks.x", Once(START + timedelta(minutes=1)), enabled=False)
    set_columns(api, "done", finished_at=START, next_run_at=None)
    page = admin.action("resume", [schedule_id(api, "done")])
    assert any(m.startswith("danger: done: name='done': has finished") for m in flashes(page))
    assert not api.get("done").enabled


@ON_SQLITE_AND_POSTGRESQL
def test_the_pause_action_notes_that_it_came_from_the_admin_and_the_pages_show_the_note(
    api: Schedules, admin: Browser
) -> None:
    some_schedules(api)
    admin.action("pause", [schedule_id(api, "report")])
    assert api.get("report").pause_note == "paused from the admin"
    api.pause("poll", note="alice: mail server down (INC-42)")

    listing = admin.get("/admin/schedules/")
    assert "paused from the admin" in listing
    assert "alice: mail server down (INC-42)" in listing
    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'poll')}")
    assert "(person): alice: mail server down (INC-42)" in page


def test_the_pages_show_an_active_schedules_failed_runs_in_a_row(
    api: Schedules, admin: Browser
) -> None:
    some_schedules(api)
    api.update("report", pause_after_failures=5)
    set_columns(api, "report", consecutive_failures=2)  # as the worker hook counts them

    assert "2 failed runs in a row" in admin.get("/admin/schedules/")
    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'report')}")
    assert "2 (pauses at 5)" in page
