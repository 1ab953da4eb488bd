"""Worker-side run tracking: when a task a beat fired started, and how it finished.

Opt in with one line in the Celery configuration (or ``import celery_dbeat.beat.worker`` in the
module that creates the app)::

    imports = ["celery_dbeat.beat.worker"]

Only tasks published by celery-dbeat (they carry the ``dbeat_schedule`` header) are tracked;
their fire rows (keyed by the deterministic task id) get ``run_status``, ``started_at``,
``finished_at``, ``runtime``, ``worker`` and ``run_error``. The overlap policies ``skip`` and
``buffer_one`` rely on it to know when a run is over, and ``pause_after_failures`` on it to count
failed runs (``dbeat_schedules.consecutive_failures``, which a success resets): the write of the
run that completes the count pauses the schedule, with a WARNING here and an entry in the audit
trail as this worker (surface ``worker``).

The signal handlers only append to an in-memory buffer; a background thread per worker process
writes the buffer to the schedule database every half second, in one statement. While the
database is unreachable the buffer keeps up to ``CAPACITY`` events and then drops the oldest,
with a log line: a task never fails or waits because run tracking could not write. An event the
database refuses for its own values is logged and dropped; the others are written.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections import deque
from datetime import datetime, timezone
from typing import Any

from celery import signals
from celery.utils.log import get_logger

from ..clock import Outage
from ..config import Settings, mask_url
from ..core.fires import RunStatus
from ..store import Store
from ..store.failures import driver_message
from ..store.runs import RunEvent

__all__ = ["CAPACITY", "RunRecorder", "recorder_for"]

logger = get_logger(__name__)

#: Events kept while the database is unreachable; older ones are dropped beyond this.
CAPACITY = 10_000
FLUSH_INTERVAL = 0.5
_MAX_BACKOFF = 30.0
_HEADER = "dbeat_schedule"

_FINAL_STATES = {
    "SUCCESS": RunStatus.SUCCEEDED,
    "IGNORED": RunStatus.SUCCEEDED,
    "FAILURE": RunStatus.FAILED,
    "REJECTED": RunStatus.FAILED,
    "REVOKED": RunStatus.REVOKED,
    "RETRY": RunStatus.RETRIED,
}


class RunRecorder:
    """Buffers run events and writes them from a daemon thread."""

    def __init__(
        self,
        database_url: str,
        engine_options: dict[str, Any] | None = None,
        *,
        capacity: int = CAPACITY,
        flush_interval: float = FLUSH_INTERVAL,
    ) -> None:
        self.database_url = database_url
        self.store = Store(database_url, engine_options=engine_options)
        self.capacity = capacity
        self.flush_interval = flush_interval
        self.dropped = 0
        #: Runs the database refused for their own values (logged, not retried).
        self.rejected = 0
        #: Schedules this recorder paused for their ``pause_after_failures``.
        self.paused = 0
        self._events: deque[RunEvent] = deque()
        self._lock = threading.Lock()
        #: Held while a batch is written: a flush waits for one in progress, so that when it
        #: returns, every event added before it is in the database.
        self._writing = threading.Lock()
        self._wake = threading.Event()
        self._stopped = False
        #: The database, for the log lines at either end of an outage (the thread retries on
        #: its own interval, so no backoff is taken from it).
        self._database = Outage()
        self._thread = threading.Thread(target=self._run, name="dbeat-runs", daemon=True)
        self._thread.start()

    def add(self, event: RunEvent) -> None:
        with self._lock:
            if len(self._events) >= self.capacity:
                self._events.popleft()
                self.dropped += 1
                if self.dropped == 1 or self.dropped % 1000 == 0:
                    logger.warning(
                        "dbeat: run tracking buffer full (database %s unreachable?): "
                        "%d event(s) dropped so far",
                        mask_url(self.database_url),
                        self.dropped,
                    )
            self._events.append(event)

    def flush(self) -> bool:
        """Write what is buffered (and wait for a write in progress); False (events kept) if
        the database refused."""
        with self._writing:
            return self._flush()

    def _flush(self) -> bool:
        with self._lock:
            batch = list(self._events)
            self._events.clear()
        if not batch:
            return True
        try:
            recorded = self.store.record_runs(batch)
        except Exception as exc:  # the thread must go on whatever the driver raises
            with self._lock:
                # Put them back in front of anything that arrived meanwhile, within capacity.
                room = self.capacity - len(self._events)
                kept = batch[-room:] if room > 0 else []
                self.dropped += len(batch) - len(kept)
                self._events.extendleft(reversed(kept))
            if self._database.failed():
                logger.warning(
                    "dbeat: cannot record task runs in %s, keeping them to retry: %s",
                    mask_url(self.database_url),
                    driver_message(exc),
                )
            return False
        for pause in recorded.paused:
            self.paused += 1
            logger.warning(
                "dbeat: schedule %r paused after %d consecutive failed runs "
                "(pause_after_failures); resume it once fixed: %s",
                pause.schedule,
                pause.failures,
                pause.note,
            )
        for run in recorded.rejected:
            self.rejected += 1
            logger.error(
                "dbeat: the run of task %r cannot be recorded, %s refused it: %s",
                run.task_id,
                mask_url(self.database_url),
                driver_message(run.error),
            )
        took = self._database.recovered()
        if took is not None:
            logger.warning("dbeat: recording task runs again after %.1f s", took)
        return True

    def close(self, timeout: float = 2.0) -> None:
        """Stop the thread after a last flush (bounded by ``timeout``)."""
        self._stopped = True
        self._wake.set()
        self._thread.join(timeout)
        self.store.close()

    def _run(self) -> None:
        backoff = self.flush_interval
        while True:
            self._wake.wait(backoff)
            self._wake.clear()
            ok = self.flush()
            if self._stopped:
                return
            backoff = self.flush_interval if ok else min(backoff * 2, _MAX_BACKOFF)


_recorders: dict[tuple[int, int], RunRecorder] = {}
_recorders_lock = threading.Lock()


def recorder_for(app: Any) -> RunRecorder:
    """This process's recorder for ``app`` (one per forked child; settings read once)."""
    key = (os.getpid(), id(app))
    recorder = _recorders.get(key)
    if recorder is not None:
        return recorder
    with _recorders_lock:
        recorder = _recorders.get(key)
        if recorder is None:
            settings = Settings.from_app(app)
            recorder = RunRecorder(settings.database_url, dict(settings.engine_options))
            _recorders[key] = recorder
        return recorder


