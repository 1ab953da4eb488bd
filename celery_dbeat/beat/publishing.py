"""Publishing recorded fires within their lease, and the log line of every fire decision.

A fire is recorded (PENDING) with a lease: until it ends, the recording beat alone may publish it;
after, any beat takes it over (:meth:`.Recorded.recover_pending`). :class:`Publishing` keeps that
promise whatever the batch size, the broker's speed or the host's:

* a publish never starts once most of the lease is gone (the beat was paused, the host stalled):
  the rest is left to the beat that takes it over, so a fire is not published by two beats;
* while it publishes, it extends the lease of the fires still to go, halfway through each lease,
  and only while it still holds them (a compare-and-set on the lease it recorded): a slow publish
  outlives no lease, and nothing it recorded expires into another beat's recovery, which would
  publish it again;
* what it sent is marked sent at each extension too, not only at the end, so a beat killed in
  the middle leaves little to be published twice;
* a beat being stopped (:meth:`stop`, from Celery's SIGTERM handler) publishes nothing more,
  marks what it sent, and hands the rest back (its lease ends now), so another beat publishes it
  at once instead of after the lease.

It also measures how fast this beat publishes (fires a second), which sizes the chunks of
recovery and catch-up (:meth:`chunk`).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from celery.utils.log import get_logger

from ..clock import SharedClock
from ..config import Settings
from ..core.fires import PublishRequest
from ..core.slot_arguments import slot_kwargs
from ..core.validation import parse_args, parse_kwargs, parse_options
from ..store import Store
from ..store.failures import DRIVER_ERRORS
from .metrics import Metrics

__all__ = ["PublishAhead", "Publisher", "Publishing", "log_fire"]

logger = get_logger(__name__)

#: ``publish(request, args, kwargs, options)``: send one fire to the broker or raise.
Publisher = Callable[[PublishRequest, list[Any], dict[str, Any], dict[str, Any]], None]

#: Past this share of its lease, a publish is not started (the lease may run out during it).
_STOP_AT = 0.8
#: Past this share, the leases of the fires still to go are extended.
_EXTEND_AT = 0.5
#: Until a beat has measured itself, it assumes this many fires a second.
_FIRST_RATE = 200.0


class Publishing:
    """Publishes recorded fires for one beat (see the module docstring)."""

    def __init__(
        self,
        store: Store,
        publish: Publisher,
        settings: Settings,
        clock: SharedClock,
        metrics: Metrics,
    ) -> None:
        self.store = store
        self.publish = publish
        self.settings = settings
        self.clock = clock
        self.metrics = metrics
        #: Fires a second this beat published, smoothed over its recent publishes.
        self.rate = _FIRST_RATE
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def stop(self) -> None:
        """Publish nothing more (safe from a signal handler): the publish in progress ends,
        and the fires not yet published are handed back."""
        self._stopping.set()

    def chunk(self, seconds: float) -> int:
        """How many fires this beat publishes in about ``seconds`` (at least 10, at most
        ``dbeat_batch_size``)."""
        return max(10, min(self.settings.batch_size, int(self.rate * seconds)))

    def __call__(self, requests: Sequence[PublishRequest], leased_at: float) -> None:
        """Publish ``requests``, recorded fires whose lease this beat took at monotonic time
        ``leased_at`` (all with the same ``lease_until``), and mark them sent."""
        lease = self.settings.lock_ttl.total_seconds()
        pending = list(requests)
        held_until = pending[0].lease_until if pending else None
        sent: list[str] = []
        started, published = self.clock.monotonic(), 0
        position = 0
        try:
            while position < len(pending) and not self._stopping.is_set():
                if (
                    held_until is not None
                    and self.clock.monotonic() - leased_at > lease * _EXTEND_AT
                ):
                    self._mark_sent(sent)
                    extended = self._extend(pending[position:], held_until)
                    if extended is not None:
                        kept, held_until, leased_at = extended
                        pending[position:] = [r for r in pending[position:] if r.task_id in kept]
                        continue
                request = pending[position]
                position += 1
                # Paused (SIGSTOP) past most of the lease: another beat may be taking this
                # fire over right now. Leave it to the recovery path rather than risk a second
                # publish.
                if self.clock.monotonic() - leased_at > lease * _STOP_AT:
                    logger.warning(
                        "dbeat: lease of %s slot %s ran out before publishing; leaving it to"
                        " recovery",
                        request.schedule_name,
                        request.slot.isoformat(),
                    )
                    continue
                if self._publish_one(request):
                    sent.append(request.task_id)
                    published += 1
        finally:
            # Also when beat is stopped in the middle (SIGTERM raises SystemExit here): what
            # reached the broker is marked, so no other beat publishes it again.
            self._mark_sent(sent)
            if self._stopping.is_set() and held_until is not None and position < len(pending):
                self._extend(pending[position:], held_until, hand_back=True)
        self._measure(published, self.clock.monotonic() - started)

    def _publish_one(self, request: PublishRequest) -> bool:
        try:
            args = parse_args(request.args)
            kwargs = parse_kwargs(request.kwargs)
            options = parse_options(request.options)
        except ValueError as exc:
            self._failed(request, exc, give_up=True)
            return False
        if request.slot_kwarg is not None or request.previous_slot_kwarg is not None:
            kwargs.update(slot_kwargs(request))
        try:
            self.publish(request, args, kwargs, options)
        except Exception as exc:
            now = self.clock.now()
            self._failed(
                request, exc, give_up=now - request.slot > self.settings.publish_retry_window
            )
            return False
        lag = (self.clock.now() - request.slot).total_seconds()
        self.metrics.lag(lag)
        log_fire(
            "sent",
            request.schedule_name,
            request.slot,
            request.task_id,
            task=request.task,
            lag=f"{lag:.3f}",
        )
        return True

    def _extend(
        self, remaining: Sequence[PublishRequest], held_until: datetime, *, hand_back: bool = False
    ) -> tuple[set[str], datetime, float] | None:
        """Extend the leases of ``remaining`` (or end them now, ``hand_back``): (the task ids
        still held, their new lease, the monotonic instant it was taken at), or ``None`` if the
        database could not be asked."""
        asked = self.clock.monotonic()
        now = self.clock.now()
        try:
            kept, until = self.store.extend_leases(
                [r.task_id for r in remaining],
                held_until,
                now,
                now if hand_back else now + self.settings.lock_ttl,
            )
        except DRIVER_ERRORS as exc:
            logger.warning("dbeat: could not extend the leases of fires being published: %s", exc)
            return None
        lost = len(remaining) - len(kept)
        if hand_back:
            logger.info(
                "dbeat: stopping; %d recorded fire(s) not published handed to the other beats",
                len(kept),
            )
        elif lost:
            logger.warning(
                "dbeat: %d fire(s) were taken over by another beat while this one published;"
                " leaving them to it",
                lost,
            )
        return kept, until, asked

    def _mark_sent(self, sent: list[str]) -> None:
        if not sent:
            return
        self.metrics.fires("sent", len(sent))
        set_aside = self.store.mark_sent(sent, self.clock.now(), self.settings.instance_name)
        self.metrics.error("schedule", len(set_aside))
        sent.clear()

    def _measure(self, published: int, took: float) -> None:
        if published < 10 or took <= 0:
            return  # too few to say anything about this beat's speed
        with self._lock:
            self.rate = 0.7 * self.rate + 0.3 * (published / took)

    def _failed(self, request: PublishRequest, exc: Exception, *, give_up: bool) -> None:
        attempts = request.attempts + 1
        retry_in = timedelta(seconds=min(2**attempts, 60))
        self.metrics.fires("failed" if give_up else "publish_error")
        if give_up:
            logger.error(
                "dbeat: giving up on %s slot=%s task_id=%s after %d attempt(s): %s",
                request.schedule_name,
                request.slot.isoformat(),
                request.task_id,
                attempts,
                exc,
            )
        else:
            logger.warning(
                "dbeat: could not publish %s slot=%s task_id=%s (attempt %d, retry in %ds): %s",
                request.schedule_name,
                request.slot.isoformat(),
                request.task_id,
                attempts,
                retry_in.total_seconds(),
                exc,
            )
        set_aside = self.store.mark_publish_failed(
            request.task_id,
            f"{type(exc).__name__}: {exc}",
            self.clock.now() + retry_in,
            give_up=give_up,
        )
        self.metrics.error("schedule", len(set_aside))


def log_fire(
    decision: str, schedule: str, slot: datetime, task_id: str | None, **details: Any
) -> None:
    """One structured line per fire decision (``sent``, ``skipped``, ``dropped``, ``overlap``,
    ``buffered``, ``queued``), as ``key=value`` text and as the record's ``dbeat`` attribute
    (for JSON log formatters). Nothing is built unless the line is logged: the beat says
    ``sent`` for every fire it publishes, and runs at Celery's default WARNING level."""
    if not logger.isEnabledFor(logging.INFO):
        return
    fields = {"decision": decision, "schedule": schedule, "slot": slot.isoformat()}
    if task_id is not None:
        fields["task_id"] = task_id
    fields.update({key: str(value) for key, value in details.items()})
    text = " ".join(f"{key}={_quote(value)}" for key, value in fields.items())
    logger.info("dbeat: fire %s", text, extra={"dbeat": fields})


