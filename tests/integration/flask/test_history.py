"""The read-only fire history: what beat recorded, newest first, with lag and outcome."""

from __future__ import annotations

from datetime import timedelta

from celery_dbeat import Cron, Every
from celery_dbeat.api import Schedules
from celery_dbeat.clock import FixedClock
from tests.integration.conftest import START, MakeTicker, run
from tests.integration.flask.helpers import ON_SQLITE_AND_POSTGRESQL, Browser, rows


def beat_fires_a_minutely_schedule(
    api: Schedules, clock: FixedClock, make_ticker: MakeTicker
) -> None:
    """09:01 sent 2.5 s late, 09:02 sent 250 ms late, beat down until 09:10:03 (the 'skip'
    policy records 09:03-09:09 as skipped, 09:10 is on time), then a run-now fire."""
    api.add("minutely", "proj.tasks.tick", Cron("* * * * *"), misfire_policy="skip")
    api.add("other", "proj.tasks.other", Every(60))
    ticker = make_ticker(max_interval=1)  # on api's store
    for at in (
        timedelta(minutes=1, seconds=2.5),
        timedelta(minutes=2, milliseconds=250),
        timedelta(minutes=10, seconds=3),
    ):
        clock.set(START + at)
        ticker.tick()
    api.trigger("minutely")
    clock.advance(2)
    ticker.tick()


@ON_SQLITE_AND_POSTGRESQL
def test_the_history_of_a_schedule_shows_each_fire_newest_first_with_lag_and_outcome(
    api: Schedules, admin: Browser, clock: FixedClock, make_ticker: MakeTicker
) -> None:
    beat_fires_a_minutely_schedule(api, clock, make_ticker)
    page = admin.get("/admin/fires/?flt0_schedule_is=minutely")
    shown = [
        (row["schedule"], row["slot"], row["lag"], row["status"], row["beat"]) for row in rows(page)
    ]
    assert shown == [
        ("minutely", "2024-05-06 09:10:03 UTC", "2 s", "sent (run now)", "beat-1"),
        ("minutely", "2024-05-06 09:10:00 UTC", "3 s", "sent", "beat-1"),
        (
            "minutely",
            "2024-05-06 09:09:00 UTC",
            "",
            "skipped (7 slots from 2024-05-06 09:03:00 UTC)",
            "beat-1",
        ),
        ("minutely", "2024-05-06 09:02:00 UTC", "250 ms", "sent", "beat-1"),
        ("minutely", "2024-05-06 09:01:00 UTC", "2.5 s", "sent", "beat-1"),
    ]
    first, stored = rows(page)[-1], api.history("minutely")[-1]
    assert first["sent_at"] == "2024-05-06 09:01:02 UTC"
    assert (first["attempts"], first["task_id"]) == (str(stored.attempts), stored.task_id)


def test_the_whole_history_names_each_fire_schedule(
    api: Schedules, admin: Browser, clock: FixedClock, make_ticker: MakeTicker
) -> None:
    beat_fires_a_minutely_schedule(api, clock, make_ticker)
    everything = rows(admin.get("/admin/fires/"))
    assert {row["schedule"] for row in everything} == {"minutely", "other"}
    skipped = rows(admin.get("/admin/fires/?flt0_outcome_equals=skipped"))
    assert sorted((row["schedule"], row["status"]) for row in skipped) == [
        ("minutely", "skipped (7 slots from 2024-05-06 09:03:00 UTC)"),
        ("other", "skipped (6 slots from 2024-05-06 09:03:00 UTC)"),  # 'latest' sent 09:09
    ]
    assert len(rows(admin.get("/admin/fires/?flt0_run_now_equals=1"))) == 1


def test_a_backfills_fires_say_backfill_as_dbeat_history_does_and_filter_by_it(
    api: Schedules, admin: Browser, clock: FixedClock, make_ticker: MakeTicker
) -> None:
    hour = timedelta(hours=1)
    api.add("hourly", "proj.tasks.hourly", Cron("0 * * * *"), start_at=START - 12 * hour)
    clock.advance(hour + timedelta(minutes=1))
    api.backfill("hourly", START - 3 * hour, START - hour)  # three slots, one queued run

    queued = rows(admin.get("/admin/fires/?flt0_schedule_is=hourly"))
    run(make_ticker(max_interval=1), clock, clock.now())  # the 10:00 slot, then the backfill
    sent = rows(admin.get("/admin/fires/?flt0_schedule_is=hourly"))
    backfilled = rows(admin.get("/admin/fires/?flt0_origin_equals=backfill"))

    assert [(row["slot"], row["status"]) for row in queued] == [
        ("2024-05-06 08:00:00 UTC", "queued (backfill, 3 slots from 2024-05-06 06:00:00 UTC)")
    ]
    assert [(row["slot"], row["status"]) for row in sent] == [
        ("2024-05-06 10:00:00 UTC", "sent"),
        ("2024-05-06 08:00:00 UTC", "sent (backfill)"),
        ("2024-05-06 07:00:00 UTC", "sent (backfill)"),
        ("2024-05-06 06:00:00 UTC", "sent (backfill)"),
    ]
    assert [row["slot"] for row in backfilled] == [row["slot"] for row in sent[1:]]


def test_the_list_and_the_edit_page_link_to_the_schedule_history(
    api: Schedules, admin: Browser
) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    link = 'href="/admin/fires/?flt0_schedule_is=report"'
    assert link in admin.get("/admin/schedules/")
    assert link in admin.get(f"/admin/schedules/edit/?id={api.get('report').id}")


def test_the_history_cannot_be_edited_or_deleted(api: Schedules, admin: Browser) -> None:
    api.add("report", "proj.tasks.report", Cron("0 * * * *"))
    api.trigger("report")
    page = admin.get("/admin/fires/")
    assert "/admin/fires/new/" not in page
    assert "/admin/fires/delete/" not in page
    assert admin.client.get("/admin/fires/new/").status_code == 302
    assert admin.client.get("/admin/fires/edit/?id=1").status_code == 302
    assert admin.client.post("/admin/fires/delete/", data={"id": "1"}).status_code == 302
    assert len(api.history("report")) == 1
