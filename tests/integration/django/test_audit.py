"""The Django admin's edits in the audit trail, of schedules and of calendars: recorded as the
logged-in user, surface ``django-admin``; the trail shown read-only, a calendar's entries named
as a calendar's."""

from __future__ import annotations

import html
import re
from typing import Any

from celery_dbeat import Every
from celery_dbeat.core.audit import change_text
from tests.integration.django.conftest import ADMIN_USER
from tests.integration.django.support import SCHEDULES, edit, text_of
from tests.integration.django.test_calendars import CALENDARS, calendar_pk

AUDIT = SCHEDULES.replace("/schedule/", "/auditentry/")


def test_admin_edits_are_recorded_as_the_logged_in_user_and_listed_read_only(
    client: Any, api: Any
) -> None:
    info = api.add("report", "proj.tasks.report", Every(60), actor="setup")
    assert edit(client, info, task="proj.tasks.other").status_code == 302
    client.post(SCHEDULES, {"action": "pause", "_selected_action": [str(info.id)]}, follow=True)

    assert [(e.action, e.actor, e.surface) for e in api.audit("report")] == [
        ("pause", ADMIN_USER, "django-admin"),
        ("update", ADMIN_USER, "django-admin"),
        ("create", "setup", "api"),
    ]
    assert api.audit("report")[1].changes == {"task": ["proj.tasks.report", "proj.tasks.other"]}
    page = client.get(AUDIT)
    assert page.status_code == 200
    assert "proj.tasks.other" in text_of(page)
    assert client.get(f"{AUDIT}add/").status_code == 403


def test_the_changes_column_says_old_to_new_as_dbeat_log_does(client: Any, api: Any) -> None:
    api.add("report", "proj.tasks.report", Every(60), args=[1])
    api.update("report", task="proj.tasks.other", args=[1, 2])
    entry = api.audit("report")[0]

    listed = client.get(AUDIT).content.decode()
    shown = client.get(f"{AUDIT}{entry.id}/change/").content.decode()

    expected = "task: proj.tasks.report -> proj.tasks.other; args: [1] -> [1, 2]"
    assert expected == change_text(entry.changes)
    newest, _created = re.findall(r'<td class="field-changed">(.*?)</td>', listed, re.S)
    assert html.unescape(newest) == expected
    assert expected in html.unescape(shown)
    assert '{"task"' not in html.unescape(listed + shown)


def test_calendar_edits_are_recorded_as_the_logged_in_user_and_listed_as_calendars(
    client: Any, api: Any
) -> None:
    fields = {"name": "closures", "timezone": "UTC", "description": ""}
    assert client.post(f"{CALENDARS}add/", {**fields, "dates": "2030-12-25"}).status_code == 302
    url = f"{CALENDARS}{calendar_pk('closures')}/"
    assert client.post(f"{url}change/", {**fields, "dates": "2031-12-25"}).status_code == 302
    client.post(f"{url}delete/", {"post": "yes"}, follow=True)

    entries = api.calendars.audit("closures")
    assert [(e.action, e.actor, e.surface) for e in entries] == [
        ("calendar-remove", ADMIN_USER, "django-admin"),
        ("calendar-update", ADMIN_USER, "django-admin"),
        ("calendar-create", ADMIN_USER, "django-admin"),
    ]
    assert entries[1].changes == {"dates": [["2030-12-25"], ["2031-12-25"]]}
    assert "calendar closures" in text_of(client.get(AUDIT))
