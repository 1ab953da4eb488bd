"""The Django admin's explanations (a link from each fire of the history: why that slot did or did
not fire) and the DST marks of the change page's preview."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

from celery_dbeat import Cron
from celery_dbeat.clock import FixedClock
from tests.integration.django.conftest import DjangoSite
from tests.integration.django.support import FIRES, START, change_url, insert_fire, text_of

EXPLAIN = f"{FIRES}explain/"
HOUR = timedelta(hours=1)


def _said(response: Any) -> tuple[str, str]:
    assert response.status_code == 200, response.status_code
    page = text_of(response)
    verdict = re.search(r'id="dbeat-explain-verdict">([^<]+)<', page)
    sentence = re.search(r'id="dbeat-explain-sentence">([^<]+)<', page)
    assert verdict is not None, page
    assert sentence is not None, page
    return verdict.group(1), sentence.group(1)


def test_each_slot_of_the_history_links_to_why_it_did_or_did_not_fire(
    client: Any, api: Any, site: DjangoSite, clock: FixedClock
) -> None:
    hourly = api.add("hourly", "proj.tasks.h", Cron("0 * * * *"))
    sent = START + HOUR
    insert_fire(site.sqlite_url, hourly.id, sent, sent_at=sent + timedelta(seconds=2), beat="b1")
    insert_fire(
        site.sqlite_url,
        hourly.id,
        START + 4 * HOUR,
        status="skipped",
        slot_count=3,
        first_slot=START + 2 * HOUR,
        recorded_at=START + 4 * HOUR + timedelta(minutes=10),
        attempts=0,
    )
    insert_fire(site.sqlite_url, hourly.id, START + 5 * HOUR, manual=True, task_id="manual-1")
    page = client.get(FIRES).content.decode()
    links = [
        html.unescape(u) for u in re.findall(r'<a href="([^"]+)" class="dbeat-explain">', page)
    ]
    assert len(links) == 2  # the run now has none

    verdicts = dict(_said(client.get(link)) for link in links)
    assert verdicts["sent"].startswith("Sent by beat b1 at 2024-05-06T10:00:02")
    assert "3 slots missed together" in verdicts["skipped"]


def test_an_instant_that_is_no_slot_links_to_the_nearest_slots(client: Any, api: Any) -> None:
    api.add("hourly", "proj.tasks.h", Cron("0 * * * *"))
    response = client.get(EXPLAIN, {"schedule": "hourly", "slot": "2024-05-06T11:17:00+00:00"})
    assert _said(response)[0] == "not_a_slot"
    nearest = text_of(response).split('id="dbeat-explain-nearest"', 1)[1].split("</p>", 1)[0]
    assert ">2024-05-06 11:00:00 UTC</a>" in nearest
    assert ">2024-05-06 12:00:00 UTC</a>" in nearest


def test_an_unknown_fire_or_schedule_is_not_found(client: Any, api: Any) -> None:
    assert client.get(EXPLAIN, {"id": "12345"}).status_code == 404
    assert client.get(EXPLAIN, {"id": "abc"}).status_code == 404
    response = client.get(EXPLAIN, {"schedule": "nope"})
    assert response.status_code == 404
    assert 'id="dbeat-explain-error"' in text_of(response)


def test_the_change_page_preview_marks_both_copies_of_a_repeated_hour(
    client: Any, api: Any, clock: FixedClock
) -> None:
    clock.set(START.replace(month=11, day=3, hour=4))  # New York falls back at 06:00 UTC
    info = api.add("ny", "proj.tasks.ny", Cron("0 * * * *", timezone="America/New_York"))
    page = text_of(client.get(change_url(info.id)))
    marks = re.findall(r'<li>([^<]+ UTC)[^<]*<span class="dbeat-dst" title="[^"]*">([^<]+)<', page)
    both = "DST: 01:00 happened twice: fires at both, this is the {} (dst_fold=both)"
    assert marks == [
        ("2024-11-03 05:00:00 UTC", both.format("first")),
        ("2024-11-03 06:00:00 UTC", both.format("second")),
    ]
