"""``preview``: the next slots of a stored schedule or of an ad-hoc spec, one UTC instant a line;
and the formats every command prints (instants, durations, ages)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from celery_dbeat.cli._common import age_text, iso, seconds_text
from tests.integration.cli.conftest import Cli, make_app

UTC = timezone.utc
NEW_YORK = ["--cron", "30 2 * * *", "--tz", "America/New_York"]


def test_preview_of_the_new_york_example_prints_one_utc_instant_a_line(cli: Cli) -> None:
    out = cli.ok("preview", *NEW_YORK, "--after", "2024-03-09T00:00:00Z", "--count", "3")

    assert out.splitlines() == [
        "2024-03-09T07:30:00Z",
        "2024-03-10T07:00:00Z  DST: 02:30 did not exist: moved to the end of the gap"
        " (dst_gap=gap_end)",
        "2024-03-11T06:30:00Z",
    ]


def test_preview_verbose_adds_the_local_time_in_the_schedules_zone(cli: Cli) -> None:
    out = cli.ok("preview", *NEW_YORK, "--after", "2024-03-09T00:00:00Z", "--count", "3", "-v")

    assert out.splitlines() == [
        "2024-03-09T07:30:00Z  2024-03-09T02:30:00-05:00 EST",
        "2024-03-10T07:00:00Z  2024-03-10T03:00:00-04:00 EDT  DST: 02:30 did not exist: moved to"
        " the end of the gap (dst_gap=gap_end)",
        "2024-03-11T06:30:00Z  2024-03-11T02:30:00-04:00 EDT",
    ]


def test_preview_json_gives_each_slot_with_its_local_time(cli: Cli) -> None:
    out = cli.ok(
        "preview", *NEW_YORK, "--after", "2024-11-02T12:00:00-04:00", "--count", "2", "--json"
    )

    assert json.loads(out) == [
        {
            "slot": "2024-11-03T07:30:00Z",
            "local": "2024-11-03T02:30:00-05:00",
            "timezone": "America/New_York",
        },
        {
            "slot": "2024-11-04T07:30:00Z",
            "local": "2024-11-04T02:30:00-05:00",
            "timezone": "America/New_York",
        },
    ]


def test_preview_of_a_stored_schedule_uses_its_zone_and_bounds(cli: Cli) -> None:
    cli.ok("add", "ny", "proj.tasks.ny", *NEW_YORK, "--end-at", "2024-03-10T12:00:00Z")

    out = cli.ok("preview", "ny", "--after", "2024-03-09T00:00:00Z", "--count", "3", "-v")

    assert out.splitlines() == [
        "2024-03-09T07:30:00Z  2024-03-09T02:30:00-05:00 EST",
        "2024-03-10T07:00:00Z  2024-03-10T03:00:00-04:00 EDT  DST: 02:30 did not exist: moved to"
        " the end of the gap (dst_gap=gap_end)",
    ]


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        pytest.param(
            ["--every", "1h30m", "--start-at", "2024-01-01T00:00:00Z"],
            ["2024-01-01T01:30:00Z", "2024-01-01T03:00:00Z"],
            id="interval-anchored-at-start-at",
        ),
        pytest.param(["--at", "2024-01-01T09:00:00+01:00"], ["2024-01-01T08:00:00Z"], id="once"),
        pytest.param(
            ["--cron", "0 12 * * * 30"],
            ["2024-01-01T12:00:30Z", "2024-01-02T12:00:30Z"],
            id="cron-with-seconds",
        ),
    ],
)
def test_preview_of_other_ad_hoc_specs(cli: Cli, options: list[str], expected: list[str]) -> None:
    out = cli.ok("preview", *options, "--after", "2024-01-01T00:00:00Z", "--count", "2")

    assert out.splitlines() == expected


def test_preview_needs_no_database(tmp_path: object) -> None:
    cli = Cli(make_app("postgresql+psycopg://postgres@127.0.0.1:1/x"))

    assert cli.ok("preview", "--every", "1m", "--after", "2024-01-01T00:00:00Z", "--count", "1")


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        pytest.param(["x", "--cron", "* * * * *"], 2, "not both", id="name-and-spec"),
        pytest.param([], 2, "give NAME or an ad-hoc spec", id="neither"),
        pytest.param(
            ["--every", "1m", "--after", "2024-01-01"],
            2,
            "needs a time zone offset",
            id="after-without-offset",
        ),
        pytest.param(
            ["--every", "1m", "--count", "0"],
            1,
            "count=0: must be a whole number",
            id="count-out-of-range",
        ),
        pytest.param(["--cron", "* * *"], 1, "cron='* * *': has 3 fields", id="bad-cron"),
    ],
)
def test_preview_refuses_bad_requests(cli: Cli, args: list[str], code: int, fragment: str) -> None:
    result = cli("preview", *args)

    assert result.exit_code == code
    assert fragment in result.stderr


# Output formats ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(datetime(2024, 3, 9, 7, 30, tzinfo=UTC), "2024-03-09T07:30:00Z", id="utc"),
        pytest.param(
            datetime(2024, 3, 9, 2, 30, tzinfo=timezone(timedelta(hours=-5))),
            "2024-03-09T07:30:00Z",
            id="converted-to-utc",
        ),
        pytest.param(
            datetime(2024, 3, 9, 7, 30, 0, 250, tzinfo=UTC),
            "2024-03-09T07:30:00.000250Z",
            id="microseconds-kept",
        ),
        pytest.param(None, None, id="none"),
    ],
)
def test_instants_print_as_utc_iso_8601(value: datetime | None, text: str | None) -> None:
    assert iso(value) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(30, "30s"), (300, "5m"), (5400, "1h30m"), (90061, "1d1h1m1s"), (0.25, "0.25s"), (0, "0s")],
)
def test_durations_print_the_way_they_are_typed(seconds: float, text: str) -> None:
    assert seconds_text(seconds) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (2.4, "2s ago"),
        (125, "2m5s ago"),
        (3601, "1h ago"),
        (5430, "1h30m ago"),
        (183_000, "2d3h ago"),
        (-30, "in 30s"),
    ],
)
def test_ages_are_rounded_to_what_a_reader_needs(seconds: float, text: str) -> None:
    assert age_text(timedelta(seconds=seconds)) == text