def _quote(value: str) -> str:
    return json.dumps(value) if not value or any(c in value for c in ' "=\n') else value


class PublishAhead:
    """Publishes one recorded batch in a thread while the ticker records the next.

    At most one batch is in flight, and the ticker commits the next one only once this one is
    published (:meth:`done`), so a beat never holds more than one batch recorded and not yet
    sent, and leaves the rest of a herd to other beats. Only this thread publishes while it
    runs; an error it meets is raised by the next ``submit`` or ``wait``.
    """

    def __init__(self, publish: Callable[[Sequence[PublishRequest], float], None]) -> None:
        self._publish = publish
        # Set when the batch in flight is published (or there is none). An event, not
        # Thread.join: before Python 3.12, a join interrupted by a signal handler's exception
        # (SIGTERM raises SystemExit) marks the thread stopped while it still runs.
        self._finished = threading.Event()
        self._finished.set()
        self._error: BaseException | None = None

    def submit(self, requests: Sequence[PublishRequest], leased_at: float) -> None:
        self.wait()
        if not requests:
            return

        def run() -> None:
            try:
                self._publish(requests, leased_at)
            except BaseException as exc:  # handed to the ticker's thread
                self._error = exc
            finally:
                self._finished.set()

        self._finished.clear()
        threading.Thread(target=run, name="dbeat-publish", daemon=True).start()

    def done(self, timeout: float) -> bool:
        """Whether the batch in flight (if any) is published, waiting up to ``timeout``."""
        return self._finished.wait(timeout)

    def wait(self) -> None:
        try:
            self._finished.wait()
        finally:
            # Also when the wait was interrupted (SIGTERM raises SystemExit here): the batch in
            # flight marks what it sent before the process exits, which would end this daemon
            # thread where it stands.
            self._finished.wait()
        error, self._error = self._error, None
        if error is not None:
            raise error
