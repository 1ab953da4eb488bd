"""The typed management API that every surface (CLI, admin integrations, your code) calls.

    from celery_dbeat.api import Schedules
    from celery_dbeat import Cron

    schedules = Schedules("postgresql+psycopg://.../proj")
    schedules.add("report", "proj.tasks.report", Cron("30 7 * * mon-fri", timezone="Europe/Paris"))
    schedules.pause("report")
    schedules.preview("report", count=3)

Every write validates with the same code as ``beat_schedule`` sync and raises
:class:`~celery_dbeat.core.errors.ValidationError` (naming the field and the value),
:class:`~celery_dbeat.core.errors.ScheduleNotFound`,
:class:`~celery_dbeat.core.errors.ScheduleExists` or, when another writer changed the schedule
meanwhile, :class:`~celery_dbeat.core.errors.ScheduleChanged` (retry). A write that would change
or remove a schedule from the app's ``beat_schedule`` raises
:class:`~celery_dbeat.core.errors.ConfigOwned` unless given ``force=True``: the next beat start
(or ``dbeat sync``) puts its definition back; a pause or a resume is always allowed. A write that
sets a task the Celery app does not register (when the API knows the app:
:meth:`Schedules.from_app`) is stored, and logs the warning every surface gives
(:mod:`celery_dbeat.task_names`).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any

from celery.utils.log import get_logger
from sqlalchemy.engine import Connection, Engine, Row

from .calendars import Calendars
from .clock import Clock, SystemClock
from .config import Settings
from .core.audit import Action, Actor
from .core.calendars import PreviewSlot, preview
from .core.counts import require_count
from .core.definitions import CREATE_ARGUMENTS, Definition, create_arguments, pause_note
from .core.errors import ConfigOwned, ValidationError
from .core.formats import seconds_text
from .core.health import UNHEALTHY_REASONS, ScheduleHealth, judge
from .core.load import Load
from .core.misfire import MisfirePolicy
from .core.overlap import OverlapPolicy
from .core.specs import Spec
from .core.timing import require_aware
from .core.validation import check_accepted
from .notify import ChangeNotifier, DatabaseNotifier, notifies_through_database
from .results import BeatInfo, FireInfo, ScheduleInfo
from .store import Store, audit, backfill, beats, fires, queue, schedules
from .store import load as load_store
from .store.audit import Entry
from .store.backfill import BackfillReport
from .store.calendars import load_calendar
from .store.health import unhealthy_candidates
from .store.reading import Unreadable, named_rows, unreadable_values
from .store.reconcile import ORIGINS
from .store.sync import SyncReport, apply_definitions
from .task_names import warn_unknown_tasks

__all__ = [
    "UNHEALTHY_REASONS",
    "Actor",
    "BackfillReport",
    "BeatInfo",
    "Entry",
    "FireInfo",
    "Load",
    "PreviewSlot",
    "ScheduleHealth",
    "ScheduleInfo",
    "Schedules",
    "SyncReport",
    "preview_spec",
]

logger = get_logger(__name__)

_UNSET: Any = object()

#: Set while a surface that tells its user about unknown task names itself writes
#: (:meth:`Schedules.quiet_about_unknown_tasks`), so that it is said once.
_TOLD_BY_CALLER: ContextVar[bool] = ContextVar("dbeat_unknown_tasks_told", default=False)

#: A beat is live while its heartbeat is younger than three of its ticks at the longest (beat
#: writes it every ``dbeat_max_interval``, 5 s by default).
LIVE_WITHIN = timedelta(seconds=15)


def preview_spec(
    schedule: Spec,
    *,
    count: int = 5,
    after: datetime,
    start_at: datetime | None = None,
    end_at: datetime | None = None,
) -> list[datetime]:
    """The next ``count`` slots of an ad-hoc spec after ``after``; an interval is anchored at
    ``start_at`` or else at ``after``."""
    require_aware("after", after)
    definition = Definition.create(
        name="preview", task="preview", schedule=schedule, start_at=start_at, end_at=end_at
    )
    return definition.timing(start_at or after).preview(after, require_count(count))


class Schedules:
    """Manage the schedules of one database. Accepts an ``Engine``, a URL or a ``Store``; closes
    only what it created."""

    def __init__(
        self,
        target: Engine | str | Store,
        *,
        clock: Clock | None = None,
        notify: Any = None,
        redis_key_prefix: str = "dbeat:",
        redis_options: Mapping[str, Any] | None = None,
        live_within: timedelta = LIVE_WITHIN,
        accept_content: Collection[str] | None = None,
        actor: Actor | str | None = None,
        app: Any = None,
    ) -> None:
        """``notify``: a Redis URL or client; after each write, running beats are woken through
        it (give the beats' ``dbeat_redis_url``, ``dbeat_redis_key_prefix`` and
        ``dbeat_redis_options``). Without it, on PostgreSQL through psycopg, writes ``NOTIFY``
        the beats that run without Redis. ``live_within``: how young a heartbeat must be for
        its beat to count as running (:meth:`live_beats`); three of the beats'
        ``dbeat_max_interval``. ``accept_content``: the workers' (the app's setting); ``None``,
        Celery's default, ``["json"]``: a schedule's ``serializer`` must be among them.
        ``actor``: who the writes are recorded as in the audit trail (:meth:`audit`), unless a
        write names its own: an :class:`Actor` (a name and a surface), or a name (surface
        ``api``); default, this process's OS user through the ``api``. ``app``: the Celery app
        whose registered task names a write checks (its task modules imported first, once, as a
        worker does): a task it does not register is stored all the same, with a warning logged
        (``celery_dbeat.api``); :meth:`from_app` gives it."""
        if isinstance(target, Store):
            self.store, self._owns = target, False
        else:
            self.store, self._owns = Store(target), True
        self.clock = clock or SystemClock()
        self.live_within = live_within
        self.actor = self._actor(actor, Actor(audit.os_user()))
        self.accept_content = None if accept_content is None else tuple(accept_content)
        self.app = app
        self.notifier: ChangeNotifier | DatabaseNotifier | None = None
        if notify is not None:
            self.notifier = ChangeNotifier(notify, prefix=redis_key_prefix, options=redis_options)
        elif notifies_through_database(self.store.engine):
            self.notifier = DatabaseNotifier(self.store.engine)

    @classmethod
    def from_app(cls, app: Any, *, clock: Clock | None = None) -> Schedules:
        """The schedules of a Celery app, per its ``dbeat_*`` settings (notifying its beats)."""
        settings = Settings.from_app(app)
        store = Store(settings.database_url, engine_options=dict(settings.engine_options))
        api = cls(
            store,
            clock=clock,
            notify=settings.redis_url,
            redis_key_prefix=settings.redis_key_prefix,
            redis_options=settings.redis_options,
            live_within=3 * settings.max_interval,
            accept_content=app.conf.accept_content,
            app=app,
        )
        api._owns = True
        return api

    def close(self) -> None:
        """Close the change notifier and, when this object made it, the store's engine."""
        if self.notifier is not None:
            self.notifier.close()
        if self._owns:
            self.store.close()

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        with self.store.engine.begin() as conn:
            yield conn
        if self.notifier is not None:
            self.notifier.notify()

    def _actor(self, actor: Actor | str | None, default: Actor | None = None) -> Actor:
        """Who a write is recorded as: ``actor``, a name through the default's surface, or
        the default (this API's ``actor``)."""
        default = default or self.actor
        if actor is None:
            return default
        return actor if isinstance(actor, Actor) else Actor(actor, default.surface)

    @contextmanager
    def quiet_about_unknown_tasks(self) -> Iterator[None]:
        """Within it, in this thread, writes log nothing about a task the app does not register:
        for a surface that tells its user itself (the CLI's ``warning:`` line and reports, an
        admin's message), so that each surface says it once."""
        token = _TOLD_BY_CALLER.set(True)
        try:
            yield
        finally:
            _TOLD_BY_CALLER.reset(token)

    def _warn_unknown_tasks(self, definitions: Iterable[Definition]) -> None:
        """Log the warning about the tasks of ``definitions`` that :attr:`app` does not register
        (nothing without an app, or inside :meth:`quiet_about_unknown_tasks`)."""
        if self.app is not None and not _TOLD_BY_CALLER.get():
            warn_unknown_tasks(self.app, definitions, log=logger, source="")

    def _now(self, conn: Connection) -> datetime:
        """When a write happens. This host's clock (a :class:`SystemClock`) gives way to the
        database server's, which every host shares (``store.clock``); any other
        ``clock`` (a :class:`FixedClock` in tests) is used as given."""
        now = self.clock.now()
        return self.store.clock.now(conn, now) if isinstance(self.clock, SystemClock) else now

    def __enter__(self) -> Schedules:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def calendars(self) -> Calendars:
        """The exclusion calendars schedules name (:mod:`celery_dbeat.calendars`)."""
        return Calendars(self)

    # Reads -----------------------------------------------------------------------------------

    def get(self, name: str) -> ScheduleInfo:
        """The schedule ``name``; raises :class:`~celery_dbeat.core.errors.ScheduleNotFound`."""
        with self.store.engine.connect() as conn:
            return ScheduleInfo.from_row(schedules.load_schedule(conn, name))

    def list(
        self,
        *,
        enabled: bool | None = None,
        search: str | None = None,
        limit: int | None = None,
        offset: int = 0,
    ) -> builtins.list[ScheduleInfo]:
        """Schedules by name: only enabled ones (``enabled=True``) or paused ones (``False``),
        those whose name or task holds ``search``, ``limit`` of them from ``offset``."""
        with self.store.engine.connect() as conn:
            rows = schedules.list_schedules(
                conn, enabled=enabled, search=search, limit=limit, offset=offset
            )
        return [ScheduleInfo.from_row(row) for row in rows]

    def due(
        self, *, now: datetime | None = None, limit: int | None = None
    ) -> builtins.list[ScheduleInfo]:
        """Enabled schedules whose fire is due (a backlog, if beats are down or behind)."""
        with self.store.engine.connect() as conn:
            rows = schedules.due_schedules(conn, now or self.clock.now(), limit)
        return [ScheduleInfo.from_row(row) for row in rows]

    def count_due(self, *, now: datetime | None = None) -> int:
        """How many enabled schedules are due at ``now`` (default: now): :meth:`due` counted."""
        with self.store.engine.connect() as conn:
            return schedules.count_due(conn, now or self.clock.now())

    def queued(self) -> tuple[int, datetime | None]:
        """Slots queued for spare capacity (catch-up of policy ``all``, backfill): how many, and
        the oldest. Beats publish them, oldest first, once no on-time fire is due."""
        with self.store.engine.connect() as conn:
            return queue.queued_backlog(conn)

    def upcoming(
        self, count: int = 5, *, now: datetime | None = None
    ) -> builtins.list[ScheduleInfo]:
        """The next ``count`` enabled schedules to fire after ``now``."""
        with self.store.engine.connect() as conn:
            rows = schedules.upcoming_schedules(conn, now or self.clock.now(), count)
        return [ScheduleInfo.from_row(row) for row in rows]

    def failing(self) -> builtins.list[ScheduleInfo]:
        """Schedules marked with an error, by name."""
        with self.store.engine.connect() as conn:
            return [ScheduleInfo.from_row(row) for row in schedules.failing_schedules(conn)]

    def counts(self) -> dict[str, int]:
        """How many schedules are ``active``, ``paused``, ``finished`` and in ``error``."""
        with self.store.engine.connect() as conn:
            return schedules.state_counts(conn)

    def paused_counts(self) -> dict[str, int]:
        """How many schedules are paused, by what paused them (``person``, ``config``,
        ``failures``; ``unknown`` for pauses made before celery-dbeat recorded it)."""
        with self.store.engine.connect() as conn:
            return schedules.paused_counts(conn)

    def beats(self) -> builtins.list[BeatInfo]:
        """Every beat's heartbeat, by name."""
        with self.store.engine.connect() as conn:
            return [BeatInfo(**row._asdict()) for row in beats.beat_heartbeats(conn)]

    def live_beats(self) -> builtins.list[BeatInfo]:
        """The beats seen within ``live_within``, on the database's clock: those that would send
        a fire recorded now (a trigger, a new schedule) without waiting for a beat to start."""
        with self.store.engine.connect() as conn:
            now = self._now(conn)
            rows = beats.beat_heartbeats(conn)
        return [
            BeatInfo(**row._asdict()) for row in rows if now - row.last_seen_at <= self.live_within
        ]

    def no_beat_running(self, waiting: str) -> str:
        """What every surface says when fires it recorded (a run now, a backfill) wait for a
        beat because none is running (:meth:`live_beats` is empty); ``waiting`` says what waits
        (``"'report' is"``, ``"the fires are"``)."""
        within = seconds_text(self.live_within.total_seconds())
        return f"no beat is running (none seen within {within}): {waiting} sent when a beat starts"

    def history(self, name: str, *, limit: int = 50) -> builtins.list[FireInfo]:
        """The schedule's ``limit`` newest fires (what each slot became), newest first."""
        with self.store.engine.connect() as conn:
            return [FireInfo.from_row(r) for r in fires.fire_history(conn, name, limit)]

    def audit(
        self, name: str | None = None, *, since: datetime | None = None, limit: int = 100
    ) -> builtins.list[Entry]:
        """The audit trail, newest first: who changed what (``{field: [old, new]}``), when (the
        database's clock) and from where; of the schedule ``name`` (under every name it had),
        from ``since`` on, at most ``limit`` (1 to 10000) entries."""
        if since is not None:
            require_aware("since", since)
        with self.store.engine.connect() as conn:
            return audit.entries(conn, name=name, since=since, limit=require_count(limit))

    def unhealthy(self, *, now: datetime | None = None) -> builtins.list[ScheduleHealth]:
        """Schedules whose last run failed or that have not succeeded within their expected
        period, by name; see :mod:`celery_dbeat.core.health` for the exact rules."""
        now = now or self.clock.now()
        with self.store.engine.connect() as conn:
            candidates = unhealthy_candidates(conn)
        return judge(candidates, now)

    def preview(
        self, name: str, *, count: int = 5, after: datetime | None = None
    ) -> builtins.list[PreviewSlot]:
        """The next ``count`` slots a stored schedule fires after ``after`` (default: now), and
        the slots its calendar removes among them (``excluded_by``: the calendar's name; at
        most ``count`` of those listed), looking at most at 100,000 slots."""
        require_aware("after", after)
        count = require_count(count)
        with self.store.engine.connect() as conn:
            row = schedules.load_schedule(conn, name)
            calendar = None if row.calendar is None else load_calendar(conn, row.calendar)
        definition = Definition.from_columns(row._mapping)
        anchor = row.start_at or row.anchor_at or row.created_at
        slots = definition.timing(anchor).slots_after(after or self.clock.now())
        return preview(slots, calendar, count)

    def load(
        self, *, start: datetime | None = None, top: int = 5, herd_at: float | None = None
    ) -> Load:
        """Fires per minute over the 24 hours from ``start`` (default: the start of the current
        minute) of every enabled schedule, each at its due instant (jitter included, as beat
        computes it); the ``top`` busiest minutes that are herds (at least ``herd_at`` fires;
        default: twice the day's median minute and at least 10), with the schedules that make
        them and a hint; and the day before: lag (``sent_at - slot``) p50/p99 and failed runs
        per hour. See :mod:`celery_dbeat.core.load` for how the work stays bounded."""
        require_aware("start", start)
        if isinstance(top, bool) or not isinstance(top, int) or not 0 <= top <= 100:
            raise ValidationError("top", top, "must be a whole number from 0 to 100")
        if herd_at is not None and (
            isinstance(herd_at, bool)
            or not isinstance(herd_at, (int, float))
            or not 1 <= herd_at < float("inf")
        ):
            raise ValidationError("herd_at", herd_at, "must be a number of fires >= 1")
        if start is None:
            now = self.clock.now()
            start = now.replace(second=0, microsecond=0)
        with self.store.engine.connect() as conn:
            return load_store.load(conn, start, top=top, herd_at=herd_at)

    # Writes ----------------------------------------------------------------------------------

    def check(self, definition: Definition) -> Definition:
        """Refuse (:class:`ValidationError`) what this API does not store although it is valid
        on its own: a ``serializer`` the workers' ``accept_content`` would refuse. Every write
        calls it; call it to check a batch before writing any of it. Returns ``definition``."""
        check_accepted(definition.options, self.accept_content)
        return definition

    def add(
        self,
        name: str,
        task: str,
        schedule: Spec,
        *,
        args: Any = (),
        kwargs: Mapping[str, Any] | None = None,
        options: Mapping[str, Any] | None = None,
        enabled: bool = True,
        start_at: datetime | None = None,
        end_at: datetime | None = None,
        max_runs: int | None = None,
        misfire_policy: str | MisfirePolicy | None = None,
        misfire_grace: Any = None,
        catchup_limit: int | None = None,
        jitter: Any = None,
        overlap_policy: str | OverlapPolicy | None = None,
        max_run_time: Any = None,
        calendar: str | None = None,
        pause_after_failures: int | None = None,
        history_limit: int | None = None,
        actor: Actor | str | None = None,
    ) -> ScheduleInfo:
        """Store a new schedule: ``name`` runs ``task`` at the slots of ``schedule``
        (:class:`~celery_dbeat.Cron`, :class:`~celery_dbeat.Every`, ...); every other field as
        :meth:`Definition.create <celery_dbeat.core.definitions.Definition.create>` takes it.
        Raises :class:`~celery_dbeat.core.errors.ValidationError` naming the first bad field,
        or :class:`~celery_dbeat.core.errors.ScheduleExists`."""
        definition = Definition.create(
            name=name,
            task=task,
            schedule=schedule,
            args=args,
            kwargs=kwargs,
            options=options,
            enabled=enabled,
            start_at=start_at,
            end_at=end_at,
            max_runs=max_runs,
            misfire_policy=misfire_policy,
            misfire_grace=misfire_grace,
            catchup_limit=catchup_limit,
            jitter=jitter,
            overlap_policy=overlap_policy,
            max_run_time=max_run_time,
            pause_after_failures=pause_after_failures,
            history_limit=history_limit,
            calendar=calendar,
        )
        return self.create(definition, actor=actor)

    def update(
        self,
        name: str,
        /,
        *,
        force: bool = False,
        actor: Actor | str | None = None,
        **changes: Any,
    ) -> ScheduleInfo:
        """Change some fields (``task``, ``schedule``, ``args``, ``kwargs``, ``options``,
        ``start_at``, ``end_at``, ``max_runs``, ``misfire_policy``, ``misfire_grace``,
        ``catchup_limit``, ``jitter``, ``overlap_policy``, ``max_run_time``, ``calendar``,
        ``pause_after_failures``, ``history_limit``, ``name`` to rename). A timing change recomputes
        ``next_run_at`` from now; other changes keep it. A change to a schedule from
        ``beat_schedule`` raises :class:`ConfigOwned` unless ``force`` (it then lasts until the
        next beat start or ``dbeat sync``)."""
        _check_editable(changes, _EDITABLE)
        _check_force(force)
        who = self._actor(actor)
        with self._writing() as conn:
            now = self._now(conn)
            with audit.watch(conn, name, who, Action.UPDATE, now):
                row = schedules.load_schedule(conn, name)
                definition = self.check(_edited(row, changes))
                _refuse_config_edit(row, definition, force)
                schedules.update_schedule(conn, name, definition, now, row=row)
        if "task" in changes:
            self._warn_unknown_tasks([definition])
        return self.get(changes.get("name", name))

    def update_many(
        self,
        changes: Mapping[str, Mapping[str, Any]],
        *,
        force: bool = False,
        actor: Actor | str | None = None,
    ) -> int:
        """:meth:`update` for many schedules in one transaction: ``{name: {field: value}}``
        (no renames); returns how many changed. All or nothing: an unknown name, an invalid
        value or, without ``force``, a change to a schedule from ``beat_schedule``
        (:class:`ConfigOwned`) raises (naming the schedule) and nothing is stored. Rows are
        locked while the batch is written: another batch touching them waits and loses nothing; an
        :meth:`update` racing it raises ``ScheduleChanged`` (try again). For bulk edits: a few
        hundred schedules per call."""
        for edits in changes.values():
            _check_editable(edits, _BATCH_EDITABLE)
        _check_force(force)
        if not changes:
            return 0
        with self._writing() as conn:
            updates = []
            for row in schedules.lock_schedules(conn, builtins.list(changes)):
                try:
                    definition = self.check(_edited(row, changes[row.name]))
                except ValidationError as exc:
                    raise ValidationError(
                        exc.field, exc.value, f"{exc.problem} (schedule {row.name!r})"
                    ) from None
                _refuse_config_edit(row, definition, force)
                updates.append((row, definition))
            now = self._now(conn)
            count = schedules.update_schedules(conn, updates, now)
            rows = [row for row, _ in updates]
            audit.record_rows(conn, self._actor(actor), Action.UPDATE, now, rows)
        self._warn_unknown_tasks(d for row, d in updates if "task" in changes[row.name])
        return count

    def check_replace(self, name: str, definition: Definition, *, force: bool = False) -> bool:
        """Raise :class:`ConfigOwned` where :meth:`replace` would, writing nothing: for a form
        that shows the refusal on its fields before saving. Returns whether the write changes a
        schedule from ``beat_schedule`` (allowed with ``force``, until the next sync)."""
        _check_force(force)
        with self.store.engine.connect() as conn:
            row = schedules.load_schedule(conn, name)
        return _refuse_config_edit(row, definition, force)

    def create(self, definition: Definition, *, actor: Actor | str | None = None) -> ScheduleInfo:
        """Store an already validated definition (from ``definition_from_form``) as new."""
        self.check(definition)
        with self._writing() as conn:
            now = self._now(conn)
            with audit.watch(conn, definition.name, self._actor(actor), Action.CREATE, now):
                schedules.create_schedule(conn, definition, now)
        self._warn_unknown_tasks([definition])
        return self.get(definition.name)

    def replace(
        self,
        name: str,
        definition: Definition,
        *,
        force: bool = False,
        actor: Actor | str | None = None,
    ) -> ScheduleInfo:
        """Make the schedule ``name`` match ``definition`` in one transaction: its fields (a
        rename when the names differ; ``next_run_at`` recomputed only if the timing changed),
        then its ``enabled`` flag (a resume skips the slots of the pause). A change to the
        fields of a schedule from ``beat_schedule`` raises :class:`ConfigOwned` unless
        ``force``; its ``enabled`` flag alone is a pause or a resume, always allowed."""
        self.check(definition)
        _check_force(force)
        with self._writing() as conn:
            now = self._now(conn)
            with audit.watch(conn, name, self._actor(actor), Action.UPDATE, now):
                row = schedules.load_schedule(conn, name)
                _refuse_config_edit(row, definition, force)
                schedules.update_schedule(conn, name, definition, now, row=row)
                row = schedules.load_schedule(conn, definition.name)
                if row.enabled != definition.enabled and row.finished_at is None:
                    schedules.set_enabled(conn, definition.name, definition.enabled, now)
        self._warn_unknown_tasks([definition])
        return self.get(definition.name)

    def remove(self, name: str, *, force: bool = False, actor: Actor | str | None = None) -> None:
        """Delete the schedule and its history. A schedule from ``beat_schedule`` raises
        :class:`ConfigOwned` unless ``force``: the next beat start creates it again (remove its
        entry from ``beat_schedule`` instead, which disables it and keeps its history)."""
        _check_force(force)
        with self._writing() as conn:
            now = self._now(conn)
            with audit.watch(conn, name, self._actor(actor), Action.REMOVE, now) as seen:
                before = seen.before
                if not force and before and before["origin"] == schedules.CONFIG_ORIGIN:
                    raise ConfigOwned(name, removal=True)
                schedules.delete_schedule(conn, name)

    def pause(
        self, name: str, *, note: str | None = None, actor: Actor | str | None = None
    ) -> ScheduleInfo:
        """Stop the schedule firing until :meth:`resume`. ``note``: who paused it and why (free
        text, at most 500 characters, no control characters), shown by every surface until the
        resume clears it. Pausing a paused schedule with a note replaces its note (and keeps
        when it was paused)."""
        checked = pause_note(note)
        with self._writing() as conn:
            now = self._now(conn)
            with audit.watch(conn, name, self._actor(actor), Action.PAUSE, now):
                schedules.set_enabled(conn, name, False, now, note=checked)
        return self.get(name)

    def resume(
        self, name: str, *, catch_up: bool = False, actor: Actor | str | None = None
    ) -> ScheduleInfo:
        """Resume; the slots that fell inside the pause fire only with ``catch_up=True``, and
        then through the schedule's misfire policy."""
        with self._writing() as conn:
            now = self._now(conn)
            with audit.watch(conn, name, self._actor(actor), Action.RESUME, now):
                schedules.set_enabled(conn, name, True, now, catch_up=catch_up)
        return self.get(name)

    def backfill(
        self,
        name: str,
        start: datetime,
        end: datetime,
        *,
        limit: int = 10_000,
        dry_run: bool = False,
        resend: bool = False,
        actor: Actor | str | None = None,
    ) -> BackfillReport:
        """Send the slots of ``name`` in ``[start, end]`` (both inclusive, both passed) that
        were never sent, each with its usual task id: queued behind on-time fires and drained
        like a catch-up (at most ``dbeat_catchup_rate`` a second per beat), marked
        ``origin="backfill"`` in the history. A slot already sent or on its way is left alone,
        so a second backfill of the same range sends nothing. A slot whose history was pruned
        (no record, at or before the schedule's ``pruned_until``) may have been sent: it is
        reported (``report.pruned``) and sent only with ``resend=True``. A range holding more
        than ``limit`` slots (at most 100,000) is refused; ``dry_run`` counts without
        recording."""
        require_aware("start", start)
        require_aware("end", end)
        if not isinstance(resend, bool):
            raise ValidationError("resend", resend, "must be True or False")
        with self.store.engine.connect() as conn:
            row, now = schedules.load_schedule(conn, name), self._now(conn)
        # Drawn outside any transaction: a long range never holds the schedule's row.
        planned = backfill.plan(row, start, end, now, limit)
        with self._writing() as conn:
            now = self._now(conn)
            with audit.watch(conn, name, self._actor(actor), Action.BACKFILL, now) as seen:
                report = backfill.backfill(
                    conn,
                    name,
                    start,
                    end,
                    now,
                    limit=limit,
                    dry_run=dry_run,
                    resend=resend,
                    planned=planned,
                )
                seen.detail.update(backfill.audit_detail(report))
            return report

    def trigger(self, name: str, *, actor: Actor | str | None = None) -> str:
        """Fire once now, outside the schedule; returns the task id. A running beat publishes
        it at once when writes notify it (see ``notify``), else within ``dbeat_max_interval``;
        with no beat running (:meth:`live_beats` is empty) it is sent when one starts."""
        with self._writing() as conn:
            now = self._now(conn)
            with audit.watch(conn, name, self._actor(actor), Action.RUN_NOW, now) as seen:
                task_id = fires.record_manual_fire(conn, name, now)
                seen.detail["task_id"] = [None, task_id]
            return task_id

    def add_many(
        self, definitions: Iterable[Definition], *, actor: Actor | str | None = None
    ) -> int:
        """Store already validated definitions (from ``Definition.create``) as new schedules, in
        one transaction and one multi-row INSERT; returns how many. For bulk loads: call it once
        per batch of a few thousand. Raises :class:`ScheduleExists` naming a taken name (then
        nothing of the batch is stored) and ``ValidationError`` for a name given twice."""
        batch = builtins.list(definitions)
        for definition in batch:
            try:
                self.check(definition)
            except ValidationError as exc:
                raise ValidationError(
                    exc.field, exc.value, f"{exc.problem} (schedule {definition.name!r})"
                ) from None
        if not batch:
            return 0
        with self._writing() as conn:
            now = self._now(conn)
            schedules.create_schedules(conn, batch, now)
            names = [d.name for d in batch]
            audit.record_rows(conn, self._actor(actor), Action.CREATE, now, [], names)
        self._warn_unknown_tasks(batch)
        return len(batch)

    def apply(
        self,
        definitions: Iterable[Definition],
        *,
        origin: str = schedules.API_ORIGIN,
        dry_run: bool = False,
        disable_missing: bool = False,
        actor: Actor | str | None = None,
        progress: Callable[[int], object] | None = None,
    ) -> SyncReport:
        """Bring the schedules of the definitions' names in line with them, as a file import
        and the importers do (``origin="api"``) and beat's ``beat_schedule`` sync
        (``origin="config"``, ``disable_missing=True``: the config's schedules not named are
        disabled); :mod:`celery_dbeat.store.reconcile` states what each name becomes, and which
        are left alone as ``conflicts``. One transaction per 500 definitions, one wake-up of the
        beats. ``progress``: called with the number of definitions of each 500 once applied.
        Raises ``ValidationError`` naming the schedule, before writing anything, for a
        definition :meth:`check` refuses."""
        if origin not in ORIGINS:
            raise ValidationError("origin", origin, f"must be one of {', '.join(ORIGINS)}")
        if disable_missing and origin != schedules.CONFIG_ORIGIN:
            raise ValidationError("disable_missing", True, "applies to origin='config' only")
        batch = builtins.list(definitions)
        for definition in batch:
            try:
                self.check(definition)
            except ValidationError as exc:
                raise ValidationError(
                    exc.field, exc.value, f"{exc.problem} (schedule {definition.name!r})"
                ) from None
        report = apply_definitions(
            self.store,
            batch,
            self._now,
            origin=origin,
            actor=self._actor(actor),
            dry_run=dry_run,
            disable_missing=disable_missing,
            progress=progress,
        )
        written = {*report.created, *report.updated}
        if self.notifier is not None and not dry_run and (written or report.disabled):
            self.notifier.notify()
        self._warn_unknown_tasks(d for d in batch if d.name in written)
        return report

    def find(self, names: Iterable[str]) -> dict[str, ScheduleInfo]:
        """The schedules of ``names`` that exist, by name (not every schedule, as :meth:`list`)."""
        with self.store.engine.connect() as conn:
            rows = named_rows(conn, builtins.list(names))
        return {row.name: ScheduleInfo.from_row(row) for row in rows}

    def unreadable(self, ids: Iterable[int], columns: Sequence[str]) -> dict[int, Unreadable]:
        """Of the schedules ``ids``, those whose ``columns`` hold a stored value that cannot be
        read, and which (such a schedule reads with them empty, ``last_error`` saying why)."""
        with self.store.engine.connect() as conn:
            return unreadable_values(conn, builtins.list(ids), columns)


