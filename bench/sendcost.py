"""CPU a message costs through ``app.send_task`` (the ceiling's loop) and through the registered
task's ``apply_async`` (what a beat calls, as Celery's own beat does), in one process on the
broker of :mod:`bench.app` (``python -m bench.sendcost [N] [ROUNDS]``).

Alternates the two loops ``ROUNDS`` times (default 3) of ``N`` messages (default 10,000), the
messages shaped as in :mod:`bench.producer`, and prints each loop's CPU microseconds a message.
The messages go under a private key prefix, deleted after each loop.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable

os.environ.setdefault("BENCH_PREFIX", f"dbeat-sendcost-{os.getpid()}:")

import redis

from bench.app import BROKER_URL, PREFIX, TASK_NAME, app, noop

HEADERS = {"celery_beat_task": True, "dbeat_schedule": "s", "dbeat_slot": "2026-01-01T00:00:00"}


def main(n: int, rounds: int) -> None:
    client = redis.Redis.from_url(BROKER_URL)
    with app.producer_or_acquire() as producer:
        producer.connection.ensure_connection()

        def via_send_task() -> None:
            for i in range(n):
                app.send_task(
                    TASK_NAME,
                    [f"s{i}"],
                    {},
                    task_id=str(uuid.uuid4()),
                    producer=producer,
                    headers=dict(HEADERS),
                )

        def via_apply_async() -> None:
            for i in range(n):
                noop.apply_async(
                    (f"s{i}",),
                    {},
                    task_id=str(uuid.uuid4()),
                    producer=producer,
                    headers=dict(HEADERS),
                )

        loops: dict[str, Callable[[], None]] = {
            "send_task": via_send_task,
            "apply_async": via_apply_async,
        }
        try:
            for _ in range(rounds):
                for name, loop in loops.items():
                    cpu = time.process_time()
                    loop()
                    cpu = time.process_time() - cpu
                    print(f"{name:11} {cpu / n * 1e6:6.1f} µs of CPU a message", flush=True)
                    _clear(client)
        finally:
            _clear(client)


def _clear(client: redis.Redis) -> None:
    keys = list(client.scan_iter(f"{PREFIX}*"))
    if keys:
        client.delete(*keys)


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 10_000,
        int(sys.argv[2]) if len(sys.argv) > 2 else 3,
    )
