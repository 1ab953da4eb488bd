"""``--rrule`` on the command line: add, show, preview (named and ad hoc, with local times in
the rule's zone), update to and from another kind, and one line for a bad rule."""

from __future__ import annotations

import json

from tests.integration.cli.conftest import Cli

RULE = "FREQ=MONTHLY;BYDAY=MO,TU,WE,TH,FR;BYSETPOS=-1;BYHOUR=18;BYMINUTE=0"


def test_an_rrule_schedule_is_added_shown_and_previewed(cli: Cli) -> None:
    out = cli.ok("add", "month-end", "proj.tasks.report", "--rrule", RULE, "--tz", "Europe/London")
    shown = json.loads(cli.ok("show", "month-end", "--json"))
    preview = json.loads(
        cli.ok("preview", "month-end", "--after", "2027-03-01T00:00:00Z", "--count", "2", "--json")
    )

    assert out.startswith(f"added 'month-end': rrule '{RULE}' Europe/London; active, next run")
    assert (shown["kind"], shown["rrule"], shown["timezone"], shown["cron"]) == (
        "rrule",
        RULE,
        "Europe/London",
        None,
    )
    assert preview == [
        {
            "slot": "2027-03-31T17:00:00Z",
            "local": "2027-03-31T18:00:00+01:00",
            "timezone": "Europe/London",
        },
        {
            "slot": "2027-04-30T17:00:00Z",
            "local": "2027-04-30T18:00:00+01:00",
            "timezone": "Europe/London",
        },
    ]


def test_an_ad_hoc_rule_is_previewed_in_the_zone_its_dtstart_names(cli: Cli) -> None:
    rule = "DTSTART;TZID=America/New_York:20240301T023000\nRRULE:FREQ=DAILY"
    out = cli.ok(
        "preview", "--rrule", rule, "--after", "2024-03-09T12:00:00Z", "--count", "2", "-v"
    )

    assert out.splitlines() == [
        "2024-03-10T07:00:00Z  2024-03-10T03:00:00-04:00 EDT  "
        "DST: 02:30 did not exist: moved to the end of the gap (dst_gap=gap_end)",
        "2024-03-11T06:30:00Z  2024-03-11T02:30:00-04:00 EDT",
    ]


def test_update_switches_between_cron_and_rrule(cli: Cli) -> None:
    cli.ok("add", "s", "proj.tasks.s", "--cron", "0 9 * * *", "--tz", "Asia/Tokyo")

    cli.ok("update", "s", "--rrule", "FREQ=WEEKLY;BYDAY=2TU")
    to_rrule = json.loads(cli.ok("show", "s", "--json"))
    cli.ok("update", "s", "--cron", "0 10 * * *")
    back = json.loads(cli.ok("show", "s", "--json"))

    # A new kind starts from a blank spec: the zone given with the cron does not carry over.
    assert (to_rrule["kind"], to_rrule["rrule"], to_rrule["cron"], to_rrule["timezone"]) == (
        "rrule",
        "FREQ=WEEKLY;BYDAY=2TU",
        None,
        "UTC",
    )
    assert (back["kind"], back["cron"], back["rrule"]) == ("cron", "0 10 * * *", None)


def test_a_bad_rule_exits_1_in_one_line_and_cron_days_is_cron_only(cli: Cli) -> None:
    line = cli.fails("add", "bad", "proj.tasks.b", "--rrule", "FREQ=DAILY;BYHOUR=24", code=1)
    assert line == (
        "Error: rrule='FREQ=DAILY;BYHOUR=24': BYHOUR=24: each value must be a whole number "
        "from 0 to 23"
    )
    usage = cli.run("add", "bad", "proj.tasks.b", "--rrule", "FREQ=DAILY", "--cron-days", "all")
    assert usage.exit_code == 2
    assert "Error: --cron-days applies to cron schedules only (give --cron)" in usage.stderr
