"""The Celery app every end-to-end beat and worker process loads.

It is configured only from environment variables, which :mod:`tests.e2e.harness` sets per process:

``DBEAT_E2E_BROKER_URL``
    URL of the broker: a Redis (``redis://``) or an AMQP broker such as RabbitMQ (``amqp://``).
``DBEAT_E2E_RECEIPTS_URL``
    Redis URL the ``record`` task and the readiness signals write to (default: the broker's,
    which must then be a Redis).
``DBEAT_E2E_PREFIX``
    The test's private key prefix: the received list and the readiness lists live under it, and
    so does every broker key on a Redis broker (kombu's ``global_keyprefix``, a Redis-only
    option), so one ``SCAN prefix*`` cleans up.
``DBEAT_E2E_QUEUE``
    A private default queue name. On AMQP it is also the name of the direct exchange Celery
    declares for it (``task_default_exchange`` defaults to the queue's name).
``DBEAT_E2E_SETTINGS``
    JSON object of ``dbeat_*`` settings for this process (database URL, lock settings,
    instance name, ...). ``null`` values are passed as ``None``.
``DBEAT_E2E_TRACK_RUNS``
    When set, the worker loads the run-tracking hook (``celery_dbeat.beat.worker``).
``DBEAT_E2E_PUBLISH_DELAY``
    Seconds a beat waits before each publish: a slow broker, or a beat with less capacity than
    its load (overload tests), whatever the machine's speed.
``DBEAT_E2E_SCHEDULES``
    JSON object ``{name: {"cron": expr} | {"every": seconds}}``. Each becomes a
    ``beat_schedule`` entry sending ``e2e.record(name)``. A spec may also hold the entry keys
    ``start_at`` (ISO-8601 with an offset), ``misfire_policy``, ``misfire_grace`` and
    ``catchup_limit``, ``overlap_policy``, ``max_run_time``, the alert fields, and ``task``
    (``e2e.sleep``, ``e2e.fail`` or ``e2e.flaky`` instead of ``e2e.record``) with extra ``args``
    after the schedule name.

Every message a beat publishes carries the headers ``dbeat_e2e_published_at`` (the beat's
``time.time()`` as it sends it) and ``dbeat_e2e_published_by`` (its ``dbeat_instance_name``),
which the worker records: the judges place each copy of a fire by who published it and when,
not by when a busy worker got to it.
"""

from __future__ import annotations

import json
import os
import socket
import time
from datetime import datetime
from typing import Any, SupportsIndex
from urllib.parse import urlsplit

import redis
from celery import Celery, signals

BROKER_URL = os.environ.get("DBEAT_E2E_BROKER_URL", "redis://127.0.0.1:6379/0")
RECEIPTS_URL = os.environ.get("DBEAT_E2E_RECEIPTS_URL") or BROKER_URL
PREFIX = os.environ.get("DBEAT_E2E_PREFIX", "dbeat-e2e:")
QUEUE = os.environ.get("DBEAT_E2E_QUEUE", "dbeat-e2e")
SETTINGS: dict[str, Any] = json.loads(os.environ.get("DBEAT_E2E_SETTINGS", "{}"))
SCHEDULES: dict[str, dict[str, Any]] = json.loads(os.environ.get("DBEAT_E2E_SCHEDULES", "{}"))
TASK_NAME = "e2e.record"
#: Schedule entry keys a spec may carry besides its timing.
ENTRY_KEYS = (
    "misfire_policy",
    "misfire_grace",
    "catchup_limit",
    "overlap_policy",
    "max_run_time",
    "pause_after_failures",
    "history_limit",
    "alert_after_failures",
    "alert_deadline",
    "alert_task",
)


def received_key(prefix: str) -> str:
    """Redis list of one JSON object per message the worker executed (see ``record``)."""
    return f"{prefix}e2e:received"


def alerts_key(prefix: str) -> str:
    """Redis list of one JSON object per alert task the worker executed (see ``alert``)."""
    return f"{prefix}e2e:alerts"


def ready_key(prefix: str) -> str:
    """Redis list of one JSON object per process that finished starting."""
    return f"{prefix}e2e:ready"


def is_redis_url(url: str) -> bool:
    """Whether kombu reaches ``url`` with its Redis transport (else: AMQP and the like)."""
    return urlsplit(url).scheme in {"redis", "rediss", "redis+socket", "sentinel"}


