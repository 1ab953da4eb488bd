"""One real browser: Debian's headless Chromium, driven by Playwright, against a real HTTP server.

Skipped on a machine without /usr/bin/chromium (``apt-get install chromium``) or without
playwright; failed when ``CI`` is set, so CI cannot pass by skipping.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from celery_dbeat import Every
from tests.services import unavailable

from .conftest import ADMIN_PASSWORD, ADMIN_USER

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


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


@pytest.mark.browser
def test_an_admin_logs_in_creates_a_schedule_in_chromium_and_sees_it_listed(
    live_server: str, api: Any
) -> None:
    if not os.path.exists(CHROMIUM):
        unavailable("Chromium", CHROMIUM, "not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        unavailable("Playwright", "pip install playwright", exc)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
        )
        try:
            page = browser.new_page()
            page.set_default_timeout(20_000)
            page.goto(f"{live_server}/admin/login/?next=/admin/celery_dbeat/schedule/add/")
            page.fill("#id_username", ADMIN_USER)
            page.fill("#id_password", ADMIN_PASSWORD)
            page.click("input[type=submit]")
            page.wait_for_url("**/admin/celery_dbeat/schedule/add/")
            page.fill("#id_name", "browser-report")
            page.fill("#id_task", "proj.tasks.report")
            page.select_option("#id_kind", "interval")
            page.fill("#id_every", "45s")
            page.fill("#id_args", '["from", "chromium"]')
            page.click("input[name=_save]")
            page.wait_for_url("**/admin/celery_dbeat/schedule/")
            listing = page.locator("#result_list").inner_text()
            notice = page.locator(".messagelist").inner_text()
        finally:
            browser.close()
    assert "browser-report" in listing
    assert "every 45 s" in listing
    assert "was added successfully" in notice
    info = api.get("browser-report")
    assert (info.schedule, info.args, info.origin) == (Every(45), ["from", "chromium"], "api")
