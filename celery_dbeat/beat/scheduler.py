"""The Celery adapter: ``celery -A proj beat -S celery_dbeat.Scheduler``.

Thin on purpose: it reads settings, opens the store and the lock in ``setup_schedule``, syncs
``beat_schedule`` into the database, and delegates every tick to
:class:`~celery_dbeat.beat.ticker.Ticker`.
Constructed with ``lazy=True`` (as ``celery beat`` does for its banner) it does no I/O.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Iterator
from functools import cached_property
from typing import Any, NoReturn

from celery import Celery
from celery import beat as celery_beat
from celery.utils.log import get_logger

from ..beat_schedule import EntryNames, iter_definitions, validate_entries
from ..checks import Finding, Level, app_argument, redis_findings, run_checks
from ..clock import Clock, Outage, SystemClock
from ..config import Settings, mask_url
from ..core.errors import ConfigurationError, DBeatError, SchemaVersionError
from ..core.fires import PublishRequest
from ..locks import FireLock, make_lock
from ..notify import ChangeListener, Listener
from ..store import Store
from ..store.failures import BAD_URL, DRIVER_ERRORS, driver_message, is_auth_failure, is_disconnect
from ..store.sync import sync_config
from ..task_names import warn_unknown_tasks
from .metrics import NO_METRICS, start_metrics_server
from .outages import REMIND_EVERY
from .ticker import Ticker

__all__ = ["Scheduler"]

logger = get_logger(__name__)

#: How long the alerts' delivery thread retries the broker for one alert task (a few seconds):
#: a delivery that fails is tried again later.
_ALERT_RETRY_POLICY = {"max_retries": 2, "interval_start": 0.5, "interval_step": 1.0}

#: Broker connection attempts per publish before the fire is left for a later retry.
_PUBLISH_CONNECT_RETRIES = 2
#: Seconds between tries to reach the database at start-up (at most ``max_interval``).
_STARTUP_RETRY = 5.0


#: The exit status of a beat that celery-dbeat stops on purpose.
_STOPPED = 1


def _stop_beat(exc: DBeatError) -> NoReturn:
    """What celery-dbeat refuses on purpose (a misspelt setting, a bad ``beat_schedule`` entry,
    a schema it does not know) stops beat with that one line and exit status 1, not a
    traceback through Celery's internals: the fix is in the configuration, not in the code."""
    if logging.getLogger().handlers:
        logger.critical("dbeat: beat cannot start: %s", exc)
    else:  # before Celery set up logging (beat's banner builds a scheduler first)
        print(f"dbeat: beat cannot start: {exc}", file=sys.stderr)
    raise SystemExit(_STOPPED) from None


@contextlib.contextmanager
def _stops_beat() -> Iterator[None]:
    """Stops beat (:func:`_stop_beat`) on what celery-dbeat refuses."""
    try:
        yield
    except DBeatError as exc:
        _stop_beat(exc)


