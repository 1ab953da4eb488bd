"""Pure overlap resolution: what happens to a fire whose schedule's previous run is still going.

The policies follow Temporal's schedule overlap policies (``ALLOW_ALL``, ``SKIP``,
``BUFFER_ONE``). For an hourly job whose runs take 90 minutes:

* ``allow`` (default): 11:00 is sent while 10:00 still runs; two run at once.
* ``skip``: 11:00 is recorded as ``overlap`` and never sent; 12:00 runs.
* ``buffer_one``: 11:00 is recorded as ``buffered`` and sent when 10:00 finishes (at 11:30),
  keeping its slot and task id; while one fire is buffered, further slots are skipped.

A run counts as running from its publish until the worker hook (:mod:`celery_dbeat.beat.worker`)
reports it finished, or until its maximum run time passed: then it counts as lost, so a worker
that crashed mid-task cannot block a schedule forever.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["OverlapPolicy", "RunState", "split_for_overlap"]


class OverlapPolicy(str, enum.Enum):
    ALLOW = "allow"
    SKIP = "skip"
    BUFFER_ONE = "buffer_one"


@dataclass(frozen=True)
class RunState:
    """What a schedule has in flight: a run not yet finished (within its maximum run time), and
    a fire buffered behind it."""

    running: bool = False
    buffered: bool = False


IDLE = RunState()


def split_for_overlap(count: int, policy: OverlapPolicy, state: RunState) -> tuple[int, int, int]:
    """Of ``count`` fires due together (oldest first), how many to ``(send, buffer, skip)``.

    Fires due together run concurrently once sent, so under ``skip`` and ``buffer_one`` only
    the first of them is sent even when nothing was running.
    """
    if count <= 0 or policy is OverlapPolicy.ALLOW:
        return max(count, 0), 0, 0
    busy = state.running or state.buffered
    if policy is OverlapPolicy.SKIP:
        send = 0 if busy else 1
        return send, 0, count - send
    if state.buffered:
        return 0, 0, count
    if state.running:
        return 0, 1, count - 1
    return 1, min(count - 1, 1), max(count - 2, 0)