def beat_schedule(schedules: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The ``beat_schedule`` entries of ``DBEAT_E2E_PUBLISH_DELAY``
        Seconds a beat waits before each publish: a slow broker, or a beat with less capacity than
        its load (overload tests), whatever the machine's speed.
    ``DBEAT_E2E_SCHEDULES``-style ``schedules``."""
    if not schedules:
        return {}
    from celery_dbeat import Cron, Every

    entries: dict[str, dict[str, Any]] = {}
    for name, spec in schedules.items():
        if "cron" in spec:
            schedule: Any = Cron(spec["cron"], timezone=spec.get("timezone", "UTC"))
        else:
            schedule = Every(spec["every"])
        entry: dict[str, Any] = {
            "task": spec.get("task", TASK_NAME),
            "schedule": schedule,
            "args": [name, *spec.get("args", [])],
        }
        entry.update((key, spec[key]) for key in ENTRY_KEYS if key in spec)
        if "start_at" in spec:
            entry["start_at"] = datetime.fromisoformat(spec["start_at"])
        entries[name] = entry
    return entries


if "faketime" in os.environ.get("LD_PRELOAD", ""):
    # libfaketime 0.9.10 with FAKETIME_DONT_FAKE_MONOTONIC (a wall clock that is wrong or
    # steps while the monotonic clock runs true, as on a real host) fails clock_nanosleep, which
    # time.sleep uses, with EINVAL; select's timeout is unaffected.
    import select

    def _sleep(seconds: float | SupportsIndex) -> None:
        select.select([], [], [], max(0.0, float(seconds)))

    time.sleep = _sleep

#: ``DBEAT_E2E_VISIBILITY_TIMEOUT``: seconds after which a Redis broker hands a message a killed
#: worker took (and had not acknowledged: ``acks_late`` tasks) to another worker.
_VISIBILITY = (
    {"visibility_timeout": float(os.environ["DBEAT_E2E_VISIBILITY_TIMEOUT"])}
    if os.environ.get("DBEAT_E2E_VISIBILITY_TIMEOUT")
    else {}
)

app = Celery("dbeat_e2e")
app.conf.update(
    broker_url=BROKER_URL,
    broker_transport_options=(
        {"global_keyprefix": PREFIX, **_VISIBILITY} if is_redis_url(BROKER_URL) else {}
    ),
    broker_connection_retry_on_startup=True,
    task_default_queue=QUEUE,
    task_ignore_result=True,
    result_backend=None,
    worker_prefetch_multiplier=1,
    worker_enable_remote_control=False,
    timezone="UTC",
    enable_utc=True,
    beat_schedule=beat_schedule(SCHEDULES),
    **SETTINGS,
)

_client: redis.Redis[bytes] | None = None


def _redis() -> redis.Redis[bytes]:
    global _client
    if _client is None:
        _client = redis.Redis.from_url(RECEIPTS_URL)
    return _client


def _announce(role: str) -> None:
    entry = {
        "role": role,
        "pid": os.getpid(),
        "instance": SETTINGS.get("dbeat_instance_name"),
        "at": time.time(),
    }
    _redis().rpush(ready_key(PREFIX), json.dumps(entry))


#: The headers each published message carries: when and by which beat it was sent.
PUBLISHED_AT, PUBLISHED_BY = "dbeat_e2e_published_at", "dbeat_e2e_published_by"


def _stamp(headers: dict[str, Any] | None = None, **_: Any) -> None:
    if headers is not None:
        headers[PUBLISHED_AT] = time.time()
        headers[PUBLISHED_BY] = SETTINGS.get("dbeat_instance_name")


@signals.worker_ready.connect
def _worker_ready(**_: Any) -> None:
    _announce("worker")


@signals.beat_init.connect
def _beat_ready(**_: Any) -> None:
    # Sent by beat's Service.start once the scheduler exists (setup_schedule has run). Stamped
    # from now on, in beat processes only: the test process imports this module too.
    signals.before_task_publish.connect(_stamp)
    _announce("beat")


# celery-types reads a bound task with **kwargs as taking ``self`` by name too.
@app.task(bind=True, name=TASK_NAME)  # type: ignore[arg-type]
def record(self: Any, schedule_name: str, **kwargs: Any) -> None:
    """Append what this worker received, so the test can count every consumed message (and
    read the keyword arguments it came with: a schedule's slot arguments)."""
    _record(self.request, schedule_name, kwargs)


def _record(request: Any, schedule_name: str, kwargs: dict[str, Any] | None = None) -> None:
    received_at = time.time()
    extra = {
        key: value
        for key, value in vars(request).items()
        if "dbeat" in key.lower() or "slot" in key.lower()
    }
    entry = {
        "task_id": request.id,
        "schedule": schedule_name,
        "received_at": received_at,
        "worker": f"{socket.gethostname()}:{os.getpid()}",
        "extra": extra,
        "kwargs": kwargs or {},
    }
    _redis().rpush(received_key(PREFIX), json.dumps(entry, default=str))


@app.task(bind=True, name="e2e.sleep")
def sleep(self: Any, schedule_name: str, seconds: float) -> None:
    """A long-running task: recorded (as ``record`` does) when it starts, then sleeps."""
    _record(self.request, schedule_name)
    time.sleep(seconds)


@app.task(bind=True, name="e2e.fail")
def fail(self: Any, schedule_name: str) -> None:
    """A task that is recorded, then fails."""
    _record(self.request, schedule_name)
    raise RuntimeError(f"{schedule_name} failed on purpose")


@app.task(bind=True, name="e2e.flaky")  # type: ignore[arg-type]
def flaky(self: Any, schedule_name: str, failures: int, **kwargs: Any) -> None:
    """A task that fails its first ``failures`` runs (counted in Redis), then succeeds; what it
    received is recorded as :func:`record` does."""
    _record(self.request, schedule_name, kwargs)
    if _redis().incr(f"{PREFIX}e2e:flaky:{schedule_name}") <= failures:
        raise RuntimeError(f"{schedule_name} failed on purpose")


@app.task(bind=True, name="e2e.alert", acks_late=True, reject_on_worker_lost=True)
def alert(self: Any, /, **payload: Any) -> None:
    """An alert task: appends its task id and keyword arguments (see ``alerts_key``).
    Acknowledged once done, so that a worker killed while it holds one leaves it to another."""
    entry = {"task_id": self.request.id, "kwargs": payload, "received_at": time.time()}
    _redis().rpush(alerts_key(PREFIX), json.dumps(entry))


if os.environ.get("DBEAT_E2E_PUBLISH_DELAY"):
    from celery_dbeat.beat.scheduler import Scheduler

    _DELAY = float(os.environ["DBEAT_E2E_PUBLISH_DELAY"])
    _publish = Scheduler._publish

    def _slow_publish(self: Scheduler, *args: Any) -> None:
        time.sleep(_DELAY)
        _publish(self, *args)

    Scheduler._publish = _slow_publish  # type: ignore[method-assign,assignment]

if os.environ.get("DBEAT_E2E_TRACK_RUNS"):
    import celery_dbeat.beat.worker  # noqa: F401  (connects the run-tracking signal handlers)
