"""The chaos judge's rule for a task id received more than once (README "Limits").

The judge decides what the chaos suite fails on, so its rule is checked here on the timelines
that occur: copies published by a beat killed before marking them sent, then by the beat that
took them over, killed in turn.
"""

from __future__ import annotations

import pytest

from tests.chaos.truth import _documented_window
from tests.e2e.harness import Event

# From a CI-style run: beat-2 publishes at 45.127 and is killed at 45.174; the restarted beat-2
# takes the fires over, publishes them at 49.155 and is killed at 49.208; a third beat-2
# publishes them again at 52.603 and marks them sent.
KILLS = [Event("kill", "beat-2", 45.174), Event("kill", "beat-2", 49.208)]


@pytest.mark.parametrize(
    ("times", "events", "documented"),
    [
        pytest.param([45.127, 49.155], KILLS[:1], True, id="killed-before-marking-sent"),
        pytest.param([45.127, 49.155, 52.603], KILLS, True, id="the-taker-killed-too"),
        pytest.param([45.127, 49.155, 52.603], KILLS[:1], False, id="third-copy-unexplained"),
        pytest.param([45.127, 49.155], [], False, id="no-fault"),
        pytest.param([45.127], KILLS, False, id="one-copy"),
        pytest.param([40.0, 49.155], KILLS[:1], False, id="first-copy-long-before-the-kill"),
    ],
)
def test_repeated_copies_are_documented_only_when_each_follows_a_crash_window(
    times: list[float], events: list[Event], documented: bool
) -> None:
    assert _documented_window(times, events, lease=3.0) is documented
