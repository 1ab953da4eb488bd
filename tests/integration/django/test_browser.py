"""One real browser: Debian's headless Chromium, driven by Playwright, against a real HTTP server.

Skipped on a machine without /usr/bin/chromium (``apt-get install chromium``) or without
playwright; failed when ``CI`` is set, so CI cannot pass by skipping. Each page checked is also
saved as a PNG under ``DBEAT_SCREENSHOTS`` (default /tmp/django-shots/), to look at.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from celery_dbeat import Every, Solar
from tests.integration.browser import headless_chromium, shot
from tests.integration.django.conftest import ADMIN_PASSWORD, ADMIN_USER
from tests.integration.django.support import START, insert_fire

SHOTS = Path(os.environ.get("DBEAT_SCREENSHOTS", "/tmp/django-shots"))


@pytest.fixture
def live_server(site: Any) -> Iterator[str]:
    """The test site served over HTTP on a free localhost port, admin static files included."""
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler, allow_reuse_address=False)
    server.set_app(StaticFilesHandler(get_wsgi_application()))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


@contextmanager
def browser_page(live_server: str, *, javascript: bool = True, width: int = 1280) -> Iterator[Any]:
    """A logged-in admin's page in headless Chromium, ``width`` pixels wide."""
    with headless_chromium() as browser:
        context = browser.new_context(
            java_script_enabled=javascript, viewport={"width": width, "height": 900}
        )
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(f"{live_server}/admin/login/?next=/admin/")
        page.fill("#id_username", ADMIN_USER)
        page.fill("#id_password", ADMIN_PASSWORD)
        page.click("input[type=submit]")
        page.wait_for_url("**/admin/")
        yield page


#: A field of each kind's own (the zone is shown for cron and rrule alike).
OWN_FIELD = {
    "cron": "#id_cron",
    "rrule": "#id_rrule",
    "interval": "#id_every",
    "once": "#id_run_at",
    "solar": "#id_solar_event",
}


def visible_kinds(page: Any) -> list[str]:
    """The kinds whose own fields show."""
    return [kind for kind, field in OWN_FIELD.items() if page.locator(field).is_visible()]


@pytest.mark.browser
def test_an_admin_logs_in_creates_a_schedule_in_chromium_and_sees_it_listed(
    live_server: str, api: Any
) -> None:
    with browser_page(live_server) as page:
        page.goto(f"{live_server}/admin/celery_dbeat/schedule/add/")
        page.fill("#id_name", "browser-report")
        page.fill("#id_task", "proj.tasks.report")
        page.select_option("#id_kind", "interval")
        page.fill("#id_every", "45s")
        page.fill("#id_args", '["from", "chromium"]')
        page.click("input[name=_save]")
        page.wait_for_url("**/admin/celery_dbeat/schedule/")
        listing = page.locator("#result_list").inner_text()
        notice = page.locator(".messagelist").inner_text()
    assert "browser-report" in listing
    assert "every 45s" in listing
    assert "was added successfully" in notice
    info = api.get("browser-report")
    assert (info.schedule, info.args, info.origin) == (Every(45), ["from", "chromium"], "api")


@pytest.mark.browser
def test_the_kind_menu_shows_only_the_chosen_kinds_fields(live_server: str, api: Any) -> None:
    with browser_page(live_server) as page:
        page.goto(f"{live_server}/admin/celery_dbeat/schedule/add/")
        shown = {"cron": visible_kinds(page)}
        shot(page, SHOTS, "add-cron")
        zone_shown = {}
        for kind in ("rrule", "interval", "once", "solar"):
            page.select_option("#id_kind", kind)
            shown[kind] = visible_kinds(page)
            zone_shown[kind] = page.locator("#id_timezone").is_visible()
        shot(page, SHOTS, "add-solar")
        assert page.locator("#id_every").is_hidden()
        assert page.locator("#id_latitude").is_visible()
    assert shown == {kind: [kind] for kind in OWN_FIELD}
    assert zone_shown == {"rrule": True, "interval": False, "once": False, "solar": False}


