"""The Flask-Admin backfill: the bulk action opens a page for the range; a dry run stays there
with each schedule's counts, a backfill queues the slots (as ``Schedules.backfill`` does) and
goes back to the list."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from celery_dbeat import Cron
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from celery_dbeat.store.runs import prune_history
from tests.integration.conftest import START, F
from tests.integration.flask.helpers import Browser, flashes

HOUR = timedelta(hours=1)


def _page(admin: Browser, api: Schedules, *names: str) -> str:
    ids = [api.get(name).id for name in names]
    page = admin.action("backfill", ids)
    assert 'id="dbeat-backfill"' in page
    return "/admin/schedules/backfill/?" + "&".join(f"id={i}" for i in ids)


def test_the_backfill_action_counts_then_queues_the_slots_of_the_range(
    api: Schedules, admin: Browser, clock: FixedClock
) -> None:
    api.add("hourly", "t.hourly", Cron("0 * * * *"), start_at=START - 12 * HOUR)
    api.add("daily", "t.daily", Cron("0 3 * * *"), start_at=START - 12 * HOUR)
    clock.advance(timedelta(minutes=1))
    url = _page(admin, api, "hourly", "daily")
    rng = {"start": "2024-05-06T03:00:00Z", "end": "2024-05-06T08:00:00Z", "limit": "100"}

    page = admin.post(url, {**rng, "dry_run": "y"})

    assert 'id="dbeat-backfill"' in page  # a dry run stays on the page
    assert [f for f in flashes(page) if "would queue" in f] == [
        "success: would queue 1 fire(s) of 'daily' from 2024-05-06T03:00:00Z to "
        "2024-05-06T03:00:00Z (0 of the 1 slot(s) in the range already sent or on their way);"
        " beats send them behind on-time fires",
        "success: would queue 6 fire(s) of 'hourly' from 2024-05-06T03:00:00Z to "
        "2024-05-06T08:00:00Z (0 of the 6 slot(s) in the range already sent or on their way);"
        " beats send them behind on-time fires",
    ]
    assert api.history("hourly") == []

    page = admin.post(url, rng)  # unticked: the real thing

    assert 'id="dbeat-backfill"' not in page  # back on the list
    assert any("queued 6 fire(s) of 'hourly'" in f for f in flashes(page))
    # The six slots wait as one queued run.
    assert [
        (f.slot, f.first_slot, f.slot_count, f.status, f.origin) for f in api.history("hourly")
    ] == [(START - HOUR, START - 6 * HOUR, 6, "queued", "backfill")]
    page = admin.post(url, rng)
    assert any("nothing to backfill: 6 slot(s) of 'hourly'" in f for f in flashes(page))
    backfilled = [e for e in api.audit("hourly") if e.action == "backfill"]
    assert [(e.surface, e.changes["queued"]) for e in backfilled] == [("flask-admin", [None, 6])]


def test_the_backfill_leaves_pruned_slots_unless_resend_is_ticked(
    api: Schedules, admin: Browser, clock: FixedClock
) -> None:
    api.add("hourly", "t.hourly", Cron("0 * * * *"), start_at=START - 12 * HOUR)
    clock.advance(timedelta(minutes=1))
    url = _page(admin, api, "hourly")
    rng = {"start": "2024-05-06T06:00:00Z", "end": "2024-05-06T08:00:00Z", "limit": "100"}
    admin.post(url, rng)
    with api.store.engine.begin() as conn:  # the beats sent them; then their history aged out
        conn.execute(sa.update(F).values(status="sent"))
    prune_history(api.store.engine, START)

    left = [f for f in flashes(admin.post(url, rng)) if "hourly" in f]
    resent = [f for f in flashes(admin.post(url, {**rng, "resend": "y"})) if "hourly" in f]

    assert "3 at or before 2024-05-06T08:00:00Z, whose history was pruned" in left[0]
    assert resent[0].startswith("success: queued 3 fire(s) of 'hourly'")
    assert "3 of them at or before 2024-05-06T08:00:00Z" in resent[0]


def test_a_bad_range_is_shown_on_its_field_and_a_refused_one_per_schedule(
    api: Schedules, admin: Browser, clock: FixedClock
) -> None:
    api.add("hourly", "t.hourly", Cron("0 * * * *"), start_at=START - 12 * HOUR)
    url = _page(admin, api, "hourly")

    page = admin.post(url, {"start": "yesterday", "end": "2024-05-06T08:00:00", "limit": "10"})

    assert "&#39;yesterday&#39; is not an ISO-8601 instant such as 2024-03-09T00:00:00Z" in page
    assert "needs a time zone offset, e.g. +00:00 or Z" in page
    page = admin.post(
        url, {"start": "2024-05-05T00:00:00Z", "end": "2024-05-06T08:00:00Z", "limit": "5"}
    )
    (error,) = [f for f in flashes(page) if f.startswith("danger:")]
    assert error.startswith("danger: hourly: ")
    assert "holds more than 5 slots (the limit); backfill it in parts" in error
    assert api.history("hourly") == []


def test_the_backfill_page_without_a_selection_goes_back_to_the_list(admin: Browser) -> None:
    response = admin.client.get("/admin/schedules/backfill/", follow_redirects=True)
    assert response.request.path == "/admin/schedules/"
    assert "warning: Backfill: select the schedules to backfill first." in flashes(
        response.get_data(as_text=True)
    )


def test_a_dry_run_names_the_days_the_calendar_removes_and_a_paused_schedule_waiting(
    api: Schedules, admin: Browser, clock: FixedClock
) -> None:
    api.calendars.add("bank", dates="2024-05-04")
    api.add("daily", "t.daily", Cron("0 3 * * *"), start_at=START - 6 * 24 * HOUR, calendar="bank")
    api.pause("daily")
    clock.advance(timedelta(minutes=1))
    rng = {"start": "2024-05-01T00:00:00Z", "end": "2024-05-06T08:00:00Z", "limit": "100"}

    page = admin.post(_page(admin, api, "daily"), {**rng, "dry_run": "y"})

    assert [f for f in flashes(page) if "would queue" in f] == [
        "success: would queue 5 fire(s) of 'daily' from 2024-05-01T03:00:00Z to "
        "2024-05-06T03:00:00Z (0 of the 5 slot(s) in the range already sent or on their way;"
        " 1 excluded by calendar 'bank', never sent (2024-05-04T03:00:00Z)); 'daily' is paused:"
        " they wait, and once it is resumed beats send them behind on-time fires",
    ]
