"""The chaos judge's rule for a task id received more than once (docs/explanation/design.md,
"Limits").

The judge decides what the chaos suite fails on, so its rule is checked here on the timelines
that occur: copies published by a beat killed before marking them sent, then by the beat that
took them over, killed in turn. Each copy is placed by when and by which beat it was published
(the harness's headers), never by when the worker got to it: on a busy host the worker's queue
holds a copy for many seconds.
"""

from __future__ import annotations

import pytest

from tests.chaos.truth import Copy, Message, _documented_window, expected_task_id, iso, judge
from tests.e2e.harness import Event, cron

# From a CI-style run: beat-2 publishes at 45.127 and is killed at 45.174; the restarted beat-2
# takes the fires over, publishes them at 49.155 and is killed at 49.208; a third beat-2
# publishes them again at 52.603 and marks them sent.
KILLS = [Event("kill", "beat-2", 45.174), Event("kill", "beat-2", 49.208)]
PAUSE = [Event("pause", "beat-1", 10.0), Event("resume", "beat-1", 14.0)]
BROKER_CUT = [Event("broker-cut", "broker", 42.001), Event("broker-restored", "broker", 62.0)]


@pytest.mark.parametrize(
    ("copies", "events", "documented"),
    [
        pytest.param(
            [Copy(45.127, "beat-2"), Copy(49.155, "beat-1")],
            KILLS[:1],
            True,
            id="killed-before-marking-sent",
        ),
        pytest.param(
            [Copy(45.127, "beat-2"), Copy(49.155, "beat-2"), Copy(52.603, "beat-2")],
            KILLS,
            True,
            id="the-taker-killed-too",
        ),
        pytest.param(
            [Copy(45.127, "beat-2"), Copy(49.155, "beat-2"), Copy(52.603, "beat-2")],
            KILLS[:1],
            False,
            id="third-copy-unexplained",
        ),
        pytest.param(
            [Copy(45.127, "beat-1"), Copy(49.155, "beat-3")],
            KILLS[:1],
            False,
            id="the-first-copy-is-not-the-killed-beats",
        ),
        pytest.param(
            [Copy(45.127, "beat-2"), Copy(45.150, "beat-1")],
            KILLS[:1],
            False,
            id="the-second-copy-before-the-kill",
        ),
        pytest.param([Copy(45.127, "beat-2"), Copy(49.155, "beat-1")], [], False, id="no-fault"),
        pytest.param([Copy(45.127, "beat-2")], KILLS, False, id="one-copy"),
        pytest.param(
            [Copy(38.0, "beat-2"), Copy(49.155, "beat-1")],
            KILLS[:1],
            False,
            id="first-copy-long-before-the-kill",
        ),
        pytest.param(
            [Copy(45.127), Copy(49.155)], KILLS[:1], True, id="no-publisher-known-a-kill-around"
        ),
        pytest.param(
            [Copy(9.9, "beat-1"), Copy(13.2, "beat-2")], PAUSE, True, id="paused-past-the-lease"
        ),
        pytest.param(
            [Copy(9.9, "beat-3"), Copy(13.2, "beat-2")],
            PAUSE,
            False,
            id="neither-copy-the-paused-beats",
        ),
        pytest.param(
            [Copy(42.0, "beat-1"), Copy(62.5, "beat-2")],
            BROKER_CUT,
            True,
            id="broker-cut-with-a-publish-in-flight",
        ),
    ],
)
def test_repeated_copies_are_documented_only_when_each_follows_a_crash_window(
    copies: list[Copy], events: list[Event], documented: bool
) -> None:
    assert _documented_window(copies, events, lease=3.0) is documented


def test_a_copy_is_judged_by_when_it_was_published_not_when_a_busy_worker_ran_it() -> None:
    # Beat-2 published at 45.127 and was killed at 45.174 before marking the fire sent; beat-1
    # took it over at 49.155. The worker, 10 s behind, ran the copies at 55.0 and 59.2: by
    # those times no kill is near (the judge failed such runs beside two busy loops).
    slot, uid = 45.0, "0b6f1c52-9a3e-4c59-8f2e-1d8a7b3c4e5f"
    task_id = expected_task_id(uid, slot)
    copies = [
        Message(task_id, "s", "s", slot, 55.0, 45.127, "beat-2"),
        Message(task_id, "s", "s", slot, 59.2, 49.155, "beat-1"),
    ]
    outcome = judge(
        "busy-host",
        {"s": {**cron("* * * * * *"), "start_at": iso(slot)}},
        copies,
        {"s": [slot]},
        uids={"s": uid},
        judged_until=slot,
        beats=3,
        events=KILLS[:1],
    )

    assert not outcome.problems(), outcome.summary()
    assert len(outcome.repeats) == 1
    assert outcome.unexplained_repeats == [], outcome.summary()