@pytest.mark.browser
def test_a_solar_schedule_is_made_in_chromium_and_edited_on_its_own_fields(
    live_server: str, api: Any
) -> None:
    with browser_page(live_server) as page:
        page.goto(f"{live_server}/admin/celery_dbeat/schedule/add/")
        page.fill("#id_name", "lights")
        page.fill("#id_task", "proj.tasks.lights")
        page.select_option("#id_kind", "solar")
        page.select_option("#id_solar_event", "sunset")
        page.fill("#id_latitude", "48.85")
        page.fill("#id_longitude", "2.35")
        page.click("input[name=_save]")
        page.wait_for_url("**/admin/celery_dbeat/schedule/")
        listing = page.locator("#result_list").inner_text()
        shot(page, SHOTS, "list-solar")
        page.click("text=lights")
        page.wait_for_url("**/change/")
        shown = visible_kinds(page)
        shot(page, SHOTS, "change-solar")
    assert "sunset at 48.85, 2.35" in listing
    assert shown == ["solar"]
    assert api.get("lights").schedule == Solar("sunset", 48.85, 2.35)


@pytest.mark.browser
def test_without_javascript_every_kinds_fields_show_and_the_form_still_saves(
    live_server: str, api: Any
) -> None:
    with browser_page(live_server, javascript=False) as page:
        page.goto(f"{live_server}/admin/celery_dbeat/schedule/add/")
        shown = visible_kinds(page)
        page.fill("#id_name", "no-js")
        page.fill("#id_task", "proj.tasks.poll")
        page.select_option("#id_kind", "interval")
        page.fill("#id_every", "2m")
        shot(page, SHOTS, "add-no-javascript")
        page.click("input[name=_save]")
        page.wait_for_url("**/admin/celery_dbeat/schedule/")
    assert shown == list(OWN_FIELD)
    assert api.get("no-js").schedule == Every(120)


@pytest.mark.browser
def test_a_bad_cron_shows_its_error_and_no_other(live_server: str, api: Any) -> None:
    with browser_page(live_server) as page:
        page.goto(f"{live_server}/admin/celery_dbeat/schedule/add/")
        page.fill("#id_name", "bad")
        page.fill("#id_task", "proj.tasks.report")
        page.fill("#id_cron", "61 * * * *")
        page.fill("#id_timezone", "Europe/Paris")
        page.fill("#id_misfire_grace", "5m")
        page.click("input[name=_save]")
        page.wait_for_selector(".errornote")
        errors = page.locator(".errorlist").all_inner_texts()
        shown = visible_kinds(page)
        shot(page, SHOTS, "add-error")
    assert errors == ["cron='61 * * * *': minute field '61': 61 is outside 0-59"]
    assert shown == ["cron"]
    assert api.list() == []


@pytest.mark.browser
@pytest.mark.usefixtures("celery_app")
def test_the_task_field_offers_the_registered_names(live_server: str, api: Any) -> None:
    with browser_page(live_server) as page:
        page.goto(f"{live_server}/admin/celery_dbeat/schedule/add/")
        listed = page.locator("#id_task").get_attribute("list")
        offered = page.locator(f"datalist#{listed} option").evaluate_all(
            "options => options.map(o => o.value)"
        )
        page.fill("#id_name", "typo")
        page.fill("#id_task", "proj.tasks.reprot")
        page.fill("#id_cron", "0 7 * * *")
        page.click("input[name=_save]")
        page.wait_for_url("**/admin/celery_dbeat/schedule/")
        warning = page.locator(".messagelist .warning").inner_text()
        shot(page, SHOTS, "unknown-task-warning")
    assert {"proj.tasks.poll", "proj.tasks.report"} <= set(offered)
    assert (
        "'proj.tasks.reprot' (did you mean proj.tasks.report?) is not registered in the Celery "
        "app 'proj'"
    ) in warning


@pytest.mark.browser
def test_trigger_without_a_beat_and_a_paused_schedule_in_chromium(
    live_server: str, api: Any
) -> None:
    poll = api.add("poll", "proj.tasks.poll", Every(60))
    api.add("nightly", "proj.tasks.nightly", Every(3600))
    api.pause("nightly")
    with browser_page(live_server) as page:
        page.goto(f"{live_server}/admin/celery_dbeat/schedule/")
        page.check(f"input[name=_selected_action][value='{poll.id}']")
        page.select_option("select[name=action]", "trigger")
        page.click("button[name=index]")
        page.wait_for_selector(".messagelist")
        warning = page.locator(".messagelist .warning").inner_text()
        rows = page.locator("#result_list tbody tr").all_inner_texts()
        shot(page, SHOTS, "trigger-no-beat-and-paused")
    assert "no beat is running" in warning
    assert "the fire is sent when a beat starts" in warning
    (nightly,) = [row for row in rows if "nightly" in row]
    assert "none (paused)" in nightly


