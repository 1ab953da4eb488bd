"""What the import report says of a schedule's next fire: the instant while it is ahead, else
what a beat starting now does about it, by the schedule's misfire policy."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from celery_dbeat import Every
from celery_dbeat.core.definitions import Definition
from celery_dbeat.core.misfire import MisfirePolicy, MisfireRules
from celery_dbeat.importers.plan import next_text

NOW = datetime(2025, 1, 3, 10, 20, tzinfo=timezone.utc)
PAST = NOW - timedelta(minutes=10)
DEFAULTS = MisfireRules()


def poll(**fields: Any) -> Definition:
    return Definition.create(name="poll", task="proj.tasks.poll", schedule=Every(600), **fields)


def test_a_fire_still_ahead_is_its_instant() -> None:
    assert next_text(poll(), NOW + timedelta(seconds=1), NOW, DEFAULTS) == (
        "next 2025-01-03T10:20:01Z"
    )


@pytest.mark.parametrize(
    ("fields", "defaults", "text"),
    [
        pytest.param(
            {},
            DEFAULTS,
            "due since 2025-01-03T10:10:00Z: no beat ran since; sent when a beat starts "
            "(misfire policy latest: one fire, for the newest missed slot)",
            id="default-latest",
        ),
        pytest.param(
            {"misfire_policy": "earliest", "misfire_grace": "1h"},
            DEFAULTS,
            "due since 2025-01-03T10:10:00Z: no beat ran since; sent when a beat starts "
            "(misfire policy earliest: one fire, for the oldest missed slot; slots older than "
            "1h dropped)",
            id="earliest-with-grace",
        ),
        pytest.param(
            {"catchup_limit": 3},
            MisfireRules(policy=MisfirePolicy.ALL),
            "due since 2025-01-03T10:10:00Z: no beat ran since; sent when a beat starts "
            "(misfire policy all: a fire for each missed slot, at most 3)",
            id="the-app-default-all",
        ),
        pytest.param(
            {"misfire_policy": "skip"},
            DEFAULTS,
            "missed since 2025-01-03T10:10:00Z: no beat ran since; its misfire policy, skip, "
            "sends nothing for it, and a beat fires it at its first slot after it starts",
            id="skip",
        ),
    ],
)
def test_a_fire_that_passed_says_what_a_beat_starting_now_does(
    fields: dict[str, Any], defaults: MisfireRules, text: str
) -> None:
    assert next_text(poll(**fields), PAST, NOW, defaults) == text
