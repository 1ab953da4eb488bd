"""Real browser sessions on the example app: sign in, create a schedule through the form, see it
listed, let a real beat (the tick loop, in-process, on the real clock) fire it, and read the fire
on the history page; the kind toggle, the solar form, the task suggestions, an error on one
field, run now with no beat running, the pause action's typed note; and the page shown while the
tables are missing.

Runs Debian's Chromium headless (no browser download is possible here). Skips when it is missing
on a laptop; fails when ``CI`` is set. Screenshots go to /tmp/flask-shots/, outside the repository.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from flask import Flask
from werkzeug.serving import make_server

from celery_dbeat import Every
from celery_dbeat.api import Schedules
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import SystemClock
from celery_dbeat.core.fields import KIND_GROUPS
from celery_dbeat.locks import DatabaseLock
from tests.integration.browser import headless_chromium, shot
from tests.integration.conftest import RecordingPublisher, settings
from tests.integration.flask.helpers import load_example, make_app

pytestmark = pytest.mark.browser

SHOTS = Path("/tmp/flask-shots")
#: What the example app's task field suggests in these tests.
TASK_NAMES = ["proj.tasks.greet", "proj.tasks.tick"]
KINDS = {
    "cron": "#cron",
    "rrule": "#rrule",
    "interval": "#every",
    "once": "#run_at",
    "solar": "#solar_event",
}


@pytest.fixture
def chromium() -> Iterator[Any]:
    with headless_chromium() as browser:
        yield browser


@contextmanager
def serve(app: Flask) -> Iterator[str]:
    """``app`` on a free localhost port, served from a thread; yields its URL."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join(10)


@pytest.fixture
def example_server(database_url: str) -> Iterator[str]:
    """The example app, its task field suggesting :data:`TASK_NAMES`."""
    app = load_example().create_app(
        database_url, password="pw", secret_key="browser-test", task_names=TASK_NAMES
    )
    with serve(app) as url:
        yield url


def sign_in(browser: Any, server: str, path: str, *, javascript: bool = True) -> Any:
    """A new page signed in to the example app, at ``path``."""
    context = browser.new_context(
        viewport={"width": 1400, "height": 900}, java_script_enabled=javascript
    )
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(f"{server}{path}")
    assert "/login" in page.url  # nothing is open before signing in
    page.fill("#username", "admin")
    page.fill("#password", "pw")
    page.click("button[type=submit]")
    page.wait_for_url(f"**{path}")
    return page


def follow(page: Any, selector: str) -> None:
    """Click ``selector`` and wait until the page it leads to has loaded, its scripts run."""
    with page.expect_navigation():
        page.click(selector)


def shown_kind(page: Any) -> list[str]:
    """The kinds whose fields the page shows."""
    return [kind for kind, field in KINDS.items() if page.is_visible(field)]


class RunningBeat:
    """The tick loop beat runs, on the real clock, in a thread."""

    def __init__(self, api: Schedules) -> None:
        self.published = RecordingPublisher()
        beat = settings(max_interval=1)
        self.ticker = Ticker(api.store, DatabaseLock(), self.published, beat, SystemClock())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._stop.wait(min(self.ticker.tick(), 0.2))

    def __enter__(self) -> RunningBeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.ticker.stop()


