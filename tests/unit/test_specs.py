"""Each spec owns its stored fields both ways and its one-line text (every surface shows it)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from celery_dbeat.core.specs import Cron, Every, Once, Solar, Spec, spec_from_fields

AT = datetime(2025, 1, 31, 8, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize(
    ("spec", "text"),
    [
        (Cron("30 2 * * *", "America/New_York"), "cron '30 2 * * *' America/New_York"),
        (
            Cron("0 9 1 * mon", "Europe/Paris", dst_gap="skip", days="all"),
            "cron '0 9 1 * mon' Europe/Paris dst_gap=skip days=all (both day fields must match, "
            "as in Celery's crontab)",
        ),
        pytest.param(
            Cron("0 4 * * mon", days="all"), "cron '0 4 * * mon' UTC", id="days-all-changes-nothing"
        ),
        pytest.param(
            Cron("0 9 1 * mon 30", days="all"),
            "cron '0 9 1 * mon 30' UTC days=all (both day fields must match, as in Celery's "
            "crontab)",
            id="six-fields",
        ),
        pytest.param(
            Cron("0 9 */2 * mon", days="all"), "cron '0 9 */2 * mon' UTC", id="a-step-from-star"
        ),
        (Every("1h30m"), "every 1h30m"),
        (Every(0.25), "every 0.25s"),
        (Once(AT), "once 2025-01-31T08:00:00Z"),
        (Solar("sunset", 48.85, -2.0), "solar sunset at 48.85, -2"),
    ],
)
def test_a_spec_reads_back_from_its_fields_and_says_itself_in_one_line(
    spec: Spec, text: str
) -> None:
    back = spec_from_fields(spec.fields())

    assert back is not None
    assert back.fields() == spec.fields()
    assert back.text() == spec.text() == text


@pytest.mark.parametrize(
    "fields",
    [
        {"kind": "interval", "every": None},
        {"kind": "once", "run_at": None},
        {"kind": "solar", "solar_event": "sunset", "latitude": 1.0, "longitude": None},
        {"kind": "weekly"},
        {},
    ],
)
def test_an_unknown_kind_or_a_missing_required_field_reads_as_no_spec(
    fields: dict[str, object],
) -> None:
    assert spec_from_fields(fields) is None
