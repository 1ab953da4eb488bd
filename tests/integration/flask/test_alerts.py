"""Flask-Admin's side of alerts: the alert fields of the form, and the schedules in alert on the
list."""

from __future__ import annotations

from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from tests.integration.conftest import at
from tests.integration.flask.helpers import ON_SQLITE_AND_POSTGRESQL, Browser, field_errors, rows
from tests.integration.flask.test_schedules import form, set_columns


@ON_SQLITE_AND_POSTGRESQL
def test_the_form_stores_the_alert_fields_and_refuses_a_webhook_that_is_no_http_url(
    api: Schedules, admin: Browser
) -> None:
    alert_fields = {
        "alert_after_failures": "2",
        "alert_deadline": "15m",
        "alert_task": "proj.tasks.on_alert",
        "alert_webhook": "https://hooks.example.com/dbeat",
    }
    admin.post("/admin/schedules/new/", form(name="report", **alert_fields))
    info = api.get("report")
    assert (info.alert_after_failures, info.alert_deadline, info.alert_task) == (
        2,
        900.0,
        "proj.tasks.on_alert",
    )
    assert info.alert_webhook == "https://hooks.example.com/dbeat"

    page = admin.post("/admin/schedules/new/", form(name="other", alert_webhook="ftp://x/y"))
    assert field_errors(page, "alert_webhook") == [
        "alert_webhook='ftp://x/y': must be an http:// or https:// URL with a host"
    ]


@ON_SQLITE_AND_POSTGRESQL
def test_the_list_shows_the_schedules_in_alert(api: Schedules, admin: Browser) -> None:
    api.add("report", "proj.tasks.report", Cron("0 2 * * *"), alert_after_failures=2)
    api.add("sync", "proj.tasks.sync", Cron("0 * * * *"))
    set_columns(api, "report", alert_kind="failing", alert_episode=at("02:00"))

    shown = {row["name"]: row["alert"] for row in rows(admin.get("/admin/schedules/"))}

    assert shown == {"report": "failing", "sync": ""}
