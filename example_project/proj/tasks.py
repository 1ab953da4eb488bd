from __future__ import annotations

import json
import os
from datetime import datetime, timezone

from celery import Task

from .celery import VAR, app


@app.task(bind=True)
def greet(self: Task, message: str) -> str:
    request = self.request
    schedule = getattr(request, "dbeat_schedule", None)
    slot = getattr(request, "dbeat_slot", None)
    line = {
        "task_id": request.id,
        "schedule": schedule,
        "slot": slot,
        "received_at": datetime.now(timezone.utc).isoformat(),
    }
    # One line per run, appended atomically (O_APPEND), so the demo can count every delivery.
    with open(VAR / "received.jsonl", "a", encoding="utf-8") as log:
        log.write(json.dumps(line) + "\n")
        log.flush()
        os.fsync(log.fileno())
    print(f"ran {schedule!r} slot={slot} id={request.id}: {message}", flush=True)
    return message
