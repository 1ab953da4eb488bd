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
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Row
from typing_extensions import Unpack

from ..clock import Clock
from ..config import Settings
from ..core.audit import Action, Actor
from ..core.definitions import CREATE_ARGUMENTS, Definition, create_arguments, pause_note
from ..core.errors import ConfigOwned, ScheduleNotFound, ValidationError
from ..core.fields import ScheduleFields
from ..core.origins import API_ORIGIN, APPLIED_ORIGINS, CONFIG_ORIGIN
from ..core.specs import Spec
from ..core.timing import require_aware
from ..results import ScheduleInfo
from ..store import Store, audit, backfill, fires, schedules
from ..store.backfill import BackfillReport
from ..store.sync import SyncReport, apply_definitions
from .calendars import Calendars
from .reads import Reads

__all__ = ["Schedules"]


class Schedules(Reads):
    """Manage the schedules of one database (:class:`~.session.Session`: its arguments); every
    read of :class:`~.reads.Reads`, and the writes."""

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

    @property
    def calendars(self) -> Calendars:
        """The exclusion calendars schedules name (:mod:`celery_dbeat.api.calendars`)."""
        return Calendars(self)

    # Writes ----------------------------------------------------------------------------------

    def add(
        self,
        name: str,
        task: str,
        schedule: Spec,
        *,
        actor: Actor | str | None = None,
        **fields: Unpack[ScheduleFields],
    ) -> ScheduleInfo:
        """Store a new schedule: ``name`` runs ``task`` at the slots of ``schedule``
        (:class:`~celery_dbeat.Cron`, :class:`~celery_dbeat.Every`, ...); ``fields``: every other
        field (:class:`~celery_dbeat.core.fields.ScheduleFields`). Raises
        :class:`~celery_dbeat.core.errors.ValidationError` naming the first bad field, or
        :class:`~celery_dbeat.core.errors.ScheduleExists`."""
        definition = Definition.create(name=name, task=task, schedule=schedule, **fields)
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
        ``pause_after_failures``, ``history_limit``, the ``alert_*`` fields, ``name`` to rename).
        A timing change recomputes ``next_run_at`` from now; other changes keep it. A change to
        a schedule from ``beat_schedule`` raises :class:`ConfigOwned` unless ``force`` (it then
        lasts until the next beat start or ``dbeat sync``)."""
        _check_editable(changes, _EDITABLE)
        return self._store(name, lambda row: _edited(row, changes), force, actor, "task" in changes)

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
        return self._store(name, lambda row: definition, force, actor, True, toggle=True)

    def _store(
        self,
        name: str,
        definition_of: Callable[[Row[Any]], Definition],
        force: bool,
        actor: Actor | str | None,
        task_set: bool,
        *,
        toggle: bool = False,
    ) -> ScheduleInfo:
        """Store over the row ``name`` the definition ``definition_of`` makes of it (checked),
        and with ``toggle`` its ``enabled`` flag; the row is read once before and once after."""
        _check_force(force)
        with self.write(actor) as w, w.watch(name, Action.UPDATE) as seen:
            row = _found(seen.row, name)
            definition = self.check(definition_of(row))
            _refuse_config_edit(row, definition, force)
            stored = {
                **row._mapping,
                **(schedules.update_schedule(w.conn, definition, w.now, row) or {}),
            }
            if toggle and stored["enabled"] != definition.enabled and stored["finished_at"] is None:
                row = schedules.load_schedule(w.conn, definition.name)  # as just written
                schedules.set_enabled(w.conn, row, definition.enabled, w.now)
        if task_set:
            self.warn_unknown_tasks([definition])
        return ScheduleInfo.from_row(_found(seen.after, definition.name))

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
        with self.write(actor) as w:
            updates = []
            for row in schedules.lock_schedules(w.conn, builtins.list(changes)):
                with _naming(row.name):
                    definition = self.check(_edited(row, changes[row.name]))
                _refuse_config_edit(row, definition, force)
                updates.append((row, definition))
            count = schedules.update_schedules(w.conn, updates, w.now)
            audit.record_rows(w.conn, w.actor, Action.UPDATE, w.now, [row for row, _ in updates])
        self.warn_unknown_tasks(d for row, d in updates if "task" in changes[row.name])
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
        with self.write(actor) as w, w.watch(definition.name, Action.CREATE) as seen:
            schedules.create_schedules(w.conn, [definition], w.now)
        self.warn_unknown_tasks([definition])
        return ScheduleInfo.from_row(_found(seen.after, definition.name))

    def remove(self, name: str, *, force: bool = False, actor: Actor | str | None = None) -> None:
        """Delete the schedule and its history. A schedule from ``beat_schedule`` raises
        :class:`ConfigOwned` unless ``force``: the next beat start creates it again (remove its
        entry from ``beat_schedule`` instead, which disables it and keeps its history)."""
        _check_force(force)
        with self.write(actor) as w, w.watch(name, Action.REMOVE) as seen:
            row = _found(seen.row, name)
            if not force and row.origin == CONFIG_ORIGIN:
                raise ConfigOwned(name, removal=True)
            schedules.delete_schedule(w.conn, row)

    def pause(
        self, name: str, *, note: str | None = None, actor: Actor | str | None = None
    ) -> ScheduleInfo:
        """Stop the schedule firing until :meth:`resume`. ``note``: who paused it and why (free
        text, at most 500 characters, no control characters), shown by every surface until the
        resume clears it. Pausing a paused schedule with a note replaces its note (and keeps
        when it was paused)."""
        checked = pause_note(note)
        with self.write(actor) as w, w.watch(name, Action.PAUSE) as seen:
            schedules.set_enabled(w.conn, _found(seen.row, name), False, w.now, note=checked)
        return ScheduleInfo.from_row(_found(seen.after, name))

    def resume(
        self, name: str, *, catch_up: bool = False, actor: Actor | str | None = None
    ) -> ScheduleInfo:
        """Resume; the slots that fell inside the pause fire only with ``catch_up=True``, and
        then through the schedule's misfire policy."""
        with self.write(actor) as w, w.watch(name, Action.RESUME) as seen:
            row = _found(seen.row, name)
            schedules.set_enabled(w.conn, row, True, w.now, catch_up=catch_up)
        return ScheduleInfo.from_row(_found(seen.after, name))

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
            row, now = schedules.load_schedule(conn, name), self.now(conn)
        # Drawn outside any transaction: a long range never holds the schedule's row.
        planned = backfill.plan(row, start, end, now, limit)
        with self.write(actor) as w, w.watch(name, Action.BACKFILL) as seen:
            report = backfill.backfill(
                w.conn,
                name,
                start,
                end,
                w.now,
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
        with self.write(actor) as w, w.watch(name, Action.RUN_NOW) as seen:
            task_id = fires.record_manual_fire(w.conn, name, w.now)
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
            with _naming(definition.name):
                self.check(definition)
        if not batch:
            return 0
        with self.write(actor) as w:
            schedules.create_schedules(w.conn, batch, w.now)
            names = [d.name for d in batch]
            audit.record_rows(w.conn, w.actor, Action.CREATE, w.now, [], names)
        self.warn_unknown_tasks(batch)
        return len(batch)

    def apply(
        self,
        definitions: Iterable[Definition],
        *,
        origin: str = API_ORIGIN,
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
        if origin not in APPLIED_ORIGINS:
            raise ValidationError("origin", origin, f"must be one of {', '.join(APPLIED_ORIGINS)}")
        if disable_missing and origin != CONFIG_ORIGIN:
            raise ValidationError("disable_missing", True, "applies to origin='config' only")
        batch = builtins.list(definitions)
        for definition in batch:
            with _naming(definition.name):
                self.check(definition)
        report = apply_definitions(
            self.store,
            batch,
            self.now,
            origin=origin,
            actor=self.who(actor),
            dry_run=dry_run,
            disable_missing=disable_missing,
            progress=progress,
        )
        written = {*report.created, *report.updated}
        if self.notifier is not None and not dry_run and (written or report.disabled):
            self.notifier.notify()
        self.warn_unknown_tasks(d for d in batch if d.name in written)
        return report


#: What ``update`` may change (``enabled`` has pause and resume).
_EDITABLE = ("name", *(a for a in CREATE_ARGUMENTS if a != "enabled"))
_BATCH_EDITABLE = _EDITABLE[1:]


@contextmanager
def _naming(name: str) -> Iterator[None]:
    """A ``ValidationError`` raised within names the schedule of a batch it is about."""
    try:
        yield
    except ValidationError as exc:
        raise ValidationError(exc.field, exc.value, f"{exc.problem} (schedule {name!r})") from None


def _found(row: Row[Any] | None, name: str) -> Row[Any]:
    if row is None:
        raise ScheduleNotFound(name)
    return row


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
    edits = row.origin == CONFIG_ORIGIN and (
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
