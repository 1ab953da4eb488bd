"""``celery dbeat calendar ...``: exclusion calendars from typed dates, a country's holidays and
an iCalendar file (its recurring events expanded within --years); schedules name them with
--calendar; preview shows the slots they remove."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa

from tests.integration.cli.conftest import Cli

ICS = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//test//EN
BEGIN:VEVENT
UID:1
SUMMARY:Shutdown
DTSTART;VALUE=DATE:20301224
DTEND;VALUE=DATE:20301227
END:VEVENT
END:VCALENDAR
"""

#: A yearly event (no end): expanded only within the years asked for.
YEARLY = ICS.replace("SUMMARY:Shutdown", "SUMMARY:Christmas Day\nRRULE:FREQ=YEARLY").replace(
    "DTSTART;VALUE=DATE:20301224\nDTEND;VALUE=DATE:20301227", "DTSTART;VALUE=DATE:20201225"
)


def test_a_calendar_is_added_from_dates_shown_listed_and_removed(cli: Cli) -> None:
    added = cli.ok(
        "calendar", "add", "office", "--tz", "Europe/London", "--dates",
        "2030-12-25,2030-12-28..2030-12-31",
    )  # fmt: skip
    shown = json.loads(cli.ok("calendar", "show", "office", "--json"))
    listed = cli.ok("calendar", "list")
    removed = cli.ok("calendar", "remove", "office")

    assert added == "added calendar 'office': 5 day(s) in Europe/London\n"
    assert shown["dates"] == ["2030-12-25", "2030-12-28..2030-12-31"]
    assert shown["timezone"] == "Europe/London"
    assert "office" in listed
    assert removed == "removed calendar 'office'\n"
    assert cli.ok("calendar", "list") == "no calendars\n"


def test_a_calendar_is_filled_from_a_countrys_holidays_and_an_ics_file(
    cli: Cli, tmp_path: Path
) -> None:
    ics = tmp_path / "shutdown.ics"
    ics.write_text(ICS)

    cli.ok(
        "calendar", "add", "uk", "--tz", "Europe/London", "--country", "GB", "--subdiv", "ENG",
        "--years", "2026-2027",
    )  # fmt: skip
    imported = cli.ok("calendar", "import", "uk", "--ics", str(ics))

    dates = json.loads(cli.ok("calendar", "show", "uk", "--json"))["dates"]
    assert {"2027-01-01", "2026-08-31"} <= set(dates)  # New Year's Day, summer bank holiday
    assert any(d.startswith("2026-12-25") for d in dates)  # Christmas, merged with Boxing Day
    assert dates[-1] == "2030-12-24..2030-12-26"
    assert imported.startswith("calendar 'uk': 3 day(s) added")


def test_an_ics_files_recurring_events_are_expanded_within_years_and_refused_without(
    cli: Cli, tmp_path: Path
) -> None:
    ics = tmp_path / "yearly.ics"
    ics.write_text(YEARLY)

    refused = cli.fails("calendar", "add", "uk", "--ics", str(ics), code=1)
    cli.ok("calendar", "add", "uk", "--ics", str(ics), "--years", "2026-2027")
    no_source = cli("calendar", "add", "x", "--years", "2026")

    assert "ics='Christmas Day': is a recurring event: give the years" in refused
    assert "--years 2026-2028" in refused
    dates = json.loads(cli.ok("calendar", "show", "uk", "--json"))["dates"]
    assert dates == ["2026-12-25", "2027-12-25"]
    assert no_source.exit_code == 2
    assert "--years goes with --country or --ics" in no_source.stderr


def test_a_schedule_names_a_calendar_and_preview_shows_the_slots_it_removes(cli: Cli) -> None:
    cli.ok("calendar", "add", "xmas", "--dates", "2030-12-25")
    cli.ok("add", "daily", "proj.tasks.daily", "--cron", "0 9 * * *", "--calendar", "xmas")

    out = cli.ok("preview", "daily", "--after", "2030-12-24T00:00:00Z", "--count", "2")
    in_use = cli.fails("calendar", "remove", "xmas", code=1)

    assert out.splitlines() == [
        "2030-12-24T09:00:00Z",
        "2030-12-25T09:00:00Z  excluded by calendar xmas (not sent)",
        "2030-12-26T09:00:00Z",
    ]
    assert "calendar 'xmas' is still named by 1 schedule(s): 'daily'" in in_use


