"""The Flask admin's explanations (a link from each fire of the history: why that slot did or did
not fire) and the DST marks of the edit page's preview."""

from __future__ import annotations

import html
import re

from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from tests.integration.conftest import START, MakeTicker
from tests.integration.flask.helpers import Browser, rows
from tests.integration.flask.test_history import beat_fires_a_minutely_schedule
from tests.integration.flask.test_schedules import schedule_id

_LINK = re.compile(r'<a href="([^"]+)" class="dbeat-explain">why\?</a>')


def _said(page: str) -> tuple[str, str]:
    verdict = re.search(r'id="dbeat-explain-verdict">([^<]+)<', page)
    sentence = re.search(r'id="dbeat-explain-sentence">([^<]+)<', page)
    assert verdict is not None, page
    assert sentence is not None, page
    return verdict.group(1), html.unescape(sentence.group(1))


def test_each_slot_of_the_history_links_to_why_it_did_or_did_not_fire(
    api: Schedules, admin: Browser, clock: FixedClock, make_ticker: MakeTicker
) -> None:
    beat_fires_a_minutely_schedule(api, clock, make_ticker)
    page = admin.get("/admin/fires/?flt0_schedule_is=minutely")
    shown = [(row["status"], row["explain"]) for row in rows(page)]
    # Newest first: the run now (no slot: no link), 09:10 sent, 09:03-09:09 skipped, 09:02, 09:01.
    assert [explain for _, explain in shown] == ["", "why?", "why?", "why?", "why?"]
    links = [html.unescape(link) for link in _LINK.findall(page)]

    sent = _said(admin.get(links[0]))
    assert sent[0] == "sent"
    assert sent[1].startswith("Sent by beat beat-1 at 2024-05-06T09:10:03")
    skipped = _said(admin.get(links[1]))
    assert skipped[0] == "skipped"
    assert "7 slots missed together" in skipped[1]


def test_an_instant_that_is_no_slot_links_to_the_nearest_slots(
    api: Schedules, admin: Browser
) -> None:
    api.add("hourly", "proj.tasks.x", Cron("0 * * * *"))
    page = admin.get("/admin/fires/explain/?schedule=hourly&slot=2024-05-06T11:17:00Z")
    assert _said(page)[0] == "not_a_slot"
    nearest = page.split('id="dbeat-explain-nearest"', 1)[1].split("</p>", 1)[0]
    assert ">2024-05-06 11:00:00 UTC</a>" in nearest
    assert ">2024-05-06 12:00:00 UTC</a>" in nearest


def test_an_unknown_fire_or_schedule_is_not_found(api: Schedules, admin: Browser) -> None:
    admin.get("/admin/fires/explain/?id=12345", status=404)
    admin.get("/admin/fires/explain/?id=abc", status=404)
    page = admin.get("/admin/fires/explain/?schedule=nope", status=404)
    assert 'id="dbeat-explain-error"' in page


def test_the_edit_page_preview_marks_a_slot_moved_by_a_dst_gap(
    api: Schedules, admin: Browser, clock: FixedClock
) -> None:
    clock.set(START.replace(month=3, day=9))  # the day before New York springs forward
    api.add("ny", "proj.tasks.x", Cron("30 2 * * *", timezone="America/New_York"))
    page = admin.get(f"/admin/schedules/edit/?id={schedule_id(api, 'ny')}")
    preview = page.split('id="dbeat-preview"', 1)[1].split("</table>", 1)[0]
    assert "<th>DST</th>" in preview
    marked = re.findall(
        r'<td>([^<]+ UTC)</td><td>[^<]*</td><td class="dbeat-dst">(.*?)</td>', preview
    )
    assert [(utc, re.sub(r"<[^>]+>", "", mark)) for utc, mark in marked if mark] == [
        (
            "2024-03-10 07:00:00 UTC",
            "02:30 did not exist: moved to the end of the gap (dst_gap=gap_end)",
        )
    ]