@pytest.mark.browser
def test_the_missing_tables_page_in_chromium(live_server: str, spare: Path) -> None:
    from django.test import override_settings

    with override_settings(DBEAT_DATABASE_ALIAS="spare"), browser_page(live_server) as page:
        response = page.goto(f"{live_server}/admin/celery_dbeat/schedule/")
        note = page.locator(".errornote").inner_text()
        shot(page, SHOTS, "tables-missing")
    assert response is not None
    assert response.status == 503
    assert f"celery-dbeat's tables are missing in sqlite:///{spare}" in note
    assert "python manage.py migrate --database spare" in note


def last_header_shown_after_scrolling(page: Any, table: str, container: str) -> bool:
    """Whether the last column header of ``table`` can be brought into ``container``'s visible
    box by scrolling sideways over the table, as a person does with a wheel or a trackpad."""
    page.hover(f"{table} tbody tr td")
    page.mouse.wheel(4000, 0)
    header = page.locator(f"{table} thead th").last.bounding_box()
    box = page.locator(container).bounding_box()
    assert header is not None
    assert box is not None
    return bool(header["x"] + header["width"] <= box["x"] + box["width"] + 1)


@pytest.mark.browser
def test_every_column_of_the_fire_lists_can_be_reached_at_1400_px(
    live_server: str, api: Any, site: Any
) -> None:
    """Fourteen columns do not fit next to the menus: the change page's recent fires scroll
    sideways in their own box, as the fire list does (it used to cut off the last ones)."""
    info = api.add("a-schedule-with-a-long-name", "proj.tasks.report", Every(60))
    for minute in range(3):
        slot = START + timedelta(minutes=minute)
        insert_fire(
            site.sqlite_url,
            info.id,
            slot,
            task_id=f"4444444{minute}-4444-4444-4444-444444444444",
            beat="beat-host.example.com:4242",
            sent_at=slot + timedelta(seconds=1),
            run_status="failed",
            started_at=slot + timedelta(seconds=2),
            worker="celery@worker-with-a-long-name.example.com",
            run_error="TimeoutError: upstream did not answer in time",
        )
    with browser_page(live_server, width=1400) as page:
        page.goto(f"{live_server}/admin/celery_dbeat/schedule/{info.id}/change/")
        shot(page, SHOTS, "recent-fires-1400")
        recent = last_header_shown_after_scrolling(
            page, "table.dbeat-recent-fires", ".form-row.field-recent_fires"
        )
        shot(page, SHOTS, "recent-fires-1400-scrolled")
        page.goto(f"{live_server}/admin/celery_dbeat/fire/")
        listed = last_header_shown_after_scrolling(page, "#result_list", "#changelist-form")
        shot(page, SHOTS, "fires-1400-scrolled")
    assert recent
    assert listed


@pytest.mark.browser
def test_a_row_that_cannot_be_read_is_listed_with_its_error_and_opens_in_chromium(
    live_server: str, site: Any
) -> None:
    import sqlalchemy as sa
    from django.test import override_settings

    from celery_dbeat.contrib.django import schedules

    url = site.require_postgres()
    with override_settings(DBEAT_DATABASE_ALIAS="postgres"):
        api = schedules()
        api.add("report", "proj.tasks.report", Every(3600))
        api.add("poll", "proj.tasks.poll", Every(60))
        engine = sa.create_engine(url)
        with engine.begin() as conn:
            conn.execute(
                sa.text("UPDATE dbeat_schedules SET end_at = '-infinity' WHERE name = 'report'")
            )
        engine.dispose()
        with browser_page(live_server, width=1400) as page:
            page.goto(f"{live_server}/admin/celery_dbeat/schedule/")
            row = page.locator("#result_list tbody tr").filter(has_text="report")
            state = row.locator("td.field-state").inner_text()
            spec = row.locator("td.field-spec").inner_text()
            error = row.locator("td.field-error span").get_attribute("title") or ""
            poll = page.locator("#result_list tbody tr").filter(has_text="poll")
            shot(page, SHOTS, "unreadable-list")
            assert poll.locator("td.field-state").inner_text() == "active"
            row.get_by_role("link", name="report").click()
            page.wait_for_url("**/change/")
            note = page.locator(".messagelist .error").inner_text()
            end_at = page.input_value("#id_end_at")
            shot(page, SHOTS, "unreadable-change")
    assert state == "error"
    assert spec == "every 1h (end_at cannot be read)"
    assert error.startswith("stored value of end_at cannot be read (not a readable timestamp: ")
    assert note.startswith("The stored value of end_at cannot be read (")
    assert "the form shows end_at empty" in note
    assert end_at == ""
