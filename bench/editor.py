"""Stream edits through the public API (``python -m bench.editor RATE SECONDS N OUT``).

Every ``BATCH_SECONDS`` the editor edits the schedules it is due to edit by then (``RATE`` per
second) in one ``Schedules.update_many`` call, each edit ``{name: {"args": [name, stamp]}}`` on a
random schedule, with the beats notified through Redis as ``Schedules.from_app`` would. ``stamp``
is the time the batch started; the commit time of each edit is written to ``OUT`` (one JSON line
per edit), so the benchmark can tell, for every fire, which edits it should already have carried.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

from celery_dbeat.api import Schedules
from celery_dbeat.core.errors import ValidationError

#: Seconds between two batches: at 250 edits/s per editor, about 12 edits per call.
BATCH_SECONDS = 0.05


def main(rate: float, seconds: float, n: int, out: str) -> None:
    prefix = os.environ["BENCH_PREFIX"]
    api = Schedules(
        os.environ["BENCH_DATABASE_URL"],
        notify=os.environ["BENCH_BROKER_URL"],
        redis_key_prefix=f"{prefix}dbeat:",
    )
    rng = random.Random(os.getpid())
    edits: list[tuple[str, float, float]] = []
    conflicts = 0
    started = time.time()
    end = started + seconds
    done = 0
    while (now := time.time()) < end:
        due = int((now - started + BATCH_SECONDS) * rate) - done
        if due <= 0:
            time.sleep(BATCH_SECONDS)
            continue
        stamp = time.time()
        names = {f"s{rng.randrange(n):06d}" for _ in range(due)}
        try:
            api.update_many({name: {"args": [name, stamp]} for name in names})
        except ValidationError:
            conflicts += len(names)  # not applied (never expected: rows are locked)
        else:
            committed = time.time()
            edits += [(name, stamp, committed) for name in names]
        done += due
    api.close()
    with open(out, "w") as fh:
        json.dump({"edits": edits, "conflicts": conflicts, "seconds": time.time() - started}, fh)


if __name__ == "__main__":
    main(float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