def test_bad_calendar_input_is_refused_in_one_line(cli: Cli, tmp_path: Path) -> None:
    timed = tmp_path / "timed.ics"
    timed.write_text(ICS.replace(";VALUE=DATE:20301224", ":20301224T090000Z"))

    unknown = cli.fails(
        "add", "daily", "proj.tasks.daily", "--cron", "0 9 * * *", "--calendar", "nope", code=1
    )
    bad_date = cli.fails("calendar", "add", "x", "--dates", "2030-02-30", code=1)
    bad_country = cli.fails("calendar", "add", "x", "--country", "XX", "--years", "2030", code=1)
    bad_years = cli.fails("calendar", "add", "x", "--country", "GB", "--years", "soon", code=1)
    bad_ics = cli.fails("calendar", "add", "x", "--ics", str(timed), code=1)
    missing = cli.fails("calendar", "show", "x", code=3)

    assert "calendar='nope': no calendar has this name" in unknown
    assert "dates='2030-02-30'" in bad_date
    assert "country='XX'" in bad_country
    assert "years='soon'" in bad_years
    assert "is not an all-day event" in bad_ics
    assert "no calendar named 'x'" in missing
    assert cli.ok("calendar", "list") == "no calendars\n"


def test_export_writes_the_calendars_and_import_brings_them_back_before_their_schedules(
    cli: Cli, tmp_path: Path
) -> None:
    cli.ok("calendar", "add", "xmas", "--tz", "Europe/Paris", "--dates", "2030-12-25")
    cli.ok("add", "daily", "proj.tasks.daily", "--cron", "0 9 * * *", "--calendar", "xmas")
    exported = tmp_path / "schedules.json"
    cli.ok("export", str(exported))
    cli.ok("remove", "daily")
    cli.ok("calendar", "remove", "xmas")

    first = cli.ok("import", str(exported))
    again = cli.ok("import", str(exported))

    document = json.loads(exported.read_text())
    assert document["calendars"] == [
        {"name": "xmas", "timezone": "Europe/Paris", "dates": ["2030-12-25"], "description": ""}
    ]
    assert first.splitlines()[0] == (
        f"imported 1 calendars from {exported}: created 1, updated 0, unchanged 0"
    )
    assert "unchanged 1" in again.splitlines()[0]
    assert json.loads(cli.ok("show", "daily", "--json"))["calendar"] == "xmas"


def test_an_import_naming_a_calendar_nowhere_to_be_found_writes_nothing(
    cli: Cli, tmp_path: Path
) -> None:
    document = {
        "version": 1,
        "schedules": [
            {
                "name": "daily",
                "task": "proj.tasks.daily",
                "kind": "cron",
                "cron": "0 9 * * *",
                "calendar": "nope",
            }
        ],
    }
    path = tmp_path / "in.json"
    path.write_text(json.dumps(document))

    error = cli.fails("import", str(path), code=1)

    assert "schedules[0] ('daily'): no calendar named 'nope'" in error
    assert "daily" not in cli.ok("list")


def test_a_description_is_refused_with_a_control_character_and_one_stored_before_shown_escaped(
    cli: Cli, sqlite_url: str
) -> None:
    refused = cli.fails(
        "calendar", "add", "office", "--dates", "2030-12-25",
        "--description", "closed\x1b]0;owned\x07", code=1,
    )  # fmt: skip
    cli.ok("calendar", "add", "office", "--dates", "2030-12-25", "--description", "closed")
    cli.ok("add", "daily", "proj.tasks.daily", "--cron", "0 9 * * *", "--calendar", "office")
    # Written before descriptions were checked (or by hand): still the calendar's, its dates
    # still apply, and no surface prints the escape sequence as it is.
    engine = sa.create_engine(sqlite_url)
    with engine.begin() as conn:
        conn.execute(
            sa.text("UPDATE dbeat_calendars SET description = :d"),
            {"d": "closed\x1b]0;owned\x07\r\nforged line"},
        )
    engine.dispose()

    shown = cli.ok("calendar", "show", "office")
    listed = cli.ok("calendar", "list")
    preview = cli.ok("preview", "daily", "--after", "2030-12-24T00:00:00Z", "--count", "2")

    assert "description='closed\\x1b]0;owned\\x07': contains the control character U+001B" in (
        refused
    )
    assert "description: closed\\x1b]0;owned\\x07\\r\\nforged line\n" in shown
    assert "closed\\x1b]0;owned\\x07\\r\\nforged line" in listed
    assert "\x1b" not in shown + listed
    assert "2030-12-25T09:00:00Z  excluded by calendar office (not sent)" in preview
