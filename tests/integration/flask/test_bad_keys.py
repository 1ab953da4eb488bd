"""A page addressed with a key that is no row's (``?id=abc``) answers as for a missing row."""

from __future__ import annotations

import pytest

from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from tests.integration.flask.helpers import ON_SQLITE_AND_POSTGRESQL, Browser, make_app

#: Every page of one row, on every view that has one (the audit trail and the beats have none).
ROW_PAGES = ["/admin/schedules/edit/", "/admin/fires/details/", "/admin/calendars/edit/"]
#: Keys no row can have: each was a driver error (a 500) on PostgreSQL, the number on SQLite too.
BAD_KEYS = ["abc", "1.5", "99999999999999999999999", "%00"]


@ON_SQLITE_AND_POSTGRESQL
@pytest.mark.parametrize("page", ROW_PAGES)
@pytest.mark.parametrize("key", BAD_KEYS)
def test_a_page_for_a_key_no_row_can_have_says_the_record_does_not_exist(
    api: Schedules, page: str, key: str
) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    app, _ = make_app(api)
    client = app.test_client()

    response = client.get(f"{page}?id={key}", follow_redirects=True)

    assert response.status_code in (200, 404), response.status_code
    if response.status_code == 200:
        assert "Record does not exist" in response.get_data(as_text=True)


@ON_SQLITE_AND_POSTGRESQL
@pytest.mark.parametrize("key", BAD_KEYS)
def test_a_bulk_action_on_a_key_no_row_can_have_leaves_the_others_to_it(
    api: Schedules, admin: Browser, key: str
) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    admin.post(
        "/admin/schedules/action/",
        {"action": "pause", "rowid": [key, str(api.get("report").id)], "url": "/admin/schedules/"},
    )
    assert api.get("report").enabled is False
