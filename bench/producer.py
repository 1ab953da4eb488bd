"""The ceiling: one producer, a plain loop of ``app.send_task`` (``python -m bench.producer N``).

Connects and declares the queue first, prints ``ready``, reads the instant ``T`` (a Unix time)
from stdin, sleeps until then and sends ``N`` messages
shaped like celery-dbeat's (same task, args and headers), so the time from ``T`` until the last
message is on the broker is Celery's own publish ceiling on this machine. Prints the CPU seconds
the loop took (user + system) when it is done.
"""

from __future__ import annotations

import sys
import time
import uuid
from datetime import datetime, timezone

from bench.app import TASK_NAME, app


def main(n: int) -> None:
    with app.producer_or_acquire() as producer:
        producer.connection.ensure_connection()
        app.send_task(TASK_NAME, ["warm-up"], {}, producer=producer, queue="bench-warmup")
        print("ready", flush=True)
        slot = float(sys.stdin.readline())
        slot_iso = datetime.fromtimestamp(slot, timezone.utc).isoformat()
        time.sleep(max(0.0, slot - time.time()))
        cpu = time.process_time()
        for i in range(n):
            name = f"s{i:06d}"
            app.send_task(
                TASK_NAME,
                [name],
                {},
                task_id=str(uuid.uuid4()),
                producer=producer,
                headers={"celery_beat_task": True, "dbeat_schedule": name, "dbeat_slot": slot_iso},
            )
        print(time.process_time() - cpu, flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]))
