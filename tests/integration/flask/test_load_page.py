"""The load page in Chromium, signed in to the example app: the next 24 hours drawn with the
hourly herd, the schedules that make it and the jitter hint, the past day's lag and failed runs;
and the page of an admin with no schedules. Screenshots go to /tmp/flask-shots/."""

from __future__ import annotations

from typing import Any

import pytest

from celery_dbeat.api import Schedules
from tests.integration.browser import shot
from tests.integration.flask.test_browser import SHOTS, chromium, example_server, sign_in
from tests.integration.load_data import HOURLY, seed

pytestmark = pytest.mark.browser
__all__ = ["chromium", "example_server"]


def test_the_load_page_draws_the_hourly_herd_its_makers_and_the_past_day(
    chromium: Any, example_server: str, database_url: str
) -> None:
    api = Schedules(database_url)
    try:
        seed(api)
    finally:
        api.close()

    page = sign_in(chromium, example_server, "/admin/load/")

    assert page.is_visible("#dbeat-load-forecast path")
    assert page.locator("#dbeat-load-forecast .dbeat-herd").count() >= 1
    herd = page.locator("#dbeat-herds tbody tr").first
    assert HOURLY in herd.inner_text()
    assert "report-0, report-59" in herd.inner_text()  # the first and the last
    assert "jitter" in herd.locator("td").last.inner_text()
    past = page.text_content("#dbeat-load-past") or ""
    assert "460 fires sent" in past
    assert "failed run(s)" in past
    assert page.locator("#dbeat-load-past rect").count() >= 1  # hours with failed runs
    assert "slot(s) on days their schedule's calendar excludes" in (
        page.text_content("#dbeat-load-excluded") or ""
    )
    assert not page.is_visible("#dbeat-load-no-schedules")
    shot(page, SHOTS, "load")


def test_the_load_page_with_no_schedules_says_nothing_will_fire(
    chromium: Any, example_server: str
) -> None:
    page = sign_in(chromium, example_server, "/admin/load/")

    assert page.is_visible("#dbeat-load-no-schedules")
    assert page.text_content("#dbeat-load-empty") == "No fires in the next 24 hours"
    assert page.text_content("#dbeat-past-empty") == "No fires sent in the last 24 hours"
    assert page.is_visible("#dbeat-no-herds")
    shot(page, SHOTS, "load-empty")