class Scheduler(celery_beat.Scheduler):
    """A Celery beat scheduler whose schedules live in a SQL database (see the README)."""

    def __init__(self, app: Celery, lazy: bool = False, **kwargs: Any) -> None:
        with _stops_beat():
            self.dbeat = Settings.from_app(app)
        self.clock: Clock = SystemClock(self.dbeat.clock_offset)
        self.store: Store | None = None
        self.lock: FireLock | None = None
        self._ticker: Ticker | None = None
        self._listener: Listener | None = None
        self._closed = False
        self._ticking = False
        self._cleaned_up = False
        #: Whether ``beat_schedule`` is synced (checked at set-up, read again entry by entry
        #: for the sync: no definition is kept, so memory does not grow with its size).
        self._sync_entries = False
        #: The exit status of a beat stopped after its first tick (see :meth:`close`).
        self._exit_status: int | None = None
        if not kwargs.get("max_interval"):
            kwargs["max_interval"] = self.dbeat.max_interval.total_seconds()
        super().__init__(app, lazy=lazy, **kwargs)

    # Celery's Scheduler contract ------------------------------------------------------------

    def setup_schedule(self) -> None:
        with _stops_beat():
            self._setup_schedule()

    def _setup_schedule(self) -> None:
        if self.dbeat.sync_beat_schedule:
            # Read (and validated) before any I/O: a bad entry stops beat at once, not after
            # the database is reached.
            warn_unknown_tasks(self.app, validate_entries(self.app))
            self._sync_entries = True
        # A paused beat's transaction is ended by PostgreSQL once its lease is over, so its row
        # locks hold other beats back no longer than a lock does.
        try:
            self.store = Store(
                self.dbeat.database_url,
                engine_options=dict(self.dbeat.engine_options),
                idle_in_transaction=self.dbeat.lock_ttl,
            )
        except BAD_URL as exc:  # a URL that cannot work: the message says why
            raise ConfigurationError(
                "dbeat_database_url", self.dbeat.database_url, str(exc)
            ) from None
        self.lock = make_lock(
            self.dbeat.redis_url,
            prefix=self.dbeat.redis_key_prefix,
            owner=self.dbeat.instance_name,
            options=self.dbeat.redis_options,
        )
        if self.lock.client is not None:
            # Checked now, not once the database answers: a Redis that refuses the credentials
            # stops beat at start-up even while the database is down.
            self._report(redis_findings(self.dbeat, self.lock.client))
        metrics = NO_METRICS
        if self.dbeat.metrics_port is not None:
            metrics = start_metrics_server(
                self.dbeat.metrics_port, self.dbeat.metrics_address, self.dbeat.instance_name
            )
        self._ticker = Ticker(
            self.store,
            self.lock,
            self._publish,
            self.dbeat,
            self.clock,
            metrics=metrics,
            send_alert=self._send_alert,
        )
        if self.dbeat.redis_url:
            self._listener = ChangeListener(
                self.dbeat.redis_url,
                prefix=self.dbeat.redis_key_prefix,
                options=self.dbeat.redis_options,
            )
        else:
            self._listener = self.store.change_listener()
        self._unreachable = Outage(monotonic=self.clock.monotonic)
        self._prepared = self._try_prepare()

    def _try_prepare(self) -> bool:
        """Prepare the database; ``False`` while it cannot be reached (beat retries at its next
        tick, and says so again every :data:`REMIND_EVERY` seconds). A database that refuses
        the login or the rights celery-dbeat needs is no outage: waiting does not fix it, so
        beat stops, saying so."""
        try:
            self._prepare_database()
        except DRIVER_ERRORS as exc:
            if is_auth_failure(exc):
                raise ConfigurationError(
                    "dbeat_database_url",
                    self.dbeat.database_url,
                    f"the database refused celery-dbeat's login or rights: {driver_message(exc)}; "
                    "fix the user and password, or the user's grants",
                ) from None
            # Lost connectivity is an outage; any other error the database answers with is
            # reported as what it is (a full disk, a site rule), never as "unreachable".
            state = "unreachable" if is_disconnect(exc) else "answering with an error"
            if self._unreachable.failed():
                logger.error(
                    "dbeat: schedule database %s %s at start-up, retrying: %s",
                    mask_url(self.dbeat.database_url),
                    state,
                    driver_message(exc),
                )
            elif (took := self._unreachable.remind(REMIND_EVERY)) is not None:
                logger.error(
                    "dbeat: schedule database %s still %s %.0f s after start-up, retrying: %s",
                    mask_url(self.dbeat.database_url),
                    state,
                    took,
                    driver_message(exc),
                )
            return False
        took = self._unreachable.recovered()
        if took is not None:
            logger.warning("dbeat: schedule database reachable after %.1f s; beat starts", took)
        return True

    def _report(self, findings: list[Finding]) -> None:
        """Start-up checks: an error (an unknown schema, a Redis refusing the credentials) stops
        beat, warnings are logged."""
        for finding in findings:
            if finding.level is Level.ERROR:
                raise (SchemaVersionError if finding.topic == "schema" else DBeatError)(
                    finding.message
                )
            if finding.level is Level.WARNING:
                logger.warning("dbeat: check %s: %s", finding.topic, finding.message)

    def _prepare_database(self) -> None:
        assert self.store is not None
        if self.dbeat.auto_migrate:
            self.store.migrate()
        self._report(run_checks(self.dbeat, self.store, app=app_argument(self.app)))
        if self._sync_entries:
            report = sync_config(
                self.store,
                iter_definitions(self.app),
                self.clock.now(),
                listed=EntryNames(self.app),
            )
            logger.info(
                "dbeat: beat_schedule synced: %d created, %d updated, %d unchanged, %d disabled",
                len(report.created),
                len(report.updated),
                len(report.unchanged),
                len(report.disabled),
            )
            for name in report.conflicts:
                logger.warning(
                    "dbeat: beat_schedule entry %r left alone: a schedule with that name was "
                    "created through the API; rename one of them",
                    name,
                )
            for name, why in report.refused.items():
                logger.error(
                    "dbeat: beat_schedule entry %r not synced: the database refused it (%s); "
                    "the other entries are synced",
                    name,
                    why,
                )

    def tick(self, *args: Any, **kwargs: Any) -> float:
        self._ticking = True
        try:
            return self._tick()
        finally:
            self._ticking = False

    def _tick(self) -> float:
        assert self._ticker is not None, "setup_schedule() was not called"
        self._stop_if_closed()
        if not self._prepared:
            try:
                self._prepared = self._try_prepare()
            except DBeatError as exc:
                # Celery's Service.start ends its loop on SystemExit and returns normally, so
                # beat would exit 0: close() exits with this status once it has cleaned up.
                self._exit_status = _STOPPED
                _stop_beat(exc)
            if not self._prepared:
                return min(_STARTUP_RETRY, float(self.max_interval or _STARTUP_RETRY))
        if self._listener is not None:
            # Subscribed before the tick reads the schedules, so that a change committed after
            # that read wakes the wait below (on the first tick too).
            self._listener.listen()
        interval = self._ticker.tick()
        # Closed during the tick, its SystemExit swallowed: neither Celery's sleep nor the
        # wait below may hold the beat for up to max_interval after SIGTERM.
        self._stop_if_closed()
        if self._listener is None or interval <= 0:
            return interval
        # Wait here rather than in Celery's sleep, so that a change notification ends it.
        self._listener.wait(interval)
        self._stop_if_closed()
        return 0.0

    def _stop_if_closed(self) -> None:
        # Celery's SIGTERM/SIGINT handler closes the scheduler and raises SystemExit, but a
        # library call it interrupted may swallow that exception (redis-py's socket clean-up
        # does, and so does CPython for a signal handled inside a weakref callback run by the
        # garbage collector). Once closed, no further tick or wait may run: end beat's loop.
        if self._closed:
            raise SystemExit()

    def should_sync(self) -> bool:
        return False

    def close(self) -> None:
        self._closed = True
        if self._ticker is not None:
            # Wherever the main thread is: the publish in flight stops and hands back the rest.
            self._ticker.publishing.stop()
        if self._ticking or self._cleaned_up:
            # Celery's SIGTERM handler calls close() wherever the main thread is, then raises
            # SystemExit. In the middle of a tick, a transaction may hold the very locks the
            # clean-up needs (SQLite's write lock, this beat's heartbeat row), and the clean-up
            # would wait on itself; Celery closes again once SystemExit has unwound the tick.
            return
        self._cleaned_up = True
        try:
            super().close()
        finally:
            if self._ticker is not None:
                self._ticker.stop()
            if self._listener is not None:
                self._listener.close()
            if self.lock is not None:
                self.lock.close()
            if self.store is not None:
                self.store.close()
        if self._exit_status is not None:
            # Celery calls close() from Service.start's finally, outside its except clause: the
            # SystemExit raised here ends the process with the status of the stop (said already).
            raise SystemExit(self._exit_status)

    @property
    def info(self) -> str:
        settings = self.dbeat
        locks = f"redis {mask_url(settings.redis_url)}" if settings.redis_url else "database"
        grace = "unbounded" if settings.misfire_grace is None else f"{settings.misfire_grace}"
        return (
            f"    . dbeat database -> {mask_url(settings.database_url)}\n"
            f"    . dbeat locks -> {locks}\n"
            f"    . dbeat instance -> {settings.instance_name}\n"
            f"    . dbeat misfire -> {settings.misfire_policy.value} (grace {grace})"
            + (
                f"\n    . dbeat metrics -> http://{settings.metrics_address}:{settings.metrics_port}"
                "/metrics"
                if settings.metrics_port is not None
                else ""
            )
            # Checks that need no I/O; the database and Redis checks are logged at start-up.
            + "".join(f"\n    . dbeat WARNING -> {text}" for text in settings.warnings())
        )

    # Publishing ------------------------------------------------------------------------------

    @cached_property
    def connection(self) -> Any:
        """Celery's producer connection; on AMQP with publisher confirms (unless the app's
        ``broker_transport_options`` say otherwise). Without them ``basic.publish`` returns
        before RabbitMQ has the message, and a message it rejects or loses is marked sent:
        with them, each publish waits for the broker's ack and a refusal is retried."""
        connection = self.app.connection_for_write()
        options = dict(connection.transport_options or {})
        if connection.transport.driver_type == "amqp" and "confirm_publish" not in options:
            connection.release()
            connection = self.app.connection_for_write(
                transport_options={**options, "confirm_publish": True}
            )
        return connection

    def _ensure_connected(self) -> Any:
        # Celery's default retries the broker for minutes inside the tick; a fire that cannot be
        # published is already recorded and will be retried, so fail fast instead.
        def _error(exc: Exception, interval: float) -> None:
            logger.warning("dbeat: broker connection error: %s; retrying in %.1fs", exc, interval)

        return self.connection.ensure_connection(_error, _PUBLISH_CONNECT_RETRIES)

    def _publish(
        self,
        request: PublishRequest,
        args: list[Any],
        kwargs: dict[str, Any],
        options: dict[str, Any],
    ) -> None:
        headers = dict(options.pop("headers", None) or {})
        headers.update(
            celery_beat_task=True,
            dbeat_schedule=request.schedule_name,
            dbeat_slot=request.slot.isoformat(),
        )
        if request.manual:  # a run now: its slot is the instant it was asked for
            headers["dbeat_manual"] = True
        sending = dict(options, task_id=request.task_id, producer=self.producer, headers=headers)
        try:
            task = self.app.tasks.get(request.task)
            if task is not None:
                task.apply_async(tuple(args), kwargs, **sending)
            else:
                self.app.send_task(request.task, args, kwargs, **sending)
        except Exception:
            self._drop_connection()
            raise

    def _send_alert(self, task: str, kwargs: dict[str, Any], alert_id: str) -> None:
        """Publish alert task ``task`` (from the alerts' delivery thread, on a connection of its
        own), its id the alert's, retrying the broker a few times only."""
        with self.app.connection_for_write() as connection:
            self.app.send_task(
                task,
                kwargs=kwargs,
                task_id=alert_id,
                connection=connection,
                headers={"dbeat_alert": kwargs["kind"]},
                retry=True,
                retry_policy=_ALERT_RETRY_POLICY,
            )

    def _drop_connection(self) -> None:
        self.__dict__.pop("producer", None)
        connection = self.__dict__.pop("connection", None)
        if connection is not None:
            with contextlib.suppress(Exception):  # it is already broken
                connection.release()
