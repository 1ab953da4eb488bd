"""Stream edits through the public API (``python -m bench.editor RATE SECONDS N OUT``).

Each edit is ``Schedules.update(name, args=[name, stamp])`` on a random schedule, with the
beats notified through Redis as ``Schedules.from_app`` would. ``stamp`` is the time the edit
started; the commit time of each edit is written to ``OUT`` (one JSON line per edit), so the
benchmark can tell, for every fire, which edits it should already have carried.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time

from celery_dbeat.api import Schedules
from celery_dbeat.errors import ValidationError


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
        ahead = started + done / rate - now
        if ahead > 0:
            time.sleep(ahead)
        name = f"s{rng.randrange(n):06d}"
        stamp = time.time()
        try:
            api.update(name, args=[name, stamp])
        except ValidationError:
            conflicts += 1  # the row changed under the edit (another editor): not applied
        else:
            edits.append((name, stamp, time.time()))
        done += 1
    api.close()
    with open(out, "w") as fh:
        json.dump({"edits": edits, "conflicts": conflicts, "seconds": time.time() - started}, fh)


if __name__ == "__main__":
    main(float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
