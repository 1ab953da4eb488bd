"""A beat's part in alerts (:mod:`celery_dbeat.core.alerts`): raising ``missed`` alerts for slots
whose run has not succeeded by their ``alert_deadline``, and delivering every alert recorded
(those the worker hook raises included) to its Celery task and/or webhook, at least once.

Both run with the beat's housekeeping, never in the tick's hot path, and delivery never blocks
a tick: the beat leases a few due alerts (a compare-and-set: one beat each) and hands them to
a background thread, which sends each to its task (``task_id`` = the alert id) and POSTs it to
its webhook (JSON, an ``Idempotency-Key`` header = the alert id, a bounded timeout), then
records it delivered, or to be tried again later with a growing delay, or, after
``dbeat_alert_retries`` retries, given up with the reason (logged as an ERROR). A beat that
dies with alerts leased leaves them to any beat once the lease is over: a receiver may get an
alert twice, always under the same id.
"""

from __future__ import annotations

import json
import queue
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from celery.utils.log import get_logger

from .._version import __version__
from ..config import mask_url
from ..core.alerts import alert_payload, retry_delay
from ..core.audit import Actor, Surface
from ..store.alerts import AlertDelivery
from ..store.failures import DATABASE_ERRORS, driver_message, is_refusal
from .pacing import Part

__all__ = ["Alerts", "SendAlertTask", "post_webhook"]

logger = get_logger(__name__)

#: ``send(task name, keyword arguments, alert id)``: publish the alert task (the scheduler's).
SendAlertTask = Callable[[str, dict[str, Any], str], None]

#: Alerts leased at once; the lease covers each one's slowest delivery (the webhook's timeout,
#: and a task publish, whose retries take a few seconds), and some slack.
_BATCH = 5
_PUBLISH_BOUND = timedelta(seconds=2)
_SLACK = timedelta(seconds=15)


def post_webhook(url: str, payload: dict[str, Any], alert_id: str, timeout: float) -> None:
    """POST ``payload`` as JSON to ``url`` within ``timeout`` seconds (connecting, and each
    read); raise ``OSError`` (``urllib.error.URLError``, ``TimeoutError``...) unless it answers
    with a 2xx status."""
    request = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Idempotency-Key": alert_id,
            "User-Agent": f"celery-dbeat/{__version__}",
        },
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        response.read(65536)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    return f"{type(exc).__name__}: {exc}"


class Alerts(Part):
    """One beat's missed-deadline checks and alert deliveries (see the module docstring)."""

    def __post_init__(self) -> None:
        #: Set by the ticker: how the alert task is published (``None``: tasks cannot be sent).
        self.send_task: SendAlertTask | None = None
        self._actor = Actor(self.settings.instance_name, Surface.BEAT.value)
        self._pending: queue.Queue[list[AlertDelivery] | None] = queue.Queue()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None

    @property
    def lease(self) -> timedelta:
        timeout = self.settings.alert_webhook_timeout
        return _BATCH * (timeout + _PUBLISH_BOUND) + _SLACK

    def step(self, now: datetime) -> None:
        """Look for missed deadlines, then, unless the delivery thread is still busy, lease the
        alerts due and hand them to it (with the housekeeping, every ``dbeat_max_interval``)."""
        try:
            for alert in self.store.open_missed(now, self._actor):
                self.metrics.alert(alert.kind, "raised")
                logger.warning(
                    "dbeat: schedule %r missed its deadline: the run of slot %s has not "
                    "succeeded (alert %s)",
                    alert.schedule,
                    alert.slot,
                    alert.alert_id,
                )
            if not self._idle.is_set():
                return
            leased = self.store.claim_alerts(now, now + self.lease, _BATCH)
        except DATABASE_ERRORS as exc:
            if not is_refusal(exc):
                raise
            logger.error("dbeat: the database refused the alert checks: %s", driver_message(exc))
            return
        if leased:
            self._idle.clear()
            self._start()
            self._pending.put(leased)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until the alerts handed to the delivery thread are delivered (for tests)."""
        return self._idle.wait(timeout)

    def stop(self) -> None:
        """Stop the delivery thread after what it is delivering (alerts leased and not
        delivered go to any beat once their lease is over)."""
        if self._thread is not None:
            self._pending.put(None)
            self._thread.join(timeout=1.0)

    def _start(self) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._run, name="dbeat-alerts", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            batch = self._pending.get()
            if batch is None:
                return
            try:
                for alert in batch:
                    self._deliver(alert)
            finally:
                self._idle.set()

    def _deliver(self, alert: AlertDelivery) -> None:
        task = alert.task or self.settings.alert_task
        webhook = alert.webhook or self.settings.alert_webhook
        payload = alert_payload(alert.as_mapping())
        errors: list[str] = []
        if task is None and webhook is None:
            errors.append("nowhere to deliver it: set alert_task or alert_webhook")
        if task is not None:
            try:
                if self.send_task is None:
                    raise RuntimeError("this beat cannot send tasks")
                self.send_task(task, payload, alert.alert_id)
            except Exception as exc:  # the delivery is retried, whatever the broker raised
                errors.append(f"task {task!r}: {_reason(exc)}")
        if webhook is not None:
            try:
                timeout = self.settings.alert_webhook_timeout.total_seconds()
                post_webhook(webhook, payload, alert.alert_id, timeout)
            except Exception as exc:  # idem, whatever urllib raised
                errors.append(f"webhook {mask_url(webhook)}: {_reason(exc)}")
        self._finish(alert, "; ".join(errors) or None)

    def _finish(self, alert: AlertDelivery, error: str | None) -> None:
        now = self.clock.now()
        retries = self.settings.alert_retries
        try:
            if error is None:
                self.store.finish_alert(alert.id, now)
                self.metrics.alert(alert.kind, "delivered")
                logger.info(
                    "dbeat: alert %s (%s, schedule %r) delivered",
                    alert.alert_id,
                    alert.kind,
                    alert.schedule,
                )
            elif alert.attempts <= retries:
                delay = retry_delay(alert.attempts)
                self.store.finish_alert(alert.id, now, error=error, retry_in=delay)
                self.metrics.alert(alert.kind, "retry")
                logger.warning(
                    "dbeat: alert %s (%s, schedule %r) not delivered, retrying in %.0f s: %s",
                    alert.alert_id,
                    alert.kind,
                    alert.schedule,
                    delay.total_seconds(),
                    error,
                )
            else:
                self.store.finish_alert(alert.id, now, error=error)
                self.metrics.alert(alert.kind, "gave_up")
                logger.error(
                    "dbeat: alert %s (%s, schedule %r) given up after %d attempts: %s",
                    alert.alert_id,
                    alert.kind,
                    alert.schedule,
                    alert.attempts,
                    error,
                )
        except DATABASE_ERRORS as exc:
            # Its lease runs out and a beat delivers it again: at least once, same id.
            logger.warning(
                "dbeat: cannot record the delivery of alert %s: %s",
                alert.alert_id,
                driver_message(exc),
            )
