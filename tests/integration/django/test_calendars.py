"""The Django admin's calendars: listed, added and changed through ``Schedules.calendars`` (the
dates read as the CLI reads them, a bad field refused on that field, nothing stored), deleted
only once no schedule names them; and the schedule form's calendar field."""

from __future__ import annotations

from typing import Any

import pytest

from celery_dbeat import Cron
from celery_dbeat.clock import FixedClock
from celery_dbeat.core.errors import CalendarNotFound
from tests.bad_inputs import BAD_CALENDAR_POSTS, CALENDAR_POST, BadCalendarPost
from tests.calendar_forms import LISTED, NEW_CALENDAR, STORED, add_listed, calendar_in_use, stored
from tests.integration.django.support import (
    ADD,
    ADMIN,
    change_url,
    edit,
    form_data,
    form_errors,
    listed,
    messages_of,
    text_of,
)

CALENDARS = f"{ADMIN}/calendar/"


def calendar_pk(name: str) -> int:
    from celery_dbeat.contrib.django.models import Calendar

    pk: int = Calendar.objects.get(name=name).pk
    return pk


def test_the_list_shows_each_calendar_with_its_zone_and_count_of_dates(
    client: Any, api: Any
) -> None:
    add_listed(api)

    response = client.get(CALENDARS)

    assert listed(response) == [name for name, *_ in LISTED]
    page = text_of(response)
    assert "Europe/London" in page
    assert "bank holidays" in page


def test_a_calendar_added_in_the_form_is_stored_by_the_api(client: Any, api: Any) -> None:
    response = client.post(f"{CALENDARS}add/", NEW_CALENDAR)

    assert response.status_code == 302, form_errors(response)
    assert stored(api, "closures") == STORED


def test_a_change_replaces_the_dates_keeps_the_name_and_bumps_the_version(
    client: Any, api: Any
) -> None:
    api.calendars.add("closures", dates="2026-12-25", description="old")
    url = f"{CALENDARS}{calendar_pk('closures')}/change/"
    form = client.get(url).context["adminform"].form
    assert "name" not in form.fields  # shown read-only: schedules name it
    assert form.initial["dates"] == "2026-12-25"

    response = client.post(
        url, {"name": "other", "timezone": "UTC", "description": "", "dates": "2027-01-01"}
    )

    assert response.status_code == 302, form_errors(response)
    stored = api.calendars.get("closures")
    assert (stored.dates, stored.description, stored.version) == (["2027-01-01"], "", 2)
    with pytest.raises(CalendarNotFound):
        api.calendars.get("other")


@pytest.mark.parametrize("case", BAD_CALENDAR_POSTS)
def test_a_bad_post_is_refused_on_its_field_and_nothing_is_stored(
    client: Any, api: Any, case: BadCalendarPost
) -> None:
    if case.taken:
        api.calendars.add(**CALENDAR_POST)
    before = api.calendars.list()

    errors = form_errors(client.post(f"{CALENDARS}add/", case.posted))

    assert list(errors) == [case.error_field]
    assert case.message in errors[case.error_field][0]
    assert api.calendars.list() == before


def test_a_calendar_in_use_is_not_deleted_and_the_message_names_its_schedules(
    client: Any, api: Any
) -> None:
    calendar_in_use(api)
    url = f"{CALENDARS}{calendar_pk('closures')}/delete/"
    assert client.get(url).status_code == 200  # Django's confirmation page

    response = client.post(url, {"post": "yes"}, follow=True)

    (refused,) = messages_of(response)
    assert refused.startswith("Not deleted: calendar 'closures' is still named by 1 schedule")
    assert "'report'" in refused
    assert api.calendars.get("closures").dates == ["2026-12-25"]

    api.update("report", calendar=None)
    response = client.post(url, {"post": "yes"}, follow=True)

    assert api.calendars.list() == []
    assert listed(response) == []


def test_a_user_without_the_calendar_permissions_cannot_add_change_or_delete(
    site: Any, api: Any
) -> None:
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Permission
    from django.test import Client

    api.calendars.add("closures", dates="2026-12-25")
    user = get_user_model().objects.create_user("viewer", password="x", is_staff=True)
    try:
        user.user_permissions.add(Permission.objects.get(codename="view_calendar"))
        viewer = Client()
        viewer.force_login(user)
        pk = calendar_pk("closures")

        assert viewer.get(CALENDARS).status_code == 200
        assert viewer.post(f"{CALENDARS}add/", {"name": "x"}).status_code == 403
        assert viewer.post(f"{CALENDARS}{pk}/delete/", {"post": "yes"}).status_code == 403
        viewer.post(f"{CALENDARS}{pk}/change/", {"timezone": "UTC", "dates": ""})
        assert api.calendars.get("closures").dates == ["2026-12-25"]
    finally:
        user.delete()


def test_the_schedule_form_has_the_calendar_field_and_refuses_an_unknown_name_on_it(
    client: Any, api: Any
) -> None:
    api.calendars.add("closures", dates="2026-12-25")
    assert 'name="calendar"' in client.get(ADD).content.decode()

    errors = form_errors(client.post(ADD, form_data(name="r", calendar="no-such")))

    assert list(errors) == ["calendar"]
    assert "no calendar has this name" in errors["calendar"][0]
    assert "did you mean" not in errors["calendar"][0]
    misspelt = form_errors(client.post(ADD, form_data(name="r", calendar="closrues")))
    assert "no calendar has this name (did you mean closures?)" in misspelt["calendar"][0]
    assert api.list() == []

    assert client.post(ADD, form_data(name="r", calendar="closures")).status_code == 302
    info = api.get("r")
    assert info.calendar == "closures"
    # An edit that does not touch it keeps it (the field is on the page, so it is posted).
    assert edit(client, info, args="[3]").status_code == 302
    assert api.get("r").calendar == "closures"


def test_the_change_page_preview_strikes_through_the_slots_a_calendar_removes(
    client: Any, api: Any, clock: FixedClock
) -> None:
    api.calendars.add("holidays", dates="2024-05-07")
    info = api.add("daily", "proj.tasks.d", Cron("0 10 * * *"), calendar="holidays")

    page = client.get(change_url(info.id)).content.decode()

    assert (
        '<li class="dbeat-excluded"><s>2024-05-07 10:00:00 UTC</s> excluded by calendar'
        " <strong>holidays</strong> (not sent)</li>"
    ) in page
    assert "<li>2024-05-08 10:00:00 UTC</li>" in page