#: What ``update`` may change (``enabled`` has pause and resume).
_EDITABLE = ("name", *(a for a in CREATE_ARGUMENTS if a != "enabled"))
_BATCH_EDITABLE = _EDITABLE[1:]


def _check_editable(changes: Mapping[str, Any], editable: Sequence[str]) -> None:
    unknown = sorted(set(changes) - set(editable))
    if unknown:
        raise ValidationError(unknown[0], changes[unknown[0]], "is not an editable field")


def _check_force(force: object) -> None:
    if not isinstance(force, bool):
        raise ValidationError("force", force, "must be True or False")


def _refuse_config_edit(row: Row[Any], definition: Definition, force: bool) -> bool:
    """Whether storing ``definition`` over ``row`` changes the definition of a schedule from
    ``beat_schedule`` (a rename included; not its ``enabled`` flag, nor a save of what is
    stored), which the next sync puts back: refused (:class:`ConfigOwned`) unless ``force``."""
    edits = row.origin == schedules.CONFIG_ORIGIN and (
        definition.name != row.name or any(schedules.changed(definition, row))
    )
    if edits and not force:
        raise ConfigOwned(row.name)
    return edits


def _edited(row: Row[Any], changes: Mapping[str, Any]) -> Definition:
    """The definition of ``row`` with ``changes`` applied, validated."""
    current = create_arguments(row._mapping)
    current.update(changes)
    return Definition.create(**current)