def _close_all(**_: Any) -> None:
    with _recorders_lock:
        mine = [r for (pid, _app), r in _recorders.items() if pid == os.getpid()]
        _recorders.clear()
    for recorder in mine:
        recorder.close()


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _fired(request: Any) -> bool:
    return bool(getattr(request, _HEADER, None))


_started: dict[str, float] = {}
_errors: dict[str, str] = {}


@signals.task_prerun.connect
def _on_prerun(task_id: str, task: Any, **_: Any) -> None:
    if not _fired(task.request):
        return
    _started[task_id] = time.monotonic()
    recorder_for(task.app).add(
        RunEvent(task_id, RunStatus.STARTED, _now(), worker=task.request.hostname)
    )


@signals.task_failure.connect
def _on_failure(task_id: str, exception: BaseException, sender: Any, **_: Any) -> None:
    if _fired(sender.request):
        _errors[task_id] = f"{type(exception).__name__}: {exception}"


@signals.task_postrun.connect
def _on_postrun(task_id: str, task: Any, state: str | None = None, **_: Any) -> None:
    if not _fired(task.request):
        return
    began = _started.pop(task_id, None)
    status = _FINAL_STATES.get(state or "", RunStatus.FAILED)
    recorder_for(task.app).add(
        RunEvent(
            task_id,
            status,
            _now(),
            worker=task.request.hostname,
            runtime=None if began is None else time.monotonic() - began,
            error=_errors.pop(task_id, None),
        )
    )


@signals.task_revoked.connect
def _on_revoked(request: Any, sender: Any = None, **_: Any) -> None:
    headers = getattr(request, "request_dict", None) or {}
    if not headers.get(_HEADER) or sender is None:
        return
    recorder_for(sender.app).add(
        RunEvent(request.id, RunStatus.REVOKED, _now(), worker=getattr(request, "hostname", None))
    )


signals.worker_process_shutdown.connect(_close_all, weak=False)
signals.worker_shutdown.connect(_close_all, weak=False)
atexit.register(_close_all)
