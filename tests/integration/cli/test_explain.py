"""``dbeat explain`` (why a slot did or did not fire, from the record) and ``dbeat preview``'s
DST marks and ``--dst`` list, on a real database."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from celery_dbeat.api import Schedules
from celery_dbeat.beat.ticker import Ticker
from celery_dbeat.clock import FixedClock
from celery_dbeat.config import Settings
from celery_dbeat.core.specs import Cron
from celery_dbeat.locks import DatabaseLock
from celery_dbeat.store import Store
from celery_dbeat.store.models import S
from tests.integration.cli.conftest import Cli

UTC = timezone.utc


def _at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _tick(url: str, now: str) -> list[str]:
    """One tick of beat ``beat-a`` at ``now``; the task ids it published."""
    store = Store(url, server_clock=False)
    sent: list[str] = []
    ticker = Ticker(
        store,
        DatabaseLock(),
        lambda request, *_: sent.append(request.task_id),
        Settings.from_mapping({"instance_name": "beat-a"}),
        FixedClock(_at(now)),
    )
    ticker.tick()
    store.close()
    return sent


def _explain(cli: Cli, *args: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(cli.ok("explain", *args, "--json"))
    return data


def test_explain_says_what_each_slot_became_after_an_outage(cli_any: Cli) -> None:
    # SEMANTICS' canonical outage with policy skip: the 09:00 slot sent, beats down from 09:59:30
    # to 13:10, so 10:00 to 13:00 are skipped, together; 14:00 is the next.
    url = cli_any.app.conf.dbeat_database_url
    with Schedules(url, clock=FixedClock(_at("2024-06-10T08:30Z"))) as api:
        api.add("hourly", "proj.tasks.report", Cron("0 * * * *"), misfire_policy="skip")
    assert len(_tick(url, "2024-06-10T09:00:01Z")) == 1
    assert _tick(url, "2024-06-10T13:10:00Z") == []

    sent = _explain(cli_any, "hourly", "--slot", "2024-06-10T09:00:00Z")
    assert (sent["verdict"], sent["chosen"]) == ("sent", "asked")
    assert sent["details"]["beat"] == "beat-a"
    assert sent["details"]["lag"] == 1.0

    skipped = _explain(cli_any, "hourly", "--slot", "2024-06-10T11:00:00+00:00")
    assert skipped["verdict"] == "skipped"
    assert skipped["details"]["outage_until"] == "2024-06-10T13:10:00Z"
    assert skipped["details"]["slots_missed"] == 4
    assert "misfire policy (skip)" in skipped["sentence"]

    nowhere = _explain(cli_any, "hourly", "--slot", "2024-06-10T10:17:00Z")
    assert nowhere["verdict"] == "not_a_slot"
    assert nowhere["nearest"] == {"before": "2024-06-10T10:00:00Z", "after": "2024-06-10T11:00:00Z"}

    text = cli_any.ok("explain", "hourly", "--slot", "2024-06-10T09:00:00Z")
    assert text.splitlines()[0] == "hourly 2024-06-10T09:00:00Z: sent"
    assert text.splitlines()[1].startswith("Sent by beat beat-a at 2024-06-10T09:00:01")


def test_explain_without_a_slot_takes_the_latest_up_to_now(cli: Cli) -> None:
    cli.ok("add", "hourly", "proj.tasks.report", "--cron", "0 * * * *")

    said = _explain(cli, "hourly")
    # Created this hour: its latest slot is before its creation, or it has none yet.
    assert said["chosen"] in ("latest", "next")
    assert said["verdict"] in ("before_created", "not_yet_due")


def test_explain_of_a_paused_slot_names_who_paused_it(cli: Cli) -> None:
    cli.ok("add", "hourly", "proj.tasks.report", "--cron", "0 * * * *")
    cli.ok("pause", "hourly", "--note", "deploy")

    said = _explain(cli, "hourly", "--slot", "2999-01-01T00:00:00Z")
    assert said["verdict"] == "paused"
    assert "'deploy'" in said["sentence"]


def test_explain_refuses_an_unknown_schedule_and_a_bad_instant(cli: Cli) -> None:
    cli.ok("add", "hourly", "proj.tasks.report", "--cron", "0 * * * *")

    cli.fails("explain", "nope", code=3, fragment="nope")
    cli.fails("explain", "hourly", "--slot", "yesterday", code=1, fragment="slot")
    cli.fails("explain", "hourly", "--slot", "2024-06-10T09:00:00", code=1, fragment="slot")


def test_preview_marks_both_copies_of_a_repeated_hour(cli: Cli) -> None:
    cli.ok(
        "add", "hourly-ny", "proj.tasks.report", "--cron", "0 * * * *", "--tz", "America/New_York"
    )

    out = cli.ok(
        "preview", "hourly-ny", "--after", "2024-11-03T04:30:00Z", "--count", "3", "--json"
    )

    slots = json.loads(out)
    assert [s["slot"] for s in slots] == [
        "2024-11-03T05:00:00Z",
        "2024-11-03T06:00:00Z",
        "2024-11-03T07:00:00Z",
    ]
    assert ["dst" in s for s in slots] == [True, True, False]
    assert "fires at both" in slots[0]["dst"][0]
    text = cli.ok("preview", "hourly-ny", "--after", "2024-11-03T04:30:00Z", "--count", "2")
    assert text.splitlines() == [
        "2024-11-03T05:00:00Z  DST: 01:00 happened twice: fires at both, this is the first"
        " (dst_fold=both)",
        "2024-11-03T06:00:00Z  DST: 01:00 happened twice: fires at both, this is the second"
        " (dst_fold=both)",
    ]


def test_preview_dst_lists_every_touched_slot_of_the_next_year(cli: Cli) -> None:
    cli.ok("add", "ny", "proj.tasks.report", "--cron", "30 1 * * *", "--tz", "America/New_York")

    notes = json.loads(
        cli.ok("preview", "ny", "--dst", "--after", "2024-01-01T00:00:00Z", "--json")
    )

    assert [(n["kind"], n["wall"], n["fires"], n["policy"]) for n in notes] == [
        ("fold", "2024-11-03T01:30:00", ["2024-11-03T05:30:00Z"], "first")
    ]
    adhoc = cli.ok(
        "preview", "--cron", "30 2 * * *", "--tz", "America/New_York", "--dst",
        "--after", "2024-01-01T00:00:00Z",
    )  # fmt: skip
    assert adhoc.splitlines() == [
        "2024-03-10T07:00:00Z  02:30 on 2024-03-10 did not exist in America/New_York (clocks went"
        " forward): moved to the end of the gap, 03:00 EDT (2024-03-10T07:00:00Z)"
        " (dst_gap=gap_end)"
    ]
    utc = cli.ok("preview", "--every", "1h", "--dst")
    assert utc == "no slot is moved or repeated by a DST change in the next year\n"


def test_explain_of_a_schedule_whose_definition_cannot_be_read_says_it_is_set_aside(
    cli: Cli,
) -> None:
    cli.ok("add", "hourly", "proj.tasks.report", "--cron", "0 * * * *")
    engine = sa.create_engine(cli.app.conf.dbeat_database_url)
    with engine.begin() as conn:  # a hand edit no surface would store
        conn.execute(sa.update(S).where(S.c.name == "hourly").values(timezone="Mars/Olympus"))
    engine.dispose()

    said = _explain(cli, "hourly", "--slot", "2024-06-10T09:00:00Z")
    assert said["verdict"] == "error"
    assert "Mars/Olympus" in said["sentence"]
