"""The Django admin's load page in Chromium, as a logged-in admin: the next 24 hours drawn with
the hourly herd, its makers and the jitter hint, the past day's lag and failed runs; and the
page with no schedules. Screenshots under ``DBEAT_SCREENSHOTS`` (default /tmp/django-shots/)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.browser import shot
from tests.integration.django.test_browser import SHOTS, browser_page, live_server
from tests.integration.load_data import HOURLY, seed

pytestmark = pytest.mark.browser
__all__ = ["live_server"]

PAGE = "/admin/celery_dbeat/schedule/load/"


def test_the_load_page_draws_the_hourly_herd_its_makers_and_the_past_day(
    live_server: str, api: Any
) -> None:
    seed(api)

    with browser_page(live_server, width=1400) as page:
        page.goto(f"{live_server}{PAGE}")

        assert page.is_visible("#dbeat-load-forecast path")
        herd = page.locator("#dbeat-herds tbody tr").first
        assert HOURLY in herd.inner_text()
        assert herd.locator("td").nth(1).inner_text().splitlines()[0].endswith(":00")  # UTC
        assert "report-0, report-59" in herd.inner_text()  # the first and the last
        assert "jitter" in herd.locator("td").last.inner_text()
        past = page.text_content("#dbeat-load-past") or ""
        assert "460 fires sent" in past
        assert page.locator("#dbeat-load-past rect").count() >= 1
        assert "slot(s) on days their schedule's calendar excludes" in (
            page.text_content("#dbeat-load-excluded") or ""
        )
        shot(page, SHOTS, "load")


def test_the_load_page_with_no_schedules_says_nothing_will_fire(live_server: str, api: Any) -> None:
    with browser_page(live_server, width=1400) as page:
        page.goto(f"{live_server}{PAGE}")

        assert page.is_visible("#dbeat-load-no-schedules")
        assert page.text_content("#dbeat-load-empty") == "No fires in the next 24 hours"
        assert page.is_visible("#dbeat-no-herds")
        shot(page, SHOTS, "load-empty")