def wait_for(condition: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_a_schedule_created_in_the_browser_is_fired_by_beat_and_shown_in_its_history(
    chromium: Any, example_server: str, database_url: str
) -> None:
    name = "browser-every-2s"
    page = sign_in(chromium, example_server, "/admin/schedules/")

    follow(page, "a.nav-link:text-is('Create')")
    page.fill("#name", name)
    page.fill("#task", "proj.tasks.tick")
    page.select_option("#kind", "interval")
    assert page.is_hidden("#cron")
    assert page.is_visible("#every")
    page.fill("#every", "2")
    page.fill("#args", '["from the browser"]')
    follow(page, "input[type=submit][value=Save]")
    page.wait_for_selector("text=Record was successfully created.")
    row = page.locator("table.model-list tr").filter(has=page.get_by_role("link", name=name))
    assert row.locator("td.col-spec").inner_text().strip() == "every 2s"
    assert row.locator("td.col-state").inner_text().strip() == "active"

    api = Schedules(database_url)
    try:
        with RunningBeat(api) as beat:
            wait_for(lambda: any(f.status == "sent" for f in api.history(name)))
        assert beat.published.fires[0][0] == name
    finally:
        api.close()

    row.locator("td.col-history a").click()
    page.wait_for_selector("table.model-list td.col-status")
    first = page.locator("table.model-list tr", has=page.locator("td.col-status")).last
    assert first.locator("td.col-schedule").inner_text().strip() == name
    assert first.locator("td.col-status").inner_text().strip() == "sent"
    assert first.locator("td.col-lag").inner_text().strip().endswith(("ms", "s"))
    shot(page, SHOTS, "history")


def test_the_form_shows_only_the_chosen_kinds_fields_and_creates_a_solar_schedule(
    chromium: Any, example_server: str, database_url: str
) -> None:
    page = sign_in(chromium, example_server, "/admin/schedules/new/")
    assert shown_kind(page) == ["cron"]  # the default kind
    for kind in KINDS:
        page.select_option("#kind", kind)
        assert shown_kind(page) == [kind]
        assert page.is_visible(f"fieldset[data-dbeat-kind~={kind}] legend >> nth=0")
        assert page.is_visible("#timezone") == (kind in ("cron", "rrule"))

    # The task field suggests the registered names: the browser links it to the datalist.
    suggested = page.eval_on_selector("#task", "e => Array.from(e.list.options, o => o.value)")
    assert suggested == TASK_NAMES

    page.fill("#name", "lights")
    page.fill("#task", "proj.tasks.lights")  # not registered here: saved, with a warning
    page.select_option("#kind", "solar")
    page.select_option("#solar_event", "sunset")
    page.fill("#latitude", "48.85")
    page.fill("#longitude", "2.35")
    shot(page, SHOTS, "solar-form")
    follow(page, "input[type=submit][value=Save]")
    page.wait_for_selector("text=Record was successfully created.")
    warning = page.inner_text(".alert-warning")
    assert (
        "task 'proj.tasks.lights' (did you mean proj.tasks.greet?) is not registered in this"
        in warning
    )
    row = page.locator("table.model-list tr").filter(has=page.get_by_role("link", name="lights"))
    assert row.locator("td.col-spec").inner_text().strip() == "solar sunset at 48.85, 2.35"
    shot(page, SHOTS, "solar-listed")

    with page.expect_navigation():
        row.get_by_role("link", name="lights").click()
    page.wait_for_selector("#dbeat-overview")
    assert shown_kind(page) == ["solar"]  # the edit page opens on the stored kind
    assert page.input_value("#latitude") == "48.85"
    shot(page, SHOTS, "solar-edit")


def test_a_bad_cron_marks_only_the_cron_field(chromium: Any, example_server: str) -> None:
    page = sign_in(chromium, example_server, "/admin/schedules/new/")
    page.fill("#name", "bad-cron")
    page.fill("#task", "proj.tasks.greet")
    page.fill("#cron", "61 * * * *")
    page.fill("#timezone", "Europe/Paris")
    page.fill("#args", '["kept"]')
    follow(page, "input[type=submit][value=Save]")
    page.wait_for_selector(".alert-danger")
    assert page.eval_on_selector_all(".is-invalid", "els => els.map(e => e.id)") == ["cron"]
    assert page.input_value("#timezone") == "Europe/Paris"
    assert page.input_value("#args") == '["kept"]'
    assert shown_kind(page) == ["cron"]
    shot(page, SHOTS, "bad-cron")


def test_run_now_with_no_beat_running_says_when_it_will_be_sent(
    chromium: Any, example_server: str, database_url: str
) -> None:
    with Schedules(database_url) as api:
        api.add("report", "proj.tasks.greet", Every(3600))
        api.pause("report")
    page = sign_in(chromium, example_server, "/admin/schedules/")
    row = page.locator("table.model-list tr").filter(has=page.get_by_role("link", name="report"))
    assert row.locator("td.col-next_run_at").inner_text().strip() == "none (paused)"
    row.locator("input.action-checkbox").check()
    page.on("dialog", lambda dialog: dialog.accept())  # the action's confirmation
    page.click("a.dropdown-toggle:text-is('With selected')")
    follow(page, "a:text-is('Run now')")
    page.wait_for_selector(".alert-warning")
    assert (
        "Run now recorded for 1 schedule(s): report, but no beat is running (none seen within "
        "15s): each is sent when a beat starts." in page.inner_text(".alert-warning")
    )
    shot(page, SHOTS, "run-now-no-beat")


def test_the_pause_action_takes_the_note_typed_beside_it_and_shows_a_refused_one(
    chromium: Any, example_server: str, database_url: str
) -> None:
    with Schedules(database_url) as api:
        api.add("report", "proj.tasks.greet", Every(3600))
        api.add("poll", "proj.tasks.tick", Every(60))
    page = sign_in(chromium, example_server, "/admin/schedules/")
    page.on("dialog", lambda dialog: dialog.accept())  # the action's confirmation

    def pause(name: str, note: str) -> None:
        page.locator("table.model-list tr").filter(has=page.get_by_role("link", name=name)).locator(
            "input.action-checkbox"
        ).check()
        page.fill("#dbeat-pause-note", note)
        page.click("a.dropdown-toggle:text-is('With selected')")
        follow(page, "a:text-is('Pause')")

    pause("poll", "down\x07now")  # a control character: refused, nothing paused
    assert "Nothing paused: note=" in page.inner_text(".alert-danger")
    shot(page, SHOTS, "pause-note-refused")
    pause("report", "alice: mail server down (INC-42)")

    page.wait_for_selector(".alert-success")
    assert "Paused 1 schedule(s): report" in page.inner_text(".alert-success")
    assert page.inner_text(".dbeat-pause-note") == "alice: mail server down (INC-42)"
    shot(page, SHOTS, "pause-note")
    with Schedules(database_url) as api:
        assert api.get("report").pause_note == "alice: mail server down (INC-42)"
        assert api.get("poll").enabled


def test_without_javascript_every_kind_shows_under_its_legend_and_the_form_works(
    chromium: Any, example_server: str, database_url: str
) -> None:
    page = sign_in(chromium, example_server, "/admin/schedules/new/", javascript=False)
    assert shown_kind(page) == list(KINDS)
    legends = page.locator("fieldset[data-dbeat-kind] legend").all_inner_texts()
    assert legends == [f"For kind {' or '.join(kinds)}" for kinds, _ in KIND_GROUPS]
    shot(page, SHOTS, "no-js-form")
    page.fill("#name", "no-js")
    page.fill("#task", "proj.tasks.greet")
    page.select_option("#kind", "interval")
    page.fill("#every", "1m")
    follow(page, "input[type=submit][value=Save]")
    page.wait_for_selector("text=Record was successfully created.")
    with Schedules(database_url) as api:
        assert api.get("no-js").schedule == Every(60)


def test_the_missing_tables_page_says_what_to_run(chromium: Any, database_url: str) -> None:
    with Schedules(database_url) as api:  # never migrated
        app, _ = make_app(api)
        with serve(app) as server:
            page = chromium.new_page(viewport={"width": 1400, "height": 900})
            response = page.goto(f"{server}/admin/schedules/")
            assert response is not None
            assert response.status == 503
            heading = page.inner_text("#dbeat-schema-problem h1")
            assert heading == f"celery-dbeat's tables are missing in {database_url}"
            assert "celery -A proj dbeat migrate" in page.inner_text("#dbeat-schema-problem")
            assert page.is_visible("a.nav-link:text-is('Schedules')")  # the admin's menu stays
            shot(page, SHOTS, "missing-tables")


@pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
def test_a_row_that_cannot_be_read_is_listed_with_its_error_and_repaired_by_saving_it(
    chromium: Any, example_server: str, database_url: str
) -> None:
    with Schedules(database_url) as api:
        api.add("report", "proj.tasks.greet", Every(3600))
        api.add("poll", "proj.tasks.tick", Every(60))
        with api.store.engine.begin() as conn:
            conn.execute(
                sa.text(
                    "UPDATE dbeat_schedules SET start_at = 'infinity', last_slot = '-infinity' "
                    "WHERE name = 'report'"
                )
            )
    page = sign_in(chromium, example_server, "/admin/schedules/")
    row = page.locator("table.model-list tr").filter(has=page.get_by_role("link", name="report"))
    assert row.locator("td.col-state").inner_text().strip() == "error"
    assert row.locator("td.col-last_slot").inner_text().strip() == "cannot be read"
    assert "(start_at cannot be read)" in row.locator("td.col-spec").inner_text()
    error = row.locator("td.col-last_error span").get_attribute("title") or ""
    assert error.startswith("stored value of start_at, last_slot cannot be read (")
    poll = page.locator("table.model-list tr").filter(has=page.get_by_role("link", name="poll"))
    assert poll.locator("td.col-state").inner_text().strip() == "active"
    shot(page, SHOTS, "unreadable-list")

    follow(page, "a:text-is('report')")
    note = page.inner_text("#dbeat-unreadable")
    assert note.startswith("The stored value of start_at, last_slot cannot be read (")
    assert "the form shows start_at empty" in note
    assert page.input_value("#start_at") == ""
    shot(page, SHOTS, "unreadable-edit")
    follow(page, "input[type=submit][value=Save]")
    page.wait_for_selector("text=Record was successfully saved.")
    with Schedules(database_url) as api:
        repaired = api.get("report")
    assert (repaired.state, repaired.start_at, repaired.last_slot) == ("active", None, None)
