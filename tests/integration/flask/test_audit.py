"""The Flask admin's edits in the audit trail, of schedules and of calendars: recorded as the
logged-in user (``actor``), surface ``flask-admin``; the trail shown read-only, a calendar's
entries named as a calendar's."""

from __future__ import annotations

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.core.audit import change_text
from tests.integration.flask.helpers import Browser, make_app, rows
from tests.integration.flask.test_calendars import calendar_id


def test_admin_actions_are_recorded_as_the_logged_in_user_and_listed(api: Schedules) -> None:
    app, _ = make_app(api, actor=lambda: "carol")
    admin = Browser(app.test_client())
    info = api.add("report", "t.report", Every(60), actor="setup")

    admin.action("pause", [info.id])
    admin.action("trigger", [info.id])

    assert [(e.action, e.actor, e.surface) for e in api.audit("report")] == [
        ("run_now", "carol", "flask-admin"),
        ("pause", "carol", "flask-admin"),
        ("create", "setup", "api"),
    ]
    page = admin.get("/admin/audit/")
    assert "carol" in page
    assert "flask-admin" in page
    admin.get("/admin/audit/new/", status=302)  # read-only: no create page


def test_the_changes_column_says_old_to_new_as_dbeat_log_does(api: Schedules) -> None:
    app, _ = make_app(api)
    admin = Browser(app.test_client())
    api.add("report", "t.report", Every(60), args=[1])
    api.update("report", task="t.other", args=[1, 2])

    listed = rows(admin.get("/admin/audit/"))

    assert listed[0]["changes"] == "task: t.report -> t.other; args: [1] -> [1, 2]"
    assert listed[0]["changes"] == change_text(api.audit("report")[0].changes)


def test_calendar_edits_are_recorded_as_the_logged_in_user_and_listed_as_calendars(
    api: Schedules,
) -> None:
    app, _ = make_app(api, actor=lambda: "carol")
    admin = Browser(app.test_client())
    fields = {"name": "closures", "timezone": "UTC", "description": ""}

    admin.post("/admin/calendars/new/", {**fields, "dates": "2030-12-25"})
    key = calendar_id(admin, "closures")
    admin.post(f"/admin/calendars/edit/?id={key}", {**fields, "dates": "2031-12-25"})
    admin.post("/admin/calendars/delete/", {"id": key, "url": "/admin/calendars/"})

    entries = api.calendars.audit("closures")
    assert [(e.action, e.actor, e.surface) for e in entries] == [
        ("calendar-remove", "carol", "flask-admin"),
        ("calendar-update", "carol", "flask-admin"),
        ("calendar-create", "carol", "flask-admin"),
    ]
    assert entries[1].changes == {"dates": [["2030-12-25"], ["2031-12-25"]]}
    listed = rows(admin.get("/admin/audit/"))
    assert {r["schedule_name"] for r in listed} == {"calendar closures"}
