"""One real browser for the admin suites (django/, flask/): Debian's headless Chromium, driven
by Playwright.

No browser download is possible here, so Playwright runs /usr/bin/chromium
(``apt-get install chromium``). Without it, or without Playwright, a test skips on a laptop and
fails when ``CI`` is set, so CI cannot pass by skipping.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.services import unavailable

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


@contextmanager
def headless_chromium() -> Iterator[Any]:
    """A headless Chromium (Playwright's ``Browser``), closed afterwards."""
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
            yield browser
        finally:
            browser.close()


def shot(page: Any, folder: Path, name: str) -> None:
    """Save the whole of ``page`` as ``folder/name.png`` (outside the repository), to look at."""
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
