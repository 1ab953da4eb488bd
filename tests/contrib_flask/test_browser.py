"""One real browser session on the example app: sign in, create a schedule through the form, see
it listed, let a real beat (the tick loop, in-process, on the real clock) fire it, and read the
fire on the history page.

Runs Debian's Chromium headless (no browser download is possible here). Skips when it is missing
on a laptop; fails when ``CI`` is set.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from werkzeug.serving import make_server

from celery_dbeat.api import Schedules
from celery_dbeat.clock import SystemClock
from tests.contrib_flask.helpers import RecordingPublisher, load_example, make_ticker
from tests.services import unavailable

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOT = Path("/tmp/celery-dbeat-flask-admin-history.png")


@pytest.fixture
def chromium() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        unavailable("Chromium", CHROMIUM, "not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        unavailable("playwright", "the Python environment", exc)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def example_server(db_url: str) -> Iterator[str]:
    """The example app on a free localhost port, served from a thread."""
    app = load_example().create_app(db_url, password="pw", secret_key="browser-test")
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(10)


class RunningBeat:
    """The tick loop beat runs, on the real clock, in a thread."""

    def __init__(self, api: Schedules) -> None:
        self.published = RecordingPublisher()
        self.ticker = make_ticker(api, SystemClock(), self.published)
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
    chromium: Any, example_server: str, db_url: str
) -> None:
    name = "browser-every-2s"
    page = chromium.new_page(viewport={"width": 1400, "height": 900})
    page.set_default_timeout(15_000)

    page.goto(f"{example_server}/admin/schedules/")
    assert "/login" in page.url  # nothing is open before signing in
    page.fill("#username", "admin")
    page.fill("#password", "pw")
    page.click("button[type=submit]")
    page.wait_for_url("**/admin/schedules/")

    page.click("a.nav-link:text-is('Create')")
    page.fill("#name", name)
    page.fill("#task", "proj.tasks.tick")
    page.select_option("#kind", "interval")
    assert page.is_hidden("#cron")
    assert page.is_visible("#every")
    page.fill("#every", "2")
    page.fill("#args", '["from the browser"]')
    page.click("input[type=submit][value=Save]")
    page.wait_for_selector("text=Record was successfully created.")
    row = page.locator("table.model-list tr").filter(has=page.get_by_role("link", name=name))
    assert row.locator("td.col-spec").inner_text().strip() == "every 2 s"
    assert row.locator("td.col-state").inner_text().strip() == "active"

    api = Schedules(db_url)
    try:
        with RunningBeat(api) as beat:
            wait_for(lambda: any(f.status == "sent" for f in api.history(name)))
        assert beat.published[0].schedule_name == name
    finally:
        api.close()

    row.locator("td.col-history a").click()
    page.wait_for_selector("table.model-list td.col-status")
    first = page.locator("table.model-list tr", has=page.locator("td.col-status")).last
    assert first.locator("td.col-schedule").inner_text().strip() == name
    assert first.locator("td.col-status").inner_text().strip() == "sent"
    assert first.locator("td.col-lag").inner_text().strip().endswith(("ms", "s"))
    page.screenshot(path=str(SCREENSHOT), full_page=True)
