"""The Flask-Admin calendars view: listed, created and edited through ``Schedules.calendars``
(dates typed as the CLI takes them, a bad one refused on its field, nothing stored), removed
only once no schedule names them; and the schedule form's calendar field."""

from __future__ import annotations

import re

import pytest

from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from celery_dbeat.core.errors import CalendarNotFound
from tests.bad_inputs import BAD_CALENDAR_POSTS, CALENDAR_POST, BadCalendarPost
from tests.calendar_forms import LISTED, NEW_CALENDAR, STORED, add_listed, calendar_in_use, stored
from tests.integration.flask.helpers import Browser, field_errors, flashes, rows
from tests.integration.flask.test_schedules import form, schedule_id

CALENDARS = "/admin/calendars/"


def calendar_id(admin: Browser, name: str) -> str:
    page = admin.get(CALENDARS)
    found = re.search(rf'href="/admin/calendars/edit/\?id=(\d+)[^"]*">{re.escape(name)}<', page)
    assert found is not None, name
    return found.group(1)


def test_the_list_shows_each_calendar_with_its_zone_dates_and_version(
    api: Schedules, admin: Browser
) -> None:
    add_listed(api)

    listed = rows(admin.get(CALENDARS))

    assert [
        (r["name"], r["timezone"], r["entries"], r["description"], r["version"]) for r in listed
    ] == [(name, zone, str(len(dates)), text, "1") for name, zone, dates, text in LISTED]
    assert listed[1]["updated_at"].startswith("2024-05-06")


def test_a_calendar_created_in_the_form_is_stored_by_the_api(
    api: Schedules, admin: Browser
) -> None:
    page = admin.post(f"{CALENDARS}new/", NEW_CALENDAR)

    assert not [f for f in flashes(page) if f.startswith("danger")], flashes(page)
    assert stored(api, "closures") == STORED


def test_an_edit_replaces_the_dates_and_bumps_the_version(api: Schedules, admin: Browser) -> None:
    api.calendars.add("closures", dates="2026-12-25", description="old")
    url = f"{CALENDARS}edit/?id={calendar_id(admin, 'closures')}"
    page = admin.get(url)
    assert "\n2026-12-25</textarea>" in page
    assert re.search(r'id="name"[^>]*readonly', page)

    posted = {"name": "closures", "timezone": "UTC", "description": "", "dates": "2027-01-01"}
    admin.post(url, posted)

    stored = api.calendars.get("closures")
    assert (stored.dates, stored.description, stored.version) == (["2027-01-01"], "", 2)


def test_a_rename_is_refused_on_the_name(api: Schedules, admin: Browser) -> None:
    api.calendars.add("closures", dates="2026-12-25")
    url = f"{CALENDARS}edit/?id={calendar_id(admin, 'closures')}"

    page = admin.post(url, {"name": "other", "timezone": "UTC", "dates": "2026-12-25"})

    assert field_errors(page, "name") == ["a calendar cannot be renamed"]
    assert api.calendars.get("closures").version == 1
    with pytest.raises(CalendarNotFound):
        api.calendars.get("other")


@pytest.mark.parametrize("case", BAD_CALENDAR_POSTS)
def test_a_bad_post_is_refused_on_its_field_and_nothing_is_stored(
    api: Schedules, admin: Browser, case: BadCalendarPost
) -> None:
    if case.taken:
        api.calendars.add(**CALENDAR_POST)
    before = api.calendars.list()

    page = admin.post(f"{CALENDARS}new/", case.posted)

    (error,) = field_errors(page, case.error_field)
    assert case.message in error
    assert any(f.startswith("danger: Calendar not saved") for f in flashes(page))
    assert api.calendars.list() == before


def test_a_calendar_in_use_is_not_deleted_and_the_refusal_names_its_schedules(
    api: Schedules, admin: Browser
) -> None:
    calendar_in_use(api)
    key = calendar_id(admin, "closures")

    page = admin.post(f"{CALENDARS}delete/", {"id": key, "url": CALENDARS})

    (refused,) = [f for f in flashes(page) if f.startswith("danger")]
    assert "Calendar 'closures' not deleted" in refused
    assert "'report'" in refused
    assert api.calendars.get("closures").dates == ["2026-12-25"]

    api.update("report", calendar=None)
    page = admin.post(f"{CALENDARS}delete/", {"id": key, "url": CALENDARS})

    assert api.calendars.list() == []
    assert rows(page) == []


def test_the_schedule_form_has_the_calendar_field_and_refuses_an_unknown_name_on_it(
    api: Schedules, admin: Browser
) -> None:
    api.calendars.add("closures", dates="2026-12-25")
    assert 'id="calendar"' in admin.get("/admin/schedules/new/")

    page = admin.post("/admin/schedules/new/", form(name="r", calendar="no-such"))

    (error,) = field_errors(page, "calendar")
    assert "no calendar has this name" in error
    assert api.list() == []

    admin.post("/admin/schedules/new/", form(name="r", calendar="closures"))
    assert api.get("r").calendar == "closures"


def test_the_edit_page_preview_strikes_through_the_slots_a_calendar_removes(
    api: Schedules, admin: Browser
) -> None:
    api.calendars.add("holidays", dates="2024-05-07")
    api.add("daily", "t.daily", Cron("0 10 * * *"), calendar="holidays")

    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'daily')}")

    preview = page.split('id="dbeat-preview"', 1)[1].split("</table>", 1)[0]
    assert "<th>Calendar</th>" in preview
    assert (
        '<tr class="text-muted dbeat-excluded"><td><s>2024-05-07 10:00:00 UTC</s></td>'
        "<td>excluded by <strong>holidays</strong> (not sent)</td></tr>"
    ) in preview
    assert "<tr><td>2024-05-08 10:00:00 UTC</td><td></td></tr>" in preview
    assert preview.count("<tr") == 7  # the header, five fires and the slot removed
